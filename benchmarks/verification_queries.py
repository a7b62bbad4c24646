"""SQL statements per callback verification (``callback_ledger.run_verification``) as the history grows.

Starts the standalone sandbox (``python -m django_paycollect.sandbox``, temporary SQLite file) and points the
app at it, on a SQLite file of its own. Then, with 10 and with ``--history`` (default 5,000) prior
transactions, received callbacks and API calls in the database, counts the statements of verifying a
stored callback, for each kind:

- ``known``: a payment started here (``services.start_payment``), completed at the service: the
  verification fetches it, moves it PENDING -> SUCCESSFUL and records the status change; at the large
  history that transaction also has 500 earlier API calls and 500 earlier (duplicate) callbacks of its own;
- ``unknown``: a payment started at the service directly (a renewal, a payment made elsewhere): the
  verification creates its transaction from the fetched object.

The target counts queries: every statement Django sends except transaction control (BEGIN, COMMIT,
savepoints), which is shown beside (``assertNumQueries`` counts it too). Targets: 10 queries or fewer,
and the same count with the large history as with the small one. ``--strict`` makes a missed target exit
with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    PROJECTS,
    Measure,
    add_project_argument,
    exit_status,
    for_each_project,
    print_measures,
    setup_django,
    temp_workdir,
    write_section,
)
from django_paycollect.sandbox.testing import SandboxControl, start_sandbox

TARGET_QUERIES = 10
TRANSACTION_CONTROL = (
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE SAVEPOINT",
    "ROLLBACK TO SAVEPOINT",
)
BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}


def is_control(sql: str) -> bool:
    return sql.split(' "', 1)[0].strip().upper() in TRANSACTION_CONTROL


def add_history(count: int, community_id: str, *, txn: Any = None, per_transaction: int = 0) -> None:
    """``count`` more transactions, processed callbacks and API calls (bulk inserts), spread over 90 days;
    and ``per_transaction`` API calls and duplicate callbacks of ``txn``."""
    from django.utils import timezone

    from django_paycollect.models import ApiCall, ReceivedCallback, Transaction

    now = timezone.now()
    statuses = [Transaction.SUCCESSFUL, Transaction.FAILED, Transaction.PENDING, Transaction.SUCCESSFUL]
    transactions = Transaction.objects.bulk_create(
        Transaction(
            uuid=str(uuid.uuid4()),
            community_id=community_id,
            status=statuses[i % len(statuses)],
            service_status=statuses[i % len(statuses)],
            total_amount=Decimal("104.50"),
            customer_email=f"member{i}@example.com",
            merchant_reference=f"history-{uuid.uuid4().hex[:12]}",
            created_at=now - dt.timedelta(minutes=i * 26),
        )
        for i in range(count)
    )
    ReceivedCallback.objects.bulk_create(
        ReceivedCallback(
            state=ReceivedCallback.PROCESSED,
            transaction=t,
            transaction_uuid=t.uuid or "",
            claimed_status=t.status,
            merchant_id=community_id,
            body=json.dumps({"transaction_status": t.status}),
            dedupe_key=f"{t.uuid}|{t.status}",
            received_at=t.created_at,
        )
        for t in transactions
    )
    ApiCall.objects.bulk_create(
        ApiCall(
            operation="get_transaction",
            community_id=community_id,
            method="GET",
            path=f"/api/v1/communities/{community_id}/transactions/{t.uuid}/",
            http_status=200,
            code=200,
            data={"uuid": t.uuid, "status": t.status},
            transaction=t,
            created_at=t.created_at,
        )
        for t in transactions
    )
    if txn is not None and per_transaction:
        ApiCall.objects.bulk_create(
            ApiCall(
                operation="get_transaction",
                community_id=community_id,
                method="GET",
                path="/",
                transaction=txn,
            )
            for _ in range(per_transaction)
        )
        ReceivedCallback.objects.bulk_create(
            ReceivedCallback(
                state=ReceivedCallback.DUPLICATE,
                transaction=txn,
                transaction_uuid=txn.uuid,
                claimed_status="PENDING",
                merchant_id=community_id,
            )
            for _ in range(per_transaction)
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--history", type=int, default=5000, help="prior rows of each kind at the large size (default 5000)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    add_project_argument(parser)
    args = parser.parse_args()

    def one() -> dict[str, list[str]]:
        with temp_workdir() as workdir:
            sandbox = start_sandbox(Path(workdir) / "sandbox")
            try:
                found = run(Path(workdir), sandbox.info, args.history)
            finally:
                sandbox.stop()
        return {f"{kind}:{size}": sqls for (kind, size), sqls in found.items()}

    results = for_each_project(__file__, args, one)
    if args.results:
        return 0
    sizes = (10, args.history)
    tables: list[tuple[str, list[Measure]]] = []
    details: list[str] = []
    for name, counts in results.items():
        measures: list[Measure] = []
        for kind in ("known", "unknown"):
            small, large = (counts[f"{kind}:{size}"] for size in sizes)
            n_small, n_large = len(small), len(large)
            q_small = sum(not is_control(sql) for sql in small)
            q_large = sum(not is_control(sql) for sql in large)
            # The receivers project adds what its receivers write (simple-history's row per save): its
            # target is a count that does not grow with the rows.
            bounded = name == "plain"
            measures.append(
                Measure(
                    f"queries per verification, {kind} transaction, {sizes[1]:,} prior rows",
                    f"{q_large} ({n_large} statements)",
                    f"{q_small} ({n_small} statements) with {sizes[0]} prior rows",
                    q_large / q_small,
                    f"≤ {TARGET_QUERIES}, ratio 1" if bounded else "ratio 1",
                    n_large == n_small and (not bounded or max(q_large, q_small) <= TARGET_QUERIES),
                )
            )
        print(f"-- {PROJECTS[name]}:")
        print_measures(measures)
        tables.append((f"In {PROJECTS[name]}", measures))
        for kind in ("known", "unknown"):
            details.append(
                f"[{name}] verifying a callback of a {kind} transaction ({sizes[1]:,} prior rows):"
            )
            details += [
                f"  {sql if len(sql) <= 150 else sql[:147] + '...'}" for sql in counts[f"{kind}:{sizes[1]}"]
            ]
    write_section(
        "verification_queries",
        "Queries per callback verification",
        summary=(
            "`services.callback_ledger.run_verification` against the standalone sandbox, with 10 and with "
            f"{sizes[1]:,} prior transactions, callbacks and API calls (the verified known transaction also "
            f"has {min(500, sizes[1])} API calls and {min(500, sizes[1])} callbacks of its own at the large "
            "size). Queries are the statements Django sends other than transaction control; with BEGIN, "
            "COMMIT and savepoints (as `assertNumQueries` counts) they are the statements in brackets. "
            "In both projects; in the one with receivers, simple-history writes a row of its own per save "
            "of the transaction."
        ),
        measures=[],
        tables=tables,
        details=details,
    )
    return exit_status([m for _, table in tables for m in table], args.strict)


def run(workdir: Path, info: dict[str, Any], history: int) -> dict[tuple[str, int], list[str]]:
    setup_django(workdir)
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_paycollect import services
    from django_paycollect.client import PayCollectClient
    from django_paycollect.models import ReceivedCallback, Transaction
    from django_paycollect.services.callback_ledger import run_verification

    community = str(info["community_id"])
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "BASE_URL": info["base_url"],
        "COMMUNITY_ID": community,
        "API_KEY": info["api_key"],
        "VARIABLE_AMOUNT_ID": int(info["variable_amount_id"]),
    }
    control = SandboxControl(info["base_url"])
    client = PayCollectClient(str(info["base_url"]), api_key=str(info["api_key"]))

    def stored_callback(transaction_uuid: str) -> int:
        """A callback as the view stores it (QUEUED), claiming the payment succeeded."""
        callback = ReceivedCallback.objects.create(
            state=ReceivedCallback.QUEUED,
            transaction_uuid=transaction_uuid,
            claimed_status="SUCCESSFUL",
            merchant_id=community,
            payment_id=str(info["variable_amount_id"]),
            total_amount=Decimal("104.50"),
            dedupe_key=f"{transaction_uuid}|SUCCESSFUL",
            body="{}",
        )
        return callback.pk

    def known() -> tuple[Transaction, int]:
        txn = services.start_payment(amount=Decimal("104.50"), billing_data=BILLING)
        assert txn.uuid
        control.complete(txn.uuid)
        return txn, stored_callback(txn.uuid)

    def unknown() -> int:
        started = client.pay(
            community_id=community,
            amount=Decimal("104.50"),
            original_amount=Decimal("104.50"),
            variable_amount_id=int(info["variable_amount_id"]),
            billing_data=BILLING,
        )
        transaction_uuid = started.result.transaction_uuid
        assert transaction_uuid
        control.complete(transaction_uuid)
        return stored_callback(transaction_uuid)

    def count(callback_id: int) -> list[str]:
        connection.queries_log.clear()
        with CaptureQueriesContext(connection) as captured:
            run_verification(callback_id)
        callback = ReceivedCallback.objects.select_related("transaction").get(pk=callback_id)
        if callback.state != ReceivedCallback.PROCESSED or callback.transaction is None:
            raise SystemExit(f"callback {callback_id} was not verified: {callback.state} {callback.error}")
        if callback.transaction.status != Transaction.SUCCESSFUL:
            raise SystemExit(f"callback {callback_id}: the transaction is {callback.transaction.status}")
        return [q["sql"] for q in captured.captured_queries]

    # A first verification of each kind warms every cache (clients, content types) out of the counts.
    count(known()[1])
    count(unknown())
    results: dict[tuple[str, int], list[str]] = {}
    add_history(10 - 2, community)
    results[("known", 10)] = count(known()[1])
    results[("unknown", 10)] = count(unknown())

    txn, callback_id = known()
    add_history(history - 10, community, txn=txn, per_transaction=min(500, history))
    results[("known", history)] = count(callback_id)
    results[("unknown", history)] = count(unknown())
    return results


if __name__ == "__main__":
    sys.exit(main())
