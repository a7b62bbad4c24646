"""Reconciliation against the sandbox (served in process): what it settles, what it reports, its command."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from django_paycollect import reconciliation, services
from django_paycollect.models import (
    ApiCall,
    Community,
    DirectOrder,
    RecurringSeries,
    Refund,
    Transaction,
    TransactionStatusChange,
)
from django_paycollect.reconciliation.steps import concurrency

pytestmark = pytest.mark.django_db(transaction=True)

HOUR_AGO = dt.timedelta(hours=1)


def age(*objs: Transaction, by: dt.timedelta = HOUR_AGO) -> None:
    """Make transactions look as if they were started ``by`` ago."""
    for obj in objs:
        Transaction.objects.filter(pk=obj.pk).update(created_at=obj.created_at - by)


def reconcile(**kwargs):
    steps: list[reconciliation.Progress] = []
    summary = reconciliation.reconcile(progress=steps.append, **kwargs)
    return summary, steps


# --- what is settled -------------------------------------------------------------------------------


def test_unknown_start_is_abandoned_and_a_payment_completed_meanwhile_becomes_successful(
    paycollect_in_process, pay, signal_log
):
    # Work done at the service, response dropped: we never learned the uuid.
    paycollect_in_process.control.fault("pay", "drop_after")
    lost = pay("100.00", merchant_reference="order-lost")
    assert lost.outcome_unknown
    assert lost.status == Transaction.NEW
    # A payment whose callback never came: the customer paid at the service.
    paid = pay("50.00", merchant_reference="order-paid")
    paycollect_in_process.control.complete(paid.uuid)
    # Both too recent to touch yet.
    summary, _ = reconcile()
    assert (summary.fetched, summary.abandoned) == (0, 0)

    age(lost, paid)
    signal_log.sent.clear()
    summary, steps = reconcile()

    lost.refresh_from_db()
    paid.refresh_from_db()
    assert lost.status == Transaction.ABANDONED
    assert paid.status == Transaction.SUCCESSFUL
    assert (summary.abandoned, summary.fetched, summary.changed, len(summary.errors)) == (1, 1, 1, 0)
    assert signal_log.count("payment_succeeded") == 1
    assert TransactionStatusChange.objects.get(transaction=paid, to_status="SUCCESSFUL").source == "reconcile"
    assert [(s.phase, s.done, s.total) for s in steps] == [
        ("unknown starts", 1, 1),
        ("open transactions", 1, 1),
    ]
    assert [str(f) for f in summary.findings] == [
        f"transaction #{lost.pk}: start outcome unknown: abandoned",
        f"transaction {paid.uuid}: PENDING -> SUCCESSFUL",
    ]
    # The reference can be paid again now; only one pay request ever carried the lost one.
    again = pay("100.00", merchant_reference="order-lost")
    assert again.pk != lost.pk
    assert len(paycollect_in_process.control.journal("pay")) == 3


def test_open_transactions_are_fetched_once_per_interval(paycollect_in_process, pay):
    txn = pay("10.00")
    age(txn)
    assert reconcile()[0].fetched == 1
    assert reconcile()[0].fetched == 0  # fetched a moment ago: not again before older_than
    Transaction.objects.filter(pk=txn.pk).update(last_synced_at=timezone.now() - HOUR_AGO)
    assert reconcile()[0].fetched == 1
    # Past a day old, an open transaction (a page left open) is fetched at most every 6 hours.
    age(txn, by=dt.timedelta(days=3))
    Transaction.objects.filter(pk=txn.pk).update(last_synced_at=timezone.now() - dt.timedelta(hours=2))
    assert reconcile()[0].fetched == 0
    Transaction.objects.filter(pk=txn.pk).update(last_synced_at=timezone.now() - dt.timedelta(hours=7))
    assert reconcile()[0].fetched == 1


def test_unknown_cancellations_are_settled_from_recurring_active(
    paycollect_in_process, recurring_transaction, pay, signal_log
):
    series = RecurringSeries.objects.get()
    # Cancelled at the service, answer lost.
    paycollect_in_process.control.fault("cancel_recurring", "drop_after")
    series = services.cancel_recurring(series)
    assert series.cancel_state == RecurringSeries.CANCEL_UNKNOWN
    # Too recent: the service may still be acting on it.
    assert reconcile()[0].cancels_settled == 0
    ApiCall.objects.filter(operation="cancel_recurring").update(created_at=timezone.now() - HOUR_AGO)

    summary, _ = reconcile()
    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_DONE
    assert not series.active
    assert summary.cancels_settled == 1
    assert signal_log.count("recurring_series_cancelled") == 1
    assert (
        len(paycollect_in_process.control.journal("cancel_recurring")) == 1
    )  # settled by fetching, not resending
    assert reconcile()[0].cancels_settled == 0


def test_an_unknown_cancellation_that_did_not_take_effect_can_be_sent_again(
    paycollect_in_process, recurring_transaction
):
    series = RecurringSeries.objects.get()
    # Reset before the work: sent, so unknown to us, but the service did nothing.
    paycollect_in_process.control.fault("cancel_recurring", "reset")
    series = services.cancel_recurring(series)
    assert series.cancel_state == RecurringSeries.CANCEL_UNKNOWN
    ApiCall.objects.filter(operation="cancel_recurring").update(created_at=timezone.now() - HOUR_AGO)

    summary, _ = reconcile()
    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_FAILED
    assert series.active
    assert summary.cancels_settled == 1
    assert "did not take effect" in str(summary.findings[0])
    assert services.cancel_recurring(series).cancel_state == RecurringSeries.CANCEL_DONE


# --- what is reported --------------------------------------------------------------------------------


def test_unknown_refunds_and_captures_are_fetched_and_reported_for_review(
    paycollect_in_process, paid_transaction
):
    paycollect_in_process.control.fault("refund", "drop_after")
    refund = services.refund(paid_transaction, Decimal("30.00"))
    paycollect_in_process.control.fault("capture", "drop_after")
    services.capture(paid_transaction)
    Transaction.objects.filter(pk=paid_transaction.pk).update(last_synced_at=None)
    fetches = len(paycollect_in_process.control.journal("fetch_transaction"))

    summary, _ = reconcile()
    review = summary.needs_review
    assert [f.kind for f in review] == ["refund", "capture"]
    assert "refund of 30.00 EGP: outcome unknown" in review[0].outcome
    assert "capture outcome unknown" in review[1].outcome
    # Their transaction was fetched once for both; nothing was sent again.
    assert summary.fetched == 1
    assert len(paycollect_in_process.control.journal("fetch_transaction")) == fetches + 1
    assert len(paycollect_in_process.control.journal("refund")) == 1
    assert len(paycollect_in_process.control.journal("capture")) == 1
    # Resolved by hand in the admin, it is not reported again.
    services.resolve_refund(refund, succeeded=True)
    assert [f.kind for f in reconcile()[0].needs_review] == ["capture"]


def test_a_refund_left_pending_by_a_dead_process_is_reported(paycollect_in_process, paid_transaction):
    stuck = Refund.objects.create(transaction=paid_transaction, amount=Decimal("5.00"))
    assert reconcile()[0].needs_review == []
    Refund.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - HOUR_AGO)
    [finding] = reconcile()[0].needs_review
    assert "still pending" in finding.outcome


def test_a_refund_left_pending_by_a_dead_process_can_be_resolved_by_hand(
    paycollect_in_process, paid_transaction
):
    stuck = Refund.objects.create(transaction=paid_transaction, amount=Decimal("5.00"))
    Refund.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - HOUR_AGO)
    assert services.resolve_refund(stuck, succeeded=True).state == Refund.SUCCEEDED


def test_a_cancellation_left_pending_by_a_dead_process_is_settled(
    paycollect_in_process, recurring_transaction
):
    series = RecurringSeries.objects.get()
    paycollect_in_process.client.cancel_recurring(
        transaction_uuid=series.parent_uuid
    )  # it did reach the service
    RecurringSeries.objects.filter(pk=series.pk).update(cancel_state=RecurringSeries.CANCEL_PENDING)
    summary, _ = reconcile()
    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_DONE
    assert summary.cancels_settled == 1


def test_a_cancellation_left_pending_that_never_reached_the_service_can_be_sent_again(
    paycollect_in_process, recurring_transaction
):
    series = RecurringSeries.objects.get()
    RecurringSeries.objects.filter(pk=series.pk).update(cancel_state=RecurringSeries.CANCEL_PENDING)
    summary, _ = reconcile()
    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_FAILED  # still active at the service
    assert summary.cancels_settled == 1
    assert summary.needs_review == []


def test_direct_orders_of_unknown_creation_are_reported(paycollect_in_process):
    paycollect_in_process.control.fault("direct_order", "drop_after")
    order = services.create_direct_order(
        name="Invoice 3",
        amount=Decimal("90.00"),
        payment_methods=["card"],
        customer_name="Omar Said",
        customer_email="omar@example.com",
        customer_mobile="+201001112222",
    )
    assert order.state == DirectOrder.UNKNOWN
    [finding] = reconcile()[0].needs_review
    assert finding.kind == "direct_order"
    assert "dashboard" in finding.outcome


def test_recurring_charges_we_never_heard_of_are_reported(paycollect_in_process, recurring_transaction):
    series = RecurringSeries.objects.get()
    # Two renewals at the service; their callbacks never reached us.
    assert len(paycollect_in_process.control.advance_clock(31)) == 1
    assert len(paycollect_in_process.control.advance_clock(31)) == 1
    assert reconcile()[0].missed_charges == 0  # the series was synced a moment ago
    RecurringSeries.objects.filter(pk=series.pk).update(last_synced_at=timezone.now() - HOUR_AGO)

    summary, _ = reconcile()
    assert summary.missed_charges == 2
    [finding] = summary.needs_review
    assert finding.kind == "series"
    assert finding.label == recurring_transaction.uuid
    assert finding.outcome.startswith("2 charge(s)")


def test_an_item_that_fails_is_counted_and_the_run_goes_on(paycollect_in_process, pay, settings):
    # One fetch at a time, so the first one is the one the fault hits.
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RECONCILE_CONCURRENCY": 1}
    first, second = pay("10.00"), pay("20.00")
    paycollect_in_process.control.complete(second.uuid)
    age(first, second)
    # The first fetch fails (a 500 is not retried by the client), the second works.
    paycollect_in_process.control.fault("fetch_transaction", "status", status=500)
    summary, steps = reconcile()
    assert [s.finding.error for s in steps] == [True, False]
    [error] = summary.errors
    assert error.object_id == first.pk
    assert "ServerError" in error.outcome
    assert summary.changed == 1
    second.refresh_from_db()
    assert second.status == Transaction.SUCCESSFUL


def test_a_misconfiguration_is_recorded_on_each_item_and_logged_as_an_error(
    paycollect_in_process, pay, settings, caplog
):
    opened = pay("10.00")
    age(opened)
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": "not-the-key-0123456789"}
    summary, _ = reconcile()
    [error] = summary.errors
    assert error.object_id == opened.pk
    # What to fix (the setting and the community), never the key itself.
    assert error.outcome.startswith("error: CredentialsRefused: ")
    assert 'PAYCOLLECT["API_KEY"]' in error.outcome
    assert "not-the-key" not in error.outcome
    # The site's fault, not the item's: an error for the logs (and error reporting), without a traceback.
    [logged] = [r for r in caplog.records if r.name == "django_paycollect.reconciliation"]
    assert logged.levelname == "ERROR"
    assert logged.getMessage().startswith(
        f"reconciliation: open transactions {opened.pk}: the payments configuration is wrong: "
        "CredentialsRefused: The payment service refused the credentials of community "
        f'{paycollect_in_process.community_id!r} with an HTTP 401 answer: check PAYCOLLECT["API_KEY"]'
    )
    assert logged.exc_info is None


def test_community_filter(paycollect_in_process, pay):
    txn = pay("10.00")
    age(txn)
    Community.objects.create(community_id="other-community")
    assert reconcile(community_id="other-community")[0].fetched == 0
    assert reconcile(community_id=paycollect_in_process.community_id)[0].fetched == 1


def test_summary_is_json_serialisable(paycollect_in_process, pay):
    import json

    age(pay("10.00"))
    data = json.loads(json.dumps(reconcile()[0].as_dict()))
    assert data["fetched"] == 1
    assert data["older_than"] == "30m"


# --- ages ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30m", dt.timedelta(minutes=30)),
        ("2h", dt.timedelta(hours=2)),
        ("1d", dt.timedelta(days=1)),
        ("90d", dt.timedelta(days=90)),
        (" 2W ", dt.timedelta(weeks=2)),
        ("45s", dt.timedelta(seconds=45)),
    ],
)
def test_parse_age(text, expected):
    assert reconciliation.parse_age(text) == expected


@pytest.mark.parametrize("text", ["", "30", "m", "1.5h", "-1d", "30 minutes", "2y", "1d2h"])
def test_parse_age_refuses_what_it_does_not_know(text):
    with pytest.raises(ValueError, match="not an age"):
        reconciliation.parse_age(text)


# --- the command --------------------------------------------------------------------------------


def test_command_prints_progress_and_a_summary(paycollect_in_process, pay):
    txns = [pay("10.00") for _ in range(3)]
    paycollect_in_process.control.complete(txns[1].uuid)
    age(*txns)
    out = StringIO()
    call_command("paycollect_reconcile", "--older-than", "30m", stdout=out)
    text = out.getvalue()
    assert "open transactions: 3 to check" in text
    # Which position it has depends on the concurrent fetches (RECONCILE_CONCURRENCY) on PostgreSQL.
    assert re.search(rf"  \[[123]/3\] transaction {txns[1].uuid}: PENDING -> SUCCESSFUL", text)
    assert "  [3/3]" in text
    assert "Reconciliation of all communities (older than 30m)" in text
    assert "transactions fetched again: 3 (1 changed status)" in text
    assert "errors: 0" in text


def test_command_says_when_there_is_nothing_to_do(paycollect_in_process):
    out = StringIO()
    call_command("paycollect_reconcile", "--community", paycollect_in_process.community_id, stdout=out)
    assert "Nothing to reconcile." in out.getvalue()
    assert f"Reconciliation of community {paycollect_in_process.community_id}" in out.getvalue()


def test_command_fails_with_status_1_when_an_item_failed(paycollect_in_process, pay):
    age(pay("10.00"))
    paycollect_in_process.control.fault("fetch_transaction", "status", status=500)
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="1 item") as caught:
        call_command("paycollect_reconcile", stdout=out, stderr=err)
    assert caught.value.returncode == 1
    assert "ServerError" in err.getvalue()
    assert "errors: 1" in out.getvalue()


@pytest.mark.parametrize("value", ["soon", "30", "1.5h"])
def test_command_refuses_a_bad_age_clearly(value):
    with pytest.raises(CommandError, match=r"--older-than: .*not an age.*30m, 2h, 90d"):
        call_command("paycollect_reconcile", "--older-than", value)


def test_command_line_shows_a_usage_error_not_a_traceback():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-m", "django", "paycollect_reconcile", "--older-than", "soon"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "argument --older-than: 'soon' is not an age" in done.stderr
    assert "Traceback" not in done.stderr


# --- at scale: given up, fanned out, concurrent, slim ------------------------------------------------


def test_open_transactions_past_the_give_up_age_are_left_to_a_person(paycollect_in_process, pay, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RECONCILE_GIVE_UP_AFTER": 7 * 86400}
    recent, abandoned = pay("10.00"), pay("20.00")
    age(recent)
    age(abandoned, by=dt.timedelta(days=8))

    summary, _ = reconcile()

    assert (summary.fetched, summary.given_up) == (1, 1)
    assert not ApiCall.objects.filter(transaction=abandoned, operation="get_transaction").exists()
    assert "no longer fetched (need a person): 1" in "\n".join(summary.lines())
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RECONCILE_GIVE_UP_AFTER": None}
    assert reconcile()[0].fetched == 1  # never given up: fetched whatever its age


def test_a_large_run_is_handed_out_in_chunks(paycollect_in_process, pay, monkeypatch):
    monkeypatch.setattr("django_paycollect.reconciliation.steps.CHUNK_SIZE", 2)
    txns = [pay("10.00") for _ in range(3)]
    paycollect_in_process.control.complete(txns[2].uuid)
    age(*txns)
    chunks: list[list[int]] = []

    summary = reconciliation.reconcile(fan_out=chunks.append)

    assert chunks == [[txns[0].pk, txns[1].pk], [txns[2].pk]]
    assert (summary.fetched, summary.chunks, summary.chunked) == (0, 2, 3)
    done = [reconciliation.reconcile_chunk(chunk) for chunk in chunks]
    assert [part.fetched for part in done] == [2, 1]
    assert Transaction.objects.get(pk=txns[2].pk).status == Transaction.SUCCESSFUL


def test_a_sync_reads_the_community_once_per_run_and_writes_only_what_changed(paycollect_in_process, pay):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    txns = [pay("10.00") for _ in range(3)]
    paycollect_in_process.control.complete(txns[0].uuid)
    age(*txns)
    with CaptureQueriesContext(connection) as captured:
        summary = reconciliation.reconcile_chunk([txn.pk for txn in txns])
    assert summary.fetched == 3

    sqls = [q["sql"] for q in captured.captured_queries]
    if concurrency() == 1:  # threads' statements are not captured here
        assert len([sql for sql in sqls if 'FROM "paycollect_community"' in sql]) == 1
        updates = [sql for sql in sqls if sql.startswith('UPDATE "paycollect_transaction"')]
        assert len(updates) == 3
        assert all('"custom_fields"' not in sql and '"customer_email"' not in sql for sql in updates)
        assert sum('"succeeded_at"' in sql for sql in updates) == 1
    paid = Transaction.objects.get(pk=txns[0].pk)
    assert paid.status == Transaction.SUCCESSFUL
    assert paid.succeeded_at is not None
    assert ApiCall.objects.filter(operation="get_transaction", transaction__in=txns).count() == 3


def _locks(select: str) -> bool:
    """Whether a SELECT takes the row lock (SQLite has no FOR UPDATE: its writer holds the whole file)."""
    from django.db import connection

    return "FOR UPDATE" in select or connection.vendor == "sqlite"


def _transaction_statements(captured) -> tuple[list[str], list[str]]:
    """The SELECTs and the UPDATEs of the transactions' table among captured statements."""
    sqls = [q["sql"] for q in captured.captured_queries]
    table = '"paycollect_transaction"'
    return (
        [sql for sql in sqls if sql.startswith("SELECT") and f"FROM {table}" in sql],
        [sql for sql in sqls if sql.startswith(f"UPDATE {table}")],
    )


def test_a_fetch_that_changes_nothing_locks_the_row_and_writes_only_what_every_fetch_writes(
    paycollect_in_process, pay, signal_log
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    txn = pay("10.00")
    read = Transaction.objects.get(pk=txn.pk)
    signal_log.sent.clear()
    with CaptureQueriesContext(connection) as captured:
        synced = services.sync_transaction(read, source="reconcile")

    [select], [update] = _transaction_statements(captured)
    assert _locks(select)
    written = re.findall(r'"(\w+)" = ', update.split(" WHERE ")[0])
    assert written == ["raw", "last_synced_at", "fetch_sent_at", "updated_at"]
    stored = Transaction.objects.get(pk=txn.pk)
    assert (stored.status, synced.status) == (Transaction.PENDING, Transaction.PENDING)
    assert stored.raw["uuid"] == txn.uuid
    assert stored.last_synced_at == synced.last_synced_at is not None
    assert stored.fetch_sent_at == synced.fetch_sent_at is not None
    assert ApiCall.objects.filter(operation="get_transaction", transaction=txn).count() == 1
    assert not TransactionStatusChange.objects.filter(transaction=txn, source="reconcile").exists()
    assert signal_log.sent == []


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        # A callback verified meanwhile: the late fetch saying PENDING moves nothing back.
        ({"status": Transaction.SUCCESSFUL}, {"status": Transaction.SUCCESSFUL}),
        # An outcome recorded as unknown meanwhile: the fetch settles it, as a locked sync does.
        ({"outcome_unknown": True}, {"outcome_unknown": False, "status": Transaction.PENDING}),
    ],
    ids=["status", "outcome_unknown"],
)
def test_a_row_changed_since_it_was_read_is_applied_under_the_lock(
    paycollect_in_process, pay, changed, expected
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    txn = pay("10.00")
    read = Transaction.objects.get(pk=txn.pk)
    Transaction.objects.filter(pk=txn.pk).update(**changed)  # another process, after our read

    with CaptureQueriesContext(connection) as captured:
        synced = services.sync_transaction(read, source="reconcile")

    [select], [_update] = _transaction_statements(captured)
    assert _locks(select)  # the decision is made on the row as it is, under its lock
    assert (read.status, read.outcome_unknown) == (synced.status, synced.outcome_unknown)  # left current
    stored = Transaction.objects.get(pk=txn.pk)
    for name, value in expected.items():
        assert getattr(stored, name) == getattr(synced, name) == value, name
    assert stored.last_synced_at is not None
    assert ApiCall.objects.filter(operation="get_transaction", transaction=txn).count() == 1
    assert not TransactionStatusChange.objects.filter(transaction=txn, source="reconcile").exists()


def test_a_status_change_is_one_locked_read_and_one_update_with_its_signals_sent_once(
    paycollect_in_process, pay, signal_log
):
    """A payment paid at the service: the row read under its lock, its status moved by the status machine and
    written by save(); the change recorded, its signals sent once after the commit, ``then=`` called in that
    commit, and the caller's object left current."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_paycollect.services.sync import sync_stored

    txn = pay("10.00")
    paycollect_in_process.control.complete(txn.uuid)
    read = Transaction.objects.get(pk=txn.pk)
    signal_log.sent.clear()
    seen = []

    def then(applied: Transaction) -> None:
        recorded = TransactionStatusChange.objects.filter(transaction=applied).count()
        seen.append((applied.status, recorded, connection.in_atomic_block, list(signal_log.names())))

    with CaptureQueriesContext(connection) as captured:
        synced = sync_stored(read, None, community_id=None, source="reconcile", then=then)

    [select], [update] = _transaction_statements(captured)
    assert _locks(select)
    written = re.findall(r'"(\w+)" = ', update.split(" WHERE ")[0])
    assert sorted(written) == sorted(
        ["raw", "last_synced_at", "fetch_sent_at", "updated_at", "service_status", "status", "succeeded_at"]
    )
    assert synced is read  # the caller's object, left current
    assert read.status == Transaction.SUCCESSFUL
    # then= saw the change applied, in the transaction that applies it, before any signal was sent.
    assert seen == [(Transaction.SUCCESSFUL, 2, True, [])]  # NEW to PENDING at the start, then this
    stored = Transaction.objects.get(pk=txn.pk)
    assert stored.status == synced.status == Transaction.SUCCESSFUL
    assert stored.service_status == Transaction.SUCCESSFUL
    assert stored.succeeded_at == synced.succeeded_at is not None
    assert stored.updated_at == synced.updated_at
    [change] = TransactionStatusChange.objects.filter(transaction=txn, source="reconcile")
    assert (change.from_status, change.to_status, change.service_status) == (
        "PENDING",
        "SUCCESSFUL",
        "SUCCESSFUL",
    )
    assert signal_log.names() == ["transaction_status_changed", "payment_succeeded"]
    assert signal_log.sent[0][1]["transaction"].pk == synced.pk
    assert signal_log.sent[0][1]["transaction"].status == Transaction.SUCCESSFUL
    assert ApiCall.objects.filter(operation="get_transaction", transaction=txn).count() == 1


def test_a_project_listening_to_the_transactions_saves_hears_of_a_status_change(paycollect_in_process, pay):
    """Every write of a fetch goes through save(): a project's pre_save or post_save receiver of Transaction
    hears of it."""
    from django.db.models.signals import post_save

    txn = pay("10.00")
    paycollect_in_process.control.complete(txn.uuid)
    read = Transaction.objects.get(pk=txn.pk)
    heard = []

    def listener(sender, instance, update_fields, **kwargs):
        heard.append((instance.pk, instance.status, "status" in (update_fields or ())))

    post_save.connect(listener, sender=Transaction)
    try:
        services.sync_transaction(read, source="reconcile")
    finally:
        post_save.disconnect(listener, sender=Transaction)
    assert heard == [(txn.pk, Transaction.SUCCESSFUL, True)]
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.SUCCESSFUL


def test_a_fetch_saying_failed_never_moves_a_successful_payment_back(paycollect_in_process, pay, signal_log):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    txn = pay("10.00")
    paycollect_in_process.control.complete(txn.uuid, "FAILED")
    # Recorded as paid here (a callback verified before the service changed its mind, or a forged answer).
    Transaction.objects.filter(pk=txn.pk).update(
        status=Transaction.SUCCESSFUL, service_status=Transaction.SUCCESSFUL
    )
    read = Transaction.objects.get(pk=txn.pk)
    signal_log.sent.clear()
    with CaptureQueriesContext(connection) as captured:
        synced = services.sync_transaction(read, source="reconcile")

    [select], [_update] = _transaction_statements(captured)
    assert _locks(select)
    stored = Transaction.objects.get(pk=txn.pk)
    assert stored.status == synced.status == Transaction.SUCCESSFUL
    assert stored.service_status == Transaction.FAILED  # what the service said, kept
    assert not TransactionStatusChange.objects.filter(transaction=txn, source="reconcile").exists()
    assert signal_log.sent == []


def test_a_mismatch_found_with_a_status_change_takes_the_locked_flagged_path(
    paycollect_in_process, pay, signal_log
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    txn = pay("10.00")
    paycollect_in_process.control.complete(txn.uuid)
    Transaction.objects.filter(pk=txn.pk).update(total_amount=Decimal("5.00"))  # not what the service took
    read = Transaction.objects.get(pk=txn.pk)
    signal_log.sent.clear()
    with CaptureQueriesContext(connection) as captured:
        synced = services.sync_transaction(read, source="reconcile")

    selects, [_update] = _transaction_statements(captured)
    assert len(selects) == 1  # read again under the row lock
    stored = Transaction.objects.get(pk=txn.pk)
    assert stored.amount_mismatch
    assert synced.amount_mismatch
    assert stored.status == Transaction.PENDING
    assert signal_log.names() == ["amount_mismatch_detected"]


def test_a_fetch_whose_answer_cannot_be_applied_is_still_recorded(paycollect_in_process, pay, monkeypatch):
    txn = pay("10.00")
    paycollect_in_process.control.complete(txn.uuid)

    def broken(*args, **kwargs):
        raise RuntimeError("applying failed")

    monkeypatch.setattr("django_paycollect.services.sync.apply_status", broken)
    with pytest.raises(RuntimeError):
        services.sync_transaction(txn)
    assert (txn.status, txn.succeeded_at) == (Transaction.PENDING, None)  # the object as the row: as it was

    [call] = ApiCall.objects.filter(operation="get_transaction", transaction=txn)
    assert call.http_status == 200
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.PENDING
