"""The REST API reads each spelling of tests/support/amounts.py as the table says, as the service layer, the
tasks and the admin do (tests/app/test_amount_spellings.py): a refund's amount and ``expected_refundable``,
and a direct order's amounts. A JSON number is read as its text (``10.10`` as ``"10.10"``), never as a float;
a null or blank amount is a 400 naming it, never "all" and never "none". Quotes and payments take no amount
from a device: the payable hook decides it (tests/api/test_payments.py)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from django_paycollect import services
from django_paycollect.models import ApiCall, Transaction
from tests.support.admin import BILLING
from tests.support.amounts import (
    MAX,
    OMITTED,
    REQUIRED,
    SPELLINGS,
    JsonNumber,
    Spelling,
    as_optional,
    as_refund,
    disagreements,
)

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = {
    "name": "Hall rental",
    "payment_methods": ["card"],
    "customer_name": "Mona Ali",
    "customer_email": "mona@example.com",
    "customer_mobile": "+201001234567",
}


def body(fields: dict[str, Any]) -> str:
    """A JSON body; a JsonNumber is written unquoted, as a front end's number."""
    parts = [
        f"{json.dumps(name)}: {value if isinstance(value, JsonNumber) else json.dumps(value)}"
        for name, value in fields.items()
        if value is not OMITTED
    ]
    return "{" + ", ".join(parts) + "}"


def api_rows() -> list[Spelling]:
    """What a JSON body can hold: text, null, true, a list, a JSON number (no Decimal, no Python float)."""
    return [row for row in SPELLINGS if not isinstance(row.given, (Decimal, float))]


@pytest.fixture
def paid(api_in_process: Any, settings: Any) -> Transaction:
    """A paid 1000.00 payment, then MAX_AMOUNT lowered to the table's (every accepted row fits in it)."""
    txn = services.start_payment(amount=Decimal("1000.00"), billing_data=BILLING, merchant_reference="paid")
    api_in_process.control.complete(txn.uuid, "SUCCESSFUL")
    txn = services.sync_transaction(txn)
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": MAX}
    return txn


def answered(api: Any, sb: Any, path: str, operation: str, field: str, **fields: Any) -> Any:
    """The outcome of posting ``fields`` and ``field``'s value: the amount the service received (an accepted
    row), or the 400's words on ``field`` alone (nothing stored, nothing sent)."""

    def outcome(given: Any) -> Decimal | str:
        before = (len(sb.control.journal(operation)), ApiCall.objects.count())
        answer = api.post(path, body({**fields, field: given}), content_type="application/json")
        if answer.status_code == 400:
            errors = answer.json()
            assert list(errors) == [field], errors
            assert (len(sb.control.journal(operation)), ApiCall.objects.count()) == before
            return str(errors[field][0])
        assert answer.status_code == 201, answer.content
        request = sb.control.journal(operation)[-1]["body"]
        sent = request["refund_amount"] if operation == "refund" else request[field]["amount"]
        return Decimal(str(sent))

    return outcome


def test_a_refund_reads_every_spelling_as_the_table_says(api_in_process, paid, as_user):
    api, path = as_user("refunder"), f"/api/payments/{paid.uuid}/refunds/"
    rows = [as_refund(row) for row in api_rows()]
    assert disagreements(rows, answered(api, api_in_process, path, "refund", "amount")) == []
    # The refund made answers its amount as the app writes amounts.
    made = api.post(path, {"amount": "\u0661\u066b\u0665"}, format="json")
    assert made.status_code == 201
    assert made.json()["amount"] == "1.50"
    left = Transaction.objects.with_refundable().get(pk=paid.pk).refundable_amount
    everything = api.post(path, {}, format="json")  # left out: all that is still refundable
    assert everything.status_code == 201
    assert everything.json()["amount"] == str(left)


def test_expected_refundable_reads_the_same_grammar_and_is_optional_only_by_being_left_out(
    api_in_process, paid, as_user
):
    api, path = as_user("refunder"), f"/api/payments/{paid.uuid}/refunds/"
    rows = [as_optional(row) for row in api_rows() if row.grammar or row.says == REQUIRED]
    outcome = answered(api, api_in_process, path, "refund", "expected_refundable", amount="1.00")
    assert disagreements(rows, outcome) == []
    # A JSON number is read as its text: what the caller was shown, exactly.
    refundable = str(Transaction.objects.with_refundable().get(pk=paid.pk).refundable_amount)
    shown = api.post(
        path,
        body({"amount": "1.00", "expected_refundable": JsonNumber(refundable)}),
        content_type="application/json",
    )
    assert shown.status_code == 201, shown.content


def test_a_direct_order_reads_every_spelling_as_the_table_says(api_in_process, paid, as_user):
    api = as_user("orderer")
    rows = api_rows()
    assert (
        disagreements(
            rows, answered(api, api_in_process, "/api/direct-orders/", "direct_order", "amount", **ORDER)
        )
        == []
    )
    for name in ("discount_amount", "vat_percentage"):
        optional = [as_optional(row) for row in rows if row.grammar or row.says == REQUIRED]
        outcome = answered(
            api, api_in_process, "/api/direct-orders/", "direct_order", name, amount="100.00", **ORDER
        )
        assert disagreements(optional, outcome) == []
