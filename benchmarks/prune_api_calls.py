"""Pruning a million ApiCall rows: time and peak memory, beside one plain DELETE of the same rows.

Builds a SQLite file with ``--rows`` old API calls (default 1,000,000; 100 to 200 days old, each linked to
one of 10,000 transactions, with the fetched transaction as ``data``) and 2,000 recent ones that must stay,
inserted with raw SQL ``executemany``. The file is copied, then two fresh processes each set Django up on
their copy and measure their own work:

- ``manage.py paycollect_prune --older-than 90d`` (``call_command``: batches of 5,000 ids, each batch one
  short transaction and one DELETE by id range, progress counted as the command does);
- the baseline: one ``DELETE FROM paycollect_apicall WHERE created_at < ?`` in one transaction.

Each process reports its wall time and its peak resident memory (``ru_maxrss``) above what it held before
the work began. The same prune of a tenth of the rows (another file) gives the time per row at two sizes.
Targets (ours; the issue names none): the prune within 2x the plain DELETE's time, its time per row at a
million rows within 1.25x of that at a tenth (linear), and its peak memory growth within 64 MiB.
``--strict`` makes a missed target exit with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    Measure,
    exit_status,
    print_measures,
    setup_django,
    temp_workdir,
    write_section,
)

TARGET_TIME_RATIO = 2.0
TARGET_GROWTH_MIB = 64
TARGET_SCALING = 1.25
RECENT = 2000
TRANSACTIONS = 10_000


def _rss_kib() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(mode: str, db_path: Path) -> None:
    """Run one measured operation on ``db_path`` and print its result as JSON (last line of stdout)."""
    setup_django(db_path.parent, db_name=db_path.name, migrate=False)
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
                "before_kib": before_kib,
                "peak_kib": peak_kib,
                "left": ApiCall.objects.count(),
            }
        )
    )


def build(db_path: Path, rows: int) -> float:
    """Migrate, then insert the rows with raw SQL; returns the seconds the inserts took."""
    setup_django(db_path.parent, db_name=db_path.name)
    from django.db import connection
    from django.utils import timezone

    from django_paycollect.models import Transaction

    now = timezone.now().replace(tzinfo=None)  # SQLite stores naive UTC text
    transactions = Transaction.objects.bulk_create(
        Transaction(uuid=f"00000000-0000-4000-8000-{i:012d}", community_id="club", total_amount=100)
        for i in range(TRANSACTIONS)
    )
    ids = [t.pk for t in transactions]
    columns = (
        "operation, community_id, method, path, request_body, sent, http_status, code, message, errors, "
        "data, count, next, previous, error_class, error_message, body_excerpt, outcome_unknown, "
        "duration_ms, attempts, task_id, created_at, transaction_id"
    )
    sql = f"INSERT INTO paycollect_apicall ({columns}) VALUES ({', '.join(['?'] * 23)})"  # noqa: S608

    def row(i: int, created: dt.datetime) -> tuple[Any, ...]:
        uuid = f"00000000-0000-4000-8000-{i % TRANSACTIONS:012d}"
        data = (
            f'{{"id": {i}, "uuid": "{uuid}", "status": "SUCCESSFUL", "total_amount": "104.50", '
            '"total_amount_currency": "EGP", "payment_for": "API_PAYMENT", "member_id": null, '
            '"custom_fields_json": {"Branch": "Heliopolis"}, "created_at": "2026-05-01T10:00:00Z"}'
        )
        return (
            "get_transaction",
            "club",
            "GET",
            f"/api/v1/communities/club/transactions/{uuid}/",
            None,
            True,
            200,
            200,
            "Transaction retrieved",
            "[]",
            data,
            None,
            "",
            "",
            "",
            "",
            "",
            False,
            120 + i % 300,
            1,
            f"celery-task-{i % 50_000}",
            created.strftime("%Y-%m-%d %H:%M:%S.%f"),
            ids[i % TRANSACTIONS],
        )

    oldest = now - dt.timedelta(days=200)
    step = dt.timedelta(days=100) / rows
    started = time.perf_counter()
    # The sqlite3 connection itself: executemany without the ORM's per-row cost. Django runs it in
    # autocommit (isolation_level None), so each chunk is wrapped in its own BEGIN ... COMMIT.
    raw = connection.connection
    for first in range(0, rows, 50_000):
        raw.execute("BEGIN")
        raw.executemany(sql, (row(i, oldest + step * i) for i in range(first, min(rows, first + 50_000))))
        raw.execute("COMMIT")
    recent = now - dt.timedelta(days=1)
    raw.execute("BEGIN")
    raw.executemany(sql, (row(i, recent + dt.timedelta(seconds=i)) for i in range(RECENT)))
    raw.execute("COMMIT")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="old API calls (default 1000000)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--child", choices=("prune", "delete"), help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.db)
        return 0

    small_rows = max(1, args.rows // 10)
    with temp_workdir() as workdir:
        paths = {name: Path(workdir) / name / "bench.sqlite3" for name in ("prune", "delete", "small")}
        for path in paths.values():
            path.parent.mkdir()
        print(f"inserting {args.rows:,} and {small_rows:,} API calls...", flush=True)
        # Built in child processes too, so this one stays small and Django is set up once per process.
        build_seconds = float(_run(["--child-build", str(paths["prune"]), str(args.rows)])["seconds"])
        _run(["--child-build", str(paths["small"]), str(small_rows)])
        size_mib = paths["prune"].stat().st_size / 2**20
        shutil.copyfile(paths["prune"], paths["delete"])
        results: dict[str, dict[str, Any]] = {}
        for name, mode in (("delete", "delete"), ("prune", "prune"), ("small", "prune")):
            results[name] = _run(["--child", mode, "--db", str(paths[name])])
            print(f"{name}: {results[name]['seconds']:.1f} s", flush=True)

    for name, result in results.items():
        if result["left"] != RECENT:
            raise SystemExit(f"{name} left {result['left']} rows, not the {RECENT} recent ones")
    prune, delete, small = results["prune"], results["delete"], results["small"]
    ratio = prune["seconds"] / delete["seconds"]
    per_row, small_per_row = prune["seconds"] / args.rows * 1e6, small["seconds"] / small_rows * 1e6
    scaling = per_row / small_per_row
    growth_mib, delete_growth_mib = prune["growth_kib"] / 1024, delete["growth_kib"] / 1024
    small_growth_mib = small["growth_kib"] / 1024
    measures = [
        Measure(
            f"paycollect_prune of {args.rows:,} API calls",
            f"{prune['seconds']:.1f} s ({args.rows / prune['seconds']:,.0f} rows/s)",
            f"one DELETE {delete['seconds']:.1f} s",
            ratio,
            f"≤ {TARGET_TIME_RATIO:g} (ours)",
            ratio <= TARGET_TIME_RATIO,
        ),
        Measure(
            f"prune time per row, {args.rows:,} rows",
            f"{per_row:.1f} µs",
            f"{small_per_row:.1f} µs with {small_rows:,} rows",
            scaling,
            f"≤ {TARGET_SCALING:g} (ours: linear)",
            scaling <= TARGET_SCALING,
        ),
        Measure(
            f"peak memory growth, prune of {args.rows:,}",
            f"{growth_mib:.1f} MiB (peak RSS {prune['peak_kib'] / 1024:.0f} MiB)",
            f"one DELETE {delete_growth_mib:.1f} MiB; prune of {small_rows:,} {small_growth_mib:.1f} MiB",
            None,
            f"≤ {TARGET_GROWTH_MIB} MiB (ours)",
            growth_mib <= TARGET_GROWTH_MIB,
        ),
    ]
    print_measures(measures)
    write_section(
        "prune_api_calls",
        "Pruning API calls",
        summary=(
            f"{args.rows:,} API calls older than 90 days and {RECENT:,} recent ones (SQLite file of "
            f"{size_mib:,.0f} MiB, inserted in {build_seconds:.0f} s with raw `executemany`). "
            "`call_command('paycollect_prune', '--older-than', '90d')` in a fresh process, beside one plain "
            "`DELETE ... WHERE created_at < cutoff` on a copy of the file in another; each process measures "
            "its own time and its peak RSS (`ru_maxrss`) above its RSS before the work. The same prune "
            f"of {small_rows:,} old rows (another file, built alike) shows whether the time per row stays "
            "constant."
        ),
        measures=measures,
    )
    return exit_status(measures, args.strict)


def _run(arguments: list[str]) -> dict[str, Any]:
    completed = subprocess.run(  # noqa: S603
        [sys.executable, __file__, *arguments], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(arguments)} failed:\n{completed.stdout}\n{completed.stderr}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child-build":
        print(json.dumps({"seconds": build(Path(sys.argv[2]), int(sys.argv[3]))}))
        sys.exit(0)
    sys.exit(main())
