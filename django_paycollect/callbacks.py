"""What the service sends us: callback POSTs, stored before anything else, and browser returns.

A callback is stored first, whatever it holds (raw body, a few headers, the client IP), then
verified by ``tasks.process_callback`` after the commit: the task fetches the transaction from the
service and applies what the service says, never what the body claims. Redeliveries of the same
(transaction uuid, claimed status) are stored as duplicates and not verified again (unless the
original never was, or its verification found the transaction still open; see ``_verify_again``).
Only ``transaction_uuid`` (or a ``transaction_id`` holding the uuid) decides what to fetch. Every other
field is a hint: a malformed one never refuses the callback; it is stored as not sent and named in
``hint_errors``, which flags the callback in the admin. The uuid is made canonical first
(``ids.canonical_uuid``), so every spelling of it is one callback.

Nothing answered 200 stays unverified: a callback whose queueing failed is left *received* with the
reason, and one whose message was lost stays *queued*; :func:`sweep` (a beat task, every minute) queues
both again once overdue (``CALLBACK_REQUEUE_AFTER``).

A browser return is never trusted either: its uuid only says which transaction to look at, and
only a status is ever shown to the visitor.

Settings read here that ``conf.DEFAULTS`` may not list yet are read with a default (see
:func:`setting`): ``MAX_CALLBACK_BYTES``, ``TRUSTED_PROXIES``, ``CALLBACK_SECRET_FIELD``,
``CALLBACK_SECRET``, ``RETURN_TIMEOUT``.
"""

from __future__ import annotations

import datetime as dt
import hmac
import ipaddress
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache, partial
from typing import Any

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.http.request import RawPostDataException
from django.utils import timezone

from . import services, tasks
from .client.money import MAX_JSON_DEPTH, too_deep
from .conf import paycollect_settings
from .exceptions import NotFound
from .ids import canonical_uuid
from .models import ReceivedCallback, Transaction, json_safe
from .serializers import CALLBACK_FIELDS, CallbackBodySerializer

logger = logging.getLogger("django_paycollect.callbacks")

#: Largest callback body accepted, in bytes (``PAYCOLLECT["MAX_CALLBACK_BYTES"]`` overrides it). The
#: spec shows no size; a real body is well under 1 KiB plus its custom fields.
MAX_CALLBACK_BYTES = 64 * 1024
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
#: Stored callbacks that may be queued for verification again (by a redelivery, the admin or the command).
REPROCESSABLE_STATES = (ReceivedCallback.RECEIVED, ReceivedCallback.QUEUED, ReceivedCallback.FAILED)
REDACTED = "[redacted]"

#: Browser returns: default (connect, read) seconds of the fetch made while the customer waits.
RETURN_TIMEOUT = (2.0, 3.0)
#: At most one fetch per transaction in this many seconds from returns and the status endpoint, so
#: that polling pages (or someone replaying a uuid) cannot make us hammer the service.
STATUS_SYNC_INTERVAL = 3.0


def setting(name: str, default: Any) -> Any:
    """``PAYCOLLECT[name]``, or ``default`` when it is set to None."""
    value = getattr(paycollect_settings, name)
    return default if value is None else value


# --- the token in the URL --------------------------------------------------------------------------


def match_token(token: str) -> int | None:
    """Position of ``token`` in ``CALLBACK_TOKENS`` (a list, so tokens can be rotated), or None.

    Every configured token is compared, in constant time, whichever matches: the answer's timing
    tells nothing about how close a guess was nor which token is current.
    """
    offered = token.encode("utf-8", errors="surrogateescape")
    found: int | None = None
    for index, configured in enumerate(paycollect_settings.CALLBACK_TOKENS or []):
        expected = str(configured).encode("utf-8", errors="surrogateescape")
        if hmac.compare_digest(offered, expected) and expected and found is None:
            found = index
    return found


# --- client IP and headers -------------------------------------------------------------------------


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


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


@lru_cache(maxsize=16)
def _networks(entries: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            # Logged, not raised: a typo in the list must not make us drop callbacks.
            logger.error("PAYCOLLECT['TRUSTED_PROXIES']: %r is not an address or network; ignored", entry)
    return tuple(networks)


def trusted_proxies() -> tuple[IPNetwork, ...]:
    """``PAYCOLLECT["TRUSTED_PROXIES"]``: addresses or networks (CIDR) of our own reverse proxies.

    Default: none, so the client IP is ``REMOTE_ADDR`` and ``X-Forwarded-For`` is only recorded.
    """
    entries = setting("TRUSTED_PROXIES", ())
    if isinstance(entries, str):
        entries = [entries]
    return _networks(tuple(str(entry) for entry in entries))


def client_ip(meta: Mapping[str, Any], proxies: Sequence[IPNetwork] | None = None) -> str | None:
    """The address that connected to our first trusted proxy (or to us): never a value a client chose.

    ``REMOTE_ADDR`` unless it is a trusted proxy; then ``X-Forwarded-For`` is read from the right,
    skipping trusted proxies, and the first other address is the client (anything to its left was
    written by the client itself and may be forged). An unreadable hop gives None: nothing can be
    said about who is behind it.
    """
    proxies = trusted_proxies() if proxies is None else proxies
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


def selected_headers(meta: Mapping[str, Any]) -> dict[str, str]:
    headers = {}
    for name in STORED_HEADERS:
        key = name.upper().replace("-", "_")
        value = meta.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}")
        if value:
            headers[name] = _scrub(_clean_text(str(value)))[:HEADER_MAX_CHARS]
    return headers


def _clean_text(text: str) -> str:
    # PostgreSQL text and jsonb refuse NUL characters; a body carrying one must still be stored.
    return text.replace("\x00", "\ufffd")


# --- storing a callback ----------------------------------------------------------------------------


@dataclass
class Received:
    """What the callback view answers, and the row it stored (None when nothing was stored)."""

    status: int
    callback: ReceivedCallback | None
    answer: dict[str, Any] = field(default_factory=lambda: {"received": True})


class _Refused(Exception):
    def __init__(self, status: int, reason: str, body: str = "", claims: dict[str, Any] | None = None):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.body = body
        self.claims = claims or {}


def max_callback_bytes() -> int:
    return int(setting("MAX_CALLBACK_BYTES", MAX_CALLBACK_BYTES))


def receive(request: HttpRequest, token_index: int) -> Received:
    """Store the callback POSTed in ``request`` and queue its verification after the commit.

    A new callback costs one INSERT; a redelivery three queries (the INSERT refused by the unique
    ``dedupe_key``, the original's lookup, the duplicate's INSERT), plus one when it has the
    original verified again. Invalid callbacks are stored too (state "invalid", with the reason)
    and answered 4xx.
    """
    base: dict[str, Any] = {
        "token_index": token_index,
        "remote_addr": client_ip(request.META),
        "headers": selected_headers(request.META),
    }
    try:
        text, claims = _read_and_parse(request)
    except _Refused as refused:
        callback = ReceivedCallback.objects.create(
            state=ReceivedCallback.INVALID,
            invalid_reason=refused.reason,
            body=_scrub(refused.body),
            **base,
            **refused.claims,
        )
        logger.warning("callback #%s refused (%s): %s", callback.pk, refused.status, refused.reason)
        return Received(refused.status, callback, {"received": False, "error": refused.reason})
    return _store(base, _scrub(text), claims)


def _scrub(text: str) -> str:
    """The body without any of our secrets (echoed secret values, URL tokens), wherever they appear:
    also in bodies that are not JSON, or are refused before the secret field is read."""
    secrets = setting("CALLBACK_SECRET", ())
    secrets = [secrets] if isinstance(secrets, str) else list(secrets)
    secrets += list(paycollect_settings.CALLBACK_TOKENS or [])
    for secret in map(str, secrets):
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def _scrub_all(value: Any) -> Any:
    """``_scrub`` over every text of what is stored (claims, custom fields): a token or secret the
    sender echoed anywhere is never stored. The depth is bounded by ``too_deep`` first."""
    if isinstance(value, str):
        return _scrub(value)
    if isinstance(value, dict):
        return {_scrub(str(k)): _scrub_all(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_all(v) for v in value]
    return value


def _read_and_parse(request: HttpRequest) -> tuple[str, dict[str, Any]]:
    limit = max_callback_bytes()
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
        document = json.loads(raw, parse_float=Decimal, parse_constant=_no_constant)
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
    hints = getattr(serializer, "hint_errors", {})
    claims = _scrub_all(_claims(serializer.validated_data, document, hints)) if valid else {}
    if secret_problem:
        # The claims are kept (when well formed) so the admin shows what the forgery pretended.
        raise _Refused(403, secret_problem, body=text, claims=claims)
    if not claims:
        reason = "wrong fields: " + _flatten(serializer.errors)
        if hints:
            reason += "; also malformed: " + _flatten(hints)
        raise _Refused(400, reason, body=text, claims={"hint_errors": _scrub_all(hints)})
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
    left = size
    while left > 0:
        part = stream.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


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


def _flatten(errors: Any, prefix: str = "") -> str:
    if isinstance(errors, Mapping):
        return "; ".join(
            _flatten(value, f"{prefix}{key}." if key != "non_field_errors" else prefix)
            for key, value in errors.items()
        )
    if isinstance(errors, list):
        return "; ".join(_flatten(item, prefix) for item in errors)
    return f"{prefix.rstrip('.')}: {errors}" if prefix else str(errors)


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


def callback_secret() -> tuple[str, list[str]]:
    """(field, accepted secrets): ``CALLBACK_SECRET_FIELD`` and ``CALLBACK_SECRET`` (text or a list,
    for rotation). No field or no secret: the check is off."""
    field_name = str(setting("CALLBACK_SECRET_FIELD", "") or "")
    secrets = setting("CALLBACK_SECRET", ())
    if isinstance(secrets, str):
        secrets = [secrets]
    accepted = [str(secret) for secret in secrets if secret]
    return (field_name, accepted) if field_name and accepted else ("", [])


def _check_secret(document: dict[str, Any], text: str) -> tuple[str, dict[str, Any], str]:
    """Check and remove the secret field. Returns (problem or "", the document without it, the body
    text with the sent value and our secrets redacted)."""
    field_name, accepted = callback_secret()
    if not field_name:
        return "", document, text
    sent = document.get(field_name)
    document = {key: value for key, value in document.items() if key != field_name}
    offered = sent.encode("utf-8", errors="surrogateescape") if isinstance(sent, str) else b""
    # Compared with every secret, in constant time, whatever the outcome.
    matches = [
        hmac.compare_digest(offered, secret.encode("utf-8", errors="surrogateescape")) for secret in accepted
    ]
    problem = ""
    if sent is None:
        problem = "the callback secret is missing"
    elif not any(matches) or not offered:
        problem = "the callback secret does not match"
    values = [*accepted, sent] if isinstance(sent, str) and sent else accepted
    return problem, document, _redact(text, field_name, values, document)


def _redact(text: str, field_name: str, values: Sequence[str], without: Mapping[str, Any]) -> str:
    """The raw body with the secret's JSON strings replaced; when an escaped spelling defeats that,
    the body re-written from the parsed document instead (exactness of the bytes matters less)."""
    for value in values:
        for spelling in {json.dumps(value), json.dumps(value, ensure_ascii=False)}:
            text = text.replace(spelling, json.dumps(REDACTED))
    try:
        again = json.loads(text, parse_float=Decimal, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        again = None
    if isinstance(again, dict) and again.get(field_name, REDACTED) == REDACTED:
        return text
    return json.dumps({**json_safe(dict(without)), field_name: REDACTED}, ensure_ascii=False)


# --- deduplication and queueing ------------------------------------------------------------------------


def dedupe_key(uuid: str, claimed_status: str) -> str:
    """One key per (transaction, claimed status): the uuid in its canonical form, whatever its spelling."""
    return f"{canonical_uuid(uuid)}|{claimed_status.upper()}"


def _store(base: dict[str, Any], text: str, claims: dict[str, Any]) -> Received:
    key = dedupe_key(claims["transaction_uuid"], claims["claimed_status"])
    fields = {**base, "body": text, **claims}
    for _attempt in range(2):
        now = timezone.now()
        try:
            with services.savepoint_if_atomic(ReceivedCallback):
                callback = ReceivedCallback.objects.create(
                    state=ReceivedCallback.QUEUED,
                    dedupe_key=key,
                    received_at=now,
                    queued_at=now,
                    next_attempt_at=now,
                    **fields,
                )
        except IntegrityError:
            original = (
                ReceivedCallback.objects.filter(dedupe_key=key)
                .select_related("transaction")
                .only("pk", "state", "claimed_status", "transaction_uuid", "transaction__status")
                .first()
            )
            if original is None:
                continue  # pruned a moment ago: this one is the first again
            duplicate = ReceivedCallback.objects.create(
                state=ReceivedCallback.DUPLICATE,
                duplicate_of=original,
                outcome=f"redelivery of callback #{original.pk}",
                **fields,
            )
            if _verify_again(original) and requeue(original.pk, states=(original.state,), fresh=True):
                transaction.on_commit(partial(enqueue, original.pk))
            logger.info("callback #%s is a redelivery of #%s", duplicate.pk, original.pk)
            return Received(200, duplicate)
        transaction.on_commit(partial(enqueue, callback.pk))
        logger.info(
            "callback #%s stored for %s (claims %s)",
            callback.pk,
            callback.transaction_uuid,
            callback.claimed_status,
        )
        return Received(200, callback)
    raise RuntimeError("the callback could not be stored")  # pragma: no cover (needs two prunes in a row)


def _verify_again(original: ReceivedCallback) -> bool:
    """Whether a redelivery should have its original verified again (the claim on the state seen
    makes it happen once, however many redeliveries arrive together).

    A redelivery is the sender saying "did you get it?". An original that was never verified (not
    queued, or failed after its retries) gets another chance. So does one whose verification found
    the transaction still open while it claimed an outcome: the service may have sent it before its
    own records said so. That second case waits until a fetch is due (``CALLBACK_FETCH_INTERVAL``).
    """
    if original.state in (ReceivedCallback.RECEIVED, ReceivedCallback.FAILED):
        return True
    txn = original.transaction
    return (
        original.state == ReceivedCallback.PROCESSED
        and txn is not None
        and txn.status in Transaction.OPEN_STATUSES
        and original.claimed_status.upper() not in Transaction.OPEN_STATUSES
        and services.callback_fetch_due(original.transaction_uuid)
    )


def requeue(callback_id: int, states: Sequence[str] = REPROCESSABLE_STATES, *, fresh: bool = True) -> bool:
    """Claim a stored callback for verification (state QUEUED), once: False when another state.

    ``fresh``: a person or the sender asks again, so only a fetch sent from now on answers it
    (``queued_at``); the sweep, which only hands on a question already asked, passes False.
    """
    now = timezone.now()
    changes: dict[str, Any] = {"state": ReceivedCallback.QUEUED, "next_attempt_at": now}
    if fresh:
        changes["queued_at"] = now
    claimed = ReceivedCallback.objects.filter(pk=callback_id, state__in=states).update(**changes)
    return bool(claimed)


#: Credentials in a URL (``redis://:password@host``), removed from what a failed queueing records.
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]*@")


def enqueue(callback_id: int, *, force: bool = False) -> None:
    """Hand a QUEUED callback to the Celery task; when that fails it stays stored, as RECEIVED, with the
    reason (shown in the admin), and the next sweep queues it again (nothing is lost and the sender
    still gets its 200). How long this waits for an unreachable broker is Celery's publish retry
    policy (``CELERY_TASK_PUBLISH_RETRY_POLICY``). ``force``: a person asked (see ``process_callback``)."""
    try:
        if force:
            tasks.process_callback.delay(callback_id, force=True)
        else:
            tasks.process_callback.delay(callback_id)
    except Exception as exc:
        logger.exception("callback #%s could not be queued for verification", callback_id)
        reason = _URL_CREDENTIALS.sub("***@", f"{type(exc).__name__}: {exc}")
        now = timezone.now()
        ReceivedCallback.objects.filter(pk=callback_id, state=ReceivedCallback.QUEUED).update(
            state=ReceivedCallback.RECEIVED,
            next_attempt_at=now,
            error=_scrub(
                f"could not be queued for verification at {now:%Y-%m-%d %H:%M:%S} UTC ({reason[:300]}); "
                "the sweep queues it again"
            ),
        )


# --- the sweep: nothing stays unverified because a message was lost ----------------------------------


def requeue_after() -> dt.timedelta:
    """``PAYCOLLECT["CALLBACK_REQUEUE_AFTER"]``: how long past its due time a queued callback is stuck."""
    return dt.timedelta(seconds=float(paycollect_settings.CALLBACK_REQUEUE_AFTER))


def stuck_filter(now: dt.datetime | None = None) -> Q:
    """The callbacks the sweep queues again: received ones (queueing failed) at once, and queued ones
    whose verification was due more than ``CALLBACK_REQUEUE_AFTER`` ago (a worker died with the
    message, the broker lost it, or the database was down while it ran)."""
    cutoff = (now or timezone.now()) - requeue_after()
    overdue = Q(next_attempt_at__lt=cutoff) | Q(next_attempt_at__isnull=True, received_at__lt=cutoff)
    return Q(state=ReceivedCallback.RECEIVED) | (Q(state=ReceivedCallback.QUEUED) & overdue)


#: Callbacks one sweep queues again at most (the rest wait for the next run, a minute later).
SWEEP_BATCH = 1000


@dataclass
class Sweep:
    """What one sweep did: the callbacks it queued again, and when the oldest of them was due."""

    requeued: list[int] = field(default_factory=list)
    oldest_due: dt.datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "requeued": len(self.requeued),
            "ids": self.requeued[:100],
            "oldest_due": self.oldest_due.isoformat() if self.oldest_due else None,
        }


def sweep(limit: int = SWEEP_BATCH) -> Sweep:
    """Queue again every stuck callback (see :func:`stuck_filter`), oldest first, each claimed once.

    Run every minute by the ``paycollect-sweep-callbacks`` beat entry; idempotent, so runs may
    overlap: the claim (a conditional UPDATE) hands each callback to one of them.
    """
    now = timezone.now()
    due = Coalesce("next_attempt_at", "received_at")
    rows = list(
        ReceivedCallback.objects.filter(stuck_filter(now))
        .annotate(due=due)
        .order_by("due", "pk")
        .values_list("pk", "due")[:limit]
    )
    result = Sweep()
    for pk, due_at in rows:
        claimed = ReceivedCallback.objects.filter(stuck_filter(now), pk=pk).update(
            state=ReceivedCallback.QUEUED, next_attempt_at=timezone.now()
        )
        if claimed:
            enqueue(pk)
            result.requeued.append(pk)
            result.oldest_due = due_at if result.oldest_due is None else min(result.oldest_due, due_at)
    if result.requeued:
        logger.warning(
            "sweep: queued %d stuck callback(s) again (the oldest due since %s)",
            len(result.requeued),
            result.oldest_due,
        )
    return result


def process_now(callback_id: int, *, force: bool = False) -> str:
    """Run the verification task here and now (the command); returns the callback's state after it."""
    import traceback

    try:
        tasks.process_callback.apply(args=[callback_id], kwargs={"force": force})
    except Exception as exc:  # the task records its failures; this is for one that escaped it
        services.callback_failed(callback_id, exc, traceback.format_exc())
    state: str = ReceivedCallback.objects.values_list("state", flat=True).get(pk=callback_id)
    return state


# --- browser returns ---------------------------------------------------------------------------------

PUBLIC_PENDING, PUBLIC_SUCCESSFUL, PUBLIC_FAILED = "PENDING", "SUCCESSFUL", "FAILED"


def public_status(txn: Transaction | None) -> str:
    """The only thing a return shows: PENDING, SUCCESSFUL or FAILED (REJECTED and ABANDONED too)."""
    if txn is None or txn.status in Transaction.OPEN_STATUSES:
        return PUBLIC_PENDING
    return PUBLIC_SUCCESSFUL if txn.status == Transaction.SUCCESSFUL else PUBLIC_FAILED


def return_timeout() -> tuple[float, float]:
    connect, read = setting("RETURN_TIMEOUT", RETURN_TIMEOUT)
    return float(connect), float(read)


def verified_status(uuid: str) -> str:
    """The status of transaction ``uuid`` as the service says, for a customer's browser.

    * A transaction of ours still open is fetched (short timeout, at most once per
      ``STATUS_SYNC_INTERVAL``); when the service is slow or down, it stays PENDING.
    * A uuid we do not store is fetched only when a callback named it (a direct order's payment,
      a renewal: they become known by their callback); otherwise it is PENDING, exactly as an open
      transaction would be, and the service is not asked about uuids we never issued nor heard of.
    """
    uuid = canonical_uuid(uuid)
    txn = Transaction.objects.filter(uuid=uuid).first()
    if txn is not None and txn.status not in Transaction.OPEN_STATUSES:
        return public_status(txn)
    heard_of = None
    if txn is None:
        heard_of = (
            ReceivedCallback.objects.filter(transaction_uuid=uuid)
            .exclude(state=ReceivedCallback.INVALID)
            .only("merchant_id")
            .first()
        )
        if heard_of is None:
            return PUBLIC_PENDING
    if not _may_fetch(uuid):
        return public_status(txn)
    try:
        txn = services.sync_transaction(
            txn,
            uuid=uuid,
            community_id=services.community_of(heard_of.merchant_id) if heard_of is not None else None,
            source="return",
            timeout=return_timeout(),
            max_network_retries=0,  # the customer is waiting: the page polls instead of us retrying
        )
    except NotFound:
        # The service does not know it: a transaction of ours stays as it is; a uuid we only heard
        # of from a callback is nobody's payment.
        return public_status(txn) if txn is not None else PUBLIC_FAILED
    except Exception as error:  # the customer sees the waiting page, never an error
        logger.warning("return for %s: the service could not be read (%s)", uuid, type(error).__name__)
        return public_status(txn)
    return public_status(txn)


def uuid_for_service_id(service_id: int) -> str | None:
    """The uuid of the one transaction of ours whose service id (Pay's ``transaction_id``, a fetched
    ``id``) is ``service_id``; None when there is none, or more than one (ids of several environments).

    For the browser return that names a transaction by this id alone. The id is a pointer into what we
    stored, never trusted further: the status still comes from a fetch, and an id we did not store is
    not looked up at the service.
    """
    found = Transaction.objects.filter(service_id=service_id, uuid__isnull=False).values_list(
        "uuid", flat=True
    )
    uuids = list(found[:2])
    return uuids[0] if len(uuids) == 1 else None


def _may_fetch(uuid: str) -> bool:
    interval = float(STATUS_SYNC_INTERVAL)
    if interval <= 0:
        return True
    # cache.add is atomic in every backend: one fetch per interval per uuid (per cache).
    return bool(cache.add(f"paycollect:return-fetch:{uuid.lower()}", True, timeout=math.ceil(interval)))
