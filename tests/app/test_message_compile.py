"""The catalogues compile without GNU gettext exactly as msgfmt compiles them, so `make demo` and `make test`
work on a fresh machine; the catalogue check is skipped there with a notice, but never in CI."""

from __future__ import annotations

import gettext
import importlib.util
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


def test_every_catalogue_is_compiled_by_make_the_javascript_s_too():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "example_project/clubsite/members/locale/ar/LC_MESSAGES/djangojs.po" in [
        str(po.relative_to(ROOT)) for po in CATALOGUES
    ]
    for po in CATALOGUES:
        pattern = str(po.relative_to(ROOT)).replace("/ar/", "/*/")
        assert pattern in makefile, f"{pattern} is not in the Makefile's PO_FILES"


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
