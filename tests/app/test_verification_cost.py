"""What verifying a callback costs the database, on PostgreSQL, where each commit of a durable server waits
for its log to reach the disk: the statements, and the commits, of the usual case (a payment started here,
completed at the service, verified from its callback).

What the guarantees need, and no more: the callback read; the right to fetch claimed and committed before
the fetch (with the attempt it counts), so no other process fetches the uuid meanwhile; then, in one
transaction, the record of the fetch (the envelope), the status applied under the transaction's row lock
(one UPDATE guarded by the status it was decided from, which takes the lock itself: no locked re-read),
its status change, and the callback marked verified. The claim is committed without waiting for the disk
(a crash could take back only a claim, costing one more fetch); the second commit, money data, waits.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycollect.models import ApiCall, ReceivedCallback, Transaction, TransactionStatusChange
from django_paycollect.services.callback_ledger import run_verification, store_callback

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT", "SET LOCAL")
UNFLUSHED = "SET LOCAL synchronous_commit TO OFF"


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


def test_verifying_a_callback_costs_nine_statements_and_two_commits(paycollect_live, pay):
    txn, callback_id, queries = verified(paycollect_live, pay)

    shown = "\n".join(q["sql"][:120] for q in queries)
    assert cost(queries) == (9, 2), shown
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


def test_the_claim_commits_without_waiting_for_the_disk_and_the_verification_waits(paycollect_live, pay):
    _, _, queries = verified(paycollect_live, pay)

    claim, recorded = transactions(queries)
    assert claim[0] == UNFLUSHED, claim
    assert any('"paycollect_fetchmark"' in sql for sql in claim), claim
    # The record of the fetch and what it applied: a durable commit, as every write of money data.
    assert any('INSERT INTO "paycollect_apicall"' in sql for sql in recorded), recorded
    assert all("synchronous_commit" not in sql for sql in recorded), recorded
