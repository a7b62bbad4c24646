"""A refund's amount, read the same way by the service layer, the refund task and the admin's refund page
(the REST API's is in tests/api/test_refund_amounts.py): the table in tests/refund_amounts.py."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from django_paycollect import services, tasks
from django_paycollect.exceptions import PaymentRefused, StateConflict
from django_paycollect.models import Refund, Transaction
from tests.refund_amounts import AMOUNTS, OMITTED, PAID, AmountCase, case_id, on_the_refund_page

pytestmark = pytest.mark.django_db(transaction=True)


def run(task: Any, task_id: str, **kwargs: Any) -> Any:
    """Apply ``task`` eagerly with its arguments through JSON, as a broker carries them."""
    return task.apply(kwargs=json.loads(json.dumps(kwargs)), task_id=task_id).get()


def refunded_as_the_table_says(sb: Any, txn: Transaction, case: AmountCase) -> None:
    """The refund the case makes, and that it reached the service once; or nothing stored or sent."""
    journal = sb.control.journal("refund")
    if case.refunds is None:
        assert not Refund.objects.exists()
        assert journal == []
        return
    refund = Refund.objects.get(transaction=txn)
    assert (refund.amount, refund.state) == (case.refunds, Refund.SUCCEEDED)
    [request] = journal
    assert Decimal(str(request["body"]["refund_amount"])) == case.refunds


def refused_as_the_table_says(refused: PaymentRefused, case: AmountCase) -> None:
    assert not isinstance(refused, StateConflict)  # bad input, not the state of the payment
    [message] = refused.message_dict["amount"]
    assert list(refused.message_dict) == ["amount"]
    assert case.says in message


@pytest.mark.parametrize("case", AMOUNTS, ids=case_id)
def test_the_service_layer_reads_a_refund_amount_as_the_table_says(
    paycollect_live: Any, paid_transaction: Transaction, case: AmountCase
) -> None:
    assert paid_transaction.total_amount == PAID

    def call() -> Refund:
        if case.given is OMITTED:
            return services.refund(paid_transaction)
        return services.refund(paid_transaction, case.given)

    if case.refunds is None:
        with pytest.raises(PaymentRefused) as caught:
            call()
        refused_as_the_table_says(caught.value, case)
    else:
        assert call().amount == case.refunds
    refunded_as_the_table_says(paycollect_live, paid_transaction, case)


@pytest.mark.parametrize("case", AMOUNTS, ids=case_id)
def test_the_refund_task_reads_a_refund_amount_as_the_table_says(
    paycollect_live: Any, paid_transaction: Transaction, case: AmountCase
) -> None:
    arguments: dict[str, Any] = {"transaction_id": paid_transaction.pk}
    if case.given is not OMITTED:
        arguments["amount"] = case.given  # through JSON, as a broker carries it: None is null
    if case.refunds is None:
        with pytest.raises(PaymentRefused) as caught:
            run(tasks.refund, f"t-refund-{case.id}", **arguments)
        refused_as_the_table_says(caught.value, case)
    else:
        assert run(tasks.refund, f"t-refund-{case.id}", **arguments)["amount"] == str(case.refunds)
    refunded_as_the_table_says(paycollect_live, paid_transaction, case)


@pytest.mark.parametrize("case", AMOUNTS, ids=case_id)
def test_the_admin_refund_page_reads_a_refund_amount_as_the_table_says(
    paycollect_live: Any, paid_transaction: Transaction, case: AmountCase, client: Any, django_user_model: Any
) -> None:
    txn, case = paid_transaction, on_the_refund_page(case)
    user = django_user_model.objects.create_user(username="refunder", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="paycollect", codename__in=("view_transaction", "refund_transaction")
        )
    )
    client.force_login(user)
    page = f"{reverse('admin:paycollect_transaction_refund')}?ids={txn.pk}"
    form = {f"shown_{txn.pk}": str(PAID)}
    if case.given not in (OMITTED, None):  # a form cannot send a null: the box is missing
        form[f"amount_{txn.pk}"] = case.given

    answer = client.post(page, form)

    if case.refunds is None:
        assert answer.status_code == 200  # the page again, the error on the amount's box
        [message] = answer.context["form"].errors[f"amount_{txn.pk}"]
        assert case.says in message
    else:
        assert answer.status_code == 302, answer.content
    refunded_as_the_table_says(paycollect_live, txn, case)
