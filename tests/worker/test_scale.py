"""Scale: a flood of callbacks during a sale, verified by four Celery worker processes.

500 transactions are started through the service layer against the sandbox and completed there, some
SUCCESSFUL and some FAILED. Then 2,000 callback bodies (the sandbox's own bodies) are POSTed from a thread
pool to the callback view of a web process: the production shape, a threaded WSGI server on the worker
settings (the same PostgreSQL database and Redis queue), apart from the four ``celery worker`` processes
that verify what it queues. Every transaction gets its final status several times; some get a stale
PENDING claim after the final one, some a forged claim of the other outcome; everything is shuffled.

Proved: every transaction ends in the status the service holds; each status change happened once and
never backwards; each signal was sent once (signals fire in other processes: a receiver loaded into the
web process and the workers by a ``sitecustomize`` counts them in Redis); each (transaction, claimed
status) was verified once and its redeliveries are stored as duplicates of it; nothing is left queued or
failed. Throughput is printed (``-s``), never asserted.

``PAYCOLLECT_SCALE_SEED`` picks another shuffle.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
import requests
from django.db import connection, connections

from django_paycollect import services
from django_paycollect.models import ApiCall, ReceivedCallback, Transaction, TransactionStatusChange
from django_paycollect.sandbox.envelope import dumps
from tests.support.payments import BILLING, CALLBACK_TOKEN
from tests.support.worker import REDIS_URL, ROOT, Worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TRANSACTIONS = 500
CALLBACKS = 2_000
FAILED_SHARE = 0.3  # of the transactions, declined at the service
STALE_PENDING = 150  # transactions that also get a PENDING claim, sent after their final status
FORGED = 100  # transactions that also get a claim of the other outcome
WORKERS = 4  # celery worker processes, one pool process each
SENDERS = 16  # concurrent connections of the flood
#: Bound of the wait for the workers to verify everything (the whole test takes about a minute).
VERIFY_WAIT = 240.0
SEED = int(os.environ.get("PAYCOLLECT_SCALE_SEED", "20260507"))

T = TypeVar("T")
R = TypeVar("R")


# --- the signal counter: a receiver in every process the test starts ----------------------------------------

SIGNAL_COUNTER = '''\
"""Loaded at start by the web and worker processes of tests/worker/test_scale.py (PYTHONPATH): every
paycollect signal they send is counted in a Redis hash, field "<signal>|<transaction uuid>"."""
import os

_KEY = os.environ.get("PAYCOLLECT_SCALE_SIGNAL_KEY")
if _KEY:
    import redis
    from django_paycollect import signals

    _clients = {}

    def _redis():
        pid = os.getpid()  # prefork: one connection per process, opened after the fork
        if pid not in _clients:
            _clients[pid] = redis.Redis.from_url(os.environ["PAYCOLLECT_TEST_REDIS"])
        return _clients[pid]

    def _counter(name):
        def receiver(sender, **kwargs):
            txn = kwargs.get("transaction")
            _redis().hincrby(_KEY, f"{name}|{getattr(txn, 'uuid', '') or ''}", 1)
        return receiver

    for _name, _signal in signals.ALL_SIGNALS.items():
        _signal.connect(_counter(_name), weak=False, dispatch_uid=f"paycollect-scale-{_name}")

# Then the sitecustomize this one hides, if the interpreter has one.
import importlib.machinery, importlib.util, sys
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here]
)
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
'''


@pytest.fixture
def signal_counter(
    tmp_path: Path, worker_queue: str
) -> Iterator[tuple[dict[str, str], Callable[[], Counter[str]]]]:
    """(environment for the processes to start, a function reading what they counted)."""
    directory = tmp_path / "signal-counter"
    directory.mkdir()
    (directory / "sitecustomize.py").write_text(SIGNAL_COUNTER)
    key = f"{worker_queue}-signals-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS_URL)
    env = {
        "PAYCOLLECT_SCALE_SIGNAL_KEY": key,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(directory), str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }

    def counted() -> Counter[str]:
        return Counter({k.decode(): int(v) for k, v in client.hgetall(key).items()})

    yield env, counted
    client.delete(key)
    client.close()


# --- the web process ----------------------------------------------------------------------------------------

WEB_SERVER = """\
import os, sys
import django
django.setup()
import tests.worker.celery_app  # noqa: F401  (the project's Celery app, as a project's __init__ imports it)
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application

class Server(ThreadedWSGIServer):
    request_queue_size = 1024  # a real server's backlog, not the test server's 10

class Handler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass  # 2,000 access lines say nothing

server = Server(("127.0.0.1", 0), Handler)
server.set_app(get_wsgi_application())
with open(sys.argv[1] + ".tmp", "w") as out:
    out.write(str(server.server_address[1]))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
"""


@dataclass
class Web(Worker):
    url: str = ""


@pytest.fixture
def start_web(
    transactional_db: None, paycollect_live: Any, settings: Any, worker_queue: str, tmp_path: Path
) -> Iterator[Callable[..., Web]]:
    """``start_web(env={...})`` -> a web process on the worker settings (``.url``); killed at teardown."""
    started: list[Web] = []

    def start(env: dict[str, str] | None = None) -> Web:
        port_file = tmp_path / "web.port"
        log = tmp_path / "web.log"
        environ = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.worker.settings",
            "PAYCOLLECT_TEST_DB_NAME": connection.settings_dict["NAME"],
            "PAYCOLLECT_WORKER_PAYCOLLECT": json.dumps(settings.PAYCOLLECT),
            "PAYCOLLECT_WORKER_QUEUE": worker_queue,
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
            **(env or {}),
        }
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603
                [sys.executable, "-c", WEB_SERVER, str(port_file)],
                cwd=ROOT,
                env=environ,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        web = Web("web", process, log)
        started.append(web)

        def ready() -> bool:
            if not web.alive():
                pytest.fail(f"the web process exited with {process.returncode}:\n{web.log_text()[-3000:]}")
            return port_file.exists()

        wait_for("the web process to listen", ready)
        web.url = f"http://127.0.0.1:{port_file.read_text()}"
        return web

    yield start
    for web in started:
        web.kill()
        print(f"--- log of the web process (last 4000 characters)\n{web.log_text()[-4000:]}")


# --- helpers ------------------------------------------------------------------------------------------------


def in_threads(function: Callable[[T], R], items: Iterable[T], threads: int) -> list[R]:
    """``function`` over ``items`` from a thread pool; each call closes the database connection it opened."""

    def run(item: T) -> R:
        try:
            return function(item)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(run, items))


@dataclass(frozen=True)
class Delivery:
    uuid: str
    claim: str  # the transaction_status the body claims
    kind: str  # "final", "stale" (PENDING after the final), "forged" (the other outcome)


def plan_deliveries(finals: dict[str, str], rng: random.Random) -> list[Delivery]:
    """CALLBACKS deliveries: every final status at least twice, the stale and forged claims, the rest
    redeliveries of any of them; shuffled, with each stale PENDING placed after a final status."""
    uuids = sorted(finals)
    other = {"SUCCESSFUL": "FAILED", "FAILED": "SUCCESSFUL"}
    kinds: dict[str, list[Delivery]] = {u: [Delivery(u, finals[u], "final")] for u in uuids}
    for u in rng.sample(uuids, STALE_PENDING):
        kinds[u].append(Delivery(u, "PENDING", "stale"))
    for u in rng.sample(uuids, FORGED):
        kinds[u].append(Delivery(u, other[finals[u]], "forged"))
    deliveries = [Delivery(u, finals[u], "final") for u in uuids for _ in range(2)]
    deliveries += [d for u in uuids for d in kinds[u][1:]]
    while len(deliveries) < CALLBACKS:
        u = rng.choice(uuids)
        deliveries.append(kinds[u][0] if rng.random() < 0.8 else rng.choice(kinds[u]))
    rng.shuffle(deliveries)
    # Within each transaction's slots, a final status comes first; the rest stay shuffled.
    slots: dict[str, list[int]] = defaultdict(list)
    for position, delivery in enumerate(deliveries):
        slots[delivery.uuid].append(position)
    for positions in slots.values():
        own = [deliveries[p] for p in positions]
        first = next(i for i, d in enumerate(own) if d.kind == "final")
        own.insert(0, own.pop(first))
        for p, d in zip(positions, own, strict=True):
            deliveries[p] = d
    return deliveries


class CpuMeter:
    """CPU seconds used by groups of process trees, and by the whole machine, from Linux's /proc.

    A tree is a process, its live descendants and the children they reaped (``cutime``), so short-lived
    PostgreSQL backends are counted in their postmaster. Where /proc is missing, it measures nothing.
    """

    TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self.groups = groups
        self.available = Path("/proc/stat").exists()

    @staticmethod
    def _table() -> dict[int, tuple[int, int]]:
        table = {}
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            table[int(entry.name)] = (int(fields[1]), sum(map(int, fields[11:15])))
        return table

    def read(self) -> dict[str, float]:
        if not self.available:
            return {}
        table = self._table()
        children: dict[int, list[int]] = defaultdict(list)
        for pid, (ppid, _ticks) in table.items():
            children[ppid].append(pid)
        used: dict[str, float] = {"this test process": time.process_time()}
        for name, roots in self.groups.items():
            ticks, stack = 0, [pid for pid in roots if pid in table]
            while stack:
                pid = stack.pop()
                ticks += table[pid][1]
                stack.extend(children[pid])
            used[name] = ticks / self.TICKS
        busy = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        # user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
        used["machine"] = sum(int(busy[i]) for i in (0, 1, 2, 5, 6, 7)) / self.TICKS
        return used

    @classmethod
    def of_this_run(cls, web: Web, workers: list[Worker], sandbox: int) -> CpuMeter:
        """The processes of this test, with PostgreSQL and Redis when they run on this machine."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cls.local_pid(cursor.fetchone()[0], "postgres")
        postmaster = cls.local_pid(cls.parent(backend), "postgres")
        with redis.Redis.from_url(REDIS_URL) as client:
            redis_pid = cls.local_pid(int(client.info("server")["process_id"]), "redis")
        return cls(
            {
                "web process": [web.process.pid],
                f"{len(workers)} workers": [worker.process.pid for worker in workers],
                "sandbox": [sandbox],
                "PostgreSQL": [postmaster] if postmaster else [],
                "Redis": [redis_pid] if redis_pid else [],
            }
        )

    @staticmethod
    def local_pid(pid: int | None, name: str) -> int | None:
        """``pid`` when it is a process of this machine whose command line names ``name``."""
        try:
            return pid if pid and name.encode() in Path(f"/proc/{pid}/cmdline").read_bytes() else None
        except OSError:
            return None

    @staticmethod
    def parent(pid: int | None) -> int | None:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        return int(stat[stat.rindex(")") + 2 :].split()[1])


def postgres_sessions() -> int:
    """Sessions ever opened on this database (PostgreSQL 14 and later; 0 before)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int >= 140000")
        if not cursor.fetchone()[0]:
            return 0
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


# --- the test -----------------------------------------------------------------------------------------------


def test_four_workers_verify_a_flood_of_duplicated_and_reordered_callbacks(
    paycollect_live, paycollect_sandbox_server, start_worker, start_web, signal_counter, signal_log
):
    sb = paycollect_live
    rng = random.Random(SEED)
    counter_env, counted = signal_counter
    timings: dict[str, float] = {}
    began = time.monotonic()

    # The sandbox's own delivery of each callback is only recorded (its body is what we send).
    sb.control.configure_api_payment(sb.variable_amount_id, callback_url="")

    # 1. Four worker processes and a web process, on one Redis and one PostgreSQL database.
    mark = time.monotonic()
    workers = [start_worker(concurrency=1, env=counter_env) for _ in range(WORKERS)]
    web = start_web(env=counter_env)
    timings["start 4 workers + web"] = time.monotonic() - mark
    meter = CpuMeter.of_this_run(web, workers, paycollect_sandbox_server.process.pid)

    # 2. 500 payments started through the service layer.
    mark = time.monotonic()

    def start(i: int) -> Transaction:
        amount = Decimal(10 + i % 190) + Decimal(i % 100) / 100
        return services.start_payment(amount=amount, billing_data=BILLING, merchant_reference=f"scale-{i}")

    started = in_threads(start, range(TRANSACTIONS), threads=4)
    timings["start_payment x500"] = time.monotonic() - mark
    assert all(t.status == Transaction.PENDING and t.uuid for t in started)
    # Sent here, by the service layer: the only signals of this process.
    assert Counter(signal_log.names()) == {"transaction_status_changed": TRANSACTIONS}

    # 3. Paid or declined at the service; the body of the callback it sends, as it sends it.
    mark = time.monotonic()
    failed = set(rng.sample(range(TRANSACTIONS), int(TRANSACTIONS * FAILED_SHARE)))
    outcomes = {t.uuid: "FAILED" if i in failed else "SUCCESSFUL" for i, t in enumerate(started)}

    def complete(txn_uuid: str) -> dict[str, Any]:
        sb.control.complete(txn_uuid, outcomes[txn_uuid])
        [delivery] = sb.control.callbacks(txn_uuid)
        body: dict[str, Any] = delivery["body"]
        return body

    bodies = dict(zip(outcomes, in_threads(complete, list(outcomes), threads=4), strict=True))
    timings["complete + read body x500"] = time.monotonic() - mark
    assert {u: b["transaction_status"] for u, b in bodies.items()} == outcomes

    # 4. The flood: 2,000 POSTs from 16 connections at once.
    deliveries = plan_deliveries(outcomes, rng)
    assert len(deliveries) == CALLBACKS
    url = f"{web.url}/paycollect/callback/{CALLBACK_TOKEN}/"
    local = threading.local()
    sessions: list[requests.Session] = []

    def post(delivery: Delivery) -> int | str:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
            sessions.append(session)
        body = dumps({**bodies[delivery.uuid], "transaction_status": delivery.claim})
        try:
            response = session.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=60)
        except requests.RequestException as exc:
            return f"{type(exc).__name__}: {exc}"
        return response.status_code

    cpu_before, sessions_before = meter.read(), postgres_sessions()
    flood_started = time.monotonic()
    answers = in_threads(post, deliveries, threads=SENDERS)
    ingest = time.monotonic() - flood_started
    for session in sessions:
        session.close()
    timings["ingest 2000 POSTs"] = ingest
    assert Counter(answers) == {200: CALLBACKS}, Counter(map(str, answers)).most_common(5)
    queued_after_ingest = ReceivedCallback.objects.filter(state=ReceivedCallback.QUEUED).count()

    # 5. Until the workers have verified everything (bounded; a dead worker fails at once).
    def settled() -> bool:
        for worker in workers:
            if not worker.alive():
                pytest.fail(f"worker {worker.name} died:\n{worker.log_text()[-3000:]}")
        return not ReceivedCallback.objects.filter(
            state__in=(ReceivedCallback.RECEIVED, ReceivedCallback.QUEUED)
        ).exists()

    wait_for("the workers to verify every callback", settled, timeout=VERIFY_WAIT, interval=0.2)
    verified_after = time.monotonic() - flood_started
    cpu = {name: seconds - cpu_before[name] for name, seconds in meter.read().items()}
    sessions_opened = postgres_sessions() - sessions_before
    timings["ingest + verify (flood start to last verification)"] = verified_after

    # --- every callback: verified once per (transaction, claim), or a duplicate of that one -----------------
    keys = {(d.uuid, d.claim) for d in deliveries}
    stored = list(ReceivedCallback.objects.all())
    assert len(stored) == CALLBACKS
    states = Counter(c.state for c in stored)
    assert states == {
        ReceivedCallback.PROCESSED: len(keys),
        ReceivedCallback.DUPLICATE: CALLBACKS - len(keys),
    }
    originals = {c.pk: c for c in stored if c.state == ReceivedCallback.PROCESSED}
    assert {(c.transaction_uuid, c.claimed_status) for c in originals.values()} == keys
    for duplicate in (c for c in stored if c.state == ReceivedCallback.DUPLICATE):
        original = originals[duplicate.duplicate_of_id]
        assert (duplicate.transaction_uuid, duplicate.claimed_status) == (
            original.transaction_uuid,
            original.claimed_status,
        )
    assert all(c.error == "" and c.transaction_id is not None for c in originals.values())
    by_uuid = {t.uuid: t for t in Transaction.objects.all()}
    for c in originals.values():
        if c.claimed_status != outcomes[c.transaction_uuid]:
            assert f"the callback claimed {c.claimed_status}" in c.outcome, c.outcome
    run_again = sum(1 for c in originals.values() if c.attempts > 1)

    # --- every transaction in the service's state, reached once and never left ------------------------------
    service_status = dict(
        zip(
            outcomes,
            in_threads(lambda u: sb.control.transaction(u)["transaction"]["status"], list(outcomes), 8),
            strict=True,
        )
    )
    assert service_status == outcomes
    assert len(by_uuid) == TRANSACTIONS
    assert {u: t.status for u, t in by_uuid.items()} == service_status
    changes: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for change in TransactionStatusChange.objects.select_related("transaction").order_by("at", "pk"):
        changes[change.transaction.uuid].append((change.from_status, change.to_status))
    expected_changes = {
        u: [(Transaction.NEW, Transaction.PENDING), (Transaction.PENDING, status)]
        for u, status in outcomes.items()
    }
    assert dict(changes) == expected_changes

    # --- each signal once, all of them sent by the workers (none by the web process) ------------------------
    signals_sent = counted()
    expected_signals = Counter({f"transaction_status_changed|{u}": 1 for u in outcomes})
    expected_signals.update(
        {
            f"{'payment_succeeded' if s == 'SUCCESSFUL' else 'payment_failed'}|{u}": 1
            for u, s in outcomes.items()
        }
    )
    assert signals_sent == expected_signals, (
        f"{sum(signals_sent.values())} signals counted, {sum(expected_signals.values())} expected; "
        f"extra: {list((signals_sent - expected_signals).items())[:5]}, "
        f"missing: {list((expected_signals - signals_sent).items())[:5]}"
    )

    # --- one fetch per verification, at both ends -----------------------------------------------------------
    fetches = ApiCall.objects.filter(operation="get_transaction")
    assert fetches.count() == sum(c.attempts for c in originals.values())
    fetch_errors = Counter(error for error in fetches.values_list("error_class", flat=True) if error)
    if not fetch_errors:  # a request that timed out may or may not have reached the sandbox
        assert len(sb.control.journal("fetch_transaction")) == fetches.count()

    # --- what it took ---------------------------------------------------------------------------------------
    final_verified = {
        c.transaction_uuid: c.processed_at
        for c in originals.values()
        if c.claimed_status == outcomes[c.transaction_uuid]
    }
    stale_after_final = sum(
        1
        for c in originals.values()
        if c.claimed_status == "PENDING" and c.received_at > final_verified[c.transaction_uuid]
    )
    fetch_ms = [float(ms) for ms in fetches.values_list("duration_ms", flat=True) if ms is not None]
    latency_ms = [(c.processed_at - c.received_at).total_seconds() * 1000 for c in originals.values()]
    waiting, peak_backlog = 0, 0  # callbacks received and not verified yet, at the worst moment
    for _at, step in sorted(
        [(c.received_at, 1) for c in originals.values()] + [(c.processed_at, -1) for c in originals.values()]
    ):
        waiting += step
        peak_backlog = max(peak_backlog, waiting)
    lines = [
        "",
        f"scale (seed {SEED}): {TRANSACTIONS} transactions ({len(failed)} FAILED), {CALLBACKS} callbacks "
        f"({len(keys)} to verify, {CALLBACKS - len(keys)} redeliveries), {WORKERS} worker processes, "
        f"{SENDERS} senders",
        *(f"  {name:<52} {seconds:7.2f} s" for name, seconds in timings.items()),
        f"  {'ingest rate':<52} {CALLBACKS / ingest:7.1f} callbacks/s "
        f"({queued_after_ingest} still queued when the flood ended)",
        f"  {'verify rate (flood start to last verification)':<52} {len(keys) / verified_after:7.1f} "
        f"verifications/s ({CALLBACKS / verified_after:.1f} callbacks/s end to end)",
        f"  {'received -> verified (each verified callback)':<52} p50 {percentile(latency_ms, 0.5):.0f} ms, "
        f"p95 {percentile(latency_ms, 0.95):.0f} ms, max {max(latency_ms):.0f} ms; "
        f"at most {peak_backlog} waiting",
        f"  {'fetch from the sandbox (ApiCall duration)':<52} mean {statistics.mean(fetch_ms):.1f} ms, "
        f"p95 {percentile(fetch_ms, 0.95):.1f} ms; errors (retried): {dict(fetch_errors) or 'none'}",
        f"  stale PENDING claims received after the final status was verified: {stale_after_final} of "
        f"{STALE_PENDING}; callbacks verified more than once (broker redelivery, retry): {run_again}",
        f"  PostgreSQL sessions opened from the flood's start to the last verification: {sessions_opened}",
        f"  total {time.monotonic() - began:.1f} s",
    ]
    if cpu:
        machine = cpu.pop("machine")
        cores = os.cpu_count() or 1
        lines.append(
            f"  CPU seconds from the flood's start to the last verification ({cores} cores x "
            f"{verified_after:.1f} s = {cores * verified_after:.1f} available, {machine:.1f} used):"
        )
        lines += [f"    {name:<22} {seconds:6.1f}" for name, seconds in cpu.items()]
        lines.append(f"    {'everything else':<22} {machine - sum(cpu.values()):6.1f}")
        lines.append(
            f"  per callback: web {1000 * cpu['web process'] / CALLBACKS:.1f} ms CPU; per verification: "
            f"workers {1000 * cpu[f'{WORKERS} workers'] / len(keys):.1f} ms CPU"
        )
    print("\n".join(lines))
