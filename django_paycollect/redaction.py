"""Our callback secrets, removed from what is stored and shown: callback tokens and the echoed secret.

A sender may echo them anywhere (a custom field, a header, a body that is not JSON), so every text that
is stored from a callback, and every error recorded about one, goes through :func:`scrub` first. The
walker and the sentinel are the client's (:mod:`django_paycollect.client.redaction`), shared with
everything else the app stores. :class:`SecretsLogFilter` does the same for a project's log records.
"""

from __future__ import annotations

import logging
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


class SecretsLogFilter(logging.Filter):
    """A logging filter that passes every record with our secrets removed (:func:`scrub_error`).

    Django writes request paths in its logs (``django.request``'s "Internal Server Error: <path>" with the
    traceback, ``runserver``'s request lines), and a callback's path holds its token; an exception's text
    may quote a broker URL with its password. Put it on the handlers that write your logs::

        LOGGING = {
            ...,
            "filters": {"paycollect_secrets": {"()": "django_paycollect.redaction.SecretsLogFilter"}},
            "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["paycollect_secrets"]}},
        }
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True  # a record that cannot be formatted: the handler reports it itself
        scrubbed = scrub_error(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            # Formatted here, once, so the traceback written is the scrubbed one (formatters reuse exc_text).
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub_error(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub_error(record.stack_info)
        return True
