"""Callback intake: a callback's request read once (token, client address, headers, bounded body, shared
secret, claims), refused as *invalid* with a 4xx or handed to the callback ledger, then on to the worker
(docs/architecture.md, "The path of a callback"). Our secrets are removed from everything stored."""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote

from django.http import HttpRequest
from django.http.request import RawPostDataException
from django.urls import Resolver404, resolve

from .. import tasks
from ..client.money import MAX_JSON_DEPTH, loads_json, too_deep
from ..client.redaction import REDACTED
from ..conf import IPNetwork, paycollect_settings
from ..models.fields import json_safe
from ..secrecy import our_secrets, scrub, scrub_json_field
from ..serializers import error_messages
from ..services.callback_ledger import store_callback, store_invalid_callback
from .parsing import CALLBACK_FIELDS, CallbackBodySerializer

logger = logging.getLogger("django_paycollect.callbacks")

#: Request headers kept with a stored callback (lower case), each cut to ``HEADER_MAX_CHARS``.
STORED_HEADERS = (
    "content-type",
    "user-agent",
    "content-length",
    "x-forwarded-for",
    "x-real-ip",
    "x-request-id",
)
HEADER_MAX_CHARS = 500
#: How much of an oversized body is kept, for the admin to see what it was.
OVERSIZED_EXCERPT_BYTES = 1024


# --- the token in the URL --------------------------------------------------------------------------


def match_token(token: str) -> int | None:
    """Position of ``token`` in ``CALLBACK_TOKENS`` (a list, so tokens can be rotated), or None."""
    return _position(token, paycollect_settings.texts("CALLBACK_TOKENS"))


def _position(offered: str, accepted: Sequence[str]) -> int | None:
    """Position of ``offered`` in ``accepted``, or None. Each is compared in constant time, whichever matches:
    the answer's timing tells nothing about how close a guess was nor which value is current."""
    given = offered.encode("utf-8", errors="surrogateescape")
    found: int | None = None
    for index, value in enumerate(accepted):
        expected = value.encode("utf-8", errors="surrogateescape")
        if hmac.compare_digest(given, expected) and expected and found is None:
            found = index
    return found


#: The URL names whose last path segment is the token (urls.py).
CALLBACK_URL_NAMES = ("callback", "callback_without_slash")


def redact_callback_path(path: str) -> str:
    """``path`` with the token of a callback URL replaced by ``REDACTED``; any other path as it is.

    For what writes request paths outside Django's logging, such as a WSGI server's access log. ``path`` is
    a path as requested (percent-encoded, with its query) or as decoded (``PATH_INFO``), relative to the
    script name. The token is whatever the callback route matched, configured or not: a wrong guess is not
    written either, so nothing in the log tells how close it was.
    """
    target, mark, query = path.partition("?")
    try:
        match = resolve(unquote(target))
    except Resolver404:
        return path
    if match.url_name not in CALLBACK_URL_NAMES or "paycollect" not in match.app_names:
        return path
    # Both routes end with the token (then, for one, a slash): the segment is replaced as it was spelled.
    head, _, _token = target.rstrip("/").rpartition("/")
    slash = "/" if target.endswith("/") else ""
    return f"{head}/{REDACTED}{slash}{mark}{query}"


class CallbackPathFilter(logging.Filter):
    """Put on ``django.request`` by the app (``ready()``), which logs the path of every answer of 400 and
    above: a callback URL's 4xx is not written there (the view writes its own line, without the token), and
    a 5xx is written with the token redacted (:func:`redact_callback_path`) and without its request."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        path, path_info = getattr(request, "path", None), getattr(request, "path_info", None)
        if not (isinstance(path, str) and isinstance(path_info, str) and isinstance(record.args, tuple)):
            return True
        safe = path[: len(path) - len(path_info)] + redact_callback_path(path_info)
        if safe == path:
            return True
        if getattr(record, "status_code", 500) < 500:
            return False
        spellings = {path, path.encode("unicode_escape").decode("ascii")}  # Django may write it escaped
        record.args = tuple(safe if arg in spellings else arg for arg in record.args)
        # The request itself bears the token (AdminEmailHandler writes its URL and META): handlers get none.
        record.request = None
        return True


# --- client IP and headers -------------------------------------------------------------------------


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_ip(text: str) -> IPAddress | None:
    """An address as proxies write it: ``1.2.3.4``, ``1.2.3.4:5678``, ``2001:db8::1``, ``[2001:db8::1]:443``.

    Ports and IPv6 zone ids are dropped; IPv4-mapped IPv6 (``::ffff:1.2.3.4``) becomes IPv4.
    Anything else (``unknown``, obfuscated ``_hidden`` identifiers) is None.
    """
    text = text.strip().strip('"').strip()
    if text.startswith("["):
        end = text.find("]")
        if end == -1:
            return None
        text = text[1:end]
    elif text.count(":") == 1:  # IPv4 with a port; bare IPv6 has two colons or more
        text = text.split(":", 1)[0]
    text = text.split("%", 1)[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_ip(meta: Mapping[str, Any], proxies: Sequence[IPNetwork] | None = None) -> str | None:
    """The address that connected to our first trusted proxy (or to us): never a value a client chose.

    ``REMOTE_ADDR`` unless it is a trusted proxy; then ``X-Forwarded-For`` is read from the right,
    skipping trusted proxies, and the first other address is the client (anything to its left was
    written by the client itself and may be forged). An unreadable hop gives None: nothing can be
    said about who is behind it.
    """
    proxies = paycollect_settings.trusted_proxies() if proxies is None else proxies
    remote = parse_ip(str(meta.get("REMOTE_ADDR") or ""))
    if remote is None or not _trusted(remote, proxies):
        return str(remote) if remote is not None else None
    hops = [hop for hop in str(meta.get("HTTP_X_FORWARDED_FOR") or "").split(",") if hop.strip()]
    address: IPAddress | None = remote
    for hop in reversed(hops):
        address = parse_ip(hop)
        if address is None:
            return None
        if not _trusted(address, proxies):
            return str(address)
    return str(address)  # every hop is one of ours: the left-most is as far as anyone can tell


def _trusted(address: IPAddress, proxies: Iterable[IPNetwork]) -> bool:
    return any(address.version == network.version and address in network for network in proxies)


#: Each stored header and the key of the WSGI environ that holds it.
_HEADER_KEYS = tuple(
    (name, key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}")
    for name, key in ((name, name.upper().replace("-", "_")) for name in STORED_HEADERS)
)


def selected_headers(meta: Mapping[str, Any], secrets: Sequence[str]) -> dict[str, str]:
    return {
        name: scrub(_clean_text(str(meta[key])), secrets)[:HEADER_MAX_CHARS]
        for name, key in _HEADER_KEYS
        if meta.get(key)
    }


def _clean_text(text: str) -> str:
    # PostgreSQL text and jsonb refuse NUL characters; a body carrying one must still be stored.
    return text.replace("\x00", "\ufffd")


# --- storing a callback ----------------------------------------------------------------------------


#: The answer to every callback stored (new or a redelivery). Not to be changed.
RECEIVED: Mapping[str, Any] = MappingProxyType({"received": True})


@dataclass
class Received:
    """What the callback view answers, and the primary key of the row it stored."""

    status: int
    callback_id: int
    answer: Mapping[str, Any] = field(default_factory=lambda: RECEIVED)


class _Refused(Exception):
    def __init__(self, status: int, reason: str, body: str = "", claims: dict[str, Any] | None = None):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.body = body
        self.claims = claims or {}


def receive(request: HttpRequest, token_index: int) -> Received:
    """Store the callback POSTed in ``request`` (through the ledger) and hand it on for verification after
    the commit. Invalid callbacks are stored too (state *invalid*, with the reason) and answered 4xx."""
    secrets = our_secrets()  # read once: every stored text of this callback is scrubbed of them
    base: dict[str, Any] = {
        "token_index": token_index,
        "remote_addr": client_ip(request.META),
        "headers": selected_headers(request.META, secrets),
    }
    try:
        text, claims = _read_and_parse(request, secrets)
    except _Refused as refused:
        callback = store_invalid_callback(
            refused.reason, body=scrub(refused.body, secrets), **base, **refused.claims
        )
        logger.warning("callback #%s refused (%s): %s", callback.pk, refused.status, refused.reason)
        return Received(refused.status, callback.pk, {"received": False, "error": refused.reason})
    # The callback's task commits with it where the runner's queue is this database (tasks.handing_on).
    with tasks.handing_on() as hand_on:
        stored = store_callback(body=scrub(text, secrets), **base, **claims)
        if stored.to_verify is not None:
            hand_on(stored.to_verify)
    return Received(200, stored.callback_id)


def _read_and_parse(request: HttpRequest, secrets: Sequence[str]) -> tuple[str, dict[str, Any]]:
    limit = paycollect_settings.count("MAX_CALLBACK_BYTES")
    declared = _content_length(request.META)
    if declared is not None and declared > limit:
        # Not read at all: the sender said how big it is.
        raise _Refused(413, f"the body of {declared} bytes is above the limit of {limit} bytes")
    if declared is None and _chunked(request.META) and _unframed_input(request) is None:
        raise _Refused(
            411,
            "the body was sent chunked, without a Content-Length, to a server that does not pass such "
            "bodies on (no wsgi.input_terminated): serve the site with one that does, such as gunicorn",
        )
    try:
        raw = _read(request, limit)
    except (OSError, RawPostDataException):
        raise _Refused(400, "the body could not be read") from None
    if len(raw) > limit:
        excerpt = _clean_text(raw[:OVERSIZED_EXCERPT_BYTES].decode("utf-8", errors="replace"))
        raise _Refused(413, f"the body is above the limit of {limit} bytes", body=f"{excerpt}… [truncated]")
    text = _clean_text(raw.decode("utf-8", errors="replace"))
    try:
        document = loads_json(raw)
    except (ValueError, RecursionError):
        raise _Refused(400, "the body is not JSON", body=text) from None
    if not isinstance(document, dict):
        raise _Refused(400, "the body is not a JSON object", body=text)
    if too_deep(document):
        raise _Refused(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels", body=text)
    if not _storable(document):
        raise _Refused(400, "the body holds a NUL character or a lone surrogate escape", body=text)

    secret_problem, document, text = _check_secret(document, text)
    serializer = CallbackBodySerializer(data=document)
    valid = serializer.is_valid()
    hints = serializer.hint_errors
    claims = scrub(_claims(serializer.validated_data, document, hints), secrets) if valid else {}
    if secret_problem:
        # The claims are kept (when well formed) so the admin shows what the forgery pretended.
        raise _Refused(403, secret_problem, body=text, claims=claims)
    if not valid:
        reason = "wrong fields: " + _flatten(serializer.errors)
        if hints:
            reason += "; also malformed: " + _flatten(hints)
        raise _Refused(400, reason, body=text, claims={"hint_errors": scrub(hints, secrets)})
    return text, claims


def _content_length(meta: Mapping[str, Any]) -> int | None:
    try:
        return max(0, int(str(meta.get("CONTENT_LENGTH") or "")))
    except ValueError:
        return None


def _chunked(meta: Mapping[str, Any]) -> bool:
    return "chunked" in str(meta.get("HTTP_TRANSFER_ENCODING") or "").lower()


def _unframed_input(request: HttpRequest) -> Any:
    """The WSGI input of a request without Content-Length, when the server says it ends at the body's end.

    Django reads a WSGI body only as far as Content-Length says, so a chunked body (what some proxies
    and HTTP clients send) reads as nothing. Servers that decode chunked bodies and mark the input
    as ending with the body (``wsgi.input_terminated``: gunicorn, mod_wsgi, Werkzeug) can be read to
    the end; others cannot be read safely (the read would wait for the connection to close).
    """
    environ = getattr(request, "environ", None) or {}
    if environ.get("wsgi.input_terminated") and "wsgi.input" in environ:
        return environ["wsgi.input"]
    return None


def _read(request: HttpRequest, limit: int) -> bytes:
    body = getattr(request, "_body", None)  # a middleware read it already
    if isinstance(body, bytes):
        return body
    # One byte more than the limit tells "at the limit" from "above it" without reading everything.
    stream = _unframed_input(request) if _content_length(request.META) is None else None
    if stream is not None:
        return _read_up_to(stream, limit + 1)
    return request.read(limit + 1)


def _read_up_to(stream: Any, size: int) -> bytes:
    # A stream's read(n) may return fewer bytes than asked before its end (a chunk at a time).
    parts: list[bytes] = []
    while size > 0 and (part := stream.read(size)):
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _storable(document: Any) -> bool:
    """False when a text holds what the database refuses (PostgreSQL: NUL, and the lone surrogates
    a ``\\ud800`` escape decodes to), so such a body is refused with a 400, not a database error."""
    stack = [document]
    while stack:  # a loop, not recursion: the parser accepts deeper nesting than a recursive walk
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return False
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _flatten(errors: Any) -> str:
    """DRF's errors (or ``hint_errors``) as one line: ``path: message; path: message``."""
    messages = error_messages(errors).items()
    return "; ".join(f"{path}: {text}" if path else text for path, texts in messages for text in texts)


def _claims(data: Mapping[str, Any], document: Mapping[str, Any], hints: Mapping[str, Any]) -> dict[str, Any]:
    """What the body claims, for the record. Only the uuid is used (to fetch); a malformed hint is stored as
    not sent and named in ``hint_errors``, which flags the callback in the admin."""
    recurring = data.get("recurring") or {}
    return {
        "transaction_uuid": data["transaction_uuid"],
        "claimed_status": data["transaction_status"],
        "payment_id": data.get("payment_id") or "",
        "merchant_id": data.get("merchant_id") or "",
        "member_id": data.get("member_id") or "",
        "total_amount": data.get("total_amount"),
        "total_amount_piasters": data.get("total_amount_piasters"),
        "is_sub_payment": recurring.get("is_sub_payment"),
        "parent_transaction": recurring.get("parent_transaction") or "",
        "message": data.get("message") or "",
        # Custom fields are the keys the spec does not name, labels as sent (spaces and all).
        # Decimals become text so the JSON column keeps them exactly.
        "custom_fields": {k: json_safe(v) for k, v in document.items() if k not in CALLBACK_FIELDS},
        "hint_errors": dict(hints),
    }


# --- the optional shared secret echoed in the body ---------------------------------------------------


def _check_secret(document: dict[str, Any], text: str) -> tuple[str, dict[str, Any], str]:
    """Check and remove the secret field ``CALLBACK_SECRET_FIELD``, which must hold one of ``CALLBACK_SECRET``
    (text or a list, for rotation; no field or no secret: the check is off). Returns (problem or "", the
    document without it, the body text with the sent value and our secrets redacted)."""
    field_name = str(paycollect_settings.CALLBACK_SECRET_FIELD or "")
    accepted = [secret for secret in paycollect_settings.texts("CALLBACK_SECRET") if secret]
    if not field_name or not accepted:
        return "", document, text
    sent = document.get(field_name)
    document = {key: value for key, value in document.items() if key != field_name}
    problem = ""
    if sent is None:
        problem = "the callback secret is missing"
    elif _position(sent if isinstance(sent, str) else "", accepted) is None:
        problem = "the callback secret does not match"
    values = [*accepted, sent] if isinstance(sent, str) and sent else accepted
    return problem, document, scrub_json_field(text, field_name, values, document)
