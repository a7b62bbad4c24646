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


def whole_or_text(amount: Decimal) -> str:
    """The Pay redirect's ``amount`` (typed integer by the spec): "100" for whole amounts, "12.50" otherwise.

    Truncating to an integer would lose piasters, so fractional amounts stay exact.
    """
    q = quantize(amount)
    if q == q.to_integral_value():
        return str(int(q))
    return f"{q:f}"
