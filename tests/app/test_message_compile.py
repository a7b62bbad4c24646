"""The catalogues compile without GNU gettext exactly as msgfmt compiles them, so `make compile-messages`
works on a fresh machine; the catalogue check is skipped there with a notice, but never in CI. The compiled
.mo files are committed (a plain install of a checkout or a git URL carries them), and the check refuses one
that does not hold what its .po holds, whichever msgfmt wrote it."""

from __future__ import annotations

import gettext
import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _messages() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_messages", ROOT / ".ci" / "messages.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


messages = _messages()
CATALOGUES = [po for _folder, _language, po in messages.catalogues()]


def _catalog(mo: Path) -> dict[object, str]:
    with mo.open("rb") as handle:
        return dict(gettext.GNUTranslations(handle)._catalog)  # type: ignore[attr-defined]


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="needs GNU gettext's msgfmt to compare with")
@pytest.mark.parametrize("po", CATALOGUES, ids=lambda po: str(po.relative_to(ROOT)))
def test_a_catalogue_compiled_without_gettext_reads_as_msgfmt_compiles_it(po, tmp_path):
    import subprocess

    ours, theirs = tmp_path / "ours.mo", tmp_path / "theirs.mo"
    messages.write_mo(po, ours)
    subprocess.run(["msgfmt", "-o", str(theirs), str(po)], check=True)  # noqa: S603, S607
    expected = _catalog(theirs)
    assert len(expected) > 10
    assert _catalog(ours) == expected


def test_fuzzy_obsolete_and_untranslated_entries_are_left_out_and_escapes_read(tmp_path):
    po = tmp_path / "django.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Plural-Forms: nplurals=2; plural=n != 1;\\n"\n\n'
        'msgid "Paid"\nmsgstr "مدفوع"\n\n'
        '#, fuzzy\nmsgid "Refunded"\nmsgstr "مسترد"\n\n'
        'msgid "Untranslated"\nmsgstr ""\n\n'
        'msgctxt "state"\nmsgid "Open"\nmsgstr "مفتوح"\n\n'
        'msgid "one \\"day\\""\nmsgid_plural "%(n)s days"\nmsgstr[0] "يوم"\nmsgstr[1] "أيام\\n"\n\n'
        '#~ msgid "Gone"\n#~ msgstr "ذهب"\n',
        encoding="utf-8",
    )
    mo = tmp_path / "django.mo"
    messages.write_mo(po, mo)
    with mo.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    assert catalogue.gettext("Paid") == "مدفوع"
    assert catalogue.gettext("Refunded") == "Refunded"
    assert catalogue.gettext("Untranslated") == "Untranslated"
    assert catalogue.gettext("Gone") == "Gone"
    assert catalogue.pgettext("state", "Open") == "مفتوح"
    assert catalogue.ngettext('one "day"', "%(n)s days", 1) == "يوم"
    assert catalogue.ngettext('one "day"', "%(n)s days", 5) == "أيام\n"


def test_without_gettext_the_check_is_skipped_with_a_notice_but_not_in_ci(monkeypatch, capsys):
    monkeypatch.setattr(messages.shutil, "which", lambda tool: None)
    ran = []
    monkeypatch.setattr(messages, "check", lambda: ran.append("check"))
    monkeypatch.setattr(messages, "stale_compiled", lambda: [])
    monkeypatch.delenv("CI", raising=False)
    messages.main("check")
    assert ran == []
    assert "apt-get install gettext" in capsys.readouterr().err
    monkeypatch.setenv("CI", "true")
    with pytest.raises(SystemExit, match=r"msgfmt.*apt-get install gettext"):
        messages.main("check")
    with pytest.raises(SystemExit, match="apt-get install gettext"):
        messages.main("update")
    assert ran == []


def test_without_gettext_the_check_still_refuses_a_stale_mo(monkeypatch, capsys):
    monkeypatch.setattr(messages.shutil, "which", lambda tool: None)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(messages, "stale_compiled", lambda: ["django.mo does not hold what its .po holds"])
    with pytest.raises(SystemExit, match="out of date"):
        messages.main("check")
    assert "django.mo does not hold what its .po holds" in capsys.readouterr().err


def test_without_gettext_compile_writes_every_catalogue(monkeypatch, tmp_path):
    for po in CATALOGUES:
        copy = tmp_path / po.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(po, copy)
    monkeypatch.setattr(messages, "ROOT", tmp_path)
    monkeypatch.setattr(messages.shutil, "which", lambda tool: None)
    messages.main("compile")
    for po in CATALOGUES:
        mo = (tmp_path / po.relative_to(ROOT)).with_suffix(".mo")
        assert len(_catalog(mo)) > 10, mo


def test_the_check_names_each_marked_string_built_at_run_time_by_file_and_line(tmp_path):
    source = tmp_path / "views.py"
    source.write_text(
        "from django.utils.translation import gettext, ngettext, pgettext\n"
        "from django.utils.translation import gettext_lazy as _\n"
        "LABEL = _('Paid')\n"
        "def view(amount, n):\n"
        "    fine = gettext('Paid %(amount)s') % {'amount': amount}\n"
        "    also_fine = ngettext('%(n)d day', '%(n)d days', n) % {'n': n}\n"
        "    in_context = pgettext('money', 'Paid')\n"
        "    lazy_then_formatted = _('Paid %(amount)s') % {'amount': amount}\n"
        "    a = _(f'Paid {amount}')\n"
        "    b = gettext('Paid %s' % amount)\n"
        "    c = _('Paid ' + amount)\n"
        "    d = ngettext('{} day'.format(n), '%(n)d days', n)\n"
        "    e = ngettext('%(n)d day', f'{n} days', n)\n"
        "    f = pgettext('money', f'Paid {amount}')\n"
        "    g = f'{amount} {gettext(\"Paid\")}'\n"
        "class Form:\n"
        "    choices = [ngettext('%(n)d day', '%(n)d days', n) % {'n': n} for n in (1, 7)]\n"
        "    help = _('Types: %(types)s') % {'types': 'A, B'}\n"
        "    other = _('Types: {}').format('A, B')\n",
        encoding="utf-8",
    )
    found = messages.pitfalls(tmp_path, root=tmp_path)
    assert [line.split(": ")[0] for line in found] == [
        f"views.py:{n}" for n in (9, 10, 11, 12, 13, 14, 15, 17, 18, 19)
    ]
    assert found[0] == "views.py:9: gettext_lazy() of an f-string: no catalogue entry can match it"
    assert "gettext() of a string formatted with %" in found[1]
    assert "gettext_lazy() of strings joined with +" in found[2]
    assert "ngettext() of a string formatted with .format" in found[3]
    assert "gettext() inside an f-string, where makemessages never looks" in found[6]
    assert "ngettext() at import: translated once, then" in found[7]
    assert "gettext_lazy() formatted with % at import" in found[8]
    assert "gettext_lazy() formatted with .format at import" in found[9]


def test_the_sources_mark_no_string_built_at_run_time():
    assert [line for folder in messages.CATALOGUES for line in messages.pitfalls(ROOT / folder)] == []


def _copy_catalogues(into: Path) -> list[Path]:
    copies = []
    for po in CATALOGUES:
        copy = into / po.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(po, copy)
        copies.append(copy)
    return copies


def test_every_catalogue_s_compiled_mo_is_committed_the_javascript_s_too():
    # A plain `pip install` of a checkout or a git URL builds from the committed tree: an ignored or
    # untracked .mo would leave that install without the language.
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    import subprocess

    compiled = [str(po.with_suffix(".mo").relative_to(ROOT)) for po in CATALOGUES]
    tracked = subprocess.run(  # noqa: S603
        ["git", "ls-files", "--", *compiled],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "example_project/clubsite/members/locale/ar/LC_MESSAGES/djangojs.mo" in tracked
    assert sorted(tracked) == sorted(compiled)


def test_the_committed_mo_files_hold_their_po_s_translations():
    assert messages.stale_compiled() == []


def test_the_check_names_each_mo_that_does_not_hold_what_its_po_holds(monkeypatch, tmp_path):
    copies = _copy_catalogues(tmp_path)
    monkeypatch.setattr(messages, "ROOT", tmp_path)
    monkeypatch.setattr(messages.shutil, "which", lambda tool: None)
    messages.compile_all()
    assert messages.stale_compiled() == []

    app_po, sandbox_po = copies[0], copies[1]
    text = app_po.read_text(encoding="utf-8")
    assert 'msgstr "تحصيل المدفوعات"' in text
    app_po.write_text(text.replace('msgstr "تحصيل المدفوعات"', 'msgstr "تحصيل"'), encoding="utf-8")
    with sandbox_po.open("a", encoding="utf-8") as po:
        po.write('\nmsgid "A new message"\nmsgstr "رسالة جديدة"\n')
    copies[-1].with_suffix(".mo").unlink()

    problems = messages.stale_compiled()
    assert len(problems) == 3
    assert problems[0].startswith(
        "django_paycollect/locale/ar/LC_MESSAGES/django.mo does not hold what its .po"
    )
    assert "another translation of 'Payment collection'" in problems[0]
    assert "missing 'A new message'" in problems[1]
    assert problems[2] == (
        "example_project/clubsite/members/locale/ar/LC_MESSAGES/djangojs.mo is missing: "
        "run `make compile-messages` and commit it"
    )
    assert all("make compile-messages" in problem for problem in problems)

    messages.compile_all()
    assert messages.stale_compiled() == []


def test_a_mo_another_compiler_wrote_with_the_same_translations_passes_and_is_left_untouched(
    monkeypatch, tmp_path, capsys
):
    # msgfmt versions (and the compiler without gettext) write the same catalogue differently: the check
    # compares what a .mo holds, and compiling leaves a current .mo as it is, so committed files never churn.
    copies = _copy_catalogues(tmp_path)
    monkeypatch.setattr(messages, "ROOT", tmp_path)
    for po in copies:
        messages.write_mo(po, po.with_suffix(".mo"))
        # And the .po's dates changed since: what the .mo holds is still the same.
        text = po.read_text(encoding="utf-8")
        dated = re.sub(
            r'^"(POT-Creation-Date|PO-Revision-Date): .*\\n"$',
            r'"\1: 2031-01-01 00:00+0000\\n"',
            text,
            flags=re.M,
        )
        assert dated.count("2031-01-01") == 2
        po.write_text(dated, encoding="utf-8")
    before = {po: po.with_suffix(".mo").read_bytes() for po in copies}
    assert messages.stale_compiled() == []
    messages.compile_all()
    assert "every .mo file is current" in capsys.readouterr().out
    assert {po: po.with_suffix(".mo").read_bytes() for po in copies} == before


def test_the_check_names_javascript_messages_built_at_run_time(tmp_path):
    (tmp_path / "checkout.js").write_text(
        "// gettext() and interpolate(), from Django's JavaScriptCatalog\n"
        'say(gettext("Paid"));\n'
        'say(interpolate(gettext("Paid %(amount)s"), {amount: a}, true));\n'
        'say(ngettext("%(n)s day", "%(n)s days", n));\n'
        'say(gettext("Paid " + amount));\n'
        "say(gettext(label));\n",
        encoding="utf-8",
    )
    found = messages.pitfalls(tmp_path, root=tmp_path)
    assert [line.split(": ")[0] for line in found] == ["checkout.js:5", "checkout.js:6"]
    assert all("no catalogue entry can match it" in line for line in found)
