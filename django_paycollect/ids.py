"""Transaction uuids in one canonical form: lower case, with dashes (``3f1c2a9e-8b7d-...-1b2c3d4e5f60``).

Every uuid that comes from outside goes through :func:`canonical_uuid` before it is looked up, deduplicated or
stored, whichever of its spellings reached us (case, dashes, braces, ``urn:uuid:``), so that one transaction
is one row; ``models.CanonicalUuidField`` applies it to every save and lookup. Nothing from Django is
imported here, so the client, serializers and settings can use it.
"""

from __future__ import annotations

import re
from typing import Any

_DASHED_TEXT = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_DASHED = re.compile(_DASHED_TEXT)
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
# The two standard wrappings of the 36-character form; "urn" and its namespace "uuid" in any case (RFC 8141).
_WRAPPED = re.compile(rf"\{{({_DASHED_TEXT})\}}|(?i:urn:uuid:)({_DASHED_TEXT})")


def _unwrapped(text: str) -> str:
    wrapped = _WRAPPED.fullmatch(text)
    return (wrapped.group(1) or wrapped.group(2)) if wrapped is not None else text


def looks_like_uuid(value: Any) -> bool:
    """A transaction uuid: 36-character text, or the same 32 hex digits, in any case; or the 36-character
    form in braces or after ``urn:uuid:``.

    Surrounding whitespace is allowed (and dropped by :func:`canonical_uuid`); anything else around it
    (whitespace inside the braces, both wrappings at once, ``uuid:`` alone), the 32 digits wrapped, and
    dashes elsewhere are not uuids here.
    """
    if not isinstance(value, str):
        return False
    text = _unwrapped(value.strip())
    return _DASHED.fullmatch(text) is not None or _HEX32.fullmatch(text) is not None


def canonical_uuid(value: str) -> str:
    """``value`` in the canonical form when it is a uuid (see :func:`looks_like_uuid`); otherwise unchanged.

    A value that is not a uuid is kept as the text it is, never refused here: callers that need a
    uuid check :func:`looks_like_uuid` and say so in their own words.
    """
    text = _unwrapped(value.strip())
    if _DASHED.fullmatch(text) is not None:
        return text.lower()
    if _HEX32.fullmatch(text) is not None:
        text = text.lower()
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    return value
