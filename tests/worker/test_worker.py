"""The tasks run by real ``celery worker`` processes over a real Redis broker, not eagerly.

Signals fire in the worker processes, so effects are counted in the database (TransactionStatusChange
rows, the sandbox's journal) rather than with signal receivers.
"""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from django_paycollect import reconciliation
from django_paycollect.models import (
    ApiCall,
    ReceivedCallback,
    Refund,
    StatisticsSnapshot,
    Transaction,
    TransactionStatusChange,
)
from tests.support.payments import BILLING
from tests.support.worker import WAIT, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def send(producer, task: str, /, **kwargs):
    return producer.send_task(f"paycollect.{task}", kwargs=kwargs)


def successes(txn: Transaction) -> int:
    """How many times the payment succeeded here: payment_succeeded is sent once per such row."""
    return TransactionStatusChange.objects.filter(transaction=txn, to_status=Transaction.SUCCESSFUL).count()


def queued_callback(txn: Transaction) -> ReceivedCallback:
    # What the callback view stores before it queues verification.
    return ReceivedCallback.objects.create(
        state=ReceivedCallback.QUEUED,
        transaction_uuid=txn.uuid,
        claimed_status="SUCCESSFUL",
        dedupe_key=f"{txn.uuid}|SUCCESSFUL",
    )


def verified(callback: ReceivedCallback) -> None:
    wait_for(
        f"callback #{callback.pk} to be verified",
        lambda: ReceivedCallback.objects.filter(pk=callback.pk, state=ReceivedCallback.PROCESSED).exists(),
    )


def test_the_task_suite_runs_in_worker_processes(paycollect_live, start_worker, producer):
    sb = paycollect_live
    start_worker(concurrency=2)

    paid = send(producer, "start_payment", amount="100.00", billing_data=BILLING, merchant_reference="w-1")
    result = paid.get(timeout=WAIT)
    txn = Transaction.objects.get(pk=result["transaction_id"])
    assert txn.status == Transaction.PENDING
    assert ApiCall.objects.get(operation="pay").task_id == paid.id

    sb.control.complete(txn.uuid)
    synced = send(producer, "sync_transaction", transaction_id=txn.pk)
    assert synced.get(timeout=WAIT)["status"] == Transaction.SUCCESSFUL
    assert ApiCall.objects.get(operation="get_transaction").task_id == synced.id

    refunded = send(producer, "refund", transaction_id=txn.pk, amount="40.00", expected_refundable="100.00")
    assert refunded.get(timeout=WAIT)["state"] == Refund.SUCCEEDED
    assert ApiCall.objects.get(operation="refund").task_id == refunded.id
    assert len(sb.control.journal("refund")) == 1

    # The other reads and the rest of the state-changing ones, several at a time on two processes.
    pending = {
        "prepare_amount": send(producer, "prepare_amount", amount="100.00"),
        "validate_promocode": send(
            producer,
            "validate_promocode",
            name="SAVE10",
            amount="100.00",
            phone_number=BILLING["phone_number"],
        ),
        "dashboard_statistics": send(producer, "fetch_statistics"),
        "capture": send(producer, "capture", transaction_id=txn.pk),
    }
    results = {op: r.get(timeout=WAIT) for op, r in pending.items()}
    assert Decimal(results["prepare_amount"]) > Decimal("100.00")
    assert results["validate_promocode"]["promocode_id"]
    assert StatisticsSnapshot.objects.get().pk == results["dashboard_statistics"]["snapshot_id"]
    assert results["capture"]["capture_state"] == Transaction.CAPTURE_DONE
    for op, r in pending.items():
        assert ApiCall.objects.get(operation=op).task_id == r.id

    assert send(producer, "reconcile", older_than="0s").get(timeout=WAIT)["errors"] == 0
    assert successes(txn) == 1


def test_several_workers_share_the_queue(paycollect_live, start_worker, producer):
    start_worker(concurrency=2)
    start_worker(concurrency=2)
    started = [send(producer, "start_payment", amount=f"{10 + i}.00", billing_data=BILLING) for i in range(8)]
    ids = [r.get(timeout=WAIT)["transaction_id"] for r in started]
    assert len(set(ids)) == 8
    assert len(paycollect_live.control.journal("pay")) == 8
    assert set(ApiCall.objects.filter(operation="pay").values_list("task_id", flat=True)) == {
        r.id for r in started
    }


def test_a_callback_whose_worker_was_killed_mid_verification_is_applied_once(
    paycollect_live, start_worker, producer, pay
):
    sb = paycollect_live
    txn = pay("75.00")
    sb.control.complete(txn.uuid)
    callback = queued_callback(txn)
    # Verification is slow: the service takes 5 s to answer the fetch.
    sb.control.fault("fetch_transaction", "latency", latency_ms=5000)

    first = start_worker(concurrency=1)
    message = send(producer, "process_callbacks", callback_ids=[callback.pk])
    wait_for(
        "the first worker to start verifying",
        lambda: ReceivedCallback.objects.filter(pk=callback.pk, attempts=1).exists(),
    )
    time.sleep(0.3)  # inside the fetch now
    first.kill()
    assert ReceivedCallback.objects.get(pk=callback.pk).state == ReceivedCallback.QUEUED
    assert successes(txn) == 0

    # A fresh worker gets the unacknowledged message once Redis's visibility timeout has passed.
    second = start_worker(concurrency=1)
    verified(callback)  # the task ignores its result: the callback's row holds the outcome
    assert f"Task paycollect.process_callbacks[{message.id}] received" in second.log_text()
    callback.refresh_from_db()
    assert callback.state == ReceivedCallback.PROCESSED
    assert callback.attempts == 2
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert successes(txn) == 1
    # The redelivered message fetched, or (the killed worker's fetch claimed moments ago) handed the callback
    # on in a message due once the fetch interval was over: the task the callback names made the one fetch.
    done = f"Task paycollect.process_callbacks[{callback.task_id}] succeeded"
    wait_for("the task that verified it to be done", lambda: done in second.log_text())
    assert (
        ApiCall.objects.filter(operation="get_transaction", task_id=callback.task_id, error_class="").count()
        == 1
    )


def test_a_callback_whose_worker_died_after_applying_it_is_not_applied_twice(
    paycollect_live, start_worker, producer, pay
):
    sb = paycollect_live
    txn = pay("80.00")
    sb.control.complete(txn.uuid)
    callback = queued_callback(txn)

    # The status change is committed; a slow payment_succeeded receiver holds the message unacknowledged.
    first = start_worker(concurrency=1, env={"PAYCOLLECT_WORKER_SLOW_SUCCESS_SIGNAL": "30"})
    send(producer, "process_callbacks", callback_ids=[callback.pk])
    wait_for("the status change", lambda: successes(txn) == 1)
    first.kill()

    # The callback was marked verified in the transaction that applied the status, before the signal ran.
    assert ReceivedCallback.objects.get(pk=callback.pk).state == ReceivedCallback.PROCESSED
    second = start_worker(concurrency=1)
    # The redelivered task finds it verified and leaves it as recorded: no second fetch, nothing to change.
    wait_for(
        "the redelivered task",
        lambda: "process_callbacks" in second.log_text() and " succeeded " in second.log_text(),
    )
    callback.refresh_from_db()
    assert callback.attempts == 1
    assert callback.outcome == "service says SUCCESSFUL; transaction is SUCCESSFUL"
    assert ApiCall.objects.filter(operation="get_transaction").count() == 1
    assert successes(txn) == 1
    assert TransactionStatusChange.objects.filter(transaction=txn).count() == 2  # NEW->PENDING, ->SUCCESSFUL


def test_a_refund_whose_worker_was_killed_mid_call_is_never_sent_again(
    paycollect_live, start_worker, producer, paid_transaction
):
    sb = paycollect_live
    # The refund reaches the service, which takes 4 s to do it and answer.
    sb.control.fault("refund", "latency", latency_ms=4000)
    first = start_worker(concurrency=1)
    send(producer, "refund", transaction_id=paid_transaction.pk, amount="30.00")
    wait_for("the pending refund", lambda: Refund.objects.filter(state=Refund.PENDING).exists())
    time.sleep(0.5)  # the request is at the service now
    first.kill()

    # A state-changing task is acknowledged when it starts: nothing is redelivered to a new worker.
    start_worker(concurrency=1)
    wait_for("the service to finish the refund", lambda: len(sb.control.journal("refund")) == 1)
    time.sleep(6)  # past the visibility timeout and a few restore sweeps
    assert len(sb.control.journal("refund")) == 1
    refund = Refund.objects.get()
    assert refund.state == Refund.PENDING  # the process that would have recorded the answer is gone
    # Reconciliation reports it for a person to resolve.
    [finding] = reconciliation.reconcile(older_than=reconciliation.parse_age("0s")).needs_review
    assert finding.kind == "refund"
    assert "still pending" in finding.outcome
