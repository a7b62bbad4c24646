"""The service's response envelope, and how an HTTP answer becomes an Envelope or an error."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class _Parsed:
    code: int
    message: str
    errors: list[Any]
    data: dict[str, Any]
    count: int | None
    next: str | None
    previous: str | None
    raw: Any


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _parse(payload: Any) -> _Parsed | None:
    """The envelope in ``payload``, or None when it is not one (no ``status.code`` integer)."""
    if not isinstance(payload, dict):
        return None
    status = payload.get("status")
    if not isinstance(status, dict):
        return None
    code = whole_number(status.get("code"))
    if code is None or isinstance(status.get("code"), str):
        return None
    errors = status.get("errors")
    if errors is None:
        errors = []
    elif isinstance(errors, dict) or not isinstance(errors, list):
        errors = [errors]
    message = status.get("message")
    data = payload.get("data")
    return _Parsed(
        code=code,
        message=message if isinstance(message, str) else ("" if message is None else str(message)),
        errors=errors,
        # The spec's data is an object; anything else is kept in ``raw`` and read as empty.
        data=data if isinstance(data, dict) else {},
        count=_optional_int(payload.get("count")),
        next=_optional_str(payload.get("next")),
        previous=_optional_str(payload.get("previous")),
        raw=payload,
    )


def _messages(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value if not isinstance(item, (dict, list))]
    if value is None:
        return []
    return [str(value)]


def _flatten(prefix: str, value: Any, out: dict[str, list[str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
        return
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        # A list of per-item errors, e.g. custom_fields: [{}, {"field_label": [...]}].
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _flatten(f"{prefix}.{index}" if prefix else str(index), item, out)
        plain = _messages(value)
        if plain:
            out.setdefault(prefix or NON_FIELD_ERRORS, []).extend(plain)
        return
    messages = _messages(value)
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


_BY_CODE: tuple[tuple[Callable[[int], bool], type[ApiError]], ...] = (
    (lambda c: c in (401, 403), AuthenticationError),
    (lambda c: c == 404, NotFoundError),
    (lambda c: c == 429, RateLimitError),
    (lambda c: c >= 500, ServerError),
    (lambda c: c >= 400, ValidationError),
)


def _class_for(code: int) -> type[ApiError]:
    for matches, cls in _BY_CODE:
        if matches(code):
            return cls
    return ValidationError


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
    parsed: _Parsed | None = None
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

    failed = http_status >= 400 or parsed.code >= 400
    envelope: Envelope[Any] = Envelope(
        http_status=http_status,
        code=parsed.code,
        message=parsed.message,
        errors=parsed.errors,
        data=parsed.data,
        count=parsed.count,
        next=parsed.next,
        previous=parsed.previous,
        result=None,
        raw=parsed.raw,
        call=call,
    )
    if failed:
        cls = _class_for(http_status if http_status >= 400 else parsed.code)
        text = scrub(parsed.message) or "request refused"
        common: dict[str, Any] = {
            "http_status": http_status,
            "envelope": envelope,
            "body_excerpt": snippet,
            "call": call,
        }
        if cls is ValidationError:
            errors = walk_texts(parsed.errors, scrub)
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

    return Envelope(
        http_status=http_status,
        code=parsed.code,
        message=parsed.message,
        errors=parsed.errors,
        data=parsed.data,
        count=parsed.count,
        next=parsed.next,
        previous=parsed.previous,
        result=result_from(parsed.data),
        raw=parsed.raw,
        call=call,
    )
