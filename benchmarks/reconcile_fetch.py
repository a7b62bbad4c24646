"""Reconciling open transactions against the standalone sandbox, beside the same work done with the ORM.

Starts ``python -m django_paycollect.sandbox`` (temporary SQLite file, no callback URL so no deliveries run in
the background), starts ``--transactions`` payments there (default 500; one in four completed), and stores
them here as PENDING transactions last heard of two hours ago, on a durable PostgreSQL of the run's own
(``servers.start_postgres``: PostgreSQL's defaults; or the one ``PAYCOLLECT_BENCH_POSTGRES`` names, its
settings printed with the results). Then, in ``--rounds`` alternating rounds (medians, the spread printed):

- ``reconciliation.reconcile()`` with ``RECONCILE_CONCURRENCY`` = ``--concurrency`` (its default);
- the ORM loop (the target's baseline) at the same concurrency: that many threads, each fetching with its own
  ``requests.Session`` and storing with the ORM, in one ``atomic()`` per fetch, the envelope row
  (``ApiCall.objects.create``) and the fetched status (``select_for_update().get()``, ``save()``)
  (``_support/orm_work.py``);
- the hand-written floor (information, not a target): the same threads storing the same facts with
  hand-written SQL through psycopg.

Between rounds the transactions are put back to PENDING and never synced. Target: reconcile at least 0.8 of
the ORM loop's speed. Then, once each, over ``--latency-transactions`` (default 250) with the sandbox
answering every fetch ``--latency-ms`` (default 20) late: reconcile against the ORM loop at the same
concurrency (target ≥ 0.8) and the sequential fetch loop (reported). ``--fanned`` adds the fanned-out run
(chunks of ``--chunk-size`` through ``reconciliation.reconcile_chunk`` in one worker process, then two,
beside the ORM loop's chunks). Runs in two projects (``--project``, default both): as the tests run it, and
with a global ``post_save`` receiver and django-simple-history on ``Transaction``. ``--strict`` makes a
missed target exit with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    PROJECTS,
    Measure,
    Rounds,
    add_project_argument,
    exit_status,
    for_each_project,
    postgres_cpu_seconds,
    postgres_database,
    print_measures,
    project,
    setup_django_on_postgres,
    temp_workdir,
    write_section,
)
from benchmarks._support.payments import sandbox_with_payments, shared_directory, store_pending
from benchmarks._support.servers import process_cpu
from django_paycollect.sandbox.testing import SandboxControl

TARGET_RATIO = 0.8
#: The processes whose CPU time is counted, in the order printed.
PROCESSES = ("here", "sandbox", "postgres")


def machine_busy_seconds() -> float:
    """CPU seconds every process of the machine has spent, all cores (Linux /proc/stat); 0 elsewhere."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(value) for value in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def per_transaction(measured: dict[str, float], transactions: int) -> dict[str, float]:
    """CPU microseconds per transaction of each counted process, from a measure's seconds."""
    return {key: measured[key] / transactions * 1e6 for key in PROCESSES}


class Clock:
    """Wall time and the CPU time of this process (and its reaped children), the sandbox and PostgreSQL."""

    def __init__(self, sandbox_pid: int, database: str) -> None:
        self.sandbox_pid, self.database = sandbox_pid, database

    def read(self) -> dict[str, float]:
        times = os.times()
        return {
            "wall": time.perf_counter(),
            "here": times.user + times.system + times.children_user + times.children_system,
            "sandbox": process_cpu(self.sandbox_pid),
            "postgres": postgres_cpu_seconds(self.database) or 0.0,
            "machine": machine_busy_seconds(),
        }

    def measure(self, work: Callable[[], Any]) -> dict[str, float]:
        before = self.read()
        work()
        after = self.read()
        return {key: after[key] - before[key] for key in before}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=500, help="open transactions (default 500)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians (default 3)")
    parser.add_argument(
        "--latency-ms", type=int, default=20, help="service latency of the later comparisons (default 20)"
    )
    parser.add_argument(
        "--latency-transactions", type=int, default=250, help="transactions in the latency run (default 250)"
    )
    from django_paycollect.conf import DEFAULTS

    default_concurrency = int(DEFAULTS["RECONCILE_CONCURRENCY"])
    parser.add_argument(
        "--concurrency",
        type=int,
        default=default_concurrency,
        help=f"RECONCILE_CONCURRENCY (default {default_concurrency}, the setting's default)",
    )
    parser.add_argument("--fanned", action="store_true", help="add the fanned-out run (one and two workers)")
    parser.add_argument(
        "--chunk-size", type=int, default=250, help="the fanned-out run's chunks (default 250)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    add_project_argument(parser)
    args = parser.parse_args()

    def one() -> dict[str, Any]:
        with (
            temp_workdir() as workdir,
            postgres_database("bench_reconcile") as database,
            ExitStack() as stack,
        ):
            # One in four completed at the service; the second project's sandbox is a copy of the first's.
            sandbox, uuids = sandbox_with_payments(
                Path(workdir), stack, args.transactions, kind="quarter", completed=lambda i: i % 4 == 0
            )
            return run(database, sandbox.info, uuids, args)

    with shared_directory():
        results = for_each_project(__file__, args, one)
    if args.results:
        return 0
    tables, everything, details = [], [], []
    for name, found in results.items():
        measures, more = report(found, args)
        print(f"-- {PROJECTS[name]}: {args.rounds} alternating rounds, medians:")
        print_measures(measures)
        tables.append((f"In {PROJECTS[name]}", measures))
        everything += measures
        details += [f"[{name}] {line}" for line in more]
    print("\n".join(details))
    write_section(
        "reconcile_fetch",
        "Reconciliation against the sandbox",
        summary=(
            f"`reconciliation.reconcile()` (`RECONCILE_CONCURRENCY` {args.concurrency}) over "
            f"{args.transactions:,} PENDING transactions (one in four completed at the service) beside "
            "the ORM loop in as many threads (each fetch with `requests`, then in one `atomic()` the "
            "envelope row, `ApiCall.objects.create`, and the fetched status, `select_for_update().get()` "
            "and `save()`: the target's baseline) and the hand-written floor (the same threads, the same "
            "facts stored with hand-written SQL through psycopg: information, not a target); standalone "
            "sandbox on loopback (SQLite), our rows on PostgreSQL (same machine); "
            f"{args.rounds} alternating rounds, the median and the spread (the rounds' min and max). "
            "Ratios are the baseline's time over reconcile's (higher is better for reconcile). CPU is "
            "user + system time per transaction of this process, of the sandbox and of PostgreSQL. Then, "
            f"once each, over {args.latency_transactions} transactions with the sandbox answering every "
            f"fetch {args.latency_ms} ms late (its latency fault), closer to a real service across a "
            "network."
        ),
        measures=[],
        tables=tables,
        details=details,
    )
    return exit_status(everything, args.strict)


def report(found: dict[str, Any], args: argparse.Namespace) -> tuple[list[Measure], list[str]]:
    n = args.transactions
    per_round = found["rounds"]

    def walls(name: str) -> Rounds:
        return Rounds([r[name]["wall"] for r in per_round])

    def ratios(base: str) -> Rounds:
        return Rounds([r[base]["wall"] / r["reconcile"]["wall"] for r in per_round])

    def cpu(name: str) -> dict[str, float]:
        return per_transaction(
            {key: statistics.median(r[name][key] for r in per_round) for key in PROCESSES}, n
        )

    def cpu_text(spent: dict[str, float]) -> str:
        parts = ", ".join(f"{key} {spent[key]:.0f}" for key in PROCESSES)
        return f"{sum(spent.values()):.0f} µs ({parts})"

    orm, floor = ratios("orm"), ratios("raw")
    latency = found["latency"]
    c = args.concurrency
    measures = [
        Measure(
            f"reconcile {n:,} open transactions, {c} at once",
            f"{walls('reconcile').text(' s')} ({n / walls('reconcile').median:.0f}/s)",
            f"ORM loop, {c} threads, {walls('orm').text(' s')} ({n / walls('orm').median:.0f}/s)",
            orm.median,
            f"≥ {TARGET_RATIO:g} (rounds' ratios {min(orm.values):.2f} to {max(orm.values):.2f})",
            orm.median >= TARGET_RATIO,
        ),
        Measure(
            "CPU per transaction, three processes",
            cpu_text(cpu("reconcile")),
            f"ORM loop {cpu_text(cpu('orm'))}",
            sum(cpu("orm").values()) / sum(cpu("reconcile").values()),
            "(reported)",
            None,
        ),
        Measure(
            f"reconcile {n:,} beside the hand-written floor",
            f"{walls('reconcile').median:.2f} s",
            f"hand-written floor, {c} threads, {walls('raw').text(' s')}",
            floor.median,
            "(information, not a target)",
            None,
        ),
        Measure(
            f"reconcile {args.latency_transactions} with {args.latency_ms} ms of service latency",
            f"{latency['reconcile']:.2f} s",
            f"ORM loop, {c} threads, {latency['orm']:.2f} s",
            latency["orm"] / latency["reconcile"],
            f"≥ {TARGET_RATIO:g}",
            latency["orm"] / latency["reconcile"] >= TARGET_RATIO,
        ),
        Measure(
            f"reconcile {args.latency_transactions} with {args.latency_ms} ms of latency, beside one by one",
            f"{latency['reconcile']:.2f} s",
            f"sequential fetch loop {latency['sequential']:.2f} s",
            latency["sequential"] / latency["reconcile"],
            "(reported: what the concurrency gives)",
            None,
        ),
    ]
    fanned = found.get("fanned")
    if fanned:
        measures += [
            Measure(
                f"fanned-out run of {n:,} in chunks of {args.chunk_size}, two worker processes",
                f"{fanned['reconcile_2']['wall']:.2f} s",
                f"one worker process {fanned['reconcile_1']['wall']:.2f} s",
                fanned["reconcile_1"]["wall"] / fanned["reconcile_2"]["wall"],
                "(reported)",
                None,
            ),
            Measure(
                "the ORM loop's chunks, two processes",
                f"{fanned['orm_2']['wall']:.2f} s",
                f"one process {fanned['orm_1']['wall']:.2f} s",
                fanned["orm_1"]["wall"] / fanned["orm_2"]["wall"],
                "(reported: what the machine gives two processes)",
                None,
            ),
        ]
    cores = os.cpu_count() or 1
    others = sum(r[name]["machine"] - sum(r[name][key] for key in PROCESSES) for r in per_round for name in r)
    wall = sum(r[name]["wall"] for r in per_round for name in r)
    details = [
        f"CPU of other processes during the rounds: {max(0.0, others):.1f} s in {wall:.1f} s "
        f"({max(0.0, others) / wall / cores:.0%} of the machine's {cores} cores)",
        *(
            f"seconds per round, {label}: " + ", ".join(f"{r[name]['wall']:.2f}" for r in per_round)
            for name, label in (
                ("reconcile", "reconcile"),
                ("orm", "ORM loop"),
                ("raw", "hand-written floor"),
            )
        ),
        f"status changes per reconcile round: {found['changed']} (the completed quarter)",
        f"hand-written floor's CPU per transaction: {cpu_text(cpu('raw'))}",
    ]
    if "history_rows" in found:
        details.append(f"simple-history rows written for Transaction: {found['history_rows']}")
    return measures, details


def run(database: str, info: dict[str, Any], uuids: list[str], args: argparse.Namespace) -> dict[str, Any]:
    setup_django_on_postgres(database)
    import requests
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from benchmarks._support.orm_work import Fetcher
    from django_paycollect import reconciliation
    from django_paycollect.models import Transaction

    count, concurrency = args.transactions, args.concurrency
    community = str(info["community_id"])
    amount_id = int(info["variable_amount_id"])
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "BASE_URL": info["base_url"],
        "COMMUNITY_ID": community,
        "API_KEY": info["api_key"],
        "VARIABLE_AMOUNT_ID": amount_id,
        "RECONCILE_CONCURRENCY": concurrency,
    }
    control = SandboxControl(info["base_url"])
    heard_of = timezone.now() - dt.timedelta(hours=2)
    store_pending(community, uuids, settle=False, created_at=heard_of)

    headers = {"x-api-key": str(info["api_key"]), "Accept": "application/json"}
    base = f"{info['base_url'].rstrip('/')}/api/v1/communities/{community}/transactions/"

    def sequential_loop(chosen: list[str], session: requests.Session) -> None:
        for uuid in chosen:
            response = session.get(f"{base}{uuid}/", headers=headers, timeout=30)
            if response.status_code != 200 or response.json()["data"]["uuid"] != uuid:
                raise SystemExit(f"raw fetch of {uuid}: {response.status_code} {response.text[:200]}")

    by_uuid = dict(Transaction.objects.values_list("uuid", "pk"))
    store_loop = same_work_loop(database, base, headers, community, by_uuid)

    def orm_thread(chosen: list[str]) -> None:
        fetcher = Fetcher(str(info["base_url"]), community, str(info["api_key"]))
        try:
            for uuid in chosen:
                fetcher.fetch_and_store(uuid)
        finally:
            fetcher.session.close()
            connection.close()  # this thread's own

    def threaded(work: Callable[[list[str]], None]) -> Callable[[list[str]], None]:
        def loop(chosen: list[str], threads: int = concurrency) -> None:
            workers = [threading.Thread(target=work, args=(chosen[i::threads],)) for i in range(threads)]
            for thread in workers:
                thread.start()
            for thread in workers:
                thread.join()

        return loop

    orm_loop, raw_loop = threaded(orm_thread), threaded(store_loop)
    changed: list[int] = []

    def reconcile(expected: int = count) -> None:
        summary = reconciliation.reconcile(older_than=dt.timedelta(minutes=30))
        if summary.fetched != expected or summary.errors:
            raise SystemExit(
                f"reconcile fetched {summary.fetched} of {expected}; errors: {summary.errors[:3]}"
            )
        changed.append(summary.changed)

    def reopen(only: list[str] | None = None) -> None:
        """Back to PENDING and never synced (``only`` these uuids), outside the measures."""
        rows = Transaction.objects.filter(uuid__in=only) if only is not None else Transaction.objects
        rows.update(
            status=Transaction.PENDING,
            service_status=Transaction.PENDING,
            last_synced_at=None,
            succeeded_at=None,
        )

    # Warm all three (connections, imports, the sandbox's pages) on a short slice; a first sync stores the
    # service's id of each transaction, as the first fetch of a stored payment does.
    orm_loop(uuids[:50])
    raw_loop(uuids[:50])
    reopen()
    reconcile()
    reopen()

    clock = Clock(int(info["pid"]), database)
    rounds: list[dict[str, dict[str, float]]] = []
    for round_index in range(args.rounds):
        order: list[tuple[str, Callable[[], None]]] = [
            ("orm", lambda: orm_loop(uuids)),
            ("reconcile", reconcile),
            ("raw", lambda: raw_loop(uuids)),
        ]
        turn = round_index % len(order)
        measured = {}
        for name, work in order[turn:] + order[:turn]:
            measured[name] = clock.measure(work)
            reopen()
        rounds.append(measured)
        print(
            f"round {round_index + 1} of {args.rounds}: reconcile {measured['reconcile']['wall']:.2f} s, "
            f"ORM loop {measured['orm']['wall']:.2f} s, hand-written floor {measured['raw']['wall']:.2f} s",
            flush=True,
        )

    # The same comparison on a slice, with the service answering after a network-like delay (the
    # sandbox's latency fault on every fetch); the rest is marked synced just now, so reconcile skips it.
    chosen = uuids[: args.latency_transactions]
    control.fault("fetch_transaction", "latency", latency_ms=args.latency_ms, times=None)
    Transaction.objects.exclude(uuid__in=chosen).update(last_synced_at=timezone.now())
    session = requests.Session()
    latency = {"sequential": clock.measure(lambda: sequential_loop(chosen, session))["wall"]}
    latency["orm"] = clock.measure(lambda: orm_loop(chosen))["wall"]
    reopen(chosen)
    latency["reconcile"] = clock.measure(lambda: reconcile(len(chosen)))["wall"]
    session.close()

    fanned: dict[str, dict[str, float]] = {}
    if args.fanned:
        pks = list(Transaction.objects.order_by("pk").values_list("pk", flat=True))
        size = args.chunk_size
        for workers in (1, 2):
            reopen()
            print(f"fanned out: {workers} worker process(es)...", flush=True)
            fanned[f"reconcile_{workers}"] = clock.measure(
                lambda w=workers: worker_processes(
                    [pks[i : i + size] for i in range(0, count, size)], w, sync_chunk
                )
            )
            fanned[f"orm_{workers}"] = clock.measure(
                lambda w=workers: worker_processes(
                    [uuids[i : i + size] for i in range(0, count, size)], w, orm_loop
                )
            )

    control.clear_faults()
    found: dict[str, Any] = {
        "rounds": rounds,
        "changed": statistics.median(changed),
        "latency": latency,
        "fanned": fanned,
    }
    if project() == "receivers":
        found["history_rows"] = Transaction.history.model.objects.count()  # type: ignore[attr-defined]
    return found


def same_work_loop(
    database: str, base: str, headers: dict[str, str], community: str, by_uuid: dict[str, int]
) -> Callable[[list[str]], None]:
    """The same-work raw loop of one thread: a ``requests.Session`` and a psycopg connection of its own;
    for each transaction the fetch, ``.json()``, then the facts reconcile keeps, in one transaction
    committed on the durable server: an envelope row in ``paycollect_apicall`` (the same table, so the
    same indexes; what the service answered as ``data``) and the fetched status on the transaction's row
    (``status``, ``service_status``, ``raw``, the sync time). Hand-written SQL, no ORM, no lock, no check
    that the status moves forward: the floor of storing a fetch."""
    import psycopg
    import requests
    from psycopg.types.json import Jsonb

    host, port, name, user = database.split(":")
    # Every column of the row reconcile writes for a fetch (the ones with no default given as Django
    # would give them).
    insert = (
        "INSERT INTO paycollect_apicall (operation, community_id, method, path, request_body, sent, "
        "http_status, code, message, errors, data, count, next, previous, error_class, error_message, "
        "body_excerpt, outcome_unknown, duration_ms, attempts, task_id, transaction_id, created_at) "
        "VALUES ('get_transaction', %s, 'GET', %s, NULL, true, %s, %s, %s, '[]', %s, NULL, '', '', '', "
        "'', '', false, %s, 1, '', %s, now())"
    )
    update = (
        "UPDATE paycollect_transaction SET status = %s, service_status = %s, raw = %s, "
        "last_synced_at = now(), updated_at = now() WHERE id = %s"
    )
    path_of = base.split("://", 1)[1].split("/", 1)[1]

    def loop(chosen: list[str]) -> None:
        session = requests.Session()
        with psycopg.connect(host=host, port=port, user=user, dbname=name) as conn:
            for uuid in chosen:
                started = time.perf_counter()
                response = session.get(f"{base}{uuid}/", headers=headers, timeout=30)
                duration = round((time.perf_counter() - started) * 1000)
                answer = response.json()
                data = answer["data"]
                if response.status_code != 200 or data["uuid"] != uuid:
                    raise SystemExit(f"raw fetch of {uuid}: {response.status_code} {response.text[:200]}")
                status = answer.get("status") or {}
                conn.execute(
                    insert,
                    (
                        community,
                        f"/{path_of}{uuid}/",
                        response.status_code,
                        status.get("code"),
                        status.get("message") or "",
                        Jsonb(data),
                        duration,
                        by_uuid[uuid],
                    ),
                )
                conn.execute(update, (data["status"], data["status"], Jsonb(data), by_uuid[uuid]))
                conn.commit()
        session.close()

    return loop


def sync_chunk(pks: list[int]) -> None:
    from django_paycollect import reconciliation

    summary = reconciliation.reconcile_chunk(pks)
    if summary.fetched != len(pks) or summary.errors:
        raise SystemExit(
            f"reconcile_chunk fetched {summary.fetched} of {len(pks)}; errors: {summary.errors[:3]}"
        )


def worker_processes(chunks: list[list[Any]], workers: int, work: Callable[[list[Any]], None]) -> None:
    """``workers`` forked processes doing ``work`` on ``chunks``, each taking the next chunk from one queue
    when done with its last (as Celery workers with a prefetch of one take tasks)."""
    import multiprocessing

    from django.db import connections

    connections.close_all()  # a forked child must not share this process's connection
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    for chunk in chunks:
        queue.put(chunk)
    for _ in range(workers):
        queue.put(None)

    def worker() -> None:
        while (chunk := queue.get()) is not None:
            work(chunk)
        connections.close_all()

    processes = [context.Process(target=worker) for _ in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise SystemExit(f"a worker process failed ({process.exitcode})")


if __name__ == "__main__":
    sys.exit(main())
