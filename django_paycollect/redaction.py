"""Our secrets, removed from what is stored and shown: callback tokens and the echoed callback secret.

A sender may echo them anywhere (a custom field, a header, a body that is not JSON), so every text that
is stored from a callback, and every error recorded about one, goes through :func:`scrub` first.
"""

from __future__ import annotations

import re
from typing import Any

from .conf import paycollect_settings

REDACTED = "[redacted]"

#: Credentials in a URL (``redis://:password@host``), as a broker's error may quote them.
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]*@")


def callback_secrets() -> list[str]:
    """The values that must never be stored: ``CALLBACK_SECRET`` (text or a list) and ``CALLBACK_TOKENS``."""
    secrets = paycollect_settings.CALLBACK_SECRET or ()
    values = [secrets] if isinstance(secrets, str) else list(secrets)
    values += list(paycollect_settings.CALLBACK_TOKENS or [])
    return [str(value) for value in values if value]


def scrub(text: str) -> str:
    """``text`` without any of our secrets, wherever they appear."""
    for secret in callback_secrets():
        text = text.replace(secret, REDACTED)
    return text


def scrub_error(text: str) -> str:
    """An error's text for the record: :func:`scrub`, and no credentials written in a URL either."""
    return scrub(_URL_CREDENTIALS.sub("***@", text))


def scrub_all(value: Any) -> Any:
    """:func:`scrub` over every text of a parsed document (keys too). Bound its depth first (``too_deep``)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(str(k)): scrub_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_all(v) for v in value]
    return value
