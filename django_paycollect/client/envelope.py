"""The service's response envelope, and how an HTTP answer becomes an Envelope or an error."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from .errors import (
    NON_FIELD_ERRORS,
    ApiError,
    AuthenticationError,
    NotFoundError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
)
from .money import clip_depth, loads_json
from .redaction import walk_texts
from .types import whole_number

__all__ = ["CallInfo", "Envelope", "field_errors_from", "interpret"]

T = TypeVar("T")

EXCERPT_CHARS = 300


@dataclass(frozen=True)
class CallInfo:
    """What one call of the client sent and how it went; the service layer stores it.

    ``request_body`` is the body as built (money as Decimal), without headers and without any
    secret field; PII redaction is the storer's job. ``attempts`` counts the times it was sent
    or tried; ``duration`` is seconds over all attempts.
    """

    operation: str
    method: str
    path: str
    request_body: Any
    attempts: int
    duration: float
    http_status: int | None = None


@dataclass(frozen=True)
class Envelope(Generic[T]):
    """A successful answer: the spec's envelope, the HTTP status, and a typed view of ``data``.

    ``data`` is the payload exactly as received (unknown fields included); ``result`` reads the
    fields the spec names. ``raw`` is the whole parsed body.
    """

    http_status: int
    code: int
    message: str
    errors: list[Any]
    data: dict[str, Any]
    count: int | None
    next: str | None
    previous: str | None
    result: T
    raw: Any = field(default=None, repr=False, compare=False)
    call: CallInfo | None = field(default=None, repr=False, compare=False)


def _parse(payload: Any) -> dict[str, Any] | None:
    """The envelope's fields in ``payload``, or None when it is not one (no ``status.code`` integer)."""
    status = payload.get("status") if isinstance(payload, dict) else None
    if not isinstance(status, dict):
        return None
    code = whole_number(status.get("code"))
    if code is None or isinstance(status.get("code"), str):
        return None
    errors, message = status.get("errors"), status.get("message")
    data, count, next_, previous = (payload.get(key) for key in ("data", "count", "next", "previous"))
    return {
        "code": code,
        "message": message if isinstance(message, str) else ("" if message is None else str(message)),
        "errors": [] if errors is None else errors if isinstance(errors, list) else [errors],
        # The spec's data is an object; anything else is kept in ``raw`` and read as empty.
        "data": data if isinstance(data, dict) else {},
        "count": count if isinstance(count, int) and not isinstance(count, bool) else None,
        "next": next_ if isinstance(next_, str) else None,
        "previous": previous if isinstance(previous, str) else None,
        "raw": payload,
    }


def _flatten(prefix: str, value: Any, out: dict[str, list[str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
        return
    items = value if isinstance(value, list) else [] if value is None else [value]
    # A list may hold per-item errors, e.g. custom_fields: [{}, {"field_label": [...]}].
    for index, item in enumerate(items):
        if isinstance(item, (dict, list)):
            _flatten(f"{prefix}.{index}" if prefix else str(index), item, out)
    messages = [str(item) for item in items if not isinstance(item, (dict, list))]
    if messages:
        out.setdefault(prefix or NON_FIELD_ERRORS, []).extend(messages)


def field_errors_from(errors: list[Any]) -> dict[str, list[str]]:
    """Normalise the service's error list to ``{"dotted.field.path": [messages]}``.

    ``[{"amount": ["too small"]}, {"billing_data": {"phone_number": ["bad"]}}]`` becomes
    ``{"amount": ["too small"], "billing_data.phone_number": ["bad"]}``. Bare strings go under
    ``"__all__"``, as Django does with errors that belong to no field.
    """
    out: dict[str, list[str]] = {}
    for item in errors:
        _flatten("", item, out)
    return out


def excerpt(body: bytes, scrub: Callable[[str], str]) -> str:
    # Scrub before cutting, or a secret straddling the cut would survive in part. The first
    # 64 KiB are plenty to find a secret that ends up inside the first 300 characters.
    text = scrub(body[:65536].decode("utf-8", errors="replace"))
    return re.sub(r"\s+", " ", text).strip()[:EXCERPT_CHARS]


_BY_STATUS: dict[int, type[ApiError]] = {
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFoundError,
    429: RateLimitError,
}


def interpret(
    *,
    http_status: int,
    body: bytes,
    content_type: str,
    result_from: Callable[[dict[str, Any]], T],
    scrub: Callable[[str], str],
    changes_state: bool,
    retry_after: float | None,
    call: CallInfo,
    location: str = "",
) -> Envelope[T]:
    """Turn one HTTP answer into an Envelope, or raise the matching :class:`ApiError`.

    ``changes_state`` marks answers that do not prove the service did nothing (5xx, anything
    that is not an envelope) as ``outcome_unknown``, so the call is reconciled, never resent.
    """
    snippet = excerpt(body, scrub)
    parsed: dict[str, Any] | None = None
    problem = "empty body"
    if body.strip():
        try:
            # Absurd nesting is clipped, not refused: a 400 is still a refusal, whatever its errors hold.
            parsed = _parse(clip_depth(loads_json(body)))
            problem = "JSON that is not the service's envelope"
        except (ValueError, RecursionError):
            kind = "HTML" if "html" in content_type.lower() or snippet.lstrip().startswith("<") else "text"
            problem = f"{kind} instead of JSON"

    if 300 <= http_status < 400:
        # Redirects are never followed: a POST turned into a GET would lose its body.
        parsed, problem = None, f"redirect to {scrub(location)!r}; check base_url"
    if parsed is None:
        if http_status == 429:
            raise RateLimitError(
                "rate limited",
                http_status=http_status,
                body_excerpt=snippet,
                call=call,
                retry_after=retry_after,
            )
        raise UnexpectedResponseError(
            f"unexpected answer from {call.method} {call.path}: {problem}",
            http_status=http_status,
            body_excerpt=snippet,
            call=call,
            outcome_unknown=changes_state,
        )

    envelope: Envelope[Any] = Envelope(http_status=http_status, result=None, call=call, **parsed)
    if http_status >= 400 or envelope.code >= 400:
        code = http_status if http_status >= 400 else envelope.code
        cls = _BY_STATUS.get(code) or (ServerError if code >= 500 else ValidationError)
        text = scrub(envelope.message) or "request refused"
        common: dict[str, Any] = {
            "http_status": http_status,
            "envelope": envelope,
            "body_excerpt": snippet,
            "call": call,
        }
        if cls is ValidationError:
            errors = walk_texts(envelope.errors, scrub)
            raise ValidationError(
                text,
                field_errors=field_errors_from(errors),
                errors=errors,
                outcome_unknown=False,
                **common,
            )
        if cls is RateLimitError:
            raise RateLimitError(text, retry_after=retry_after, **common)
        raise cls(text, outcome_unknown=changes_state and cls is ServerError, **common)
    return replace(envelope, result=result_from(envelope.data))
