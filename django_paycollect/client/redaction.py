"""Secrets removed from whatever is kept or shown: one walker, one sentinel, no Django.

The client removes its API key and credentials from error messages and excerpts, and the values of
secret fields (bank settings' passwords) from the request bodies it records; the Django app removes
the same, and its callback tokens and secret, from what it stores, with the same function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "SECRET_FIELDS", "credential_texts", "redact", "walk_texts"]

#: What a secret is replaced with, wherever it was.
REDACTED = "[redacted]"
#: Fields whose value is a secret even though it travels in a body (bank settings of a community).
SECRET_FIELDS = frozenset({"api_password", "password", "api_key", "secret"})


def credential_texts(api_key: str | None, basic_credentials: str | None) -> tuple[str, ...]:
    """The secret texts of a key and ``user:password`` credentials: each, and the password (4 chars up)."""
    basic = basic_credentials or ""
    return tuple(text for text in (api_key or "", basic, basic.partition(":")[2]) if len(text) >= 4)


def walk_texts(value: Any, change: Callable[[str], str], *, fields: Iterable[str] = ()) -> Any:
    """A copy of ``value`` (texts, mappings, lists, tuples) with ``change`` applied to every text,
    mapping keys included, and the value of every key in ``fields`` replaced by :data:`REDACTED`.
    Bound the depth first (``money.too_deep``) for what comes from outside."""
    hidden = frozenset(fields)
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {
            change(str(k)): REDACTED if k in hidden else walk_texts(v, change, fields=hidden)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [walk_texts(v, change, fields=hidden) for v in value]
    return value


def redact(value: Any, secrets: Iterable[str] = (), *, fields: Iterable[str] = SECRET_FIELDS) -> Any:
    """``value`` with every secret text replaced by :data:`REDACTED` wherever it appears, and the values
    of secret ``fields`` replaced whole. Longer secrets go first, so a password inside a joined
    ``user:password`` is not left half visible."""
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)

    def change(text: str) -> str:
        for secret in ordered:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    return walk_texts(value, change, fields=fields)
