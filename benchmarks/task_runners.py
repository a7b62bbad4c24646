"""The two runners of the app's jobs side by side, in one run: receipt to verification on Django's task
framework (django-tasks-db's ``db_worker``) and on Celery, and reconciliation fanned out over two
``db_worker`` processes against one.

Starts everything it needs, and stops it on exit (Ctrl-C included): a durable PostgreSQL
(``servers.start_postgres``), Redis, the standalone sandbox as the service, and two gunicorns of the test
project (``tests.wsgi``, 2 sync workers each) on the benchmark settings with django-tasks-db installed
(``_support/settings.py``, ``PAYCOLLECT_BENCH_TASKS=db``): one with ``PAYCOLLECT["TASK_RUNNER"] = "django"``
(a callback's task is a row written in the transaction that stores it), one with ``"celery"`` (published to
Redis after the commit). Workers as a site runs them: ``--processes`` ``manage.py db_worker`` processes (its
default ``--interval`` of a second, as the example project's unit runs it), and a Celery worker of as many
processes.

Verification: callbacks at each steady rate of ``--rates``, ``--callbacks`` per runner, rate and round,
``--rounds`` rounds, each naming a payment the site stored PENDING and the sandbox completed. Receipt to
verification is ``processed_at - received_at``; p50 and p95 per round (nearest rank), the median of the rounds
and their spread, and the rate at which each round's callbacks were verified (from the first receipt to the
last verification). Below ``--together-below`` callbacks a second (default 50) the two runners are driven at
the same time, each at the rate, so that the low rate's 300 samples per round fit the time of ``make bench``;
above it one after the other, the order turning each round.

Fan-out: ``--transactions`` open payments (more than ``reconciliation``'s CHUNK_SIZE of 500, so the
``reconcile`` task hands them out in chunks), the ``reconcile`` task enqueued on the Django runner, timed
from the enqueue until every task has finished and every payment is fetched, with one ``db_worker`` and with
two, ``--rounds`` rounds each (the order turning). The ratio is one worker's time over two's.

No target: the figures are the background-work page's table of the two runners (``docs/celery.md``).
Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    REPO,
    Measure,
    Rounds,
    exit_status,
    fresh_postgres_database,
    percentile,
    print_measures,
    setup_django_on_postgres,
    temp_workdir,
    write_section,
)
from benchmarks._support.payments import sandbox_with_payments, store_pending
from benchmarks._support.servers import (
    spawn,
    start_postgres,
    start_redis,
    stop_group,
    stopped_on_exit,
    wait_until,
)
from benchmarks.callback_intake_gunicorn import (
    QUEUE,
    TOKEN,
    Server,
    celery_worker,
    steady_load,
    verification_delays,
    worker_ready,
)

RUNNERS = {"django": "Django's tasks (db_worker)", "celery": "Celery (Redis)"}
#: Callbacks each pipeline verifies before the measures, unmeasured.
WARM_UP = 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each measure (default 3)")
    parser.add_argument(
        "--rates", default="10,100", help="callbacks per second of the delay measure (default 10,100)"
    )
    parser.add_argument(
        "--callbacks", type=int, default=300, help="callbacks per runner, rate and round (default 300)"
    )
    parser.add_argument(
        "--together-below",
        type=float,
        default=50,
        help="below this rate both runners are driven at once, each at the rate (default 50)",
    )
    parser.add_argument(
        "--processes", type=int, default=2, help="db_worker processes, and the Celery worker's (default 2)"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers of each (default 2)")
    parser.add_argument(
        "--transactions",
        type=int,
        default=1000,
        help="open payments of the fan-out, more than reconciliation's CHUNK_SIZE (default 1000: two chunks)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed (none here)")
    args = parser.parse_args()
    args.rates = [float(rate) for rate in args.rates.split(",") if rate.strip()]
    with temp_workdir() as workdir, stopped_on_exit() as stack:
        found = run(Path(workdir), stack, args)
    return report(found, args)


class DbWorkers:
    """``manage.py db_worker`` processes of the Django runner's settings, started and stopped to a count."""

    def __init__(self, stack: contextlib.ExitStack, env: dict[str, str], workdir: Path) -> None:
        self.stack, self.env, self.workdir = stack, env, workdir
        self.running: list[subprocess.Popen[bytes]] = []
        self.started = 0

    def exactly(self, count: int) -> None:
        while len(self.running) > count:
            stop_group(self.running.pop())  # SIGTERM: db_worker exits at once when it runs no task
        # All started, then all waited for: each takes its seconds of imports, not one after the other.
        starting: list[tuple[int, subprocess.Popen[bytes], Path]] = []
        while len(self.running) + len(starting) < count:
            self.started += 1
            log = self.workdir / f"db-worker-{self.started}.log"
            command = [sys.executable, "-m", "django", "db_worker", "--no-reload"]
            starting.append((self.started, spawn(self.stack, command, env=self.env, log=log), log))
        for number, worker, log in starting:

            def ready(log: Path = log) -> bool:
                return "Starting worker" in log.read_text(errors="replace")

            wait_until(f"db_worker {number}", ready, worker, log)
            self.running.append(worker)


def run(workdir: Path, stack: contextlib.ExitStack, args: argparse.Namespace) -> dict[str, Any]:
    began = time.monotonic()
    print("starting PostgreSQL, Redis and the sandbox...", flush=True)
    broker = start_redis(stack)
    os.environ["PAYCOLLECT_BENCH_TASKS"] = "db"  # django-tasks-db's table, migrated here
    database = fresh_postgres_database(start_postgres(stack), "bench_runners")
    setup_django_on_postgres(database)
    # The payments the callbacks name, started and completed at the sandbox (under make bench, a copy of
    # callback_intake_gunicorn.py's); the fan-out reopens payments the delay measure verified.
    needed = len(RUNNERS) * args.callbacks * args.rounds * len(args.rates)
    sandbox, uuids = sandbox_with_payments(
        workdir, stack, max(needed, args.transactions) + len(RUNNERS) * WARM_UP
    )
    info = sandbox.info
    paycollect = {
        "BASE_URL": info["base_url"],
        "COMMUNITY_ID": str(info["community_id"]),
        "API_KEY": info["api_key"],
        "VARIABLE_AMOUNT_ID": int(info["variable_amount_id"]),
        "CALLBACK_TOKENS": [TOKEN],
    }
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "benchmarks._support.settings",
        "PAYCOLLECT_BENCH_ON_POSTGRES": "1",
        "PAYCOLLECT_TEST_POSTGRES": database,
        "PAYCOLLECT_BENCH_BROKER": broker,
        "PAYCOLLECT_BENCH_TASKS": "db",
        "PYTHONPATH": str(REPO),
    }
    envs = {
        runner: {**env, "PAYCOLLECT_BENCH_PAYCOLLECT": json.dumps({**paycollect, "TASK_RUNNER": runner})}
        for runner in RUNNERS
    }
    print("starting the two gunicorns and the workers...", flush=True)
    servers = {
        runner: Server(stack, envs[runner], workdir / f"gunicorn-{runner}.log", args.workers)
        for runner in RUNNERS
    }
    # The workers start while the payments are stored; the warm-up waits for all of them.
    celery_log = workdir / "celery-worker.log"
    celery = celery_worker(stack, envs["celery"], QUEUE, args.processes, celery_log, wait=False)
    store_pending(str(info["community_id"]), uuids)
    db_workers = DbWorkers(stack, envs["django"], workdir)
    db_workers.exactly(args.processes)
    worker_ready(QUEUE, celery, celery_log)
    print(f"(set-up: {time.monotonic() - began:.0f} s)", flush=True)

    urls = {runner: f"{servers[runner].url}/paycollect/callback/{TOKEN}/" for runner in RUNNERS}
    # Warm each pipeline (the workers' imports and sessions, gunicorn's), unmeasured.
    for runner in RUNNERS:
        warm = uuids[-WARM_UP:]
        del uuids[-WARM_UP:]
        steady_load(urls[runner], warm, 20, info)
        verification_delays("intake", warm)
    delays: dict[str, dict[str, list[list[float]]]] = {}
    rates: dict[str, dict[str, list[float]]] = {}
    unused = iter(uuids)
    names = list(RUNNERS)
    for rate in args.rates:
        at_rate = time.monotonic()
        key = f"{rate:g}"
        delays[key] = {runner: [] for runner in RUNNERS}
        rates[key] = {runner: [] for runner in RUNNERS}
        for number in range(args.rounds):
            chosen = {runner: [next(unused) for _ in range(args.callbacks)] for runner in RUNNERS}
            if rate < args.together_below:
                print(
                    f"round {number + 1}: {args.callbacks} callbacks at {rate:g}/s to each at once",
                    flush=True,
                )
                threads = [
                    threading.Thread(target=steady_load, args=(urls[runner], chosen[runner], rate, info))
                    for runner in RUNNERS
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            else:
                turn = number % len(names)
                for runner in names[turn:] + names[:turn]:
                    print(
                        f"round {number + 1}: {args.callbacks} callbacks at {rate:g}/s to {runner}",
                        flush=True,
                    )
                    steady_load(urls[runner], chosen[runner], rate, info)
                    verification_delays("intake", chosen[runner])  # drained before the next runner's
            for runner in RUNNERS:
                delays[key][runner].append(verification_delays("intake", chosen[runner]))
                rates[key][runner].append(verified_rate(chosen[runner]))
        print(f"(delays at {rate:g}/s: {time.monotonic() - at_rate:.0f} s)", flush=True)

    fanned = fan_out(db_workers, uuids[: args.transactions], args)
    print(f"(all: {time.monotonic() - began:.0f} s)", flush=True)
    return {"delays": delays, "rates": rates, "fanned": fanned}


def verified_rate(uuids: list[str]) -> float:
    """Callbacks verified a second: their count over the time from the first receipt to the last
    verification."""
    from django.db.models import Max, Min

    from django_paycollect.models import ReceivedCallback

    span = ReceivedCallback.objects.filter(transaction_uuid__in=uuids).aggregate(
        first=Min("received_at"), last=Max("processed_at")
    )
    seconds: float = (span["last"] - span["first"]).total_seconds()
    return len(uuids) / seconds


def fan_out(db_workers: DbWorkers, uuids: list[str], args: argparse.Namespace) -> dict[str, list[float]]:
    """Seconds from enqueueing the ``reconcile`` task (Django runner) until every task has finished and every
    one of ``uuids`` (reopened: PENDING, never synced, heard of two hours ago) is fetched, with one and two
    ``db_worker`` processes, ``--rounds`` rounds each."""
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from django_paycollect.models import Transaction
    from django_paycollect.tasks import on_django

    rows = Transaction.objects.filter(uuid__in=uuids)
    others = Transaction.objects.exclude(uuid__in=uuids)
    timings: dict[str, list[float]] = {"1": [], "2": []}
    counts = ["1", "2"]
    for number in range(args.rounds):
        turn = number % len(counts)
        for workers in counts[turn:] + counts[:turn]:
            db_workers.exactly(int(workers))
            others.update(last_synced_at=timezone.now())  # settled: reconciliation leaves them
            rows.update(
                status=Transaction.PENDING,
                service_status=Transaction.PENDING,
                last_synced_at=None,
                succeeded_at=None,
                created_at=timezone.now() - dt.timedelta(hours=2),
            )
            DBTaskResult.objects.all().delete()
            started = timezone.now()
            on_django.reconcile.enqueue(older_than="30m")
            deadline = time.monotonic() + 600
            while True:
                tasks = DBTaskResult.objects.all()
                unfinished = tasks.filter(finished_at__isnull=True).count()
                fetched = rows.filter(last_synced_at__gte=started).count()
                if not unfinished and fetched == len(uuids):
                    break
                if time.monotonic() > deadline or (not unfinished and tasks.exclude(status="SUCCESSFUL")):
                    failed = list(
                        tasks.exclude(status="SUCCESSFUL").values_list("status", "exception_class_path")
                    )
                    raise SystemExit(f"fan-out: {fetched} of {len(uuids)} fetched; tasks {failed[:3]}")
                time.sleep(0.05)
            last = max(at for at in tasks.values_list("finished_at", flat=True) if at is not None)
            chunks = tasks.count() - 1
            if chunks < 2:  # at most CHUNK_SIZE open: one task did it all, nothing was fanned out
                raise SystemExit(f"fan-out: {chunks} chunk(s); give --transactions above CHUNK_SIZE")
            timings[workers].append((last - started).total_seconds())
            print(
                f"fan-out round {number + 1}, {workers} db_worker(s): {timings[workers][-1]:.2f} s "
                f"({chunks} chunks)",
                flush=True,
            )
    db_workers.exactly(0)
    return timings


# --- the report ------------------------------------------------------------------------------------------


def measures_of(found: dict[str, Any], args: argparse.Namespace) -> tuple[list[Measure], list[str]]:
    measures: list[Measure] = []
    details: list[str] = []
    for rate, at_rate in found["delays"].items():
        together = float(rate) < args.together_below
        how = "both driven at once" if together else "one after the other"
        for share in (0.5, 0.95):
            ours = Rounds([percentile(r, share) for r in at_rate["django"]])
            base = Rounds([percentile(r, share) for r in at_rate["celery"]])
            measures.append(
                Measure(
                    f"receipt to verification p{share * 100:.0f}, {rate} callbacks/s ({how})",
                    f"{RUNNERS['django']} {ours.text(' ms', 1)}",
                    f"{RUNNERS['celery']} {base.text(' ms', 1)}",
                    base.median / ours.median,
                    "(reported)",
                    None,
                )
            )
        ours, base = (Rounds(found["rates"][rate][runner]) for runner in ("django", "celery"))
        measures.append(
            Measure(
                f"callbacks verified a second, {rate}/s offered",
                f"{RUNNERS['django']} {ours.text('/s', 1)}",
                f"{RUNNERS['celery']} {base.text('/s', 1)}",
                ours.median / base.median,
                "(reported)",
                None,
            )
        )
        for runner, per_round in at_rate.items():
            details.append(
                f"{rate}/s, {runner}: samples per round "
                + ", ".join(str(len(r)) for r in per_round)
                + "; p50 per round "
                + ", ".join(f"{percentile(r, 0.5):.1f}" for r in per_round)
                + "; p95 per round "
                + ", ".join(f"{percentile(r, 0.95):.1f}" for r in per_round)
                + " ms"
            )
    one, two = Rounds(found["fanned"]["1"]), Rounds(found["fanned"]["2"])
    measures.append(
        Measure(
            f"reconcile task, {args.transactions:,} open payments in chunks, two db_worker processes",
            two.text(" s", 2),
            f"one db_worker {one.text(' s', 2)}",
            one.median / two.median,
            "(reported)",
            None,
        )
    )
    return measures, details


def report(found: dict[str, Any], args: argparse.Namespace) -> int:
    measures, details = measures_of(found, args)
    print_measures(measures)
    print("\n".join(details))
    rates = " and ".join(f"{rate:g}" for rate in args.rates)
    write_section(
        "task_runners",
        "The two runners: Django's tasks and Celery",
        summary=(
            f"Two gunicorns of the test project ({args.workers} sync workers each) on durable PostgreSQL: "
            'one with `PAYCOLLECT["TASK_RUNNER"] = "django"` (django-tasks-db\'s `DatabaseBackend`, the '
            'task row written in the transaction that stores the callback), one with `"celery"` '
            f"(published to Redis after the commit); {args.processes} `manage.py db_worker` processes "
            f"(default `--interval`, a second) and a Celery worker of {args.processes} processes. "
            f"{args.callbacks} callbacks per runner, rate and round at {rates} a second, {args.rounds} "
            "rounds, each naming a payment the site stored PENDING and the sandbox completed; below "
            f"{args.together_below:g} a second both runners are driven at once, each at the rate, above it "
            "one after the other. Receipt to verification (`processed_at - received_at`), nearest rank, p50 "
            "and p95 of each round, the median of the rounds with their spread; verified a second: the "
            "round's callbacks over the time from the first receipt to the last verification. Fan-out: the "
            f"`reconcile` task enqueued on the Django runner over {args.transactions:,} open payments "
            "(chunks of 500), timed until every task has finished, with one and with two `db_worker` "
            "processes. Ratios are Celery's over Django's for latencies (above 1: Django's is faster), "
            "Django's over Celery's for the verified rate, one worker's time over two's for the fan-out."
        ),
        measures=measures,
        details=details,
    )
    return exit_status(measures, args.strict)


if __name__ == "__main__":
    sys.exit(main())
