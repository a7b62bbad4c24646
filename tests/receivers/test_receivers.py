"""In a project that listens to saves (django-simple-history on ``Transaction``, and a global ``post_save``
receiver), every status change is heard, whichever path learns it: a callback, a browser return, a sync and
reconciliation; and the app behaves as it does without receivers (the same rows, the caller's object current).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db.models.signals import post_save

from django_paycollect import services
from django_paycollect.models import ReceivedCallback, Transaction
from django_paycollect.reconciliation import reconcile
from django_paycollect.services.callback_ledger import run_verification, store_callback
from tests.support.payments import BILLING

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def heard() -> Iterator[list[tuple[int, str]]]:
    """What a global post_save receiver hears of transactions: (pk, status) per save."""
    saves: list[tuple[int, str]] = []

    def receiver(sender: Any, instance: Any, **kwargs: Any) -> None:
        if isinstance(instance, Transaction):
            saves.append((instance.pk, instance.status))

    post_save.connect(receiver, weak=False, dispatch_uid="tests.receivers.global")
    yield saves
    post_save.disconnect(dispatch_uid="tests.receivers.global")


def history(txn: Transaction) -> list[str]:
    """The statuses django-simple-history recorded, oldest first."""
    return list(txn.history.order_by("history_id").values_list("status", flat=True))  # type: ignore[attr-defined]


def started(sb: Any) -> Transaction:
    txn = services.start_payment(amount=Decimal("100.00"), billing_data=BILLING)
    assert txn.status == Transaction.PENDING
    sb.control.complete(txn.uuid)
    return txn


def test_a_callback_s_status_change_is_heard_and_kept_in_the_history(paycollect_in_process, heard):
    txn = started(paycollect_in_process)
    stored = store_callback(transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL")
    assert run_verification(stored.to_verify).state == ReceivedCallback.PROCESSED
    assert (txn.pk, Transaction.SUCCESSFUL) in heard
    assert history(txn)[-1] == Transaction.SUCCESSFUL
    assert Transaction.PENDING in history(txn)


def test_a_browser_return_s_status_change_is_heard(paycollect_in_process, heard, client, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "SUCCESS_URL": "/shop/paid/", "RETURN_FETCH_INTERVAL": 0}
    txn = started(paycollect_in_process)
    response = client.get(
        "/paycollect/return/",
        {"transaction_uuid": txn.uuid, "transaction_status": "SUCCESSFUL", "amount": "100"},
    )
    assert response.status_code == 302
    assert (txn.pk, Transaction.SUCCESSFUL) in heard
    assert history(txn)[-1] == Transaction.SUCCESSFUL


def test_a_sync_leaves_the_caller_s_object_current_and_is_heard(paycollect_in_process, heard):
    txn = started(paycollect_in_process)
    synced = services.sync_transaction(txn)
    assert synced is txn
    assert txn.status == Transaction.SUCCESSFUL  # the caller's object, as with no receiver
    assert txn.succeeded_at is not None
    assert (txn.pk, Transaction.SUCCESSFUL) in heard
    assert history(txn)[-1] == Transaction.SUCCESSFUL


def test_reconciliation_s_status_changes_are_heard(paycollect_in_process, heard):
    first, second = started(paycollect_in_process), started(paycollect_in_process)
    summary = reconcile(older_than=timedelta(0))
    assert summary.errors == []
    for txn in (first, second):
        assert (txn.pk, Transaction.SUCCESSFUL) in heard
        assert history(txn)[-1] == Transaction.SUCCESSFUL
