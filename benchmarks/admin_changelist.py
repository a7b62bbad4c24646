"""Admin changelist queries with 100 and with 50,000 rows: the same count is the target.

Django's test client, logged in as a superuser, on a SQLite file: the transaction changelist (plain, filtered
by status, searched by an exact uuid), the API call and received callback changelists and the payments
dashboard (one community, 90 days; on PostgreSQL at a million rows: admin_dashboard.py), first with
``--small`` rows of each (default 100), then with ``--large`` (default 50,000; added with ``bulk_create``).
Every statement the page sends is counted (session and user included); the target is the same count at
both sizes. The time of those statements (one load) at the large size over the small one is printed too,
with the page's time (median of ``--repeat`` loads); no target: it shows which query reads every row.
``--strict`` makes a missed target exit with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    Measure,
    exit_status,
    print_measures,
    setup_django,
    temp_workdir,
    timed_get,
    write_section,
)

COMMUNITIES = ("club-cairo", "club-alex", "club-giza")
STATUSES = ("SUCCESSFUL", "PENDING", "FAILED", "SUCCESSFUL", "NEW", "SUCCESSFUL")


def add_rows(start: int, stop: int) -> None:
    """Transactions ``start`` to ``stop`` (spread over a year), each with an API call and a callback."""
    from django.utils import timezone

    from django_paycollect.models import ApiCall, ReceivedCallback, Transaction

    now = timezone.now()
    for first in range(start, stop, 5000):
        numbers = range(first, min(stop, first + 5000))
        transactions = Transaction.objects.bulk_create(
            Transaction(
                uuid=str(uuid.uuid4()),
                community_id=COMMUNITIES[i % len(COMMUNITIES)],
                status=STATUSES[i % len(STATUSES)],
                service_status=STATUSES[i % len(STATUSES)],
                total_amount=Decimal(100 + i % 400),
                customer_email=f"member{i}@example.com",
                customer_name=f"Member {i}",
                merchant_reference=f"order-{i}",
                raw={
                    "uuid": "…",
                    "status": STATUSES[i % len(STATUSES)],
                    "custom_fields_json": {"Branch": "x"},
                },
                created_at=now - dt.timedelta(minutes=10 * i),
                succeeded_at=now - dt.timedelta(minutes=10 * i - 2)
                if STATUSES[i % 6] == "SUCCESSFUL"
                else None,
            )
            for i in numbers
        )
        ApiCall.objects.bulk_create(
            ApiCall(
                operation="get_transaction",
                community_id=t.community_id,
                method="GET",
                path=f"/api/v1/communities/{t.community_id}/transactions/{t.uuid}/",
                http_status=200,
                code=200,
                data={"uuid": t.uuid, "status": t.status},
                duration_ms=120,
                attempts=1,
                transaction=t,
                created_at=t.created_at,
            )
            for t in transactions
        )
        ReceivedCallback.objects.bulk_create(
            ReceivedCallback(
                state=ReceivedCallback.PROCESSED,
                transaction=t,
                transaction_uuid=t.uuid or "",
                claimed_status=t.status,
                merchant_id=t.community_id,
                remote_addr="203.0.113.7",
                headers={"content-type": "application/json"},
                body=json.dumps({"transaction_status": t.status}),
                dedupe_key=f"{t.uuid}|{t.status}",
                received_at=t.created_at,
            )
            for t in transactions
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100, help="rows at the small size (default 100)")
    parser.add_argument("--large", type=int, default=50_000, help="rows at the large size (default 50000)")
    parser.add_argument("--repeat", type=int, default=7, help="page loads timed per size (default 7)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    with temp_workdir() as workdir:
        setup_django(Path(workdir))
        from django.contrib.auth import get_user_model
        from django.test import Client

        from django_paycollect.models import Community, Transaction

        user = get_user_model().objects.create_superuser("admin", "admin@example.com", "not-used")
        Community.objects.bulk_create(Community(community_id=c, name=c) for c in COMMUNITIES)
        client = Client()
        client.force_login(user)

        def pages() -> dict[str, str]:
            # The same uuid at both sizes: the first transaction stored.
            first = Transaction.objects.order_by("pk").values_list("uuid", flat=True).first()
            return {
                "transactions": "/admin/paycollect/transaction/",
                "transactions, filtered by status": "/admin/paycollect/transaction/?status__exact=PENDING",
                "transactions, exact uuid search": f"/admin/paycollect/transaction/?q={first}",
                "API calls": "/admin/paycollect/apicall/",
                "received callbacks": "/admin/paycollect/receivedcallback/",
                "payments dashboard": f"/admin/paycollect/dashboard/?community={COMMUNITIES[0]}&days=90",
            }

        def measure(size: int) -> dict[str, tuple[list[tuple[str, float]], float]]:
            results: dict[str, tuple[list[tuple[str, float]], float]] = {}
            for name, url in pages().items():
                client.get(url)  # warm: templates, SQLite pages
                _, statements = timed_get(client, url)  # times are this one load's, in milliseconds
                times = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    client.get(url)
                    times.append(time.perf_counter() - started)
                results[name] = (statements, statistics.median(times))
            print(f"measured with {size:,} rows", flush=True)
            return results

        add_rows(0, args.small)
        small = measure(args.small)
        add_rows(args.small, args.large)
        large = measure(args.large)

    measures: list[Measure] = []
    details: list[str] = []
    for name in small:
        (q_small, t_small), (q_large, t_large) = small[name], large[name]
        sql_small, sql_large = sum(ms for _, ms in q_small), sum(ms for _, ms in q_large)
        measures.append(
            Measure(
                f"{name}: statements with {args.large:,} rows",
                str(len(q_large)),
                f"{len(q_small)} with {args.small:,} rows",
                len(q_large) / len(q_small),
                "equal (ratio 1)",
                len(q_large) == len(q_small),
            )
        )
        measures.append(
            Measure(
                f"{name}: SQL time with {args.large:,} rows",
                f"{sql_large:.2f} ms (page {t_large * 1000:.0f} ms)",
                f"{sql_small:.2f} ms (page {t_small * 1000:.0f} ms) with {args.small:,} rows",
                sql_large / sql_small,
                "(reported)",
                None,
            )
        )
        details.append(f"{name}: ms per statement with {args.small:,} -> {args.large:,} rows")
        details += [
            f"  {small_ms:6.2f} -> {large_ms:6.2f}  {_short(sql)}"
            for (sql, large_ms), (_, small_ms) in zip(q_large, q_small, strict=False)
        ]
    print_measures(measures)
    write_section(
        "admin_changelist",
        "Admin changelists",
        summary=(
            f"Django's test client logged in as a superuser, SQLite file; {args.small:,} then {args.large:,} "
            "transactions, each with one API call and one received callback (`bulk_create`). Every statement "
            "of a page load counts (session and user too). SQL time is the statements' time in one load "
            f"(their ratio is large over small; no target), page time the median of {args.repeat} loads. "
            "Below, each statement's milliseconds at both sizes."
        ),
        measures=measures,
        details=details,
    )
    return exit_status(measures, args.strict)


def _short(sql: Any) -> str:
    text = str(sql)
    return text if len(text) <= 120 else text[:117] + "..."


if __name__ == "__main__":
    sys.exit(main())
