"""Our callback secrets, removed from what is stored and shown: callback tokens and the echoed secret.

A sender may echo them anywhere (a custom field, a header, a body that is not JSON), so every text that
is stored from a callback, and every error recorded about one, goes through :func:`scrub` first. The
walker and the sentinel are the client's (:mod:`django_paycollect.client.redaction`), shared with
everything else the app stores.
"""

from __future__ import annotations

import re
from typing import Any

from .client import redaction as client_redaction
from .conf import paycollect_settings

REDACTED = client_redaction.REDACTED

#: Credentials in a URL (``redis://:password@host``), as a broker's error may quote them.
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]*@")


def callback_secrets() -> list[str]:
    """The values that must never be stored: ``CALLBACK_SECRET`` (text or a list) and ``CALLBACK_TOKENS``."""
    secrets = paycollect_settings.CALLBACK_SECRET or ()
    values = [secrets] if isinstance(secrets, str) else list(secrets)
    values += list(paycollect_settings.CALLBACK_TOKENS or [])
    return [str(value) for value in values if value]


def scrub(text: str, secrets: list[str] | None = None) -> str:
    """``text`` without any of our secrets, wherever they appear (``secrets``: :func:`callback_secrets`,
    when the caller read them already)."""
    scrubbed: str = client_redaction.redact(
        text, callback_secrets() if secrets is None else secrets, fields=()
    )
    return scrubbed


def scrub_error(text: str) -> str:
    """An error's text for the record: :func:`scrub`, and no credentials written in a URL either."""
    return scrub(_URL_CREDENTIALS.sub("***@", text))


def scrub_all(value: Any, secrets: list[str] | None = None) -> Any:
    """:func:`scrub` over every text of a parsed document (keys too). Bound its depth first (``too_deep``)."""
    return client_redaction.redact(value, callback_secrets() if secrets is None else secrets, fields=())
