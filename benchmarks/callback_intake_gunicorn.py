"""Callback intake through a real gunicorn on PostgreSQL with the real publish to Redis, beside a bare view;
and the delay from receipt to verification with a real Celery worker.

Starts everything it needs, and stops it on exit (Ctrl-C included): a PostgreSQL server and a Redis server as
``.ci/postgres.sh`` and ``.ci/redis.sh`` start them (free ports, directories of their own; PostgreSQL durable,
with ``PAYCOLLECT_PG_DURABLE=1``: fsync and synchronous commit on, unless ``PAYCOLLECT_BENCH_PG_DURABLE=0``
asks for the test server's settings, labelled), the standalone
sandbox as the service, and two gunicorn servers of the test project (``tests.wsgi``, 2 sync workers each) on
the benchmark settings with Celery pointed at that Redis (``benchmarks/_support/settings.py``): nothing is
patched. ``wrk`` (Debian's package; installed with apt-get when missing) drives them with a fixed number of
connections, each request a callback as the service sends one (a new uuid each):

- *intake*: ``POST /paycollect/callback/<token>/`` on the first server, as the app ships: the callback is
  stored and, after the commit, handed to the process's publisher, which publishes from its own thread;
- *bare view*: ``POST /bare/<token>/`` on the same server: the body and the client address inserted into a
  table of ``ReceivedCallback``'s shape (``_support/bare.py``);
- *publish in the request*: the callback URL of the second server, run with ``CALLBACK_PUBLISH_BUFFER`` 0,
  so each request publishes its callback before it answers (how intake worked before): reported.

They alternate in blocks of ``--seconds`` (the order turning each block), so load from elsewhere on the
machine hits them alike; ratios are medians of the blocks' ratios, latencies medians of the blocks' p50 and
p99 as wrk measures them. Target: intake at least 0.8 of the bare view's throughput.

Then, with a Celery worker (``--worker-processes``, 2) taking the queue, callbacks are sent at each
steady rate of ``--rates`` (10 and 100 a second), ``--latency-callbacks`` (300) per URL and rate, to the
first server, to the second and to the bare pipeline in turn (two rounds, the order turned), each naming a
payment the site stored PENDING and the sandbox completed: the delay from receipt to verification
(``processed_at - received_at``) is read from the rows, p50, p95, p99 of each, with the CPU per
verification of the processes that verify and of PostgreSQL. ``--strict`` makes a missed target exit with
status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    REPO,
    Measure,
    exit_status,
    fresh_postgres_database,
    postgres_cpu_seconds,
    print_measures,
    setup_django_on_postgres,
    temp_workdir,
    write_section,
)
from benchmarks._support.servers import (
    children,
    ensure_wrk,
    free_port,
    process_cpu,
    spawn,
    start_postgres,
    start_redis,
    stopped_on_exit,
    wait_until,
)

TARGET_RATIO = 0.8
#: Receipt to verification, p95: at most this many times the bare pipeline's (store, enqueue, fetch, mark).
TARGET_PIPELINE = 2.0
#: CALLBACK_PUBLISH_LINGER's default, in milliseconds: what the p95 delay may add to a publish in the request.
LINGER_MS = 50
TOKEN = "tests-callback-token-0123456789"  # noqa: S105  (tests.settings' CALLBACK_TOKENS)
QUEUE = "paycollect-bench"  # CELERY_TASK_DEFAULT_QUEUE of the benchmark settings
BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}

#: wrk's script: every request a callback naming a new uuid, and one RESULT line at the end.
WRK_SCRIPT = Path(__file__).resolve().parent / "_support" / "callback.lua"
#: The bare pipeline's worker (fetch and mark, no Celery, no ORM).
BARE_WORKER = Path(__file__).resolve().parent / "_support" / "bare_worker.py"


@dataclass
class Block:
    """One wrk run against one URL."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    cpu_us: float  # CPU time of the server's worker processes (all their threads) per request

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


class Server:
    """A gunicorn of the test project: 2 sync workers (a production default), access log off."""

    def __init__(self, stack: contextlib.ExitStack, env: dict[str, str], log: Path, workers: int) -> None:
        from tests.servers import gunicorn_command

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = gunicorn_command("tests.wsgi:application", self.port, "-w", str(workers), "-k", "sync")
        self.process = spawn(stack, command, env=env, log=log)
        wait_until(f"gunicorn on {self.port}", self._answers, self.process, log)

    def _answers(self) -> bool:
        import requests

        try:
            requests.get(f"{self.url}/paycollect/return/status/", timeout=5)
        except requests.RequestException:
            return False
        return True

    def cpu(self) -> float:
        return sum(process_cpu(pid) for pid in children(self.process.pid))


def drive(
    wrk: str, script: Path, server: Server, path: str, args: argparse.Namespace, community: str
) -> Block:
    seed = str(random.randrange(1, 2**31))  # distinct uuids in every run
    command = [
        wrk,
        "-t",
        str(args.threads),
        "-c",
        str(args.connections),
        "-d",
        f"{args.seconds}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        f"{server.url}{path}",
        "--",
        seed,
        community,
    ]
    cpu = server.cpu()
    done = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603
    cpu = server.cpu() - cpu
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")
    requests, duration, p50, p99, errors, non_2xx = (int(x) for x in line.split()[1:])
    if errors or non_2xx or not requests:
        raise SystemExit(f"{path}: {errors} socket errors, {non_2xx} answers other than 2xx:\n{done.stdout}")
    return Block(requests, duration / 1e6, p50 / 1000, p99 / 1000, cpu / requests * 1e6)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8, help="alternating blocks per URL (default 8)")
    parser.add_argument("--seconds", type=int, default=5, help="seconds of each block (default 5)")
    parser.add_argument("--connections", type=int, default=4, help="wrk connections (default 4)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (default 1)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers per server (default 2)")
    parser.add_argument(
        "--rates",
        default="10,100",
        help="callbacks per second of the delay measure, comma-separated (default 10,100)",
    )
    parser.add_argument(
        "--worker-processes",
        type=int,
        default=2,
        help="processes of the Celery worker, and of the bare pipeline's worker (default 2)",
    )
    parser.add_argument(
        "--latency-callbacks",
        type=int,
        default=300,
        help="callbacks per URL at each rate, in two rounds (default 300; 0 skips the delay measure)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a PAYCOLLECT setting of both servers, e.g. CALLBACK_PUBLISH_LINGER=0.05 (repeatable)",
    )
    parser.add_argument(
        "--profile-seconds",
        type=int,
        default=0,
        help="after the blocks, py-spy (if installed) records the gunicorn workers for this long while wrk "
        "drives the intake URL, then the bare-sql URL; raw stacks in --profile-dir (default 0: no profile)",
    )
    parser.add_argument("--profile-dir", type=Path, default=Path("profiles"), help="where py-spy writes")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    args.rates = [float(rate) for rate in args.rates.split(",") if rate.strip()]

    with temp_workdir() as workdir, stopped_on_exit() as stack:
        results = run(Path(workdir), stack, args)
    return report(results, args)


def run(workdir: Path, stack: contextlib.ExitStack, args: argparse.Namespace) -> dict[str, Any]:
    wrk = ensure_wrk()
    print("starting PostgreSQL, Redis and the sandbox...", flush=True)
    broker = start_redis(stack)
    database = fresh_postgres_database(start_postgres(stack), "bench_intake")
    setup_django_on_postgres(database)
    from django.db import connection

    from benchmarks._support.bare import BareCallback
    from django_paycollect.sandbox.testing import SandboxControl, start_sandbox

    with connection.schema_editor() as editor:
        editor.create_model(BareCallback)
    sandbox = start_sandbox(workdir / "sandbox")
    stack.callback(sandbox.stop)
    info = sandbox.info
    community = str(info["community_id"])
    SandboxControl(info["base_url"]).configure_api_payment(int(info["variable_amount_id"]), callback_url="")
    paycollect = {
        "BASE_URL": info["base_url"],
        "COMMUNITY_ID": community,
        "API_KEY": info["api_key"],
        "VARIABLE_AMOUNT_ID": int(info["variable_amount_id"]),
        "CALLBACK_TOKENS": [TOKEN],
        **{key: json.loads(value) for key, value in (item.split("=", 1) for item in args.set)},
    }
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "benchmarks._support.settings",
        "PAYCOLLECT_BENCH_ON_POSTGRES": "1",
        "PAYCOLLECT_TEST_POSTGRES": database,
        "PAYCOLLECT_BENCH_BROKER": broker,
        "PAYCOLLECT_BENCH_PAYCOLLECT": json.dumps(paycollect),
        "PYTHONPATH": str(REPO),
    }
    inline_env = {
        **env,
        "PAYCOLLECT_BENCH_PAYCOLLECT": json.dumps({**paycollect, "CALLBACK_PUBLISH_BUFFER": 0}),
    }
    print("starting two gunicorn servers...", flush=True)
    main_server = Server(stack, env, workdir / "gunicorn.log", args.workers)
    inline_server = Server(stack, inline_env, workdir / "gunicorn-inline.log", args.workers)

    script = WRK_SCRIPT
    intake, bare, bare_sql = f"/paycollect/callback/{TOKEN}/", f"/bare/{TOKEN}/", f"/bare-sql/{TOKEN}/"
    series = {
        "intake": (main_server, intake),
        "bare_sql": (main_server, bare_sql),
        "bare": (main_server, bare),
        "inline": (inline_server, intake),
    }
    blocks: dict[str, list[Block]] = {name: [] for name in series}
    warm = argparse.Namespace(**{**vars(args), "seconds": 2})
    warmed = {
        name: drive(wrk, script, server, path, warm, community).requests
        for name, (server, path) in series.items()
    }
    names = list(series)
    for number in range(args.blocks):
        turn = number % len(names)
        for name in names[turn:] + names[:turn]:
            server, path = series[name]
            blocks[name].append(drive(wrk, script, server, path, args, community))
        print(
            f"block {number + 1}/{args.blocks}: "
            + ", ".join(f"{name} {blocks[name][-1].rate:.0f} req/s" for name in names),
            flush=True,
        )
    sent = {name: warmed[name] + sum(b.requests for b in blocks[name]) for name in ("intake", "inline")}
    check_stored(sum(sent.values()))
    if args.profile_seconds:
        for name in ("intake", "bare_sql"):
            profile(name, wrk, script, *series[name], args, community)

    import redis

    queue = redis.Redis.from_url(broker)
    queued_messages = queue.llen(QUEUE)
    queue.delete(QUEUE)  # what the throughput blocks queued names no transaction of the sandbox's
    verification = (
        measure_delays(stack, workdir, env, main_server, inline_server, sandbox.info, args)
        if args.latency_callbacks
        else {"delays": {}, "cpu": {}, "runs": {}}
    )
    return {
        "blocks": blocks,
        "sent": sent,
        "messages": queued_messages,
        **verification,
    }


def profile(
    name: str, wrk: str, script: Path, server: Server, path: str, args: argparse.Namespace, community: str
) -> None:
    """``py-spy record --gil`` on each worker of ``server`` while wrk drives ``path``: one file of raw
    stacks per worker (``<name>-<pid>.txt``, as ``flamegraph.pl`` reads them). Not a measure: py-spy takes
    CPU of its own."""
    import shutil

    spy = shutil.which("py-spy", path=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    if spy is None:
        raise SystemExit("--profile-seconds needs py-spy (pip install py-spy), with the right to ptrace")
    args.profile_dir.mkdir(parents=True, exist_ok=True)
    seconds = str(args.profile_seconds)
    record = [spy, "record", "--gil", "-r", "250", "--format", "raw", "-d", seconds]
    spies = [
        subprocess.Popen(  # noqa: S603
            [*record, "-p", str(pid), "-o", str(args.profile_dir / f"{name}-{pid}.txt")],
            stdout=subprocess.DEVNULL,
        )
        for pid in children(server.process.pid)
    ]
    time.sleep(1)  # py-spy attaches
    # wrk outlasts the recording: every sample is of a loaded worker.
    drive(
        wrk,
        script,
        server,
        path,
        argparse.Namespace(**{**vars(args), "seconds": args.profile_seconds + 2}),
        community,
    )
    for process in spies:
        process.wait()
    print(f"profile of {name}: {args.profile_dir}/{name}-*.txt", flush=True)


def check_stored(sent: int) -> None:
    """Every callback answered 200 is stored queued (not received: no publish failed)."""
    from django.db.models import Count

    from django_paycollect.models import ReceivedCallback

    states = dict(ReceivedCallback.objects.values_list("state").annotate(n=Count("pk")))
    # wrk counts the answers it read: the requests in flight when a block ends are stored, not counted.
    if set(states) != {ReceivedCallback.QUEUED} or states[ReceivedCallback.QUEUED] < sent:
        raise SystemExit(f"expected {sent} callbacks or more, all queued; the database holds {states}")


def measure_delays(
    stack: contextlib.ExitStack,
    workdir: Path,
    env: dict[str, str],
    main_server: Server,
    inline_server: Server,
    info: dict[str, Any],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Receipt to verification (ms) at each steady rate, with a Celery worker, for each URL in turn.

    The callbacks name payments the site started (stored PENDING, as ``services.start_payment`` leaves
    them) and the sandbox completed: verification applies a status change, the common case. A payment the
    site never stored (a renewal charge) is created from the fetched object: more work, not measured here.
    """
    from django_paycollect.client import PayCollectClient
    from django_paycollect.models import Transaction
    from django_paycollect.sandbox.testing import SandboxControl

    count = args.latency_callbacks  # per URL and rate
    client = PayCollectClient(str(info["base_url"]), api_key=str(info["api_key"]))
    control = SandboxControl(str(info["base_url"]))

    def paid(_: int) -> str:
        started = client.pay(
            community_id=str(info["community_id"]),
            amount=Decimal("104.50"),
            original_amount=Decimal("104.50"),
            variable_amount_id=int(info["variable_amount_id"]),
            billing_data=BILLING,
        )
        uuid = str(started.result.transaction_uuid)
        control.complete(uuid)
        return uuid

    needed = 3 * count * len(args.rates)
    print(f"paying {needed} transactions at the sandbox...", flush=True)
    with ThreadPoolExecutor(4) as pool:
        uuids = list(pool.map(paid, range(needed)))
    Transaction.objects.bulk_create(
        Transaction(
            uuid=uuid,
            community_id=str(info["community_id"]),
            status=Transaction.PENDING,
            service_status=Transaction.PENDING,
            total_amount=Decimal("104.50"),
            original_amount=Decimal("104.50"),
        )
        for uuid in uuids
    )
    # Nothing of the throughput blocks left to verify first: what the servers' publishers sent after the
    # queue was emptied names no transaction of the sandbox's. And the tables the blocks filled vacuumed and
    # checkpointed now, not by PostgreSQL's background work during the rounds.
    import redis

    redis.Redis.from_url(env["PAYCOLLECT_BENCH_BROKER"]).delete(QUEUE)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("CHECKPOINT")
    log = workdir / "worker.log"
    worker = spawn(
        stack,
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tests.celery_app",
            "worker",
            "-P",
            "prefork",
            "-c",
            str(args.worker_processes),
            "-Q",
            QUEUE,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "info",
        ],
        env=env,
        log=log,
    )
    wait_until("the Celery worker", lambda: " ready." in log.read_text(errors="replace"), worker, log)
    # The bare pipeline's workers: as many as the Celery worker's processes.
    bare_workers = [
        spawn(
            stack,
            [
                sys.executable,
                str(BARE_WORKER),
                env["PAYCOLLECT_TEST_POSTGRES"],
                env["PAYCOLLECT_BENCH_BROKER"],
                str(info["base_url"]),
                str(info["community_id"]),
                str(info["api_key"]),
            ],
            env=env,
            log=workdir / f"bare-worker-{number}.log",
        )
        for number in range(args.worker_processes)
    ]

    def worker_cpu(name: str) -> dict[str, float]:
        """CPU seconds so far of the processes that verify ``name``'s callbacks, and of PostgreSQL."""
        pids = [p.pid for p in bare_workers] if name == "bare" else [worker.pid, *children(worker.pid)]
        database = postgres_cpu_seconds(env["PAYCOLLECT_TEST_POSTGRES"]) or 0.0
        return {"worker": sum(process_cpu(pid) for pid in pids), "postgres": database}

    urls = {
        "intake": f"{main_server.url}/paycollect/callback/{TOKEN}/",
        "inline": f"{inline_server.url}/paycollect/callback/{TOKEN}/",
        "bare": f"{main_server.url}/bare-pipeline/{TOKEN}/",
    }
    half = count // 2
    # Two rounds, the order turned in the second, so a change of load on the machine hits all alike.
    rounds = ["intake", "inline", "bare", "bare", "inline", "intake"]
    delays: dict[float, dict[str, list[float]]] = {}
    cpu: dict[float, dict[str, dict[str, float]]] = {}
    runs: dict[float, list[float]] = {}  # the Celery tasks' own run time (ms), from the worker's log
    unused = iter(uuids)
    for rate in args.rates:
        delays[rate] = {"intake": [], "inline": [], "bare": []}
        cpu[rate] = {"intake": {}, "bare": {}}
        runs[rate] = []
        for name in rounds:
            chosen = [next(unused) for _ in range(half)]
            print(f"{len(chosen)} callbacks at {rate:g}/s to the {name} URL...", flush=True)
            before = worker_cpu(name)
            logged = log.stat().st_size
            if name == "bare":
                delays[rate][name] += bare_delays(
                    lambda c=chosen, r=rate: steady_load(urls["bare"], c, r, info), len(chosen)
                )
            else:
                steady_load(urls[name], chosen, rate, info)
                delays[rate][name] += verification_delays(chosen)
                if name == "intake":
                    runs[rate] += task_run_times(log, logged)
            if name in cpu[rate]:  # CPU per verification, in µs, summed over the two rounds
                for part, seconds in worker_cpu(name).items():
                    spent = (seconds - before[part]) * 1e6 / (2 * len(chosen))
                    cpu[rate][name][part] = cpu[rate][name].get(part, 0.0) + spent
    return {"delays": delays, "cpu": cpu, "runs": runs}


def task_run_times(log: Path, start: int) -> list[float]:
    """Milliseconds each ``process_callbacks`` task of one callback ran, as the worker logs it ("succeeded
    in 0.0123s: {'processed': 1}"), from byte ``start`` of its log."""
    with log.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode(errors="replace")
    found = re.findall(r"succeeded in ([0-9.]+)s: \{'processed': 1\}", text)
    return [float(seconds) * 1000 for seconds in found]


def bare_delays(send: Any, sent: int, timeout: float = 120.0) -> list[float]:
    """Receipt to processing (ms) of the bare pipeline's rows that ``send`` stores."""
    from benchmarks._support.bare import BareCallback

    first = (BareCallback.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    send()
    rows = BareCallback.objects.filter(pk__gte=first)
    deadline = time.monotonic() + timeout
    while rows.filter(processed_at__isnull=False).count() < sent:
        if time.monotonic() > deadline:
            raise SystemExit(
                f"the bare pipeline processed {rows.filter(processed_at__isnull=False).count()} of {sent}"
            )
        time.sleep(0.5)
    return sorted(
        (processed - received).total_seconds() * 1000
        for received, processed in rows.values_list("received_at", "processed_at")
    )


def steady_load(url: str, uuids: list[str], rate: float, info: dict[str, Any]) -> None:
    """POST a callback for each uuid, one every 1/rate seconds, from a pool of 8 connections."""
    import requests

    sessions = threading.local()

    def post(uuid: str) -> int:
        session = getattr(sessions, "session", None) or requests.Session()
        sessions.session = session
        body = {
            "transaction_uuid": uuid,
            "transaction_status": "SUCCESSFUL",
            "merchant_id": info["community_id"],
        }
        return int(session.post(url, json=body, timeout=30).status_code)

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        futures = []
        for n, uuid in enumerate(uuids):
            time.sleep(max(0.0, started + n / rate - time.monotonic()))
            futures.append(pool.submit(post, uuid))
        statuses = {f.result() for f in futures}
    if statuses != {200}:
        raise SystemExit(f"{url}: answers {sorted(statuses)}")


def verification_delays(uuids: list[str], timeout: float = 120.0) -> list[float]:
    from django_paycollect.models import ReceivedCallback

    rows = ReceivedCallback.objects.filter(transaction_uuid__in=uuids)
    deadline = time.monotonic() + timeout
    while rows.filter(state=ReceivedCallback.PROCESSED).count() < len(uuids):
        if time.monotonic() > deadline:
            states = list(rows.values_list("state", "error")[:5])
            raise SystemExit(f"callbacks not verified within {timeout:g} s: {states}")
        time.sleep(0.5)
    return sorted(
        (processed - received).total_seconds() * 1000
        for received, processed in rows.values_list("received_at", "processed_at")
    )


def percentile(values: list[float], share: float) -> float:
    """Nearest rank, as the dashboard computes its verification times."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered) + 0.5) - 1))]


def report(results: dict[str, Any], args: argparse.Namespace) -> int:
    blocks: dict[str, list[Block]] = results["blocks"]

    def median(name: str, attribute: str) -> float:
        return statistics.median(getattr(b, attribute) for b in blocks[name])

    def ratio(name: str, base: str = "bare_sql") -> float:
        return statistics.median(a.rate / b.rate for a, b in zip(blocks[name], blocks[base], strict=True))

    delays: dict[float, dict[str, list[float]]] = results["delays"]
    same = "bare view, the app's insert technique"
    measures = [
        Measure(
            "callback intake under gunicorn + PostgreSQL, real publish",
            f"{median('intake', 'rate'):.0f} req/s",
            f"{same} (an INSERT built once) {median('bare_sql', 'rate'):.0f} req/s",
            ratio("intake"),
            f"≥ {TARGET_RATIO:g}",
            ratio("intake") >= TARGET_RATIO,
        ),
        Measure(
            "callback intake beside a bare view inserting with the ORM",
            f"{median('intake', 'rate'):.0f} req/s",
            f"bare view, ORM create {median('bare', 'rate'):.0f} req/s",
            ratio("intake", "bare"),
            "(reported)",
            None,
        ),
        Measure(
            f"request latency p50, intake ({args.connections} connections)",
            f"{median('intake', 'p50_ms'):.1f} ms",
            f"{same} {median('bare_sql', 'p50_ms'):.1f} ms",
            median("intake", "p50_ms") / median("bare_sql", "p50_ms"),
            "(reported)",
            None,
        ),
        Measure(
            f"request latency p99, intake ({args.connections} connections)",
            f"{median('intake', 'p99_ms'):.1f} ms",
            f"{same} {median('bare_sql', 'p99_ms'):.1f} ms",
            median("intake", "p99_ms") / median("bare_sql", "p99_ms"),
            "(reported)",
            None,
        ),
        Measure(
            "CPU per request in the gunicorn workers, intake",
            f"{median('intake', 'cpu_us'):.0f} µs",
            f"{same} {median('bare_sql', 'cpu_us'):.0f} µs",
            median("bare_sql", "cpu_us") / median("intake", "cpu_us"),
            "(reported)",
            None,
        ),
        Measure(
            "callback intake publishing in the request (CALLBACK_PUBLISH_BUFFER 0)",
            f"{median('inline', 'rate'):.0f} req/s",
            f"{same} {median('bare_sql', 'rate'):.0f} req/s",
            ratio("inline"),
            "(reported)",
            None,
        ),
    ]
    for rate, at_rate in delays.items():
        for share in (0.5, 0.95, 0.99):
            mine, before = percentile(at_rate["intake"], share), percentile(at_rate["inline"], share)
            floor = percentile(at_rate["bare"], share)
            # Promptly: later than a publish in the request by no more than the publisher's linger.
            bound = before + LINGER_MS if share == 0.95 else None
            measures.append(
                Measure(
                    f"receipt to verification p{share * 100:.0f}, Celery worker, {rate:g} callbacks/s",
                    f"{mine:.0f} ms",
                    f"publish in the request {before:.0f} ms",
                    mine / before,
                    f"≤ {bound:.0f} ms (+ the linger)" if bound is not None else "(reported)",
                    None if bound is None else mine <= bound,
                )
            )
            measures.append(
                Measure(
                    f"receipt to verification p{share * 100:.0f} beside the bare pipeline, {rate:g}/s",
                    f"{mine:.1f} ms",
                    f"bare pipeline (store, LPUSH, fetch, mark) {floor:.1f} ms",
                    mine / floor,
                    f"≤ {TARGET_PIPELINE:g}x" if share == 0.95 else "(reported)",
                    mine / floor <= TARGET_PIPELINE if share == 0.95 else None,
                )
            )
        ran = results["runs"][rate]
        if ran:
            measures.append(
                Measure(
                    f"the verifying task's own run time p50 (p95), {rate:g}/s",
                    f"{percentile(ran, 0.5):.1f} ms ({percentile(ran, 0.95):.1f} ms)",
                    f"receipt to verification {percentile(at_rate['intake'], 0.5):.1f} ms "
                    f"({percentile(at_rate['intake'], 0.95):.1f} ms)",
                    percentile(ran, 0.5) / percentile(at_rate["intake"], 0.5),
                    "(reported: the rest is intake, the publish and Celery's delivery)",
                    None,
                )
            )
        spent, floor_spent = results["cpu"][rate]["intake"], results["cpu"][rate]["bare"]
        for part, what in (("worker", "the worker's processes"), ("postgres", "PostgreSQL")):
            measures.append(
                Measure(
                    f"CPU per verification, {what}, {rate:g}/s",
                    f"{spent[part]:.0f} µs",
                    f"bare pipeline {floor_spent[part]:.0f} µs",
                    spent[part] / floor_spent[part] if floor_spent[part] else float("nan"),
                    "(reported)",
                    None,
                )
            )
    print(f"{args.blocks} alternating blocks of {args.seconds} s per URL, medians:")
    print_measures(measures)
    details = [
        "req/s per block, intake: " + ", ".join(f"{b.rate:.0f}" for b in blocks["intake"]),
        "req/s per block, bare (ORM create): " + ", ".join(f"{b.rate:.0f}" for b in blocks["bare"]),
        "req/s per block, bare (INSERT built once): "
        + ", ".join(f"{b.rate:.0f}" for b in blocks["bare_sql"]),
        "req/s per block, inline: " + ", ".join(f"{b.rate:.0f}" for b in blocks["inline"]),
        f"messages in the queue after the throughput blocks: {results['messages']}, for "
        f"{results['sent']['intake']} callbacks to the intake server and {results['sent']['inline']} "
        "published in the request (a message each)",
    ]
    print("\n".join(details))
    write_section(
        "callback_intake_gunicorn",
        "Callback intake under gunicorn",
        summary=(
            f"gunicorn ({args.workers} sync workers) serving the test project on PostgreSQL, Celery "
            f"publishing to Redis (nothing patched), wrk with {args.connections} connections; "
            f"{args.blocks} blocks of {args.seconds} s per URL in turn: the callback URL, two bare views "
            "inserting the same body into a table of the same shape (one with the app's technique, an "
            "INSERT built once from the model's fields, the baseline of the target; one with the ORM's "
            "`create`), and the callback URL of a second server publishing in the request "
            "(`CALLBACK_PUBLISH_BUFFER` 0). Ratios are medians of the blocks' ratios; CPU is the gunicorn "
            "workers' (all their threads) per request. Then a Celery worker (2 processes) and "
            f"{args.latency_callbacks} callbacks to each URL at "
            + " and at ".join(f"{rate:g}" for rate in args.rates)
            + " a second, in two rounds, each naming a payment the site stored PENDING and the sandbox "
            "completed: "
            "receipt to verification (`processed_at - received_at`) of each callback, nearest rank, beside "
            "the bare pipeline in the same rounds: a bare view storing the callback as above and pushing its "
            "id to a Redis list, two plain worker processes popping it, fetching the transaction from the "
            "sandbox and marking the row processed (no Celery, no ORM)."
        ),
        measures=measures,
        details=details,
    )
    return exit_status(measures, args.strict)


if __name__ == "__main__":
    sys.exit(main())
