"""The spec's response envelope, on every response (errors included), and exact JSON for money."""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.http import HttpResponse

from ..client.money import loads_json


def dumps(value: Any) -> str:
    """JSON text in which a Decimal is written as a JSON number with its exact digits (100.00, not 100.0).

    The standard encoder writes Decimals only as strings or through float. So each Decimal first becomes
    a marker string holding its digits (the C encoder does the walk), and the markers are then replaced by
    the bare digits. The marker carries a per-process random nonce, so no string in the data can imitate it.
    """
    text = json.dumps(value, default=_mark, ensure_ascii=False, separators=(",", ":"))
    return _MARKED.sub(r"\1", text) if _NONCE in text else text


_NONCE = secrets.token_hex(8)
_MARKED = re.compile(rf'"{_NONCE}:(-?[0-9]+(?:\.[0-9]+)?)"')


def _mark(value: Any) -> Any:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError("non-finite amount")
        return f"{_NONCE}:{value:f}"
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def loads(raw: bytes | str) -> Any:
    """Parse JSON with every non-integer number as an exact Decimal; NaN and Infinity are rejected."""
    return loads_json(raw)


class DecimalJSONEncoder(json.JSONEncoder):
    """For JSONFields holding client input: Decimals stay exact numbers in storage."""

    def encode(self, o: Any) -> str:
        return dumps(o)


class DecimalJSONDecoder(json.JSONDecoder):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("parse_float", Decimal)
        super().__init__(**kwargs)


def envelope(
    code: int,
    data: Mapping[str, Any] | None = None,
    message: str = "success",
    errors: list[Any] | None = None,
) -> dict[str, Any]:
    return {
        "status": {"code": code, "message": message, "errors": errors or []},
        "data": dict(data) if data is not None else {},
        "count": None,
        "next": None,
        "previous": None,
    }


def envelope_response(
    code: int,
    data: Mapping[str, Any] | None = None,
    message: str = "success",
    errors: list[Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpResponse:
    response = HttpResponse(
        dumps(envelope(code, data, message, errors)),
        content_type="application/json",
        status=code,
    )
    # Explicit, so keep-alive works whatever middleware the hosting project has.
    response["Content-Length"] = str(len(response.content))
    for name, value in (headers or {}).items():
        response[name] = value
    return response


class ApiError(Exception):
    """An error answered as an envelope; ``errors`` is the spec's list of ``{field: [messages]}`` objects."""

    def __init__(
        self,
        code: int,
        message: str,
        errors: list[Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.errors = errors or []
        self.headers = dict(headers or {})

    @classmethod
    def field(cls, field: str, message: str, code: int = 400) -> ApiError:
        return cls(code, _summary(code, [field]), [{field: [message]}])

    @classmethod
    def validation(cls, errors: Mapping[str, Any]) -> ApiError:
        return cls(400, _summary(400, [str(name) for name in errors]), errors_list(errors))

    def response(self) -> HttpResponse:
        return envelope_response(self.code, None, self.message, self.errors, self.headers)


_MESSAGES = {
    400: "validation error",
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
    405: "method not allowed",
    500: "server error",
}


def _summary(code: int, fields: list[str]) -> str:
    """``status.message``: the short phrase, and for a validation error the fields it names, so that a
    client showing only the message still says what to fix (``validation error: original_amount``)."""
    phrase = _MESSAGES.get(code, "error")
    named = [name for name in fields if name != "non_field_errors"]
    if code != 400 or not named:
        return phrase
    shown = ", ".join(named[:5]) + (", …" if len(named) > 5 else "")
    return f"{phrase}: {shown}"


def message_for(code: int) -> str:
    return _MESSAGES.get(code, "error")


def errors_list(errors: Mapping[str, Any]) -> list[dict[str, Any]]:
    """DRF's error dict as the spec's list: one object per field; one level of nesting is kept (as for
    billing_data), anything deeper or per list item becomes plain messages, so every leaf is a list of
    strings as the spec's error shape says."""
    return [{str(field): _normalise(detail, nested=True)} for field, detail in errors.items()]


def _normalise(detail: Any, nested: bool) -> Any:
    if isinstance(detail, Mapping):
        per_item = bool(detail) and all(str(key).isdigit() for key in detail)
        if nested and not per_item:
            return {str(key): _normalise(value, nested=False) for key, value in detail.items()}
        prefix = "[{}] " if per_item else "{}: "
        return [f"{prefix.format(key)}{text}" for key, value in detail.items() for text in _flatten(value)]
    if isinstance(detail, list):
        messages: list[str] = []
        for index, item in enumerate(detail):
            if isinstance(item, str):
                messages.append(str(item))
            else:
                messages.extend(f"[{index}] {text}" for text in _flatten(item))
        return messages
    return [str(detail)]


def _flatten(detail: Any, prefix: str = "") -> list[str]:
    if isinstance(detail, Mapping):
        out: list[str] = []
        for key, value in detail.items():
            out.extend(_flatten(value, f"{prefix}{key}: "))
        return out
    if isinstance(detail, list):
        out = []
        for item in detail:
            out.extend(_flatten(item, prefix))
        return out
    return [f"{prefix}{detail}"]
