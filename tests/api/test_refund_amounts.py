"""The REST API's refund reads its amount as the service layer, the admin's refund page and the refund task
do (tests/app/test_refund_amounts.py): the table in tests/refund_amounts.py. A blank or null amount is a 400
naming ``amount``, never a refund of all that is left."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from django_paycollect.models import Refund, Transaction
from tests.refund_amounts import AMOUNTS, OMITTED, PAID, AmountCase, case_id

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("case", AMOUNTS, ids=case_id)
def test_the_rest_api_reads_a_refund_amount_as_the_table_says(
    api_live: Any, paid_transaction: Transaction, as_user: Any, case: AmountCase
) -> None:
    assert paid_transaction.total_amount == PAID
    body = {} if case.given is OMITTED else {"amount": case.given}

    answer = as_user("refunder").post(f"/api/payments/{paid_transaction.uuid}/refunds/", body, format="json")

    journal = api_live.control.journal("refund")
    if case.refunds is None:
        assert answer.status_code == 400, answer.content
        errors = answer.json()
        assert list(errors) == ["amount"]
        [message] = errors["amount"]
        assert case.says in message
        assert not Refund.objects.exists()
        assert journal == []
    else:
        assert answer.status_code == 201, answer.content
        assert answer.json()["amount"] == str(case.refunds)
        assert Refund.objects.get().amount == case.refunds
        [request] = journal
        assert Decimal(str(request["body"]["refund_amount"])) == case.refunds


@pytest.mark.parametrize("blank", ["", "  ", None], ids=["empty", "spaces", "null"])
def test_a_blank_expected_refundable_is_a_400_not_a_refund_left_unchecked(
    api_live: Any, paid_transaction: Transaction, as_user: Any, blank: str | None
) -> None:
    body = {"amount": "10.00", "expected_refundable": blank}

    answer = as_user("refunder").post(f"/api/payments/{paid_transaction.uuid}/refunds/", body, format="json")

    assert answer.status_code == 400, answer.content
    assert list(answer.json()) == ["expected_refundable"]
    assert not Refund.objects.exists()
    assert api_live.control.journal("refund") == []
