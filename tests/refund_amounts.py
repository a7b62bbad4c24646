"""The one table of refund amounts every surface is tested with: the service layer, the REST API, the admin's
refund page and the refund task read a refund's amount through ``services.refund_amount`` and must agree.

Each case refunds part of a paid 100.00 payment, or is refused naming ``amount`` with the words given. "All
that is still refundable" is asked only by leaving the amount out (:data:`OMITTED`); a blank, whitespace or
null is refused everywhere, never taken for "all" (a staff front end whose box is empty sends one).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

#: What the refunded payment was paid.
PAID = Decimal("100.00")


class _Omitted:
    def __repr__(self) -> str:
        return "OMITTED"


#: The amount left out: no argument, no key in the body.
OMITTED: Any = _Omitted()

EMPTY = "An amount is required (e.g. 12.50); an empty amount does not mean all that is still refundable."


@dataclass(frozen=True)
class AmountCase:
    id: str
    #: What the caller gives as the amount (OMITTED: nothing).
    given: Any
    #: The refund made of the paid 100.00; None when refused.
    refunds: Decimal | None
    #: Words of the refusal, on the ``amount`` field.
    says: str = ""


AMOUNTS = [
    AmountCase("omitted", OMITTED, PAID),
    AmountCase("empty", "", None, EMPTY),
    AmountCase("spaces", "   ", None, EMPTY),
    AmountCase("tab-newline", "\t\n", None, EMPTY),
    AmountCase("null", None, None, EMPTY),
    AmountCase("zero", "0", None, "greater than or equal to 0.01"),
    AmountCase("negative", "-1", None, "greater than or equal to 0.01"),
    AmountCase("three-decimals", "1.001", None, "1.001 has more than two decimals"),
    AmountCase("word", "abc", None, "'abc' is not a decimal amount."),
    AmountCase("nan", "NaN", None, "NaN (not a number) is not an amount."),
    AmountCase("ten", "10.00", Decimal("10.00")),
    AmountCase("padded", " 12.5 ", Decimal("12.50")),
]


def on_the_refund_page(case: AmountCase) -> AmountCase:
    """The admin's refund page has no way to leave the amount out: its box is always sent, filled with what
    is still refundable (that is how "all" is asked there). A post without the box is refused as a blank."""
    if case.given is OMITTED:
        return AmountCase(case.id, OMITTED, None, EMPTY)
    return case


def case_id(case: AmountCase) -> str:
    return case.id
