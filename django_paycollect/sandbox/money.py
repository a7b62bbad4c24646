"""Money helpers: ``decimal.Decimal`` in the main unit, two decimal places, never float."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

# One definition of the spec's currencies and of piasters, shared with the client.
from ..client.money import CENT, from_piasters, to_piasters
from ..client.types import CURRENCIES, DEFAULT_CURRENCY

__all__ = ["CENT", "CURRENCIES", "DEFAULT_CURRENCY", "from_piasters", "quantize", "text", "to_piasters"]


def quantize(amount: Decimal) -> Decimal:
    """Round to piasters, half up (how a printed bill rounds)."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def text(amount: Decimal) -> str:
    """Decimal text with two decimals, as the Transaction resource writes total_amount ("12.50")."""
    return f"{quantize(amount):f}"


def integer_text(amount: Decimal) -> str:
    """The Pay redirect's ``amount``, an integer as the spec types it: the whole units, piasters dropped
    (``53.25`` -> ``"53"``). ``amount_piasters`` beside it carries the exact amount."""
    return str(int(quantize(amount)))


def float_text(amount: Decimal) -> str:
    """A number as a float is written (the Direct order redirect's types), from its exact Decimal:
    ``53.25`` -> ``"53.25"``, ``53.20`` -> ``"53.2"``, ``5325`` -> ``"5325.0"``. No float is involved."""
    value = amount.normalize()
    if value == value.to_integral_value():
        return f"{int(value)}.0"
    return f"{value:f}"
