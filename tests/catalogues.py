"""The translation catalogues as the tests read them: every msgid of a .po file, translated or not (a compiled
.mo leaves the untranslated ones out, and those are the ones a test looks for)."""

from __future__ import annotations

import re
from pathlib import Path

_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
#: Where a message's English is cut: its placeholders and its tags, which a page shows filled or rendered.
PLACEHOLDERS = re.compile(r"%\(\w+\)[sd]|%%|%s|<[^>]*>")


def msgids(po: Path) -> list[str]:
    """The msgids (and plural msgids) of a catalogue, in the order of its .po file."""
    found: list[list[str]] = []
    parts: list[str] | None = None
    for line in po.read_text(encoding="utf-8").splitlines():
        quoted = _QUOTED.search(line)
        if line.startswith(("msgid ", "msgid_plural ")) and quoted:
            parts = [quoted[1]]
            found.append(parts)
        elif line.startswith('"') and parts is not None and quoted:
            parts.append(quoted[1])
        else:
            parts = None
    return ["".join(pieces).replace('\\"', '"').replace("\\n", "\n") for pieces in found if "".join(pieces)]


def pieces_of(msgid: str) -> list[str]:
    """The English of a msgid between its placeholders and tags, spaces folded and edges trimmed."""
    cut = (" ".join(piece.split()).strip(" .,:;?()“”…") for piece in PLACEHOLDERS.split(msgid))
    return [piece for piece in cut if piece]
