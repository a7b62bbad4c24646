"""The exports (``paycollect_export``) on PostgreSQL at 10,000 and 100,000 transactions, beside ``COPY``.

On a durable PostgreSQL server of the run's own (``.ci/postgres.sh`` with ``PAYCOLLECT_PG_DURABLE=1``; free
port, stopped at the end), or the one ``PAYCOLLECT_BENCH_POSTGRES`` names (its settings are printed with the
results). The script works in a database of its own, ``<dbname>_bench_export``, created afresh and dropped at
the end. The export only reads, so a server's durability changes the loading, not what is measured.

The rows: transactions copied from one made by the ORM (``INSERT ... SELECT ... FROM generate_series``, so
every column is filled as the ORM fills it), with names, e-mails and references (one in a hundred starting
with ``=``, to be neutralised), then ``VACUUM ANALYZE``.

Each measure runs in a process of its own, so its peak resident memory (``ru_maxrss``) is its own:

- ours: ``call_command("paycollect_export", "transactions", "--format", F, "--output", "/dev/null")``, the
  whole export through the app (one streamed query, cells made safe, amounts written exactly);
- the baseline: the same query (the SQL the export runs, the same columns and order) as PostgreSQL's own
  ``COPY (...) TO STDOUT WITH (FORMAT csv, HEADER)`` through psycopg, written to ``/dev/null``: the least work
  that puts these rows in a file.

Reported at both sizes: rows per second (ours against ``COPY``'s, a ratio) and peak resident memory during
the measure (ours against ``COPY``'s process, which imports Django alike), with what it adds to the process
as it was before: the peak is reset (``/proc/self/clear_refs``) after Django's setup and ``migrate``, whose
own peak would otherwise hide it. Target: memory at the large size within 1.25x of the small
(constant: it does not grow with the rows). Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    REPO,
    Measure,
    exit_status,
    postgres_databases,
    print_measures,
    setup_django_on_postgres,
    write_section,
)

#: Memory at the large size against the small one: at most this (constant memory).
MEMORY_GROWTH_TARGET = 1.25


def add_rows(start: int, stop: int) -> None:
    """Transactions ``start + 1`` to ``stop``: every column as the ORM fills it, values from their number."""
    from decimal import Decimal

    from django.db import connection
    from django.utils import timezone

    from django_paycollect.models import Transaction

    template = Transaction.objects.create(community_id="template", total_amount=Decimal("1.00"))
    table = Transaction._meta.db_table
    columns = [f.column for f in Transaction._meta.concrete_fields if not f.primary_key]
    h = "abs(hashtext(g::text))"
    created = f"('{timezone.now().isoformat()}'::timestamptz - (g * interval '1 minute'))"
    successful = f"({h} % 20 < 12)"
    overrides = {
        "uuid": "md5('txn' || g)::uuid::text",
        "service_id": "g",
        "community_id": "'club-' || (g % 3)",
        "status": f"(CASE WHEN {successful} THEN 'SUCCESSFUL' ELSE 'FAILED' END)",
        "total_amount": f"(50 + ({h} % 500000) / 100.0)::numeric(14, 2)",
        "created_at": created,
        "updated_at": created,
        "succeeded_at": f"(CASE WHEN {successful} THEN {created} + interval '2 minutes' END)",
        "customer_name": "(CASE WHEN g % 100 = 0 THEN '=cmd' ELSE 'Mona Ali ' || g END)",
        "customer_email": "'member' || g || '@example.com'",
        "customer_phone": "'+2010' || lpad((g % 100000000)::text, 8, '0')",
        "merchant_reference": "'order-' || g",
        "payment_for": "'API_PAYMENT'",
    }
    values = ", ".join(overrides.get(c, f'tmpl."{c}"') for c in columns)
    names = ", ".join(f'"{c}"' for c in columns)
    # The script's own expressions, no outside input.
    sql = (
        f'INSERT INTO "{table}" ({names}) SELECT {values} FROM "{table}" tmpl, '  # noqa: S608
        f"generate_series({int(start) + 1}, {int(stop)}) g WHERE tmpl.id = {int(template.pk)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
    template.delete()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


# --- one measure, in a process of its own ------------------------------------------------------------------


def _status_kib(field: str) -> int | None:
    """``VmRSS`` or ``VmHWM`` (the peak) of this process from ``/proc/self/status``, in KiB (Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Start the peak (``VmHWM``) afresh at the current size: Django's setup and ``migrate`` would otherwise
    hold a higher peak than the export's, and hide it (Linux: ``echo 5 > /proc/self/clear_refs``)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def child(kind: str, spec: str, file_format: str) -> None:
    """Run one measure and print its JSON: seconds, rows, resident memory before and at its peak in KiB."""
    import gc
    import resource

    setup_django_on_postgres(spec, migrate=False)  # the parent migrated it
    from django.core.management import call_command
    from django.db import connection

    from django_paycollect.reporting import exports

    export = exports.TRANSACTIONS
    rows = export.model._default_manager.count()
    gc.collect()
    reset = _reset_peak()
    before = _status_kib("VmRSS") if reset else None
    started = time.perf_counter()
    if kind == "ours":
        call_command("paycollect_export", "transactions", "--format", file_format, "--output", os.devnull)
    else:
        fields = [column.field for column in export.columns]
        queryset = exports.selection(export).order_by(*export.ordering).values_list(*fields)
        sql, params = queryset.query.sql_with_params()
        connection.ensure_connection()
        raw = connection.connection
        assert raw is not None
        with open(os.devnull, "wb") as sink, raw.cursor() as cursor:
            statement = f"COPY ({sql}) TO STDOUT WITH (FORMAT csv, HEADER)"
            with cursor.copy(statement, params or None) as copy:
                for block in copy:
                    sink.write(block)
    seconds = time.perf_counter() - started
    peak = (_status_kib("VmHWM") if reset else None) or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "rows": rows, "peak_kib": peak, "before_kib": before or 0}))


def run_child(kind: str, spec: str, file_format: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    printed = subprocess.run(  # noqa: S603 (this script, with its own arguments)
        [sys.executable, __file__, "--child", kind, "--spec", spec, "--format", file_format],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    result: dict[str, Any] = json.loads(printed.strip().splitlines()[-1])
    return result


# --- the run -----------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000, help="transactions at the small size (10000)")
    parser.add_argument("--large", type=int, default=100_000, help="transactions at the large size (100000)")
    parser.add_argument(
        "--formats", default="csv,xlsx", help="the formats measured, comma-separated (default csv,xlsx)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    parser.add_argument("--child", choices=("ours", "copy"), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--format", default="csv", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.spec, args.format)
        return 0

    with postgres_databases("bench_export") as (spec,):
        return run(args, spec)


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def run(args: argparse.Namespace, spec: str) -> int:
    setup_django_on_postgres(spec)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    results: dict[tuple[int, str], dict[str, Any]] = {}
    loaded = 0
    for size in (args.small, args.large):
        started = time.perf_counter()
        add_rows(loaded, size)
        loaded = size
        print(f"{size:,} transactions loaded in {time.perf_counter() - started:.1f} s", flush=True)
        results[(size, "copy")] = run_child("copy", spec, "csv")
        for file_format in formats:
            results[(size, file_format)] = run_child("ours", spec, file_format)

    measures: list[Measure] = []
    for size in (args.small, args.large):
        copy = results[(size, "copy")]
        copy_rate = copy["rows"] / copy["seconds"]
        for file_format in formats:
            ours = results[(size, file_format)]
            rate = ours["rows"] / ours["seconds"]
            measures.append(
                Measure(
                    f"export {file_format.upper()}, {size:,} rows: rows per second",
                    f"{rate:,.0f}/s ({ours['seconds']:.1f} s)",
                    f"COPY to CSV {copy_rate:,.0f}/s ({copy['seconds']:.1f} s)",
                    rate / copy_rate,
                    "(reported)",
                    None,
                )
            )
            measures.append(
                Measure(
                    f"export {file_format.upper()}, {size:,} rows: peak memory",
                    f"{mib(ours['peak_kib'])} (+{mib(ours['peak_kib'] - ours['before_kib'])} over Django)",
                    f"COPY {mib(copy['peak_kib'])} (+{mib(copy['peak_kib'] - copy['before_kib'])})",
                    ours["peak_kib"] / copy["peak_kib"],
                    "(reported)",
                    None,
                )
            )
    for file_format in formats:
        small, large = results[(args.small, file_format)], results[(args.large, file_format)]
        growth = large["peak_kib"] / small["peak_kib"]
        measures.append(
            Measure(
                f"export {file_format.upper()}: peak memory at {args.large:,} rows against {args.small:,}",
                mib(large["peak_kib"]),
                mib(small["peak_kib"]),
                growth,
                f"≤ {MEMORY_GROWTH_TARGET} (constant)",
                growth <= MEMORY_GROWTH_TARGET,
            )
        )
    print_measures(measures)
    if not args.no_write:
        write_section(
            "export",
            "Exports on PostgreSQL",
            summary=(
                f"{args.small:,} then {args.large:,} transactions (every column as the ORM fills it, names, "
                "e-mails, phones and references, one name in a hundred to be neutralised), then `VACUUM "
                "ANALYZE`. Each measure is a process of its own: `paycollect_export transactions --format F "
                "--output /dev/null` (every row, every column), and the baseline, the same SQL as "
                "PostgreSQL's "
                "`COPY (...) TO STDOUT WITH (FORMAT csv, HEADER)` through psycopg into `/dev/null`. Peak "
                "memory is the process's resident peak during the measure (`VmHWM`, reset after Django's "
                "setup; Django imported in both), with its growth over the process before."
            ),
            measures=measures,
        )
    return exit_status(measures, args.strict)


if __name__ == "__main__":
    sys.exit(main())
