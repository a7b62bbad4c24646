"""Our secrets (:func:`our_secrets`), and the one way they are kept out of all we store and write (stored
callbacks, ``ApiCall`` rows, errors, a project's logs): :func:`scrub`, built on the client's Django-free
walker; and the customers' personal data masked in stored request bodies (:func:`mask_personal_data`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .client.money import loads_json
from .client.redaction import REDACTED, credential_texts, redact
from .conf import paycollect_settings
from .crypto import DecryptionError

if TYPE_CHECKING:
    from .services.config import CommunityConfig

#: Credentials in a URL (``redis://:password@host``), as a broker's error may quote them.
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]*@")
#: Seconds a process keeps the stored communities' secrets: a row saved here is read again at once, one
#: saved by another process within this long. ``_stored``: (when read, the secrets), None until read.
STORED_SECRETS_TTL = 60.0
_stored: tuple[float, tuple[str, ...]] | None = None


def our_secrets(config: CommunityConfig | None = None, *, load: bool = True) -> tuple[str, ...]:
    """Every text never stored nor written: ``CALLBACK_TOKENS``, ``CALLBACK_SECRET``, the key and basic
    credentials of the default community, of every ``Community`` row (see :data:`STORED_SECRETS_TTL`) and of
    ``config``. ``load=False``: the rows as last read, none read now (a log record must not query)."""
    settings = paycollect_settings
    texts = [*settings.texts("CALLBACK_TOKENS"), *settings.texts("CALLBACK_SECRET")]
    texts += credential_texts(settings.API_KEY, settings.basic_credentials())
    if config is not None:
        texts += credential_texts(config.api_key, config.basic_credentials)
    return (*filter(None, texts), *_stored_secrets(load))


def stored_credentials(using: str | None = None) -> list[tuple[str, tuple[str, ...] | None]]:
    """Each ``Community`` row's id and secret texts, or None when no configured key decrypts them (check
    ``paycollect.E005``; unreadable anywhere, nothing of them can leak). ``DatabaseError`` before migrate."""
    from .models import Community

    rows: list[tuple[str, tuple[str, ...] | None]] = []
    for row in Community.objects.using(using).all():
        try:
            rows.append((row.community_id, credential_texts(row.api_key, row.basic_credentials)))
        except DecryptionError:
            rows.append((row.community_id, None))
    return rows


def _stored_secrets(load: bool) -> tuple[str, ...]:
    global _stored
    now = time.monotonic()
    if load and (_stored is None or now - _stored[0] >= STORED_SECRETS_TTL):
        try:
            _stored = (now, tuple(text for _, texts in stored_credentials() for text in texts or ()))
        except DatabaseError:
            return ()  # not migrated yet: nothing stored
    return _stored[1] if _stored is not None else ()


@receiver([post_save, post_delete], sender="paycollect.Community", dispatch_uid="paycollect_secrets")
def forget_stored_secrets(**kwargs: Any) -> None:
    """A community saved or deleted: its secrets are read again when next needed."""
    global _stored
    _stored = None


def scrub(value: Any, secrets: Iterable[str] | None = None, *, fields: Iterable[str] = ()) -> Any:
    """``value`` (a text, or a document, keys too; bound its depth first) with our secrets (read already, or
    :func:`our_secrets`) replaced by ``REDACTED`` wherever they appear, and the values of ``fields`` whole."""
    return redact(value, our_secrets() if secrets is None else secrets, fields=fields)


def scrub_error(text: str, secrets: Iterable[str] | None = None) -> str:
    """An error's text for the record: :func:`scrub`, and no credentials written in a URL either."""
    return str(scrub(_URL_CREDENTIALS.sub("***@", text), secrets))


def scrub_json_field(text: str, name: str, values: Sequence[str], without: Mapping[str, Any]) -> str:
    """A JSON object's text (``without``, parsed, lacks the field ``name``) with the field's ``values``
    replaced by ``REDACTED`` in every JSON spelling; when an escaped spelling defeats that, the text is
    written again from ``without`` (exactness of the bytes matters less). For the echoed callback secret,
    which a sender may spell in ``\\u`` escapes, and whose wrong guesses are hidden too."""
    for value in values:
        for spelling in {json.dumps(value), json.dumps(value, ensure_ascii=False)}:
            text = text.replace(spelling, json.dumps(REDACTED))
    try:
        again = loads_json(text)
    except (ValueError, RecursionError):
        again = None
    if isinstance(again, dict) and again.get(name, REDACTED) == REDACTED:
        return text
    from .models.fields import json_safe

    return json.dumps({**json_safe(dict(without)), name: REDACTED}, ensure_ascii=False)


# --- personal data in stored request bodies ------------------------------------------------------------

_PERSONAL_KEYS = {
    **dict.fromkeys(("name", "customer_name"), "name"),  # billing_data.name only (see mask_personal_data)
    **dict.fromkeys(("email", "customer_email", "cc_email"), "email"),
    **dict.fromkeys(("phone_number", "customer_mobile", "phone"), "phone"),
    "address": "text",
}


def mask(value: Any, kind: str) -> Any:
    """``Mona Ali`` -> ``M*** A***``; ``mona@example.com`` -> ``m***@example.com``; phones keep 4 digits."""
    if not isinstance(value, str) or not value:
        return value
    if kind == "email" and "@" in value:
        local, _, domain = value.partition("@")
        return f"{local[:1]}***@{domain}"
    if kind == "phone":
        return f"{value[:3]}***{value[-4:]}" if len(value) > 8 else "***"
    if kind == "name":
        return " ".join(f"{part[:1]}***" for part in value.split())
    return "***"


def mask_personal_data(body: Any, *, inside_billing: bool = False) -> Any:
    """A request body with customers' names, e-mail addresses, phones and addresses masked (:func:`mask`),
    as every stored body is. An order's or a community's name is not personal data: only billing's is."""
    if isinstance(body, list):
        return [mask_personal_data(item) for item in body]
    if not isinstance(body, Mapping):
        return body
    out = {}
    for key, value in body.items():
        kind = _PERSONAL_KEYS.get(key) if key != "name" or inside_billing else None
        out[key] = (
            mask(value, kind) if kind else mask_personal_data(value, inside_billing=key == "billing_data")
        )
    return out


class SecretsLogFilter(logging.Filter):
    """A logging filter that passes every record with our secrets removed (:func:`scrub_error`).

    Django writes request paths in its logs (``django.request``'s "Internal Server Error: <path>" with the
    traceback, ``runserver``'s request lines), and a callback's path holds its token; an exception's text
    may quote a broker URL with its password. Put it on the handlers that write your logs, as
    ``{"()": "django_paycollect.secrecy.SecretsLogFilter"}`` in ``LOGGING["filters"]`` (docs: Deployment).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True  # a record that cannot be formatted: the handler reports it itself
        secrets = our_secrets(load=False)
        scrubbed = scrub_error(message, secrets)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            # Formatted here, once, so the traceback written is the scrubbed one (formatters reuse exc_text).
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub_error(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = scrub_error(record.stack_info, secrets)
        return True
