"""The admin's payments dashboard on PostgreSQL at 10,000 and at 100,000 transactions (``--large``).

On a durable PostgreSQL server of the run's own (``.ci/postgres.sh`` with ``PAYCOLLECT_PG_DURABLE=1``: fsync
and synchronous commit on, data on the disk; free port, stopped at the end), or the one
``PAYCOLLECT_BENCH_POSTGRES`` names (its settings are printed with the results; figures of one that is not
durable are labelled so). The script works in a database of its own, ``<dbname>_bench_dashboard``, created
afresh and dropped at the end.

The ledger: three communities, a year of transactions (a tenth in USD; 60 % successful, a tenth of those
renewal charges; 3 % of the successful partly refunded; a few of unknown outcome, mismatched,
unrecognised), one received callback each (mostly verified, a few failed, duplicate, invalid, stuck), and
statistics snapshots. Rows are copied from one row made by the ORM (``INSERT ... SELECT ... FROM
generate_series``), so every column a new release adds is filled as the ORM fills it; then
``VACUUM ANALYZE``, as autovacuum leaves a settled table.

Measured at both sizes, with Django's test client logged in as a superuser, the dashboard of one community
in EGP over 90 days: the statements of one load (target: the same number at both sizes), their time (each
one's median over ``--repeat`` loads, listed), and the page's median time. The baseline is the least work
any dashboard of these figures must do: one ``count(*)`` of each row set they read, through the same
indexes (target: the dashboard's SQL within 2x of it). Run by ``make bench``, never by the tests.
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

COMMUNITIES = ("club-cairo", "club-alex", "club-giza")
DAYS = 90


def _columns(model: Any) -> list[str]:
    return [f.column for f in model._meta.concrete_fields if not f.primary_key]


def clone_rows(model: Any, template_pk: int, source: str, where: str, overrides: dict[str, str]) -> None:
    """INSERT rows of ``model`` copying the template row, each column from ``overrides`` when given."""
    from django.db import connection

    table = model._meta.db_table
    columns = _columns(model)
    unknown = set(overrides) - set(columns)
    assert not unknown, unknown
    values = ", ".join(overrides.get(c, f'tmpl."{c}"') for c in columns)
    names = ", ".join(f'"{c}"' for c in columns)
    # The script's own expressions, no outside input.
    sql = (
        f'INSERT INTO "{table}" ({names}) SELECT {values} FROM "{table}" tmpl, {source} '  # noqa: S608
        f"WHERE tmpl.id = {int(template_pk)} AND ({where})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)  # no parameters: the % of the expressions stay modulo operators


def add_rows(start: int, stop: int, total: int) -> None:
    """Transactions ``start`` to ``stop`` of ``total`` (spread over a year, newest first), their callbacks and
    refunds; each transaction's values follow from its number, so both sizes share their first rows."""
    from decimal import Decimal

    from django.db import connection
    from django.utils import timezone

    from django_paycollect.models import ReceivedCallback, Refund, Transaction

    now = timezone.now()
    template = Transaction.objects.create(community_id="template", total_amount=Decimal("1.00"))
    callback = ReceivedCallback.objects.create(transaction=template)
    refund = Refund.objects.create(transaction=template, amount=Decimal("0.50"))
    h = "abs(hashtext(g::text))"
    status = (
        f"(CASE WHEN {h} % 20 < 12 THEN 'SUCCESSFUL' WHEN {h} % 20 < 15 THEN 'FAILED' "
        f"WHEN {h} % 20 < 17 THEN 'PENDING' WHEN {h} % 20 = 17 THEN 'NEW' "
        f"WHEN {h} % 20 = 18 THEN 'REJECTED' ELSE 'ABANDONED' END)"
    )
    created = f"('{now.isoformat()}'::timestamptz - (g * interval '365 days' / {total}))"
    successful = f"({h} % 20 < 12)"
    amount = f"(50 + ({h} % 500000) / 100.0)::numeric(14, 2)"
    refunded = f"(CASE WHEN {successful} AND {h} % 33 = 0 THEN round({amount} / 2, 2) ELSE 0 END)"
    source = f"generate_series({start + 1}, {stop}) g"
    new = f"t.service_id > {start} AND t.service_id <= {stop}"
    overrides = {
        "uuid": "md5('txn' || g)::uuid::text",
        "service_id": "g",
        "community_id": f"(ARRAY{list(COMMUNITIES)})[1 + g % 3]",
        "status": status,
        "service_status": status,
        "currency": "(CASE WHEN g % 10 = 0 THEN 'USD' ELSE 'EGP' END)",
        "total_amount": amount,
        "refunded_amount": refunded,
        "created_at": created,
        "updated_at": created,
        "succeeded_at": f"(CASE WHEN {successful} THEN {created} + interval '2 minutes' END)",
        "parent_uuid": f"(CASE WHEN {successful} AND {h} % 10 = 0 THEN 'parent-' || (g % 1000) ELSE '' END)",
        "outcome_unknown": "(g % 10007 = 0)",
        "amount_mismatch": "(g % 20011 = 0)",
        "status_unrecognised": "(g % 30011 = 0)",
        "capture_state": "(CASE WHEN g % 40009 = 0 THEN 'unknown' ELSE '' END)",
        "customer_email": "'member' || g || '@example.com'",
    }
    clone_rows(Transaction, template.pk, source, "true", overrides)
    # A callback per new transaction: 90 % verified within 5 s; some failed, duplicate, invalid; a few stuck.
    ch = "abs(hashtext('cb' || t.id))"
    state = (
        f"(CASE WHEN t.service_id % 50021 = 0 THEN 'queued' WHEN {ch} % 100 < 90 THEN 'processed' "
        f"WHEN {ch} % 100 < 92 THEN 'failed' WHEN {ch} % 100 < 97 THEN 'duplicate' ELSE 'invalid' END)"
    )
    received = "(t.created_at + interval '1 minute')"
    clone_rows(
        ReceivedCallback,
        callback.pk,
        "paycollect_transaction t",
        new,
        {
            "received_at": received,
            "state": state,
            "transaction_uuid": "t.uuid",
            "claimed_status": "t.status",
            "transaction_id": "t.id",
            "processed_at": f"(CASE WHEN {state} = 'processed' THEN {received} "
            f"+ ({ch} % 5000) * interval '1 millisecond' END)",
            "body": "'{\"transaction_status\": \"' || t.status || '\"}'",
        },
    )
    clone_rows(
        Refund,
        refund.pk,
        "paycollect_transaction t",
        f"{new} AND t.refunded_amount > 0",
        {
            "transaction_id": "t.id",
            "amount": "t.refunded_amount",
            "state": "'succeeded'",
            "created_at": "t.succeeded_at + interval '1 day'",
            "completed_at": "t.succeeded_at + interval '1 day'",
        },
    )
    Refund.objects.filter(pk=refund.pk).delete()
    ReceivedCallback.objects.filter(pk=callback.pk).delete()
    template.delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def communities() -> None:
    from decimal import Decimal

    from django.utils import timezone

    from django_paycollect.models import Community, StatisticsSnapshot

    for community in COMMUNITIES:
        Community.objects.create(community_id=community, name=community)
        StatisticsSnapshot.objects.create(
            community_id=community,
            taken_at=timezone.now(),
            balance=Decimal("1000.00"),
            total_settled=Decimal("2000.00"),
            total_number_of_transactions=1,
            total_collected_transactions=Decimal("3000.00"),
            weekly_collected_transactions=Decimal("4000.00"),
        )


def measure(client: Any, url: str, repeat: int) -> tuple[list[tuple[str, float]], float]:
    """The statements of one load with each one's median time over ``repeat`` loads, and the page's median."""
    client.get(url)  # warm: templates, caches, plans
    loads: list[tuple[list[tuple[str, float]], float]] = []
    for _ in range(repeat):
        started = time.perf_counter()
        _, statements = timed_get(client, url)
        loads.append((statements, time.perf_counter() - started))
    sqls = [sql for sql, _ in loads[0][0]]
    assert all(len(load) == len(sqls) for load, _ in loads), "the number of statements differs between loads"
    medians = [statistics.median(load[i][1] for load, _ in loads) for i in range(len(sqls))]
    return list(zip(sqls, medians, strict=True)), statistics.median(page for _, page in loads)


#: The row sets the dashboard's figures read, counted by the indexes that serve them.
SCOPES = (
    "SELECT count(*) FROM paycollect_transaction WHERE community_id = %(c)s AND currency = 'EGP' "
    "AND created_at >= %(since)s",
    "SELECT count(*) FROM paycollect_transaction WHERE community_id = %(c)s AND currency = 'EGP' "
    "AND succeeded_at >= %(since)s",
    "SELECT count(*) FROM paycollect_receivedcallback WHERE received_at >= %(since)s",
    "SELECT count(*) FROM paycollect_transaction WHERE community_id = %(c)s AND succeeded_at IS NOT NULL",
    "SELECT count(*) FROM paycollect_transaction WHERE community_id = %(c)s AND uuid IS NOT NULL",
    "SELECT count(*) FROM paycollect_transaction WHERE community_id = %(c)s AND created_at < %(too_old)s "
    "AND (status = 'PENDING' OR (status = 'NEW' AND uuid IS NOT NULL))",
)


def baseline(repeat: int) -> float:
    """Milliseconds of the least work (median of ``repeat``): a count of each row set the figures read."""
    import datetime as dt

    from django.db import connection
    from django.utils import timezone

    from django_paycollect import reconciliation

    now = timezone.now()
    give_up = reconciliation.give_up_after() or dt.timedelta(days=7)
    params = {"c": COMMUNITIES[0], "since": now - dt.timedelta(days=DAYS), "too_old": now - give_up}
    times = []
    with connection.cursor() as cursor:
        for _ in range(repeat + 1):
            started = time.perf_counter()
            for sql in SCOPES:
                cursor.execute(sql, params)
                cursor.fetchall()
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000, help="transactions at the small size (10000)")
    parser.add_argument("--large", type=int, default=100_000, help="transactions at the large size (100000)")
    parser.add_argument("--repeat", type=int, default=7, help="page loads timed per size (default 7)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE of each statement")
    args = parser.parse_args()

    # Dropped at the end, and a server started for it stopped.
    with postgres_databases("bench_dashboard") as (spec,):
        return run(args, spec)


def run(args: argparse.Namespace, spec: str) -> int:
    setup_django_on_postgres(spec)
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_superuser("admin", "admin@example.com", "not-used")
    client = Client()
    client.force_login(user)
    communities()
    url = f"/admin/paycollect/dashboard/?community={COMMUNITIES[0]}&currency=EGP&days={DAYS}"

    started = time.perf_counter()
    add_rows(0, args.small, args.large)
    print(f"{args.small:,} transactions loaded in {time.perf_counter() - started:.1f} s", flush=True)
    small, small_page = measure(client, url, args.repeat)
    small_base = baseline(args.repeat)
    started = time.perf_counter()
    add_rows(args.small, args.large, args.large)
    print(f"{args.large:,} transactions loaded in {time.perf_counter() - started:.1f} s", flush=True)
    large, large_page = measure(client, url, args.repeat)
    large_base = baseline(args.repeat)
    if args.explain:
        explain(large)

    sql_small, sql_large = sum(ms for _, ms in small), sum(ms for _, ms in large)
    measures = [
        Measure(
            f"dashboard: statements with {args.large:,} transactions",
            str(len(large)),
            f"{len(small)} with {args.small:,}",
            len(large) / len(small),
            "equal (ratio 1)",
            len(large) == len(small),
        ),
        Measure(
            f"dashboard: SQL time with {args.large:,} transactions",
            f"{sql_large:.1f} ms",
            f"counts of the row sets read {large_base:.1f} ms",
            sql_large / large_base,
            "≤ 2",
            sql_large / large_base <= 2,
        ),
        Measure(
            f"dashboard: page time with {args.large:,} transactions",
            f"{large_page * 1000:.0f} ms",
            f"{small_page * 1000:.0f} ms with {args.small:,} "
            f"(SQL {sql_small:.1f} ms, counts {small_base:.1f} ms)",
            large_page / small_page,
            "(reported)",
            None,
        ),
    ]
    details = [f"ms per statement with {args.small:,} -> {args.large:,} transactions"]
    details += [
        f"  {small_ms:7.2f} -> {large_ms:7.2f}  {_short(sql)}"
        for (sql, large_ms), (_, small_ms) in zip(large, small, strict=False)
    ]
    print_measures(measures)
    print("\n".join(details))
    write_section(
        "admin_dashboard",
        "Admin dashboard on PostgreSQL",
        summary=(
            f"PostgreSQL {postgres_version()} (its settings below); {args.small:,} then {args.large:,} "
            "transactions over a year in three communities, one callback each, refunds, then `VACUUM "
            "ANALYZE`. Django's test client, logged in as a superuser, loads the dashboard of one community, "
            f"EGP, {DAYS} days. Statements of one load; each one's median time and the page's median time "
            f"over {args.repeat} loads. Baseline: a `count(*)` of each row set the figures read (the "
            "community's EGP payments started and succeeded in the period, the site's callbacks of the "
            "period, the community's successful and accepted payments of all time, its payments open past "
            "the give-up age), through the same indexes. Below, each statement's milliseconds at both sizes."
        ),
        measures=measures,
        details=details,
    )
    return exit_status(measures, args.strict)


def postgres_version() -> str:
    from django.db import connection

    major, minor = divmod(connection.pg_version, 10000)  # type: ignore[attr-defined]
    return f"{major}.{minor}"


def explain(statements: list[tuple[str, float]]) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for sql, _ms in statements:
            if not sql.lstrip().upper().startswith("SELECT") or "paycollect_" not in sql:
                continue
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            print("\n" + sql[:300])
            print("\n".join(row[0] for row in cursor.fetchall()))


def _short(sql: Any) -> str:
    text = " ".join(str(sql).split())
    return text if len(text) <= 140 else text[:137] + "..."


if __name__ == "__main__":
    sys.exit(main())
