"""Pruning old ApiCall rows (100,000 by default): time and peak memory, beside one plain DELETE.

On SQLite and on PostgreSQL (``--database``; both by default). Builds ``--rows`` old API calls (default
100,000; 100 to 200 days old, each linked to one of 10,000 transactions, with the fetched transaction as
``data``) and 2,000 recent ones that must stay, and a tenth as many old ones in another database: a SQLite
file filled with raw ``executemany``, or a PostgreSQL database (on a durable PostgreSQL server of the run's
own (``.ci/postgres.sh`` with ``PAYCOLLECT_PG_DURABLE=1``: fsync and synchronous commit on, data on the disk;
free port, stopped at the end), or the one ``PAYCOLLECT_BENCH_POSTGRES`` names (its settings are printed with
the results; figures of one that is not durable are labelled so); databases dropped at the end) filled by
``INSERT ... SELECT`` over ``generate_series``, then ``VACUUM ANALYZE``. Then, ``--repeat`` times (3;
medians), each of the following runs on a fresh copy of its database (a file copy, ``CREATE DATABASE ...
TEMPLATE``) in a fresh process that sets Django up and measures its own work:

- ``manage.py paycollect_prune --older-than 90d`` (``call_command``: batches of its default size, each one
  short transaction reading the batch's last key and deleting the key range up to it);
- the baseline: one ``DELETE FROM paycollect_apicall WHERE created_at < ?`` in one transaction.

Each process reports its wall time and its peak resident memory (``ru_maxrss``) above what it held before
the work began. Both sizes are measured both ways, so the time per row of each shows how it grows with the
table. Targets (ours; the issue names none): the prune within 2x the plain DELETE's time, its time per row
at the full size within 1.25x of that at a tenth (linear), and its peak memory growth within 64 MiB. The
plans of a batch's statements in the middle of the table, at both sizes, follow the results.
``--strict`` makes a missed target exit with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    Measure,
    copy_postgres_database,
    exit_status,
    postgres_databases,
    print_measures,
    setup_django,
    setup_django_on_postgres,
    temp_workdir,
    write_section,
)

TARGET_TIME_RATIO = 2.0
TARGET_GROWTH_MIB = 64
TARGET_SCALING = 1.25
RECENT = 2000
TRANSACTIONS = 10_000
COLUMNS = (
    "operation, community_id, method, path, request_body, sent, http_status, code, message, errors, data, "
    "count, next, previous, error_class, error_message, body_excerpt, outcome_unknown, duration_ms, "
    "attempts, task_id, created_at, transaction_id"
)


def _rss_kib() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _setup(database: str) -> None:
    """Django on ``database``, built by another process: a SQLite file's path, or a PostgreSQL
    ``host:port:dbname:user``."""
    if database.count(":") == 3 and not Path(database).exists():
        setup_django_on_postgres(database, migrate=False)
    else:
        path = Path(database)
        setup_django(path.parent, db_name=path.name, migrate=False)


def child(mode: str, database: str) -> None:
    """Run one measured operation on ``database`` and print its result as JSON (last line of stdout)."""
    _setup(database)
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from django_paycollect.models import ApiCall

    connection.ensure_connection()
    before_kib = _rss_kib()
    started = time.perf_counter()
    if mode == "prune":
        call_command("paycollect_prune", "--older-than", "90d", verbosity=0)
    else:
        cutoff = timezone.now() - dt.timedelta(days=90)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute('DELETE FROM "paycollect_apicall" WHERE "created_at" < %s', [cutoff])
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "growth_kib": max(0, peak_kib - before_kib),
                "peak_kib": peak_kib,
                "left": ApiCall.objects.count(),
            }
        )
    )


def explain(database: str, rows: int) -> None:
    """Print the plans of the statements of the first batch and of one in the middle (nothing deleted)."""
    _setup(database)
    from django.db import connection, transaction
    from django.db.models import QuerySet
    from django.utils import timezone

    from django_paycollect.models import ApiCall
    from django_paycollect.reconciliation.pruning import BATCH_SIZE

    old = ApiCall.objects.filter(created_at__lt=timezone.now() - dt.timedelta(days=90))
    batch = max(1, min(BATCH_SIZE, rows // 4))  # a whole batch, whatever --rows

    def keys(queryset: QuerySet[ApiCall]) -> QuerySet[ApiCall, int]:
        return queryset.order_by("pk").values_list("pk", flat=True)

    first = keys(ApiCall._base_manager.all())[:1]
    middle = keys(old)[rows // 2 : rows // 2 + 1].get()
    statements: list[tuple[str, Any]] = [("first batch: the table's first key", first)]
    for label, remaining in (
        ("first batch", old.filter(pk__gte=first.get())),
        ("a batch in the middle", old.filter(pk__gt=middle)),
    ):
        bound = keys(remaining)[batch - 1 : batch]
        statements += [
            (f"{label}: its last key", bound),
            (f"{label}: its DELETE", remaining.filter(pk__lte=bound.get()).order_by()),
        ]
    postgres = connection.vendor == "postgresql"
    prefix = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) " if postgres else "EXPLAIN QUERY PLAN "
    lines = []
    with transaction.atomic(), connection.cursor() as cursor:
        for label, query in statements:
            sql, params = query.query.sql_with_params()
            if label.endswith("DELETE"):  # the statement Django sends for that filter
                sql = 'DELETE FROM "paycollect_apicall" WHERE ' + sql.split(" WHERE ", 1)[1]  # noqa: S608
            cursor.execute(prefix + sql, params)
            plan = [str(row[-1]).strip() for row in cursor.fetchall()]
            # PostgreSQL's planning lines (its time, its own buffers) say nothing of the batch.
            planning = {i for i, line in enumerate(plan) if line.startswith("Planning")}
            kept = [line for i, line in enumerate(plan) if not planning & {i, i - 1}]
            lines.append(f"{label}: " + " | ".join(kept))
        transaction.set_rollback(True)
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, ApiCall._meta.db_table)
        indexes = sum(1 for constraint in constraints.values() if constraint["index"])
    print(json.dumps({"plans": lines, "indexes": indexes, "batch": BATCH_SIZE}))


def build(engine: str, where: dict[str, str], sizes: dict[str, int]) -> float:
    """Each size's database: the first migrated, with its transactions, and copied to the others (one
    migration, not one per size); then the old and recent API calls inserted in each. Returns the seconds
    the largest size's inserts took."""
    from django.db import connections

    first, *others = sizes
    if engine == "postgresql":
        setup_django_on_postgres(where[first])
    else:
        setup_django(Path(where[first]).parent, db_name=Path(where[first]).name)
    from django_paycollect.models import Transaction

    first_id = Transaction.objects.bulk_create(
        Transaction(uuid=f"00000000-0000-4000-8000-{i:012d}", community_id="club", total_amount=100)
        for i in range(TRANSACTIONS)
    )[0].pk
    connections.close_all()
    for size in others:
        if engine == "postgresql":
            copy_postgres_database(where[first], where[size])
        else:
            shutil.copyfile(where[first], where[size])
    fill = fill_postgres if engine == "postgresql" else fill_sqlite
    seconds = {size: fill(where[size], sizes[size], first_id) for size in sizes}
    return seconds[max(sizes, key=lambda size: sizes[size])]


def fill_sqlite(path: str, rows: int, first_id: int) -> float:
    """Insert the rows with sqlite3's ``executemany``; returns the seconds the inserts took."""
    import sqlite3

    from django.utils import timezone

    now = timezone.now().replace(tzinfo=None)  # SQLite stores naive UTC text
    sql = f"INSERT INTO paycollect_apicall ({COLUMNS}) VALUES ({', '.join(['?'] * 23)})"  # noqa: S608

    def row(i: int, created: dt.datetime) -> tuple[Any, ...]:
        uuid = f"00000000-0000-4000-8000-{i % TRANSACTIONS:012d}"
        data = (
            f'{{"id": {i}, "uuid": "{uuid}", "status": "SUCCESSFUL", "total_amount": "104.50", '
            '"total_amount_currency": "EGP", "payment_for": "API_PAYMENT", "member_id": null, '
            '"custom_fields_json": {"Branch": "Heliopolis"}, "created_at": "2026-05-01T10:00:00Z"}'
        )
        path = f"/api/v1/communities/club/transactions/{uuid}/"
        return (
            *("get_transaction", "club", "GET", path, None, True, 200, 200, "Transaction retrieved", "[]"),
            *(data, None, "", "", "", "", "", False, 120 + i % 300, 1, f"celery-task-{i % 50_000}"),
            *(created.strftime("%Y-%m-%d %H:%M:%S.%f"), first_id + i % TRANSACTIONS),
        )

    oldest = now - dt.timedelta(days=200)
    step = dt.timedelta(days=100) / rows
    started = time.perf_counter()
    # The sqlite3 module itself: executemany without the ORM's per-row cost, each chunk a transaction.
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        for first in range(0, rows, 50_000):
            raw.execute("BEGIN")
            raw.executemany(sql, (row(i, oldest + step * i) for i in range(first, min(rows, first + 50_000))))
            raw.execute("COMMIT")
        recent = now - dt.timedelta(days=1)
        raw.execute("BEGIN")
        raw.executemany(sql, (row(i, recent + dt.timedelta(seconds=i)) for i in range(RECENT)))
        raw.execute("COMMIT")
    finally:
        raw.close()
    return time.perf_counter() - started


def fill_postgres(spec: str, rows: int, first_id: int) -> float:
    """The same rows on PostgreSQL, made by the server (``generate_series``), then ``VACUUM ANALYZE``."""
    import psycopg
    from django.utils import timezone

    uuid = "'00000000-0000-4000-8000-' || lpad((g %% 10000)::text, 12, '0')"
    data = (
        f"jsonb_build_object('id', g, 'uuid', {uuid}, 'status', 'SUCCESSFUL', 'total_amount', '104.50', "
        "'total_amount_currency', 'EGP', 'payment_for', 'API_PAYMENT', 'member_id', NULL, "
        "'custom_fields_json', jsonb_build_object('Branch', 'Heliopolis'), "
        "'created_at', '2026-05-01T10:00:00Z')"
    )
    sql = (
        f"INSERT INTO paycollect_apicall ({COLUMNS}) SELECT 'get_transaction', 'club', 'GET', "  # noqa: S608
        f"'/api/v1/communities/club/transactions/' || {uuid} || '/', NULL, true, 200, 200, "
        f"'Transaction retrieved', '[]', {data}, NULL, '', '', '', '', '', false, 120 + g %% 300, 1, "
        "'celery-task-' || (g %% 50000), %s::timestamptz + g * %s::interval, %s + g %% 10000 "
        "FROM generate_series(0, %s - 1) AS g"
    )
    now = timezone.now()
    host, port, name, user = spec.split(":")
    started = time.perf_counter()
    with psycopg.connect(host=host, port=port, user=user, dbname=name, autocommit=True) as conn:
        conn.execute(sql, [now - dt.timedelta(days=200), dt.timedelta(days=100) / rows, first_id, rows])
        conn.execute(sql, [now - dt.timedelta(days=1), dt.timedelta(seconds=1), first_id, RECENT])
        conn.execute("VACUUM ANALYZE paycollect_apicall")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="old API calls (default 100000)")
    parser.add_argument(
        "--database", choices=("sqlite", "postgresql", "both"), default="both", help="where (default both)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each, on fresh copies; medians (default 3)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--child", choices=("prune", "delete", "explain"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "explain":
        explain(args.db, args.rows)
        return 0
    if args.child:
        child(args.child, args.db)
        return 0

    sizes = {"large": args.rows, "small": max(1, args.rows // 10)}
    engines = ("sqlite", "postgresql") if args.database == "both" else (args.database,)
    measures: list[Measure] = []
    details: list[str] = []
    explained: list[str] = []
    batch = 0
    for engine in engines:
        with ExitStack() as stack:
            results, build_seconds, plans = measure(engine, sizes, args.repeat, stack)
        engine_measures = report(engine, sizes, results)
        print_measures(engine_measures)
        measures += engine_measures
        details += [f"{engine}: built {args.rows:,} old rows in {build_seconds:.0f} s"]
        details += [
            f"  {name.replace('_', ', ')}: "
            + ", ".join(f"{seconds:.2f}" for seconds in results[name]["all"])
            + " s"
            for name in ("large_delete", "large_prune", "small_delete", "small_prune")
        ]
        details += plans
        explained.append(note(engine, sizes, results))
        batch = results["batch"]
    write_section(
        "prune_api_calls",
        "Pruning API calls",
        summary=(
            f"{args.rows:,} API calls older than 90 days and {RECENT:,} recent ones, and {sizes['small']:,} "
            "old ones in another database, on SQLite (a file in the benchmarks' directory) and on PostgreSQL "
            "(its settings below, same machine). `call_command('paycollect_prune', "
            f"'--older-than', '90d')` (batches of {batch:,}, the default) beside one plain `DELETE ... WHERE "
            f"created_at < cutoff`, each {args.repeat} times on a fresh copy of its database in a fresh "
            "process (medians; the largest memory growth), which measures its time and its peak RSS "
            "(`ru_maxrss`) above its RSS before the work. Both are run at both sizes: "
            "the time per row of the plain DELETE shows how the database's own cost of deleting grows with "
            "the table. "
            "Below, the plans of the first batch's statements and of one in the middle of the old rows."
        ),
        measures=measures,
        details=details,
        notes=[*explained, "What was changed, and why: `benchmarks/README.md`, section prune_api_calls.py."],
    )
    return exit_status(measures, args.strict)


def measure(
    engine: str, sizes: dict[str, int], repeat: int, stack: ExitStack
) -> tuple[dict[str, Any], float, list[str]]:
    """Build each size once; then, ``repeat`` times, prune and DELETE each on a fresh copy in a fresh process
    (medians of the times, the largest memory growth); and the plans."""
    names = [*sizes, "work"]
    if engine == "postgresql":
        specs = stack.enter_context(postgres_databases(*(f"bench_prune_{name}" for name in names)))
        where = dict(zip(names, specs, strict=True))
    else:
        workdir = Path(stack.enter_context(temp_workdir()))
        where = {name: str(workdir / name / "bench.sqlite3") for name in names}
        for path in where.values():
            Path(path).parent.mkdir()

    def fresh_copy(size: str) -> str:
        if engine == "postgresql":
            copy_postgres_database(where[size], where["work"])
        else:
            shutil.copyfile(where[size], where["work"])
        return where["work"]

    print(f"{engine}: inserting {sizes['large']:,} and {sizes['small']:,} API calls...", flush=True)
    # Built in a child process too, so this one stays small and Django is set up once per process.
    build_seconds = float(_run(["--child-build", engine, json.dumps(where), json.dumps(sizes)])["seconds"])
    runs: dict[str, list[dict[str, Any]]] = {
        f"{size}_{mode}": [] for size in sizes for mode in ("delete", "prune")
    }
    for round_index in range(repeat):
        modes = ("delete", "prune") if round_index % 2 == 0 else ("prune", "delete")  # drift moves both alike
        for size in sizes:
            for mode in modes:
                result = _run(["--child", mode, "--db", fresh_copy(size)])
                if result["left"] != RECENT:
                    raise SystemExit(f"{engine} {size} {mode} left {result['left']} rows, not {RECENT}")
                runs[f"{size}_{mode}"].append(result)
                print(f"{engine}, {size}, {mode}: {result['seconds']:.2f} s", flush=True)
    results: dict[str, Any] = {
        name: {
            "seconds": statistics.median(run["seconds"] for run in done),
            "growth_kib": max(run["growth_kib"] for run in done),
            "peak_kib": max(run["peak_kib"] for run in done),
            "all": [run["seconds"] for run in done],
        }
        for name, done in runs.items()
    }
    plans = []
    for size, rows in sizes.items():
        found = _run(["--child", "explain", "--db", fresh_copy(size), "--rows", str(rows)])
        plans += [f"  {rows:,} rows, {line}" for line in found["plans"]]
        results["indexes"], results["batch"] = found["indexes"], found["batch"]
    return results, build_seconds, plans


def report(engine: str, sizes: dict[str, int], results: dict[str, dict[str, Any]]) -> list[Measure]:
    large, small = sizes["large"], sizes["small"]
    prune, delete = results["large_prune"], results["large_delete"]
    ratio = prune["seconds"] / delete["seconds"]

    def per_row(name: str) -> float:
        return float(results[name]["seconds"]) / sizes[name.split("_")[0]] * 1e6

    scaling = per_row("large_prune") / per_row("small_prune")
    delete_scaling = per_row("large_delete") / per_row("small_delete")
    growth_mib, delete_growth_mib = prune["growth_kib"] / 1024, delete["growth_kib"] / 1024
    small_growth_mib = results["small_prune"]["growth_kib"] / 1024
    return [
        Measure(
            f"{engine}: paycollect_prune of {large:,} API calls",
            f"{prune['seconds']:.1f} s ({large / prune['seconds']:,.0f} rows/s)",
            f"one DELETE {delete['seconds']:.1f} s",
            ratio,
            f"≤ {TARGET_TIME_RATIO:g} (ours)",
            ratio <= TARGET_TIME_RATIO,
        ),
        Measure(
            f"{engine}: prune time per row, {large:,} rows",
            f"{per_row('large_prune'):.2f} µs",
            f"{per_row('small_prune'):.2f} µs with {small:,} rows",
            scaling,
            f"≤ {TARGET_SCALING:g} (ours: linear)",
            scaling <= TARGET_SCALING,
        ),
        Measure(
            f"{engine}: one DELETE's time per row, {large:,} rows",
            f"{per_row('large_delete'):.2f} µs",
            f"{per_row('small_delete'):.2f} µs with {small:,} rows",
            delete_scaling,
            "(reported: the database's own growth)",
            None,
        ),
        Measure(
            f"{engine}: peak memory growth, prune of {large:,}",
            f"{growth_mib:.1f} MiB (peak RSS {prune['peak_kib'] / 1024:.0f} MiB)",
            f"one DELETE {delete_growth_mib:.1f} MiB; prune of {small:,} {small_growth_mib:.1f} MiB",
            None,
            f"≤ {TARGET_GROWTH_MIB} MiB (ours)",
            growth_mib <= TARGET_GROWTH_MIB,
        ),
    ]


def note(engine: str, sizes: dict[str, int], results: dict[str, Any]) -> str:
    """How prune's time compares with the database's own cost of deleting, in this run's numbers."""

    def per_row(name: str) -> float:
        return float(results[name]["seconds"]) / sizes[name.split("_")[0]]

    growth = per_row("large_prune") / per_row("small_prune")
    own = per_row("large_delete") / per_row("small_delete")
    why = {
        "sqlite": (
            f"SQLite removes a deleted row's entry from each of the table's {results['indexes']} indexes at "
            "once, in B-trees that grow deeper and out of the page cache as the table grows; the transaction "
            "and task id indexes are in another order than the deletion, so a batch touches their pages all "
            "over."
        ),
        "postgresql": (
            f"PostgreSQL only marks a deleted row and leaves its entries in the table's {results['indexes']} "
            "indexes to its vacuum. What the prune adds to one DELETE is the cost of short transactions: a "
            f"key read and a commit per batch of {results['batch']:,}."
        ),
    }[engine]
    beyond = (
        f"{growth / own:.2f}x beyond the database's own"
        if growth > own
        else "no growth beyond the database's own"
    )
    return (
        f"**{engine}**: from {sizes['small']:,} to {sizes['large']:,} rows, one plain DELETE's time per row "
        f"changed {own:.2f}x and the prune's {growth:.2f}x: {beyond}. {why}"
    )


def _run(arguments: list[str]) -> dict[str, Any]:
    completed = subprocess.run(  # noqa: S603
        [sys.executable, __file__, *arguments], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(arguments)} failed:\n{completed.stdout}\n{completed.stderr}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child-build":
        seconds = build(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]))
        print(json.dumps({"seconds": seconds}))
        sys.exit(0)
    sys.exit(main())
