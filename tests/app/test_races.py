"""Races that lose money in other payment apps, run on PostgreSQL where row locks are real.

Each test lets several threads (each with its own database connection) hit the service layer at the
same moment, through a barrier, against the live sandbox.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction

from django_paycollect import services
from django_paycollect.exceptions import StateConflict
from django_paycollect.models import ApiCall, Refund, Transaction
from django_paycollect.services.status import apply_status

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def race(threads: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` in ``threads`` threads released together; returns results or raised exceptions."""
    barrier = threading.Barrier(threads)
    results: list[Any] = [None] * threads

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=60)
    return results


def test_ten_concurrent_refunds_never_refund_more_than_was_paid(
    paycollect_live, paid_transaction, signal_log
):
    results = race(
        10, lambda i: services.refund(Transaction.objects.get(pk=paid_transaction.pk), Decimal("20.00"))
    )
    refunds = [r for r in results if isinstance(r, Refund)]
    refused = [r for r in results if isinstance(r, StateConflict)]
    assert len(refunds) + len(refused) == 10, results
    assert len(refunds) == 5
    assert all(r.state == Refund.SUCCEEDED for r in refunds)
    paid_transaction.refresh_from_db()
    assert paid_transaction.refunded_amount == Decimal("100.00")
    assert len(paycollect_live.control.journal("refund")) == 5
    assert signal_log.count("refund_succeeded") == 5


def test_concurrent_syncs_send_payment_succeeded_once(paycollect_live, pay, signal_log):
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    results = race(8, lambda i: services.sync_transaction(Transaction.objects.get(pk=txn.pk), source=f"t{i}"))
    assert all(isinstance(r, Transaction) for r in results), results
    assert signal_log.count("payment_succeeded") == 1
    assert Transaction.objects.get(pk=txn.pk).status_changes.filter(to_status="SUCCESSFUL").count() == 1


def test_syncs_racing_a_payment_completed_midway_change_it_once_and_record_every_fetch(
    paycollect_live, pay, signal_log
):
    """Each sync holds the row as read before the race: the fetches answered PENDING take the unlocked
    write, those answered SUCCESSFUL the locked one; whatever the order, nothing moves back or twice."""
    txn = pay("100.00")
    read = [Transaction.objects.get(pk=txn.pk) for _ in range(8)]

    def work(i: int) -> Any:
        if i == 0:
            return paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
        return services.sync_transaction(read[i], source=f"t{i}")

    results = race(8, work)
    assert all(not isinstance(r, Exception) for r in results), results
    services.sync_transaction(Transaction.objects.get(pk=txn.pk))  # after the race: the service's last word
    stored = Transaction.objects.get(pk=txn.pk)
    assert stored.status == Transaction.SUCCESSFUL
    assert stored.status_changes.filter(to_status="SUCCESSFUL").count() == 1
    assert signal_log.count("payment_succeeded") == 1
    assert ApiCall.objects.filter(transaction=txn, operation="get_transaction").count() == 8


def test_a_status_change_waiting_for_the_row_lock_rechecks_the_status_it_decided_from(
    paycollect_live, pay, signal_log
):
    """A sync decides PENDING to SUCCESSFUL from the row as read; a verification holding the row lock
    applies the same change meanwhile. The sync's guarded UPDATE waits for the lock, then finds the row no
    longer as read (PostgreSQL re-checks the WHERE against the committed row) and falls back to the locked
    path: one change, one payment_succeeded."""
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    read = Transaction.objects.get(pk=txn.pk)
    signal_log.sent.clear()
    locked, waited = threading.Event(), threading.Event()

    def verification() -> None:
        try:
            with transaction.atomic():
                row = Transaction.objects.select_for_update().get(pk=txn.pk)
                apply_status(row, "SUCCESSFUL", source="callback")
                row.save()
                locked.set()
                # Commit only once another session waits for this row's lock: the sync's UPDATE.
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and not waited.is_set():
                    with connection.cursor() as cursor:
                        cursor.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                            " AND datname = current_database() AND pid <> pg_backend_pid()"
                        )
                        if cursor.fetchone()[0]:
                            waited.set()
                    time.sleep(0.01)
        finally:
            connection.close()

    holder = threading.Thread(target=verification)
    holder.start()
    assert locked.wait(10)
    synced = services.sync_transaction(read, source="reconcile")
    holder.join(30)

    assert waited.is_set()  # the sync's write did wait for the lock the verification held
    stored = Transaction.objects.get(pk=txn.pk)
    assert stored.status == synced.status == Transaction.SUCCESSFUL
    assert [c.source for c in stored.status_changes.filter(to_status="SUCCESSFUL")] == ["callback"]
    assert signal_log.count("payment_succeeded") == 1
    assert signal_log.count("transaction_status_changed") == 1
    assert ApiCall.objects.filter(transaction=txn, operation="get_transaction").count() == 1


def test_concurrent_starts_for_one_reference_charge_once(paycollect_live, pay):
    results = race(6, lambda i: pay("100.00", merchant_reference="double-click"))
    assert all(isinstance(r, Transaction) for r in results), results
    assert len({r.pk for r in results}) == 1
    assert len(paycollect_live.control.journal("pay")) == 1


def test_a_double_submitted_refund_form_refunds_once(paycollect_live, paid_transaction):
    """Two clicks on the admin's refund page: both say 100.00 was refundable when the page was shown."""
    results = race(
        2,
        lambda i: services.refund(
            Transaction.objects.get(pk=paid_transaction.pk),
            Decimal("30.00"),
            expected_refundable=Decimal("100.00"),
        ),
    )
    # The second is refused because what is refundable changed under it: a conflict of state, not bad input.
    assert sorted(type(r).__name__ for r in results) == ["Refund", "StateConflict"], results
    assert len(paycollect_live.control.journal("refund")) == 1
