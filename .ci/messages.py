"""The translation catalogues: update them, check them, compile them (Debian's gettext tools and Django's
makemessages).

    python .ci/messages.py update    after marking or changing strings: every catalogue made anew from
                                     the sources (then translate the new entries, and run it again)
    python .ci/messages.py check     CI (make lint): each catalogue is exactly what `update` makes of the
                                     sources (no string marked but missing, none left over), every entry
                                     is translated and none is fuzzy, msgfmt --check passes, the
                                     plural forms are Arabic's six, and no marked string is built at run
                                     time (an f-string, % or .format inside the call, a + of strings:
                                     no catalogue entry can match it), hidden in an f-string (makemessages
                                     does not read those) or translated at import (gettext() in a class
                                     body, a lazy string formatted there: English for good); and each
                                     committed .mo holds exactly its .po's translations
    python .ci/messages.py compile   the .mo files beside the .po files, each rewritten only when what it
                                     holds differs from its .po (make messages, make compile-messages)

The .mo files are committed, as Django's own are: a plain `pip install` of a checkout or of a git URL builds
from the committed tree, and nothing in the build compiles. The check compares what a .mo holds with its .po
(entries and their translations), not bytes: msgfmt versions write the same catalogue differently, and a
compile that finds a .mo current leaves it untouched, so they never churn.

`update` and `check` need GNU gettext. Without it, `compile` writes the .mo files itself, and `check` still
compares them with their .po files, then skips the rest with a notice, except in CI (CI set), where a missing
gettext is an error.

Catalogues are sorted by message, without source locations, so moving code never touches them.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANGUAGES = ["ar"]
#: Where each catalogue's sources are (its locale/ folder is inside), and what makemessages skips there.
CATALOGUES: dict[str, list[str]] = {
    "django_paycollect": ["sandbox/*", "migrations/*"],
    "django_paycollect/sandbox": ["migrations/*"],
    "example_project/clubsite/members": ["migrations/*"],
}
#: The domains of each folder's catalogues: Python and templates (django), and the JavaScript's (djangojs,
#: which Django's JavaScriptCatalog serves) where its static files have words.
DOMAINS: dict[str, tuple[str, ...]] = {"example_project/clubsite/members": ("django", "djangojs")}
PLURAL_FORMS = {
    "ar": (
        "nplurals=6; plural=n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 : n%100>=11 ? 4 : 5;"
    ),
}
#: Header lines that change on every run and say nothing about the catalogue.
_VOLATILE = re.compile(r'^"(POT-Creation-Date|PO-Revision-Date): .*\\n"$', re.MULTILINE)


def _env() -> dict[str, str]:
    # makemessages and compilemessages run without a project: no settings module, no app loading.
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(args: list[str], cwd: Path) -> None:
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True)  # noqa: S603
    if done.returncode != 0 or "warning" in done.stderr.lower():
        sys.exit(f"{' '.join(args)} (in {cwd}) failed:\n{done.stdout}{done.stderr}")


def _po(source: Path, language: str, domain: str = "django") -> Path:
    return source / "locale" / language / "LC_MESSAGES" / f"{domain}.po"


def catalogues(root: Path | None = None) -> list[tuple[str, str, Path]]:
    """(folder, language, .po file) of every catalogue, each domain of each folder in each language, under
    ``root`` (default: the repository)."""
    root = ROOT if root is None else root
    return [
        (folder, language, _po(root / folder, language, domain))
        for folder in CATALOGUES
        for domain in DOMAINS.get(folder, ("django",))
        for language in LANGUAGES
    ]


def update(root: Path = ROOT) -> None:
    for folder, language, po in catalogues(root):
        source = root / folder
        po.parent.mkdir(parents=True, exist_ok=True)
        _run(
            [sys.executable, "-m", "django", "makemessages", "--locale", language, "--domain", po.stem]
            + ["--no-location", "--no-obsolete", "--no-wrap"]
            + [f"--ignore={pattern}" for pattern in CATALOGUES[folder]],
            cwd=source,
        )
        _run(["msgcat", "--sort-output", "--no-wrap", "--no-location", "-o", str(po), str(po)], cwd=source)
        _set_plural_forms(po, language)


def _set_plural_forms(po: Path, language: str) -> None:
    text = po.read_text(encoding="utf-8")
    header = f'"Plural-Forms: {PLURAL_FORMS[language]}\\n"'
    text = re.sub(r'^"Plural-Forms: .*\\n"$', lambda _: header, text, count=1, flags=re.MULTILINE)
    po.write_text(text, encoding="utf-8")


def _stable(po: Path) -> str:
    return _VOLATILE.sub("", po.read_text(encoding="utf-8"))


#: The marking functions, and which of their arguments are messages (a context comes first in pgettext).
_MARKERS: dict[str, tuple[int, ...]] = {
    "gettext": (0,),
    "gettext_lazy": (0,),
    "gettext_noop": (0,),
    "ngettext": (0, 1),
    "ngettext_lazy": (0, 1),
    "pgettext": (1,),
    "pgettext_lazy": (1,),
    "npgettext": (1, 2),
    "npgettext_lazy": (1, 2),
}
#: Those that translate when called, in the language active then.
_EAGER = {"gettext", "ngettext", "pgettext", "npgettext"}


def _built_at_run_time(node: ast.expr) -> str | None:
    """What makes ``node`` a message that is not a literal: the text the catalogue would need, which no
    catalogue can hold (its words change with the values)."""
    if isinstance(node, ast.JoinedStr):
        return "an f-string"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return "a string formatted with % inside the call (format the translation instead)"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return "strings joined with + (mark one whole sentence)"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return "a string formatted with .format inside the call (format the translation instead)"
    return None


class _Pitfalls(ast.NodeVisitor):
    """The marked strings of one module that no catalogue entry can match or that are translated once, at
    import, in the language active then (English): ``(line, what)``."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.names = {"_": "gettext"}  # the usual alias, until an import says which it is
        self.in_function = 0
        self.in_fstring = 0

    def marker(self, node: ast.expr) -> str | None:
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        name = self.names.get(name or "", name)
        return name if name in _MARKERS else None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "django.utils.translation":
            for alias in node.names:
                self.names[alias.asname or alias.name] = alias.name

    def _function(self, node: ast.AST) -> None:
        self.in_function += 1
        self.generic_visit(node)
        self.in_function -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.in_fstring += 1
        self.generic_visit(node)
        self.in_fstring -= 1

    def visit_BinOp(self, node: ast.BinOp) -> None:
        # A lazy message formatted at import is formatted (so translated) then, once.
        if isinstance(node.op, ast.Mod) and not self.in_function and isinstance(node.left, ast.Call):
            name = self.marker(node.left.func)
            if name is not None and name not in _EAGER:
                self.found.append(
                    (node.lineno, f"{name}() formatted with % at import: translated once, then")
                )
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.marker(node.func)
        if name is not None:
            for index in _MARKERS[name]:
                why = _built_at_run_time(node.args[index]) if index < len(node.args) else None
                if why is not None:
                    self.found.append((node.lineno, f"{name}() of {why}: no catalogue entry can match it"))
            if self.in_fstring:
                self.found.append(
                    (node.lineno, f"{name}() inside an f-string, where makemessages never looks")
                )
            if name in _EAGER and not self.in_function:
                self.found.append(
                    (
                        node.lineno,
                        f"{name}() at import: translated once, then (use {name}_lazy, or call it later)",
                    )
                )
        elif (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Call)
            and (lazy := self.marker(node.func.value.func)) is not None
            and lazy not in _EAGER
            and not self.in_function
        ):
            self.found.append(
                (node.lineno, f"{lazy}() formatted with .format at import: translated once, then")
            )
        self.generic_visit(node)


def pitfalls(folder: Path, root: Path = ROOT) -> list[str]:
    """``file:line: ...`` for each marked message under ``folder`` that no catalogue entry can match
    (``_(f"...")``, ``gettext("..." % x)``, ``_("..." + x)``, ``ngettext("...".format(...), ...)``, a
    ``gettext()`` inside an f-string, which makemessages does not read) or that is translated once, at
    import (``gettext()`` in a class body, ``gettext_lazy("...") % x`` outside a function)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        visitor = _Pitfalls()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        where = path.relative_to(root) if path.is_relative_to(root) else path
        found += [f"{where}:{line}: {what}" for line, what in sorted(visitor.found)]
    for path in sorted(folder.rglob("*.js")):
        where = path.relative_to(root) if path.is_relative_to(root) else path
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.lstrip().startswith(("//", "/*", "*")):
                continue
            for call in _JS_BUILT.finditer(line):
                found.append(
                    f"{where}:{number}: {call[1]}() of a message that is not one string literal: no "
                    "catalogue entry can match it (interpolate() what the catalogue gives back)"
                )
    return found


#: A JavaScript gettext() or ngettext() whose message is not one string literal (``gettext("Paid " + x)``).
_JS_BUILT = re.compile(r"""\b(gettext|ngettext)\(\s*(?!("[^"\\]*"|'[^'\\]*')\s*[,)])""")


def check() -> None:
    problems: list[str] = stale_compiled()
    problems += [line for folder in CATALOGUES for line in pitfalls(ROOT / folder)]
    with tempfile.TemporaryDirectory(prefix="paycollect-messages-") as scratch:
        # makemessages writes where it runs: run it on a copy of the sources.
        copy = Path(scratch)
        for folder in CATALOGUES:
            shutil.copytree(
                ROOT / folder,
                copy / folder,
                ignore=shutil.ignore_patterns("__pycache__", "*.mo"),
                dirs_exist_ok=True,
            )
        update(copy)
        for (_folder, language, committed), (_same, _also, made) in zip(
            catalogues(), catalogues(copy), strict=True
        ):
            name = committed.relative_to(ROOT)
            if not committed.exists():
                problems.append(f"{name} is missing")
                continue
            if _stable(committed) != _stable(made):
                problems.append(
                    f"{name} is not what makemessages makes of the sources:\n{_diff(committed, made)}"
                )
            problems += _untranslated(committed, name)
            if f'"Plural-Forms: {PLURAL_FORMS[language]}\\n"' not in committed.read_text(encoding="utf-8"):
                problems.append(f"{name}: the Plural-Forms header must be {PLURAL_FORMS[language]}")
            done = subprocess.run(  # noqa: S603
                ["msgfmt", "--check", "--output-file=/dev/null", str(committed)],  # noqa: S607
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                problems.append(f"{name}: msgfmt --check:\n{done.stderr}")
    if problems:
        print("\n\n".join(problems), file=sys.stderr)
        sys.exit("The translation catalogues need work: run `make messages`, translate, and run it again.")
    print(f"{len(catalogues())} catalogues complete: {', '.join(LANGUAGES)}")


def _diff(committed: Path, made: Path) -> str:
    done = subprocess.run(  # noqa: S603
        ["diff", "-u", str(committed), str(made)],  # noqa: S607
        capture_output=True,
        text=True,
    )
    lines = [line for line in done.stdout.splitlines() if not _VOLATILE.match(line[1:])]
    return "\n".join(lines[:80])


def _untranslated(po: Path, name: Path) -> list[str]:
    problems = []
    for option, what in (("--untranslated", "untranslated"), ("--only-fuzzy", "fuzzy")):
        done = subprocess.run(  # noqa: S603
            ["msgattrib", option, "--no-obsolete", "--no-wrap", str(po)],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        )
        entries = re.findall(r'^msgid "(.+)"$', done.stdout, flags=re.MULTILINE)
        if entries:
            problems.append(f"{name}: {len(entries)} {what}: " + "; ".join(entries[:20]))
    return problems


def compile_all(root: Path | None = None) -> None:
    """Compile each catalogue whose .mo is missing or holds other translations than its .po; leave the others
    untouched (they are committed: a msgfmt of another version would rewrite them byte by byte)."""
    root = ROOT if root is None else root
    msgfmt = shutil.which("msgfmt")
    compiled = []
    for _folder, _language, po in catalogues(root):
        mo = po.with_suffix(".mo")
        if mo.exists() and _differences(mo, po) == []:
            continue
        if msgfmt is None:
            # A machine without gettext: the same catalogue, written here (see write_mo).
            write_mo(po, mo)
        else:
            _run([msgfmt, "--check-format", "--output-file", str(mo), str(po)], cwd=po.parent)
        if _differences(mo, po):
            # read_po (what the check compares with) and msgfmt disagree: fix read_po.
            sys.exit(f"{mo.relative_to(root)} still differs from its .po once compiled: see read_po")
        compiled.append(str(mo.relative_to(root)))
    if not compiled:
        print("every .mo file is current")
    elif msgfmt is None:
        advice = "install it to check them: apt-get install gettext"
        print(f"compiled without GNU gettext ({advice}): {', '.join(compiled)}")
    else:
        print(f"compiled: {', '.join(compiled)}")


def read_mo(mo: Path) -> dict[str, str]:
    """What a compiled catalogue holds, keyed as read_po keys a .po file (UTF-8, as makemessages writes)."""
    data = mo.read_bytes()
    if len(data) < 28:
        raise ValueError("not a .mo file: too short")
    order = {0x950412DE: "<", 0xDE120495: ">"}.get(struct.unpack("<I", data[:4])[0])
    if order is None:
        raise ValueError("not a .mo file: bad magic number")
    count, ids_at, strs_at = struct.unpack(f"{order}3I", data[8:20])
    entries = {}
    for index in range(count):
        id_length, id_at = struct.unpack(f"{order}2I", data[ids_at + 8 * index : ids_at + 8 * index + 8])
        str_length, str_at = struct.unpack(f"{order}2I", data[strs_at + 8 * index : strs_at + 8 * index + 8])
        key = data[id_at : id_at + id_length].decode()
        entries[key] = data[str_at : str_at + str_length].decode()
    return entries


#: Header fields that say when, not what: a .mo compiled before one of them changed still holds the same.
_DATES = re.compile(r"^(POT-Creation-Date|PO-Revision-Date): .*\n", re.MULTILINE)


def _differences(mo: Path, po: Path) -> list[str]:
    """How the translations a .mo holds differ from its .po's (empty when they are the same)."""
    try:
        held = read_mo(mo)
    except (OSError, ValueError, UnicodeDecodeError, struct.error) as error:
        return [f"unreadable ({error})"]
    wanted = read_po(po)
    for entries in (held, wanted):
        if "" in entries:
            entries[""] = _DATES.sub("", entries[""])
    found = []
    for key in sorted(held.keys() | wanted.keys()):
        message = repr(key.replace("\x04", " | ").replace("\0", " / ")) if key else "the header"
        if key not in held:
            found.append(f"missing {message}")
        elif key not in wanted:
            found.append(f"left over {message}")
        elif held[key] != wanted[key]:
            found.append(f"another translation of {message}" if key else "another header")
    return found


def stale_compiled(root: Path | None = None) -> list[str]:
    """A problem for each catalogue whose .mo is missing or does not hold exactly its .po's translations."""
    root = ROOT if root is None else root
    problems = []
    for _folder, _language, po in catalogues(root):
        mo = po.with_suffix(".mo")
        name = mo.relative_to(root)
        if not mo.exists():
            problems.append(f"{name} is missing: run `make compile-messages` and commit it")
            continue
        found = _differences(mo, po)
        if found:
            problems.append(
                f"{name} does not hold what its .po holds ({len(found)}: {'; '.join(found[:5])}): "
                "run `make compile-messages` and commit it"
            )
    return problems


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def _unquote(line: str) -> str:
    text = line.strip()[1:-1]
    return re.sub(r"\\(.)", lambda match: _ESCAPES.get(match[1], match[1]), text)


def read_po(po: Path) -> dict[str, str]:
    """A catalogue's translated, non-fuzzy entries as msgfmt keys them: "context\\x04id", plurals
    "id\\0plural" to "form0\\0form1...". Obsolete, fuzzy and untranslated entries are left out, as msgfmt
    leaves them out."""
    entries: dict[str, str] = {}
    # Entries are separated by blank lines (as makemessages and msgcat write them).
    for block in re.split(r"\n\s*\n", po.read_text(encoding="utf-8")):
        lines = [line.strip() for line in block.splitlines()]
        if any(line.startswith("#,") and "fuzzy" in line for line in lines):
            continue
        entry: dict[str, str] = {}
        field = ""
        for line in lines:
            if not line or line.startswith("#"):
                continue
            if line.startswith('"'):
                entry[field] += _unquote(line)
                continue
            field, _, rest = line.partition(" ")
            entry[field] = _unquote(rest)
        if "msgid" not in entry:
            continue
        forms = sorted((key for key in entry if key.startswith("msgstr")), key=lambda key: (len(key), key))
        strings = [entry[key] for key in forms]
        if not any(strings):
            continue
        key = entry["msgid"]
        if "msgid_plural" in entry:
            key += "\0" + entry["msgid_plural"]
        if "msgctxt" in entry:
            key = entry["msgctxt"] + "\x04" + key
        entries[key] = "\0".join(strings)
    if "" in entries:
        # msgfmt leaves the template's creation date out of the compiled header.
        entries[""] = re.sub(r"^POT-Creation-Date: .*\n", "", entries[""], flags=re.MULTILINE)
    return entries


def write_mo(po: Path, mo: Path) -> None:
    """The GNU .mo file of a catalogue (the layout of CPython's Tools/i18n/msgfmt.py: sorted keys, no
    hash table), for machines without msgfmt."""
    catalogue = {key.encode(): value.encode() for key, value in read_po(po).items()}
    keys = sorted(catalogue)
    ids = strs = b""
    offsets = []
    for key in keys:
        offsets.append((len(ids), len(key), len(strs), len(catalogue[key])))
        ids += key + b"\0"
        strs += catalogue[key] + b"\0"
    start_ids = 7 * 4 + 16 * len(keys)
    start_strs = start_ids + len(ids)
    table = [n for id_at, id_length, _, _ in offsets for n in (id_length, id_at + start_ids)]
    table += [n for _, _, str_at, str_length in offsets for n in (str_length, str_at + start_strs)]
    header = struct.pack("Iiiiiii", 0x950412DE, 0, len(keys), 7 * 4, 7 * 4 + len(keys) * 8, 0, 0)
    mo.write_bytes(header + struct.pack(f"{len(table)}i", *table) + ids + strs)


def gettext_missing() -> list[str]:
    return [
        tool
        for tool in ("msgfmt", "msgcat", "msgattrib", "xgettext", "msgmerge")
        if shutil.which(tool) is None
    ]


def main(command: str) -> None:
    missing = gettext_missing()
    if missing and command != "compile":
        advice = f"{', '.join(missing)} missing: install GNU gettext (Debian: apt-get install gettext)"
        if command == "check" and not os.environ.get("CI"):
            # The compiled catalogues are compared in Python: that part needs no gettext.
            problems = stale_compiled()
            if problems:
                print("\n\n".join(problems), file=sys.stderr)
                sys.exit("The compiled catalogues are out of date.")
            print(
                f"catalogue check skipped (the .mo files are current): {advice}; CI runs it", file=sys.stderr
            )
            return
        sys.exit(advice)
    {"update": update, "check": check, "compile": compile_all}[command]()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("update", "check", "compile"):
        sys.exit(__doc__)
    main(sys.argv[1])
