"""The system check ids the docs name are the code's, with the code's meaning.

docs/celery.md once sent readers of ``CELERY_DB_REUSE_MAX`` to ``paycollect.W008``, the short metrics token;
the check about it is ``paycollect.W009``. Read from the sources (no check is run): an id is defined where a
check message is built with ``id="paycollect.X"`` (or from a ``("KEY", "E001")`` table for ``id=f"..."``).
What a check is about is the setting names its message and hint use (``METRICS_TOKENS``, ``DEBUG``...).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ID = r"paycollect(?:_sandbox)?\.[EWI]\d{3}"
#: A setting's name: PAYCOLLECT's keys, Django's and Celery's settings, the sandbox's keys.
SETTING = r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b(?:DEBUG|METRICS|TIMEOUT)\b"
LEVELS = {"E": "error", "W": "warning", "I": "info"}
#: What the docs are: every page, the README and the changelog.
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "CHANGELOG.md"]


def defined_checks() -> dict[str, set[str]]:
    """Each check id the code defines -> the settings its message and hint name."""
    checks: dict[str, set[str]] = {}
    for path in sorted((ROOT / "django_paycollect").rglob("*.py")):
        source = path.read_text()
        for match in re.finditer(rf'id="({ID})"', source):
            # The message is built in the call that ends with the id: from its Error(, Warning( or Info(.
            start = max(source.rfind(kind, 0, match.start()) for kind in ("Error(", "Warning(", "Info("))
            checks.setdefault(match.group(1), set()).update(re.findall(SETTING, source[start : match.end()]))
        for match in re.finditer(r'id=f"(paycollect(?:_sandbox)?)\.\{\w+\}"', source):
            # for key, check_id in (("BASE_URL", "E001"), ...): one check per pair, about its key.
            loop = source.rfind("for ", 0, match.start())
            for key, suffix in re.findall(r'\("([A-Z_]+)", "([EWI]\d{3})"\)', source[loop : match.start()]):
                checks.setdefault(f"{match.group(1)}.{suffix}", set()).add(key)
    return checks


CHECKS = defined_checks()


def mentions(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line number, check id, line) for each id a file names."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        for match in re.finditer(ID, line):
            yield number, match.group(0), line


def test_the_sources_define_the_checks_the_docs_list():
    # What the test relies on: it finds the checks, those built in a loop too.
    assert {"paycollect.E001", "paycollect.E006", "paycollect.W009", "paycollect_sandbox.E001"} <= set(CHECKS)
    assert CHECKS["paycollect.W009"] >= {"CELERY_DB_REUSE_MAX", "CONN_MAX_AGE"}
    assert CHECKS["paycollect.E002"] == {"API_KEY"}


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_check_id_the_docs_name_is_defined(path):
    undefined = [f"{path.name}:{n}: {check}" for n, check, _ in mentions(path) if check not in CHECKS]
    assert not undefined, "ids no check has:\n" + "\n".join(undefined)


def test_every_check_in_the_code_is_listed_with_its_level_in_the_settings_reference():
    rows = {}
    for line in (ROOT / "docs" / "settings.md").read_text().splitlines():
        if match := re.match(rf"\| ({ID}) \| (\w+) \|", line):
            rows[match.group(1)] = match.group(2)
    assert set(CHECKS) <= set(rows), f"not listed in docs/settings.md: {sorted(set(CHECKS) - set(rows))}"
    wrong = {check: level for check, level in rows.items() if LEVELS[check.split(".")[1][0]] != level}
    assert not wrong, wrong


def about(check: str, text: str) -> bool:
    """Whether ``text`` names a setting the check is about, as a name or in words ("callback token")."""
    words = text.lower().replace("_", " ")
    return any(
        setting in text or setting.lower().replace("_", " ").rstrip("s") in words for setting in CHECKS[check]
    )


def misattributed(path: Path) -> list[str]:
    """Table rows of ``path`` that name an id whose check is about none of the settings the row names."""
    found = []
    for number, check, line in mentions(path):
        if not line.startswith("|") or not CHECKS.get(check):
            continue
        if line.startswith(f"| {check} |"):  # the reference's row for it: what it says the check is about
            if not about(check, line.split("|", 2)[2]):
                found.append(f"{path.name}:{number}: {check} is about {sorted(CHECKS[check])}: {line[:100]}")
        elif (named := set(re.findall(SETTING, line))) and not named & CHECKS[check]:
            found.append(
                f"{path.name}:{number}: {check} is about {sorted(CHECKS[check])}, not {sorted(named)}"
            )
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_a_table_row_names_a_check_about_what_the_row_is_about(path):
    assert not misattributed(path)


def test_a_row_sending_a_setting_to_another_check_is_caught(tmp_path):
    # docs/celery.md's row of CELERY_DB_REUSE_MAX as it was: W008 is the metrics token's check.
    page = tmp_path / "celery.md"
    page.write_text(
        "| `CELERY_DB_REUSE_MAX` | `1000`, with `CONN_MAX_AGE = 60` | Check `paycollect.W008`. |\n"
    )
    assert misattributed(page)
    page.write_text(
        "| `CELERY_DB_REUSE_MAX` | `1000`, with `CONN_MAX_AGE = 60` | Check `paycollect.W009`. |\n"
    )
    assert not misattributed(page)
