"""Transaction uuids in one canonical form: lower case, with dashes (``3f1c2a9e-8b7d-...-1b2c3d4e5f60``).

The service names a transaction by its uuid, and a uuid can be spelled four ways: upper or lower case,
with or without its dashes. Every identifier that comes from outside (callback bodies, browser return
parameters, the service's answers, admin searches, arguments of the service layer) goes through
:func:`canonical_uuid` before it is looked up, deduplicated or stored, so that one transaction is one
row whatever spelling reached us. ``models.CanonicalUuidField`` applies it to every save and every
lookup, and a unique index on the canonical form makes it a database-level guarantee.

This module imports nothing from Django, so the client, serializers and settings can use it.
"""

from __future__ import annotations

import re
from typing import Any

_DASHED = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


def looks_like_uuid(value: Any) -> bool:
    """A transaction uuid as the spec names it: 36-character text, or the same 32 hex digits, in any case.

    Surrounding whitespace is allowed (and dropped by :func:`canonical_uuid`); braces, ``urn:uuid:``
    prefixes and dashes elsewhere are not uuids here.
    """
    if not isinstance(value, str):
        return False
    text = value.strip()
    return _DASHED.fullmatch(text) is not None or _HEX32.fullmatch(text) is not None


def canonical_uuid(value: str) -> str:
    """``value`` in the canonical form when it is a uuid (see :func:`looks_like_uuid`); otherwise unchanged.

    A value that is not a uuid is kept as the text it is, never refused here: callers that need a
    uuid check :func:`looks_like_uuid` and say so in their own words.
    """
    text = value.strip()
    if _DASHED.fullmatch(text) is not None:
        return text.lower()
    if _HEX32.fullmatch(text) is not None:
        text = text.lower()
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    return value
