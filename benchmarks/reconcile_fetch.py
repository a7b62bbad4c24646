"""Reconciling open transactions against the standalone sandbox, beside a raw ``requests`` loop fetching them.

Starts ``python -m django_paycollect.sandbox`` (temporary SQLite file, no callback URL so no deliveries run
in the background), starts ``--transactions`` payments there (default 2,000; one in four completed), and
stores them here as PENDING transactions last heard of two hours ago, on PostgreSQL (``.ci/postgres.sh``'s
server unless ``PAYCOLLECT_BENCH_POSTGRES`` names one; a database of its own). Then, in alternating rounds
(medians compared):

- ``reconciliation.reconcile()`` with ``RECONCILE_CONCURRENCY`` = ``--concurrency`` (default 8): finds the
  open transactions and syncs each through the service layer (client, envelope checks, an ApiCall row, row
  lock, status machine, status changes, signals), that many at once;
- a raw loop at the same concurrency: that many threads, each with its own ``requests.Session``,
  ``GET /api/v1/communities/<id>/transactions/<uuid>/`` for the same transactions, ``response.json()``,
  nothing stored.

Between rounds the transactions are put back to PENDING and never synced. Target: reconcile at least 0.8
of the raw loop's speed at equal concurrency. CPU time per transaction (this process, and the sandbox's from
/proc) is printed too. Then, once each, over ``--latency-transactions`` (default 250) with the sandbox
answering every fetch ``--latency-ms`` (default 20) late through its latency fault: reconcile against the
sequential raw loop (target ≥ 5x) and against the raw loop at its concurrency (reported). Last, a fanned-out
run: the open transactions in chunks of ``RECONCILE_CHUNK_SIZE``, each chunk through
``reconciliation.reconcile_chunk`` (what a ``paycollect.reconcile_chunk`` task runs) in one worker process,
then shared by two (target ≥ 1.6x).
``--strict`` makes a missed target exit with status 1.
Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    Measure,
    exit_status,
    fresh_postgres_database,
    postgres_server,
    print_measures,
    setup_django_on_postgres,
    temp_workdir,
    write_section,
)
from django_paycollect.sandbox.testing import SandboxControl, start_sandbox

TARGET_RATIO = 0.8
BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (Linux /proc); 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=2000, help="open transactions (default 2000)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians (default 3)")
    parser.add_argument(
        "--latency-ms", type=int, default=20, help="service latency of the extra comparison (default 20)"
    )
    parser.add_argument(
        "--latency-transactions", type=int, default=250, help="transactions in it (default 250)"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="RECONCILE_CONCURRENCY (default 8)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()

    with temp_workdir() as workdir:
        sandbox = start_sandbox(Path(workdir) / "sandbox")
        try:
            results = run(
                Path(workdir),
                sandbox.info,
                args.transactions,
                args.rounds,
                args.latency_transactions,
                args.latency_ms,
                args.concurrency,
            )
        finally:
            sandbox.stop()

    n = args.transactions
    raw, rec = statistics.median(results["raw"]), statistics.median(results["reconcile"])
    ratio = raw / rec
    cpu_raw = statistics.median(results["raw_cpu"]) / n * 1e6
    cpu_rec = statistics.median(results["reconcile_cpu"]) / n * 1e6
    srv_raw = statistics.median(results["raw_server"]) / n * 1e6
    srv_rec = statistics.median(results["reconcile_server"]) / n * 1e6
    measures = [
        Measure(
            f"reconcile {n:,} open transactions, {args.concurrency} at once",
            f"{rec:.2f} s ({n / rec:.0f}/s)",
            f"raw requests loop, {args.concurrency} threads, {raw:.2f} s ({n / raw:.0f}/s)",
            ratio,
            f"≥ {TARGET_RATIO:g}",
            ratio >= TARGET_RATIO,
        ),
        Measure(
            "CPU per transaction, both processes",
            f"{cpu_rec + srv_rec:.0f} µs (here {cpu_rec:.0f}, sandbox {srv_rec:.0f})",
            f"raw loop {cpu_raw + srv_raw:.0f} µs (here {cpu_raw:.0f}, sandbox {srv_raw:.0f})",
            (cpu_raw + srv_raw) / (cpu_rec + srv_rec),
            "(reported)",
            None,
        ),
        Measure(
            f"reconcile {args.latency_transactions} with {args.latency_ms} ms of service latency",
            f"{results['latency_reconcile'][0]:.2f} s",
            f"sequential raw loop {results['latency_sequential'][0]:.2f} s",
            results["latency_sequential"][0] / results["latency_reconcile"][0],
            "≥ 5",
            results["latency_sequential"][0] / results["latency_reconcile"][0] >= 5,
        ),
        Measure(
            f"reconcile {args.latency_transactions} with {args.latency_ms} ms of latency, equal concurrency",
            f"{results['latency_reconcile'][0]:.2f} s",
            f"raw loop, {args.concurrency} threads, {results['latency_raw'][0]:.2f} s",
            results["latency_raw"][0] / results["latency_reconcile"][0],
            "(reported)",
            None,
        ),
        Measure(
            f"fanned-out run of {n:,} in chunks, two worker processes",
            f"{results['two_workers'][0]:.2f} s",
            f"one worker process {results['one_worker'][0]:.2f} s",
            results["one_worker"][0] / results["two_workers"][0],
            "≥ 1.6",
            results["one_worker"][0] / results["two_workers"][0] >= 1.6,
        ),
    ]
    print(f"{args.rounds} alternating rounds, medians:")
    print_measures(measures)
    details = [
        "seconds per round, reconcile: " + ", ".join(f"{s:.2f}" for s in results["reconcile"]),
        "seconds per round, raw loop:  " + ", ".join(f"{s:.2f}" for s in results["raw"]),
        f"status changes per reconcile round: {results['changed'][0]:.0f} (the completed quarter)",
    ]
    write_section(
        "reconcile_fetch",
        "Reconciliation against the sandbox",
        summary=(
            f"`reconciliation.reconcile()` (`RECONCILE_CONCURRENCY` {args.concurrency}) over {n:,} PENDING "
            "transactions (one in four completed at the service) beside a raw `requests.Session` loop in as "
            "many threads fetching the same transactions and parsing their JSON; standalone sandbox on "
            f"loopback (SQLite), our rows on PostgreSQL; {args.rounds} alternating rounds, medians. "
            "The ratio is the raw loop's time over reconcile's (higher is better for reconcile). CPU is "
            "user + system time of this process and of the sandbox process per transaction. Last, once "
            f"each: the same comparison over {args.latency_transactions} transactions with the sandbox "
            f"answering every fetch {args.latency_ms} ms late (its latency fault), closer to a real "
            "service across a network, beside the sequential raw loop and the raw loop in threads. Then "
            "the fanned-out run: every open transaction in chunks of 250 through "
            "`reconciliation.reconcile_chunk` (the `paycollect.reconcile_chunk` task's work) in one process, "
            "then in two processes sharing the chunks, with the same latency."
        ),
        measures=measures,
        details=details,
    )
    return exit_status(measures, args.strict)


def run(
    workdir: Path,
    info: dict[str, Any],
    count: int,
    rounds: int,
    latency_count: int,
    latency_ms: int,
    concurrency: int,
) -> dict[str, list[float]]:
    setup_django_on_postgres(fresh_postgres_database(postgres_server(), "bench_reconcile"))
    import requests
    from django.conf import settings
    from django.utils import timezone

    from django_paycollect import reconciliation, services
    from django_paycollect.models import Transaction

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
    client = services.get_client(services.community_config())

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

    pid = int(info["pid"])
    session = requests.Session()
    headers = {"x-api-key": str(info["api_key"]), "Accept": "application/json"}
    base = f"{info['base_url'].rstrip('/')}/api/v1/communities/{community}/transactions/"

    def sequential_loop(chosen: list[str] = uuids, own: Any = session) -> None:
        for uuid in chosen:
            response = own.get(f"{base}{uuid}/", headers=headers, timeout=30)
            if response.status_code != 200 or response.json()["data"]["uuid"] != uuid:
                raise SystemExit(f"raw fetch of {uuid}: {response.status_code} {response.text[:200]}")

    sessions = [requests.Session() for _ in range(concurrency)]

    def raw_loop(chosen: list[str] = uuids) -> None:
        """The same fetches, ``concurrency`` threads each with its session, the work shared out."""
        threads = [
            threading.Thread(target=sequential_loop, args=(chosen[i::concurrency], sessions[i]))
            for i in range(concurrency)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    changed: list[float] = []

    def reconcile(expected: int = count) -> None:
        summary = reconciliation.reconcile(older_than=dt.timedelta(minutes=30))
        if summary.fetched != expected or summary.errors:
            raise SystemExit(
                f"reconcile fetched {summary.fetched} of {expected}; errors: {summary.errors[:3]}"
            )
        changed.append(summary.changed)

    # Warm both (connections, imports, SQLite pages) on a short slice.
    for uuid in uuids[:50]:
        session.get(f"{base}{uuid}/", headers=headers, timeout=30).json()
    for txn in Transaction.objects.filter(uuid__in=uuids[:50]):
        services.sync_transaction(txn, source="reconcile")
    Transaction.objects.update(status=Transaction.PENDING, last_synced_at=None)

    results: dict[str, list[float]] = {
        key: [] for key in ("raw", "raw_cpu", "raw_server", "reconcile", "reconcile_cpu", "reconcile_server")
    }
    for round_index in range(rounds):
        order = [("raw", raw_loop), ("reconcile", reconcile)]
        for name, work in order if round_index % 2 == 0 else order[::-1]:
            wall, cpu, server = time.perf_counter(), time.process_time(), cpu_seconds(pid)
            work()
            results[name].append(time.perf_counter() - wall)
            results[f"{name}_cpu"].append(time.process_time() - cpu)
            results[f"{name}_server"].append(cpu_seconds(pid) - server)
            if name == "reconcile":  # back to PENDING and never synced, outside the measure
                Transaction.objects.update(status=Transaction.PENDING, last_synced_at=None)
        print(
            f"round {round_index + 1}: reconcile {results['reconcile'][-1]:.2f} s, "
            f"raw loop {results['raw'][-1]:.2f} s",
            flush=True,
        )
    # The same comparison on a slice, with the service answering after a network-like delay (the
    # sandbox's latency fault on every fetch); the rest is marked synced just now, so reconcile skips it.
    chosen = uuids[:latency_count]
    control.fault("fetch_transaction", "latency", latency_ms=latency_ms, times=None)
    Transaction.objects.exclude(uuid__in=chosen).update(last_synced_at=timezone.now())
    for name, work in (
        ("sequential", lambda: sequential_loop(chosen)),
        ("raw", lambda: raw_loop(chosen)),
        ("reconcile", lambda: reconcile(len(chosen))),
    ):
        wall = time.perf_counter()
        work()
        results[f"latency_{name}"] = [time.perf_counter() - wall]
    # Fanned out: chunks of reconcile_chunk, in one worker process and then in two.
    pks = list(Transaction.objects.order_by("pk").values_list("pk", flat=True))
    chunks = [pks[start : start + 250] for start in range(0, len(pks), 250)]
    for name, workers in (("one_worker", 1), ("two_workers", 2)):
        Transaction.objects.update(status=Transaction.PENDING, last_synced_at=None)
        results[name] = [worker_processes(chunks, workers)]
    control.clear_faults()
    session.close()
    for own in sessions:
        own.close()
    results["changed"] = changed
    return results


def worker_processes(chunks: list[list[int]], workers: int) -> float:
    """Seconds for ``workers`` forked processes to run ``reconcile_chunk`` over ``chunks``, shared out."""
    import multiprocessing

    from django.db import connections

    connections.close_all()  # a forked child must not share this process's connection

    def work(mine: list[list[int]]) -> None:
        from django_paycollect import reconciliation

        for chunk in mine:
            reconciliation.reconcile_chunk(chunk)
        connections.close_all()

    context = multiprocessing.get_context("fork")
    started = time.perf_counter()
    processes = [context.Process(target=work, args=(chunks[i::workers],)) for i in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise SystemExit(f"a worker process failed ({process.exitcode})")
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
