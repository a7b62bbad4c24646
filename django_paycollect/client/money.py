"""Money at the service's boundary.

The service speaks of money three ways: decimal text in transactions ("12.50"), JSON numbers in
prepare amount, callbacks and request bodies, and integer piasters (1/100 of the main unit).
Inside this package money is always :class:`decimal.Decimal`; these helpers are the only places
that cross between the forms. Floats are refused: a binary float cannot hold 0.10 exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = [
    "CENT",
    "MoneyError",
    "dumps_json",
    "exact_decimal",
    "format_amount",
    "from_piasters",
    "loads_json",
    "to_piasters",
    "too_deep",
]

CENT = Decimal("0.01")


class MoneyError(ValueError):
    """A value that is not an exact amount of money.

    ``code`` names the rule it breaks and ``params`` the values its message names (the checks of
    :mod:`~django_paycollect.client.validation` report them, so the Django app can word them).
    """

    def __init__(self, message: str, code: str = "amount_invalid", **params: Any) -> None:
        super().__init__(message)
        self.code = code
        self.params = params


def exact_decimal(value: Any) -> Decimal:
    """Turn decimal text, an int or a Decimal into a finite Decimal, exactly.

    ``float`` is refused (use ``Decimal("12.50")``); so are booleans, NaN and infinities.
    """
    if isinstance(value, (bool, float)):
        raise _wrong_type(value)
    if isinstance(value, Decimal):
        amount = value
    elif isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, str):
        try:
            amount = Decimal(value.strip())
        except InvalidOperation:
            raise MoneyError(
                f"{value!r} is not a decimal amount", "amount_invalid", value=repr(value)
            ) from None
    else:
        raise _wrong_type(value)
    if not amount.is_finite():
        raise MoneyError(f"{value!r} is not a finite amount", "amount_not_finite", value=repr(value))
    return amount


def _wrong_type(value: Any) -> MoneyError:
    kind = type(value).__name__
    return MoneyError(f"amounts must be Decimal, int or decimal text, not {kind}", "amount_type", type=kind)


def _cents(amount: Decimal) -> Decimal:
    try:
        cents = amount.quantize(CENT)
    except InvalidOperation:  # too many digits for the context's precision
        raise MoneyError(f"{amount} is too large", "amount_too_large", value=str(amount)) from None
    if cents != amount:
        # A third decimal is an error, never rounded away.
        raise MoneyError(f"{amount} has more than two decimals", "amount_decimals", value=str(amount))
    return cents


def to_piasters(value: Any) -> int:
    """``Decimal("12.50")`` -> ``1250``. Raises :class:`MoneyError` on a third decimal."""
    return int(_cents(exact_decimal(value)) * 100)


def from_piasters(piasters: Any) -> Decimal:
    """``1250`` -> ``Decimal("12.50")``.

    Accepts an int, or a whole-number Decimal or text (callbacks carry piasters as JSON numbers,
    sometimes written ``1250.0``). A fractional piaster is refused.
    """
    if isinstance(piasters, bool):
        raise MoneyError("piasters must be a whole number, not a boolean", "piasters_boolean")
    amount = exact_decimal(piasters)
    if amount != amount.to_integral_value():
        raise MoneyError(
            f"{piasters!r} is not a whole number of piasters", "piasters_fraction", value=repr(piasters)
        )
    return _cents(amount / 100)


def format_amount(value: Any) -> str:
    """The wire form of an amount: plain decimal text with exactly two decimals (``"12.50"``)."""
    return format(_cents(exact_decimal(value)), "f")


def dumps_json(value: Any) -> str:
    """Serialise a request body; every :class:`~decimal.Decimal` becomes a two-decimal JSON number."""
    if isinstance(value, Decimal):
        # Decimals are money: a JSON number with two decimals, no float ever involved.
        return format_amount(value)
    if isinstance(value, Mapping):
        items = (f"{json.dumps(str(key))}: {dumps_json(item)}" for key, item in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return "[" + ", ".join(dumps_json(item) for item in value) + "]"
    if isinstance(value, float):
        raise MoneyError("floats are not written into request bodies; use Decimal", "float_in_body")
    # str, int, bool, None: the standard encoder is exact for these.
    return json.dumps(value)


#: Deeper JSON than this is refused: nothing the service sends nests so deep, and recursive walks
#: (ours, or a caller's) would overflow the stack on what the parser still accepts.
MAX_JSON_DEPTH = 64


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON nests deeper than ``limit`` (a loop, not recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


TOO_DEEP = "<nested too deeply>"


def clip_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> Any:
    """A copy of parsed JSON with whatever nests deeper than ``limit`` replaced by :data:`TOO_DEEP`.

    Built with a loop, not recursion, so that every later walk (field errors, storage) is safe.
    """
    if not isinstance(value, (dict, list)):
        return value
    root: Any = {} if isinstance(value, dict) else [None] * len(value)
    stack: list[tuple[Any, Any, int]] = [(value, root, 1)]
    while stack:
        source, target, depth = stack.pop()
        for key, child in source.items() if isinstance(source, dict) else enumerate(source):
            if not isinstance(child, (dict, list)):
                target[key] = child
            elif depth >= limit:
                target[key] = TOO_DEEP
            else:
                target[key] = {} if isinstance(child, dict) else [None] * len(child)
                stack.append((child, target[key], depth + 1))
    return root


def loads_json(text: str | bytes) -> Any:
    """Parse a response body with every JSON number that has a fraction read as a Decimal."""
    return json.loads(text, parse_float=Decimal, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON and never an amount.
    raise ValueError(f"{name} is not a JSON value")
