"""Reconciling open transactions against the standalone sandbox, beside a raw ``requests`` loop fetching them.

Starts ``python -m django_paycollect.sandbox`` (temporary SQLite file, no callback URL so no deliveries run in
the background), starts ``--transactions`` payments there (default 2,000; one in four completed), and stores
them here as PENDING transactions last heard of two hours ago, on PostgreSQL (a database of its own, dropped
at the end, on a durable PostgreSQL server of the run's own (``.ci/postgres.sh`` with
``PAYCOLLECT_PG_DURABLE=1``: fsync and synchronous commit on, data on the disk; free port, stopped at the
end), or the one ``PAYCOLLECT_BENCH_POSTGRES`` names (its settings are printed with the results; figures of
one that is not durable are labelled so)). Then, in alternating rounds (medians compared):

- ``reconciliation.reconcile()`` with ``RECONCILE_CONCURRENCY`` = ``--concurrency`` (its default): finds the
  open transactions and syncs each through the service layer (client, envelope checks, an ApiCall row, row
  lock where the status changes, status machine, signals), that many at once;
- the same-work raw loop at the same concurrency: that many threads, each with its own ``requests.Session``
  and psycopg connection, ``GET /api/v1/communities/<id>/transactions/<uuid>/`` for the same transactions,
  ``response.json()``, then the facts reconcile keeps, committed per fetch on the same durable server: an
  envelope row in ``paycollect_apicall`` and the fetched status on the transaction's row (hand-written SQL);
- a fetch-only raw loop (the same threads, nothing stored; reported, what storing costs).

Between rounds the transactions are put back to PENDING and never synced. Target: reconcile at least 0.8
of the same-work raw loop's speed at equal concurrency. CPU time per transaction of the three processes
(this one, the sandbox and PostgreSQL, from /proc) is printed too, and from it the ratio this machine's
cores allow: each loop at the speed its CPU time permits (all cores busy, and this process's threads one at
a time, as the interpreter lock runs them). Then, once each, over ``--latency-transactions`` (default 250)
with the sandbox answering every fetch ``--latency-ms`` (default 20) late through its latency fault:
reconcile against the sequential fetch-only loop (target ≥ 5x) and against the same-work raw loop at its
concurrency (reported). Last, with the same latency, a fanned-out run: every open transaction in chunks of
``--chunk-size`` (default 250), each chunk through ``reconciliation.reconcile_chunk`` (what a
``paycollect.reconcile_chunk`` task runs), in one worker process and then in two taking chunks from one
queue as Celery workers with a prefetch of one do (target ≥ 1.6x), beside the same-work raw loop's chunks
in one process and in two (what the machine allows). ``--concurrency`` defaults to the setting's default,
so the 5x target is measured with the default settings.
``--strict`` makes a missed target exit with status 1. Run by ``make bench``, never by the tests.
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
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    Measure,
    exit_status,
    postgres_cpu_seconds,
    postgres_database,
    print_measures,
    setup_django_on_postgres,
    temp_workdir,
    write_section,
)
from benchmarks._support.servers import process_cpu
from django_paycollect.sandbox.testing import SandboxControl, start_sandbox

TARGET_RATIO = 0.8
TARGET_LATENCY = 5.0
TARGET_WORKERS = 1.6
BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}
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
    parser.add_argument("--transactions", type=int, default=2000, help="open transactions (default 2000)")
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
    parser.add_argument(
        "--chunk-size", type=int, default=250, help="the fanned-out run's chunks (default 250)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    with temp_workdir() as workdir, postgres_database("bench_reconcile") as database:
        sandbox = start_sandbox(Path(workdir) / "sandbox")
        try:
            results = run(database, sandbox.info, args)
        finally:
            sandbox.stop()
    measures, details = report(results, args)
    print(f"{args.rounds} alternating rounds, medians:")
    print_measures(measures)
    write_section(
        "reconcile_fetch",
        "Reconciliation against the sandbox",
        summary=(
            f"`reconciliation.reconcile()` (`RECONCILE_CONCURRENCY` {args.concurrency}) over "
            f"{args.transactions:,} PENDING transactions (one in four completed at the service) beside a "
            "same-work raw loop in as many threads (a `requests.Session` and a psycopg connection each: the "
            "fetch, its JSON, then an envelope row in `paycollect_apicall` and the fetched status on the "
            "transaction's row, hand-written SQL, one commit per fetch) and a fetch-only raw loop (nothing "
            "stored); standalone sandbox on loopback (SQLite), our rows on PostgreSQL (same machine); "
            f"{args.rounds} alternating rounds, medians. The ratio is the raw loop's time over reconcile's "
            "(higher is better for reconcile). CPU is user + system time per transaction of this process, "
            "of the sandbox and of PostgreSQL; the ratio the machine allows is each loop at the speed its "
            "CPU time permits on every core, this process's threads one at a time. Then, once each, over "
            f"{args.latency_transactions} transactions with the sandbox answering every fetch "
            f"{args.latency_ms} ms late (its latency fault), closer to a real service across a network. "
            f"Last, with that latency, all {args.transactions:,} in chunks of {args.chunk_size} through "
            "`reconciliation.reconcile_chunk` (the `paycollect.reconcile_chunk` task's work) in one worker "
            "process, then in two taking chunks from one queue, beside the raw loop's chunks in one and two "
            "processes (the same-work loop's)."
        ),
        measures=measures,
        details=details,
        notes=notes(results, args),
    )
    return exit_status(measures, args.strict)


def report(results: dict[str, Any], args: argparse.Namespace) -> tuple[list[Measure], list[str]]:
    n, cores = args.transactions, os.cpu_count() or 1
    raw, rec = results["raw"], results["reconcile"]
    ratio = raw["wall"] / rec["wall"]
    cpu_raw = per_transaction(raw, n)
    cpu_rec = per_transaction(rec, n)

    def limit(cpu: dict[str, float]) -> float:
        """Seconds per transaction at best: every core busy, and this process on one core at a time."""
        return max(sum(cpu.values()) / cores, cpu["here"]) / 1e6

    allowed = limit(cpu_raw) / limit(cpu_rec)
    latency = results["latency"]
    fanned = results["fanned"]
    workers = fanned["reconcile_1"]["wall"] / fanned["reconcile_2"]["wall"]
    raw_workers = fanned["raw_1"]["wall"] / fanned["raw_2"]["wall"]

    def cpu_text(cpu: dict[str, float]) -> str:
        parts = ", ".join(f"{key} {cpu[key]:.0f}" for key in PROCESSES)
        return f"{sum(cpu.values()):.0f} µs ({parts})"

    measures = [
        Measure(
            f"reconcile {n:,} open transactions, {args.concurrency} at once",
            f"{rec['wall']:.2f} s ({n / rec['wall']:.0f}/s)",
            f"same-work raw loop, {args.concurrency} threads, {raw['wall']:.2f} s ({n / raw['wall']:.0f}/s)",
            ratio,
            f"≥ {TARGET_RATIO:g}",
            ratio >= TARGET_RATIO,
        ),
        Measure(
            f"reconcile {n:,}, {args.concurrency} at once, beside fetching alone",
            f"{rec['wall']:.2f} s",
            f"fetch-only raw loop (nothing stored), {args.concurrency} threads, "
            f"{results['fetch']['wall']:.2f} s",
            results["fetch"]["wall"] / rec["wall"],
            "(reported: what storing costs, ours and the raw loop's)",
            None,
        ),
        Measure(
            "CPU per transaction, three processes",
            cpu_text(cpu_rec),
            f"same-work raw loop {cpu_text(cpu_raw)}",
            sum(cpu_raw.values()) / sum(cpu_rec.values()),
            "(reported)",
            None,
        ),
        Measure(
            f"ratio this CPU time allows on {cores} cores",
            f"reconcile {1 / limit(cpu_rec):.0f}/s",
            f"same-work raw loop {1 / limit(cpu_raw):.0f}/s",
            allowed,
            "(reported: the first ratio's ceiling here)",
            None,
        ),
        Measure(
            f"reconcile {args.latency_transactions} with {args.latency_ms} ms of service latency",
            f"{latency['reconcile']:.2f} s",
            f"sequential raw loop {latency['sequential']:.2f} s",
            latency["sequential"] / latency["reconcile"],
            f"≥ {TARGET_LATENCY:g}",
            latency["sequential"] / latency["reconcile"] >= TARGET_LATENCY,
        ),
        Measure(
            f"reconcile {args.latency_transactions} with {args.latency_ms} ms of latency, equal concurrency",
            f"{latency['reconcile']:.2f} s",
            f"same-work raw loop, {args.concurrency} threads, {latency['raw']:.2f} s",
            latency["raw"] / latency["reconcile"],
            "(reported)",
            None,
        ),
        Measure(
            f"fanned-out run of {n:,} in chunks of {args.chunk_size}, two worker processes",
            f"{fanned['reconcile_2']['wall']:.2f} s",
            f"one worker process {fanned['reconcile_1']['wall']:.2f} s",
            workers,
            f"≥ {TARGET_WORKERS:g}",
            workers >= TARGET_WORKERS,
        ),
        Measure(
            "same-work raw loop's chunks, two processes",
            f"{fanned['raw_2']['wall']:.2f} s",
            f"one process {fanned['raw_1']['wall']:.2f} s",
            raw_workers,
            "(reported: what the machine gives two processes)",
            None,
        ),
    ]
    per_round = results["rounds"]
    others = sum(r[name]["machine"] - sum(r[name][key] for key in PROCESSES) for r in per_round for name in r)
    wall = sum(r[name]["wall"] for r in per_round for name in r)
    details = [
        f"CPU of other processes during the rounds: {max(0.0, others):.1f} s in {wall:.1f} s "
        f"({max(0.0, others) / wall / cores:.0%} of the machine's {cores} cores)",
        "seconds per round, reconcile: " + ", ".join(f"{r['reconcile']['wall']:.2f}" for r in per_round),
        "seconds per round, same-work raw loop: " + ", ".join(f"{r['raw']['wall']:.2f}" for r in per_round),
        "seconds per round, fetch-only raw loop: "
        + ", ".join(f"{r['fetch']['wall']:.2f}" for r in per_round),
        f"status changes per reconcile round: {results['changed']} (the completed quarter)",
    ]
    for name, label in (
        ("reconcile_1", "one worker"),
        ("reconcile_2", "two workers"),
        ("raw_1", "raw, one process"),
        ("raw_2", "raw, two processes"),
    ):
        cpu = per_transaction(fanned[name], n)
        others = max(0.0, fanned[name]["machine"] - sum(fanned[name][key] for key in PROCESSES))
        details.append(
            f"fanned out, {label}: {fanned[name]['wall']:.2f} s, CPU per transaction {cpu_text(cpu)}; "
            f"other processes {others:.1f} s"
        )
    return measures, details


def notes(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """Why each target is where it is, in this run's numbers."""
    n, concurrency, cores = args.transactions, args.concurrency, os.cpu_count() or 1
    raw, rec, latency, fanned = results["raw"], results["reconcile"], results["latency"], results["fanned"]
    cpu_raw = per_transaction(raw, n)
    cpu_rec = per_transaction(rec, n)
    total_raw, total_rec = sum(cpu_raw.values()), sum(cpu_rec.values())
    slice_ = args.latency_transactions
    waits = slice_ * args.latency_ms / 1000 / concurrency
    two = per_transaction(fanned["reconcile_2"], n)
    best_two = max(sum(two.values()) * n / 1e6 / cores, n * args.latency_ms / 1000 / (2 * concurrency))
    seq = latency["sequential"]
    own = slice_ * cpu_rec["here"] / 1e6
    room = ", less than this process's CPU alone for them" if own > seq / 5 else ""
    one, two_wall = fanned["reconcile_1"]["wall"], fanned["reconcile_2"]["wall"]
    return [
        f"**At equal concurrency** reconcile spends {cpu_rec['here']:.0f} µs of this process's CPU per "
        f"transaction where the raw loop spends {cpu_raw['here']:.0f}, and makes the sandbox and PostgreSQL "
        f"spend {cpu_rec['sandbox'] + cpu_rec['postgres']:.0f} µs where the raw loop makes them spend "
        f"{cpu_raw['sandbox'] + cpu_raw['postgres']:.0f}. Both store the same facts in one commit per "
        "fetch (the API call's row and the transaction's status); reconcile also decides through the "
        "service layer (the envelope's checks, the status machine under the row lock for the quarter that "
        "changes, the signals), through the ORM. Its threads run one at a time (the interpreter lock): "
        f"that bounds it at {1e6 / cpu_rec['here']:.0f}/s, and the three processes' CPU on {cores} cores at "
        f"{cores * 1e6 / total_rec:.0f}/s. Spread over processes, the whole CPU bounds the ratio at "
        f"{total_raw / total_rec:.2f} here.",
        f"**At {args.latency_ms} ms of latency**, {slice_} fetches {concurrency} at a time wait at least "
        f"{waits:.2f} s, and this process's CPU for them takes about {own:.2f} s, "
        "one thread at a time, while the sandbox and PostgreSQL need about "
        f"{slice_ * (cpu_rec['sandbox'] + cpu_rec['postgres']) / 1e6:.2f} s of the same {cores} cores: "
        f"{latency['reconcile']:.2f} s measured. The sequential loop took {seq:.2f} s: 5x needs "
        f"{seq / 5:.2f} s{room}.",
        f"**Two workers**: with the latency, one worker took {one:.2f} s and two {two_wall:.2f} s. Beside "
        f"two workers spending {two['here']:.0f} µs per transaction, the sandbox spent "
        f"{two['sandbox']:.0f} and PostgreSQL {two['postgres']:.0f}, all on the same {cores} cores: that "
        f"CPU, or the latency at twice the concurrency, allows two workers at best {one / best_two:.2f}x one "
        "here. The same-work raw loop's chunks gained "
        f"{fanned['raw_1']['wall'] / fanned['raw_2']['wall']:.2f}x from a second process here.",
        "Profiles, and what was cut: `benchmarks/README.md`, section reconcile_fetch.py.",
    ]


def run(database: str, info: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    setup_django_on_postgres(database)
    import requests
    from django.conf import settings
    from django.utils import timezone

    from django_paycollect import reconciliation
    from django_paycollect.models import Transaction
    from django_paycollect.services.config import community_config, get_client

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
    control.configure_api_payment(amount_id, callback_url="")  # no callback deliveries in the background
    client = get_client(community_config())

    print(f"starting {count:,} payments at the sandbox...", flush=True)
    uuids: list[str] = []
    for i in range(count):
        started = client.pay(
            community_id=community,
            amount=Decimal("104.50"),
            original_amount=Decimal("104.50"),
            variable_amount_id=amount_id,
            billing_data=BILLING,
        )
        uuid = started.result.transaction_uuid
        assert uuid
        uuids.append(uuid)
        if i % 4 == 0:
            control.complete(uuid)
    heard_of = timezone.now() - dt.timedelta(hours=2)
    Transaction.objects.bulk_create(
        Transaction(
            uuid=uuid,
            community_id=community,
            status=Transaction.PENDING,
            service_status=Transaction.PENDING,
            total_amount=Decimal("104.50"),
            original_amount=Decimal("104.50"),
            created_at=heard_of,
        )
        for uuid in uuids
    )

    headers = {"x-api-key": str(info["api_key"]), "Accept": "application/json"}
    base = f"{info['base_url'].rstrip('/')}/api/v1/communities/{community}/transactions/"

    def sequential_loop(chosen: list[str], session: requests.Session) -> None:
        for uuid in chosen:
            response = session.get(f"{base}{uuid}/", headers=headers, timeout=30)
            if response.status_code != 200 or response.json()["data"]["uuid"] != uuid:
                raise SystemExit(f"raw fetch of {uuid}: {response.status_code} {response.text[:200]}")

    sessions = [requests.Session() for _ in range(concurrency)]

    def raw_loop(chosen: list[str], own: list[requests.Session] = sessions) -> None:
        """The same fetches, ``concurrency`` threads each with its session, the work shared out."""
        threads = [
            threading.Thread(target=sequential_loop, args=(chosen[i::concurrency], own[i]))
            for i in range(concurrency)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    by_uuid = dict(Transaction.objects.values_list("uuid", "pk"))
    store_loop = same_work_loop(database, base, headers, community, by_uuid)

    def stored_loop(chosen: list[str], threads: int = concurrency) -> None:
        """The same-work raw loop: the fetches, each one's status and envelope row committed."""
        workers = [threading.Thread(target=store_loop, args=(chosen[i::threads],)) for i in range(threads)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()

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

    # Warm both (connections, imports, the sandbox's pages) on a short slice; a first sync stores the
    # service's id of each transaction, as the first fetch of a stored payment does.
    sequential_loop(uuids[:50], sessions[0])
    stored_loop(uuids[:50])
    reopen(uuids[:50])
    reconcile()
    reopen()

    clock = Clock(int(info["pid"]), database)
    rounds: list[dict[str, dict[str, float]]] = []
    for round_index in range(args.rounds):
        order: list[tuple[str, Callable[[], None]]] = [
            ("raw", lambda: stored_loop(uuids)),
            ("reconcile", reconcile),
            ("fetch", lambda: raw_loop(uuids)),
        ]
        measured = {}
        for name, work in order if round_index % 2 == 0 else order[::-1]:
            measured[name] = clock.measure(work)
            if name != "fetch":
                reopen()
        rounds.append(measured)
        print(
            f"round {round_index + 1} of {args.rounds}: reconcile {measured['reconcile']['wall']:.2f} s, "
            f"same-work raw loop {measured['raw']['wall']:.2f} s, "
            f"fetch-only raw loop {measured['fetch']['wall']:.2f} s",
            flush=True,
        )

    # The same comparison on a slice, with the service answering after a network-like delay (the
    # sandbox's latency fault on every fetch); the rest is marked synced just now, so reconcile skips it.
    chosen = uuids[: args.latency_transactions]
    control.fault("fetch_transaction", "latency", latency_ms=args.latency_ms, times=None)
    Transaction.objects.exclude(uuid__in=chosen).update(last_synced_at=timezone.now())
    latency = {"sequential": clock.measure(lambda: sequential_loop(chosen, sessions[0]))["wall"]}
    latency["raw"] = clock.measure(lambda: stored_loop(chosen))["wall"]
    reopen(chosen)
    latency["reconcile"] = clock.measure(lambda: reconcile(len(chosen)))["wall"]

    # Fanned out, with the same latency: chunks of reconcile_chunk in one worker process, then two; and the
    # raw loop's chunks alike.
    pks = list(Transaction.objects.order_by("pk").values_list("pk", flat=True))
    size = args.chunk_size
    fanned: dict[str, dict[str, float]] = {}
    for workers in (1, 2):
        reopen()
        print(f"fanned out: {workers} worker process(es)...", flush=True)
        fanned[f"reconcile_{workers}"] = clock.measure(
            lambda w=workers: worker_processes(
                [pks[i : i + size] for i in range(0, count, size)], w, sync_chunk
            )
        )
        fanned[f"raw_{workers}"] = clock.measure(
            lambda w=workers: worker_processes(
                [uuids[i : i + size] for i in range(0, count, size)], w, stored_loop
            )
        )

    control.clear_faults()
    for session in sessions:
        session.close()
    return {
        "rounds": rounds,
        "raw": {key: statistics.median(r["raw"][key] for r in rounds) for key in ("wall", *PROCESSES)},
        "fetch": {key: statistics.median(r["fetch"][key] for r in rounds) for key in ("wall", *PROCESSES)},
        "reconcile": {
            key: statistics.median(r["reconcile"][key] for r in rounds) for key in ("wall", *PROCESSES)
        },
        "changed": statistics.median(changed),
        "latency": latency,
        "fanned": fanned,
    }


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
