"""The architecture holds itself: docs/architecture.md's table of rooms is read here, and an import of the app
that climbs it (a room importing a room above it that its "Calls" column does not name) fails with the file,
the line and the two rooms; the callback's path on that page names the functions the code runs.

Read from the source (no import): a late import inside a function counts as any other.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "django_paycollect"
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def rooms() -> list[tuple[tuple[str, ...], set[str]]]:
    """The table's rows, top to bottom: the paths each room holds, and the names in its "Calls" column."""
    table = PAGE.split("## The rooms", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("Room", "---"):
            continue
        paths = tuple(re.findall(r"`([^`]+)`", cells[0]))
        calls = {re.sub(r"\s*\(.*\)$", "", name).strip() for name in cells[2].split(",")}
        rows.append((paths, calls))
    return rows


ROOMS = rooms()


def room_of(relative: str) -> int:
    """The row of a module's path (``services/sync.py``, ``checks.py``): the longest path of a room that holds
    it (``management/commands/`` holds ``management/``'s other modules too)."""
    best, length = -1, -1
    for index, (paths, _calls) in enumerate(ROOMS):
        for path in paths:
            holds = relative == path or (
                path.endswith("/")
                and (relative.startswith(path) or path.startswith(relative.rsplit("/", 1)[0] + "/"))
            )
            if holds and len(path) > length:
                best, length = index, len(path)
    return best


def row_named(name: str) -> int | None:
    """The row a name of the "Calls" column means: ``services`` is ``services/``, ``conf`` ``conf.py``."""
    for index, (paths, _calls) in enumerate(ROOMS):
        if f"{name}/" in paths or f"{name}.py" in paths:
            return index
    return None


def modules() -> list[Path]:
    return sorted(
        path for path in APP.rglob("*.py") if "migrations" not in path.parts and "sandbox" not in path.parts
    )


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, the app's module imported) for every import of the app's own code in ``path``."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    module = ast.parse(path.read_text(encoding="utf-8"))
    # What only the type checker reads (``if TYPE_CHECKING:``) is no import at run time.
    typing_only = {
        id(inner)
        for node in ast.walk(module)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    found = []
    for node in ast.walk(module):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
                names = [f"{target}.{alias.name}" for alias in node.names] if not node.module else [target]
            else:
                names = [node.module or ""]
            found += [(node.lineno, name) for name in names if name.startswith("django_paycollect")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("django_paycollect")]
    return found


def relative_path(module: str) -> str:
    """``django_paycollect.services.sync`` as the table writes it: ``services/sync.py`` (a package ``x/``)."""
    parts = module.split(".")[1:]
    while parts:
        candidate = "/".join(parts)
        if (APP / f"{candidate}.py").exists():
            return f"{candidate}.py"
        if (APP / candidate).is_dir():
            return f"{candidate}/"
        parts = parts[:-1]
    return "__init__.py"


def test_every_module_of_the_app_is_in_a_room():
    homeless = [str(path.relative_to(APP)) for path in modules() if room_of(str(path.relative_to(APP))) < 0]
    assert homeless == [], "add them to a room of docs/architecture.md"


def test_no_import_climbs_the_table():
    climbs = []
    for path in modules():
        source = str(path.relative_to(APP))
        mine = room_of(source)
        for line, module in imports(path):
            theirs = room_of(relative_path(module))
            if theirs in (mine, -1) or theirs > mine:
                continue
            named = {row_named(name) for name in ROOMS[mine][1]}
            if theirs not in named:
                climbs.append(
                    f"{source}:{line} ({ROOMS[mine][0][0]}) imports {module} ({ROOMS[theirs][0][0]})"
                )
    assert climbs == []


def test_the_table_is_read_as_it_is_written():
    """The reading above reads the page: the rooms in their order, and what the top and the bottom call."""
    firsts = [paths[0] for paths, _calls in ROOMS]
    assert (
        firsts.index("intake/")
        < firsts.index("services/")
        < firsts.index("models/")
        < firsts.index("client/")
    )
    assert ROOMS[firsts.index("services/")][1] == {"client", "models", "signals"}
    assert room_of("services/sync.py") == firsts.index("services/")
    assert room_of("management/arguments.py") == firsts.index("management/commands/")


@pytest.mark.parametrize(
    "dotted",
    [
        "services.callback_ledger.claim_fetch",
        "services.sync.fetch_transaction",
        "services.sync.apply_fetched",
        "services.callback_ledger.mark_verified",
        "services.status.apply_status",
        "services.upserts.insert_callback",
        "services.upserts.take_fetch_turn",
    ],
)
def test_the_path_of_a_callback_names_the_code_s_functions(dotted):
    path = PAGE.split("## The path of a callback", 1)[1]
    assert f"`{dotted}`" in path
    module, name = dotted.rsplit(".", 1)
    source = (APP / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    assert re.search(rf"^def {name}\(", source, re.MULTILINE), dotted
