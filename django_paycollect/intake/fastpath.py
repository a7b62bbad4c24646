"""The plain callback bodies the service sends, read faster, with the one parser's results.

:class:`~.parsing.CallbackBodySerializer` is the parser; DRF's per-instance machinery (copying its fields,
validating each hint twice) about doubles a callback's CPU (``benchmarks/callback_ingest.py``: 0.45 of a
bare view's throughput without this module, 0.8 to 0.9 with it).
``tests/fuzz/test_fuzz_callback_claims.py`` proves both readings equal, hints and their words included.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast

from rest_framework import serializers

from ..ids import canonical_uuid, looks_like_uuid
from .parsing import (
    NO_STATUS_SENT,
    CallbackBodySerializer,
    RecurringClaimSerializer,
    claimed_uuid,
    is_transaction_id,
)


def _char(field: Any, value: Any) -> Any:
    """The result of ``field`` (a CharField) for ``value``, or ``_SLOW`` when only the serializer can tell."""
    if value is None:
        return None if field.allow_null else _SLOW
    if not isinstance(value, str):
        return _SLOW  # numbers become text in DRF: left to it
    text = value.strip() if field.trim_whitespace else value
    if "\x00" in text or (not text.isascii() and not _encodable(text)):
        return _SLOW  # DRF refuses NUL and lone surrogates: its messages say so
    too_long = field.max_length is not None and len(text) > field.max_length
    return _SLOW if too_long or (not text and not field.allow_blank) else text


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SLOW = object()
_BODY = CallbackBodySerializer._declared_fields
_CHARS = {name: _BODY[name] for name in ("member_id", "payment_id", "merchant_id", "message")}
_STATUS, _UUID = _BODY["transaction_status"], _BODY["transaction_uuid"]
_PARENT = RecurringClaimSerializer._declared_fields["parent_transaction"]
_AMOUNT = cast(serializers.DecimalField, _BODY["total_amount"])
_PIASTERS = cast(serializers.IntegerField, _BODY["total_amount_piasters"])
_CENTS = Decimal("0.01")
_PLACES: int = _AMOUNT.decimal_places or 0
_WHOLE_DIGITS: int = (_AMOUNT.max_digits or 0) - _PLACES
_PIASTERS_RANGE: tuple[int, int] = (int(_PIASTERS.min_value or 0), int(_PIASTERS.max_value or 0))


def _uuid(field: Any, value: Any) -> Any:
    text = _char(field, value)
    if text is _SLOW or not text:
        return text
    return canonical_uuid(text) if looks_like_uuid(text) else _SLOW


def _amount(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        return _SLOW
    number = Decimal(value)
    if not number.is_finite():
        return _SLOW
    exponent = number.as_tuple().exponent
    # From the exponent, never through int(): a number of thousands of digits must not be converted.
    whole_digits = max(number.adjusted() + 1, 0) if number else 0
    if not isinstance(exponent, int) or exponent < -_PLACES:
        return _SLOW
    if whole_digits > _WHOLE_DIGITS:
        return _SLOW
    return number.quantize(_CENTS)


def _piasters(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return _SLOW
    return value if _PIASTERS_RANGE[0] <= value <= _PIASTERS_RANGE[1] else _SLOW


def _recurring(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict):
        return _SLOW
    sub = value.get("is_sub_payment")
    if sub is not None and not isinstance(sub, bool):
        return _SLOW
    parent = _uuid(_PARENT, value.get("parent_transaction", ""))
    if parent is _SLOW:
        return _SLOW
    return {"is_sub_payment": sub, "parent_transaction": parent if parent is not None else None}


def fast_callback_claims(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]] | None:
    """``CallbackBodySerializer``'s ``validated_data`` and ``hint_errors`` for a body in the plain shapes
    the service sends (text as text, amounts as numbers), without DRF's per-instance machinery; None when
    the body needs the serializer (anything else, malformed hints, errors), which then decides.

    The rules are the serializer's own: lengths, blank and null come from its declared fields, the uuid
    rules from the same helpers.
    """
    data: dict[str, Any] = {}
    uuid = _uuid(_UUID, document.get("transaction_uuid", ""))
    status = _char(_STATUS, document.get("transaction_status", ""))
    other = document.get("transaction_id")
    if uuid is _SLOW or status is _SLOW or uuid is None or status is None:
        return None
    if other is not None and not is_transaction_id(other):
        return None
    data["transaction_uuid"], data["transaction_id"], data["transaction_status"] = uuid, other, status
    for name, read in (
        ("total_amount", _amount),
        ("total_amount_piasters", _piasters),
        ("recurring", _recurring),
    ):
        value = read(document.get(name))
        if value is _SLOW:
            return None
        data[name] = value
    for name, field in _CHARS.items():
        if name in document:
            value = _char(field, document[name])
            if value is _SLOW:
                return None
            data[name] = value
    try:
        data["transaction_uuid"] = claimed_uuid(data)
    except serializers.ValidationError:
        return None
    if not data["transaction_uuid"]:
        return None
    hints = {} if data["transaction_status"] else {"transaction_status": [str(NO_STATUS_SENT)]}
    return data, hints
