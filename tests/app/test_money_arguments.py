"""Money is Decimal end to end: every entry point of the service layer refuses a float, NaN, an infinity or
a third decimal with a PaymentRefused naming the field, before any row is written or any request sent."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from django_paycollect import services, tasks
from django_paycollect.exceptions import PaymentRefused
from django_paycollect.models import ApiCall, DirectOrder, Refund, Transaction
from tests.conftest import BILLING

pytestmark = pytest.mark.django_db(transaction=True)

#: (value, what the message must say)
BAD_AMOUNTS = [
    (10.5, "not the float 10.5"),
    (0.1 + 0.2, "not the float 0.30000000000000004"),
    (100.0, "not the float 100.0"),
    (float("nan"), "not the float nan"),
    (float("inf"), "not the float inf"),
    (Decimal("NaN"), "NaN (not a number) is not an amount"),
    (Decimal("sNaN"), "NaN (not a number) is not an amount"),
    (Decimal("Infinity"), "An infinite value is not an amount"),
    (Decimal("-Infinity"), "An infinite value is not an amount"),
    ("Infinity", "An infinite value is not an amount"),
    (Decimal("10.505"), "10.505 has more than two decimals"),
    ("0.001", "0.001 has more than two decimals"),
    (Decimal("1E+999999"), "too large to be an amount"),
    (True, "not bool"),
    ("ten", "'ten' is not a decimal amount"),
    ([10], "not list"),
]

ORDER = {
    "name": "Summer camp",
    "payment_methods": ["card"],
    "customer_name": "Mona Ali",
    "customer_email": "mona@example.com",
    "customer_mobile": "+201001234567",
}


def entry_points(paid: Transaction) -> dict[str, Callable[[Any], Any]]:
    """Each service-layer entry point that takes an amount, called with ``value`` in one money field."""
    return {
        "start_payment.amount": lambda v: services.start_payment(amount=v, billing_data=BILLING),
        "prepare_amount.amount": lambda v: services.prepare_amount(v),
        "validate_promocode.amount": lambda v: services.validate_promocode(
            "SAVE10", amount=v, phone_number=BILLING["phone_number"]
        ),
        "refund.amount": lambda v: services.refund(paid, v),
        "refund.expected_refundable": lambda v: services.refund(paid, Decimal("1.00"), expected_refundable=v),
        "create_direct_order.amount": lambda v: services.create_direct_order(amount=v, **ORDER),
        "create_direct_order.discount_amount": lambda v: services.create_direct_order(
            amount=Decimal("100.00"), discount_amount=v, **ORDER
        ),
        "create_direct_order.vat_percentage": lambda v: services.create_direct_order(
            amount=Decimal("100.00"), vat_percentage=v, **ORDER
        ),
    }


def state(sb: Any) -> tuple[int, int, int, int, int]:
    return (
        Transaction.objects.count(),
        Refund.objects.count(),
        DirectOrder.objects.count(),
        ApiCall.objects.count(),
        len(sb.control.journal()),
    )


def test_every_entry_point_refuses_inexact_money_before_storing_or_sending_anything(
    paycollect_live, paid_transaction
):
    sb = paycollect_live
    before = state(sb)
    refused = 0
    for name, call in entry_points(paid_transaction).items():
        field = name.split(".")[1]
        for value, says in BAD_AMOUNTS:
            with pytest.raises(PaymentRefused) as caught:
                call(value)
            messages = caught.value.message_dict
            assert list(messages) == [field], (name, value, messages)
            assert says in messages[field][0], (name, value, messages)
            refused += 1
    assert refused == 8 * len(BAD_AMOUNTS)
    assert state(sb) == before  # no row, no ApiCall, no request


def test_exact_amounts_are_accepted_as_decimal_int_or_decimal_text(paycollect_live):
    assert services.money_argument(Decimal("10.5"), "amount") == Decimal("10.50")
    assert services.money_argument(10, "amount") == Decimal("10.00")
    assert services.money_argument(" 12.50 ", "amount") == Decimal("12.50")
    assert services.money_argument(Decimal("12.500"), "amount") == Decimal("12.50")  # exact: no rounding
    txn = services.start_payment(amount="150", billing_data=BILLING)
    assert txn.total_amount == Decimal("150.00")
    assert sb_amount(paycollect_live) == "150.00"


def sb_amount(sb: Any) -> str:
    [entry] = sb.control.journal("pay")
    return str(entry["body"]["amount"])


def test_tasks_refuse_a_float_amount_like_every_caller(paycollect_live):
    with pytest.raises(PaymentRefused, match=r"not the float 12\.5"):
        tasks.start_payment.apply(args=[12.5, BILLING], task_id="t-float-pay").get()
    with pytest.raises(PaymentRefused, match="has more than two decimals"):
        tasks.prepare_amount.apply(kwargs={"amount": "12.505"}, task_id="t-3-decimals").get()
    assert not Transaction.objects.exists()
    assert not paycollect_live.control.journal()
