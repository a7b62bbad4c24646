"""What verifying a callback costs the database, on PostgreSQL, where each commit of a durable server waits
for its log to reach the disk: the statements, and the commits, of the usual case (a payment started here,
completed at the service, verified from its callback).

What the guarantees need, through the ORM: the callback read; the right to fetch claimed and committed
before the fetch (with the attempt it counts), so no other process fetches the uuid meanwhile; then, in one
transaction, the transaction's row locked, the record of the fetch (the envelope), the status applied and
saved, its status change, and the callback marked verified. Every commit is durable: the app sets no
``synchronous_commit`` (nor any other knob), inside a caller's atomic block or not.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycollect.models import ApiCall, ReceivedCallback, Transaction, TransactionStatusChange
from django_paycollect.services.callback_ledger import run_verification, store_callback

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def cost(queries: list[dict[str, str]]) -> tuple[int, int]:
    """(statements other than transaction control, commits): an explicit COMMIT, or a write in autocommit."""
    statements = commits = 0
    depth = 0
    for query in queries:
        sql = query["sql"].strip().upper()
        if sql == "BEGIN":
            depth += 1
        elif sql == "COMMIT":
            depth -= 1
            commits += 1
        elif not sql.startswith(CONTROL):
            statements += 1
            if depth == 0 and sql.startswith(("INSERT", "UPDATE", "DELETE")):
                commits += 1
    return statements, commits


def verified(paycollect_live: Any, pay: Any) -> tuple[Transaction, int, list[dict[str, str]]]:
    """A payment started here and completed at the service, its callback verified: the payment, the
    callback's key, and the statements of the verification."""
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid)
    stored = store_callback(transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL")
    with CaptureQueriesContext(connection) as captured:
        assert run_verification(stored.to_verify).state == ReceivedCallback.PROCESSED
    return txn, stored.to_verify, captured.captured_queries


def test_verifying_a_callback_costs_ten_statements_and_two_commits(paycollect_live, pay):
    txn, callback_id, queries = verified(paycollect_live, pay)

    shown = "\n".join(q["sql"][:120] for q in queries)
    # The callback, its transaction; the claim and the attempt; the community's credentials; the row locked,
    # the envelope, the status change, the row saved, the callback marked.
    assert cost(queries) == (10, 2), shown
    # Each fact the guarantees need, written once.
    callback = ReceivedCallback.objects.get(pk=callback_id)
    assert (callback.state, callback.attempts, callback.transaction_id) == (
        ReceivedCallback.PROCESSED,
        1,
        txn.pk,
    )
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.SUCCESSFUL
    assert ApiCall.objects.filter(operation="get_transaction", transaction=txn).count() == 1
    assert (
        TransactionStatusChange.objects.filter(transaction=txn, to_status=Transaction.SUCCESSFUL).count() == 1
    )


def transactions(queries: list[dict[str, str]]) -> list[list[str]]:
    """The statements of each explicit transaction, in order."""
    blocks: list[list[str]] = []
    for query in queries:
        sql = query["sql"].strip()
        if sql.upper() == "BEGIN":
            blocks.append([])
        elif sql.upper() != "COMMIT" and blocks:
            blocks[-1].append(sql)
    return blocks


def test_every_commit_waits_for_the_disk(paycollect_live, pay):
    _, _, queries = verified(paycollect_live, pay)

    claim, recorded = transactions(queries)
    assert any('"paycollect_fetchmark"' in sql for sql in claim), claim
    assert any('INSERT INTO "paycollect_apicall"' in sql for sql in recorded), recorded
    assert not [q["sql"] for q in queries if q["sql"].upper().startswith("SET ")]


def test_verified_inside_a_callers_atomic_block_commits_durably_with_it(paycollect_live, pay, signal_log):
    """``reprocess_callback(..., here=True)`` from project code, or a view under ATOMIC_REQUESTS: the
    verification runs inside the caller's block, every write commits with it, durably, and the signals follow
    that commit."""
    from django.db import transaction

    from django_paycollect.services.callback_ledger import reprocess_callback

    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid)
    stored = store_callback(transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL")
    signal_log.sent.clear()
    settings_seen = [_synchronous_commit()]  # the server's own (the tests' server: off; a site's: on)
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        assert reprocess_callback(stored.to_verify, here=True) == ReceivedCallback.PROCESSED
        settings_seen.append(_synchronous_commit())
        assert signal_log.count("payment_succeeded") == 0  # not before the caller's commit
    assert settings_seen[0] == settings_seen[1]  # nothing the app ran changed how the outer block commits
    set_by_us = [q["sql"] for q in captured.captured_queries if q["sql"].upper().startswith("SET ")]
    assert set_by_us == []
    assert signal_log.count("payment_succeeded") == 1
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.SUCCESSFUL
    assert ReceivedCallback.objects.get(pk=stored.to_verify).state == ReceivedCallback.PROCESSED


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('synchronous_commit')")
        return str(cursor.fetchone()[0])
