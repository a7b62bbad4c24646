"""The admin's changelists and searches on PostgreSQL at 10,000 and at 100,000 transactions (``--large``).

On a durable PostgreSQL server of the run's own (``.ci/postgres.sh`` with ``PAYCOLLECT_PG_DURABLE=1``:
fsync and synchronous commit on, data on the disk; free port, stopped at the end), or the one
``PAYCOLLECT_BENCH_POSTGRES`` names (its settings are printed with the results; figures of one that is not
durable are labelled so). The script works in two databases of its own, ``<dbname>_bench_admin_small`` and
``<dbname>_bench_admin_large``, created afresh and dropped at the end.

The ledger is ``admin_dashboard.py``'s (three communities, a year of transactions, a callback each, refunds),
plus one API call per transaction (mostly fetches, a few failed). Django's test client, logged in as a
superuser, loads every changelist of the app (plain), the transactions filtered, sorted by amount both ways
and searched by uuid (in capitals), e-mail and reference, the API calls searched by a transaction's uuid and a
task id, and the callbacks searched by uuid. Each page's median time over ``--repeat`` loads at the large size
over its time at 10,000: target ≤ 1.5; and its statements: the same number at both sizes. Run by
``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    Measure,
    exit_status,
    postgres_databases,
    print_measures,
    setup_django_on_postgres,
    timed_get,
    write_section,
)
from benchmarks.admin_dashboard import add_rows, clone_rows, communities, postgres_version

CL = "/admin/paycollect/{}/"
#: A transaction both sizes hold (number 5 of the ledger), searched in the spellings people paste.
UUID = "md5('txn' || 5)::uuid::text"


def pages(uuid: str) -> list[tuple[str, str]]:
    """(name, URL) of every page measured."""
    from django_paycollect.admin import TransactionAdmin

    amount = 1 + list(TransactionAdmin.list_display).index("amount")  # 0 is the selection checkbox
    txn = CL.format("transaction")
    return [
        ("transactions", txn),
        ("transactions, status PENDING", f"{txn}?status__exact=PENDING"),
        ("transactions, one community", f"{txn}?community_id__exact=club-cairo"),
        ("transactions, by amount", f"{txn}?o={amount}"),
        ("transactions, by amount descending", f"{txn}?o=-{amount}"),
        ("transactions, search uuid in capitals", f"{txn}?q={uuid.upper()}"),
        ("transactions, search e-mail", f"{txn}?q=member5@example.com"),
        ("transactions, search nothing found", f"{txn}?q=order-none"),
        ("API calls", CL.format("apicall")),
        ("API calls, failed ConnectError", f"{CL.format('apicall')}?error_class__exact=ConnectError"),
        ("API calls, search transaction uuid", f"{CL.format('apicall')}?q={uuid}"),
        ("API calls, search task id", f"{CL.format('apicall')}?q=task-5"),
        ("received callbacks", CL.format("receivedcallback")),
        ("received callbacks, failed", f"{CL.format('receivedcallback')}?state__exact=failed"),
        ("received callbacks, search uuid", f"{CL.format('receivedcallback')}?q={uuid}"),
        ("refunds", CL.format("refund")),
        ("recurring series", CL.format("recurringseries")),
        ("direct orders", CL.format("directorder")),
        ("statistics snapshots", CL.format("statisticssnapshot")),
    ]


def add_api_calls(start: int, stop: int) -> None:
    """One API call per transaction ``start`` to ``stop``: fetches, one in fifty a ConnectError."""
    from django.db import connection

    from django_paycollect.models import ApiCall, Transaction

    template_txn = Transaction.objects.order_by("pk").first()
    template = ApiCall.objects.create(
        operation="get_transaction", method="GET", path="/x", transaction=template_txn
    )
    failed = "(t.service_id % 50 = 0)"
    clone_rows(
        ApiCall,
        template.pk,
        "paycollect_transaction t",
        f"t.service_id > {start} AND t.service_id <= {stop}",
        {
            "operation": "(ARRAY['get_transaction', 'get_transaction', 'pay', 'refund'])"
            "[1 + t.service_id % 4]",
            "community_id": "t.community_id",
            "path": "'/api/v1/communities/' || t.community_id || '/transactions/' || t.uuid || '/'",
            "http_status": f"(CASE WHEN {failed} THEN NULL ELSE 200 END)",
            "code": f"(CASE WHEN {failed} THEN NULL ELSE 200 END)",
            "error_class": f"(CASE WHEN {failed} THEN 'ConnectError' ELSE '' END)",
            "duration_ms": "(t.service_id % 300)",
            "attempts": "1",
            "task_id": "'task-' || t.service_id",
            "transaction_id": "t.id",
            "created_at": "t.created_at + interval '30 seconds'",
        },
    )
    template.delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def use(database: str) -> None:
    """Point Django's connection at ``database`` (a database of the same server)."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = database


def build(database: str, transactions: int, total: int) -> Any:
    """``database`` migrated and filled with ``transactions`` of the ledger; a logged-in test client."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    use(database)
    call_command("migrate", verbosity=0, interactive=False)
    started = time.perf_counter()
    communities()
    add_rows(0, transactions, total)
    add_api_calls(0, transactions)
    print(f"{transactions:,} transactions loaded in {time.perf_counter() - started:.1f} s", flush=True)
    user = get_user_model().objects.create_superuser("admin", "admin@example.com", "not-used")
    client = Client()
    client.force_login(user)
    return client


def load(client: Any, url: str) -> tuple[int, float]:
    started = time.perf_counter()
    _, statements = timed_get(client, url)
    return len(statements), time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000, help="transactions at the small size (10000)")
    parser.add_argument("--large", type=int, default=100_000, help="transactions at the large size (100000)")
    parser.add_argument("--repeat", type=int, default=5, help="page loads timed per page and size (5)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    # Two databases, so each page is loaded at both sizes in alternation: the machine's load moves both.
    # Dropped at the end, and a server started for them stopped.
    with postgres_databases("bench_admin_small", "bench_admin_large") as (small_spec, large_spec):
        return run(args, small_spec, large_spec)


def run(args: argparse.Namespace, small_spec: str, large_spec: str) -> int:
    small_db, large_db = small_spec.split(":")[2], large_spec.split(":")[2]
    setup_django_on_postgres(small_spec)
    from django.db import connection

    small_client = build(small_db, args.small, args.large)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {UUID}")
        uuid = cursor.fetchone()[0]
    large_client = build(large_db, args.large, args.large)
    urls = pages(uuid)

    small: dict[str, tuple[int, float]] = {}
    large: dict[str, tuple[int, float]] = {}
    for name, url in urls:
        runs: dict[str, list[tuple[int, float]]] = {small_db: [], large_db: []}
        for round_ in range(args.repeat + 1):  # the first round warms templates and plans
            for database, client in ((small_db, small_client), (large_db, large_client)):
                use(database)
                result = load(client, url)
                if round_:
                    runs[database].append(result)
        for database, into in ((small_db, small), (large_db, large)):
            counts = {count for count, _ in runs[database]}
            assert len(counts) == 1, f"{url}: the number of statements differs between loads"
            into[name] = (counts.pop(), statistics.median(seconds for _, seconds in runs[database]))

    measures = []
    for name, _url in urls:
        (small_count, small_time), (large_count, large_time) = small[name], large[name]
        ratio = large_time / small_time
        measures.append(
            Measure(
                f"{name}: page with {args.large:,} transactions",
                f"{large_time * 1000:.1f} ms ({large_count} statements)",
                f"{small_time * 1000:.1f} ms ({small_count} statements) with {args.small:,}",
                ratio,
                "≤ 1.5, statements equal",
                ratio <= 1.5 and large_count == small_count,
            )
        )
    print_measures(measures)
    write_section(
        "admin_changelist",
        "Admin changelists and searches on PostgreSQL",
        summary=(
            f"PostgreSQL {postgres_version()} (its settings below); {args.small:,} then {args.large:,} "
            "transactions (the dashboard benchmark's ledger: a year, three communities, a callback each, "
            "refunds) and an API call each, then `VACUUM ANALYZE`. Django's test client, logged in as a "
            f"superuser; each page loaded at both sizes in alternation (two databases of the same server), "
            f"{args.repeat} times after a warming load, medians; statements of the session and the user "
            "included."
        ),
        measures=measures,
    )
    return exit_status(measures, args.strict)


if __name__ == "__main__":
    sys.exit(main())
