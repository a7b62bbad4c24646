"""The payable hook of the API tests: what each reference costs, decided here and never by the device."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django_paycollect.api.payables import Payable, PayableRefused

PRICES = {"book": Decimal("100.00"), "ticket": Decimal("250.00"), "pen": Decimal("12.50")}
PHONE = "+201001234567"


def resolve(request: Any, reference: str) -> Payable | None:
    if reference == "sold-out":
        raise PayableRefused("Sold out.")
    if (
        reference == "shared"
    ):  # a reference every customer shares: the API must not hand one's payment to another
        return Payable(
            amount=Decimal("40.00"), merchant_reference="shared", billing_data={"phone_number": PHONE}
        )
    if reference == "gift":  # a payable that knows no phone: the customer's own, if any, is needed
        return Payable(
            amount=Decimal("100.00"), currency="EGP", merchant_reference=f"gift-user-{request.user.pk}"
        )
    if reference == "float-priced":
        return Payable(amount=40.5)  # type: ignore[arg-type]  # a resolver's bug: refused as configuration
    if reference not in PRICES:
        return None
    # One purchase of one customer: the reference the transaction is stored under names the user.
    return Payable(
        amount=PRICES[reference],
        currency="EGP",
        merchant_reference=f"{reference}-user-{request.user.pk}",
        billing_data={"phone_number": PHONE},
    )
