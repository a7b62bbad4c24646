"""Callback intake through a real gunicorn on durable PostgreSQL with the real publish to Redis, and the delay
from receipt to verification with a real Celery worker, each beside the same work done through Django's
public API.

Starts everything it needs, and stops it on exit (Ctrl-C included): a PostgreSQL server (durable: PostgreSQL's
defaults, ``servers.start_postgres``) and a Redis server as ``.ci/postgres.sh`` and ``.ci/redis.sh`` start
them, the standalone sandbox as the service, and a gunicorn of the test project (``tests.wsgi``, 2 sync
workers) on the benchmark settings with Celery pointed at that Redis (``_support/settings.py``): nothing is
patched. Runs in two projects (``--project``, default both, each in a process of its own): as the tests run
it, and with a global ``post_save`` receiver and django-simple-history on ``Transaction``
(``_support/receivers.py``).

Intake: ``wrk`` (Debian's package; installed with apt-get when missing) drives each URL in turn for
``--seconds``, ``--rounds`` times (the order turning each round), each request a callback as the service
sends one with a new uuid:

- *intake*: ``POST /paycollect/callback/<token>/``, as the app ships;
- *ORM bare view* (the target's baseline): ``POST /bare-orm/<token>/``, the body and the client address
  stored with ``Model.objects.create`` in a table of ``ReceivedCallback``'s shape, and a Celery task
  published with ``.delay`` after the commit (``_support/urls.py``);
- *hand-written floor* (for information, with ``--floor``): ``POST /bare-pipeline/<token>/``, an INSERT
  built once and an ``LPUSH``.

Target: intake's throughput at least 0.8 of the ORM bare view's, the median of the rounds' ratios.

Verification: a Celery worker of the app (``--worker-processes``) and one of the ORM bare pipeline (as many
processes; ``_support/bare_tasks.py``: fetch from the sandbox, the envelope row and the status stored with the
ORM, the callback marked), and callbacks at each steady rate of ``--rates``, ``--callbacks`` per URL and
round, ``--rounds`` rounds, each naming a payment the site stored PENDING and the sandbox completed. Receipt
to verification is ``processed_at - received_at`` of each row; p50 and p95 per round, the median of the
rounds and their spread. Target: the ORM bare pipeline's p95 at least 0.8 of ours (ours at most 1.25x).
``--floor`` adds the hand-written pipeline (``_support/bare_worker.py``) to both measures, for information.
``--strict`` makes a missed target exit with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    PROJECTS,
    REPO,
    Measure,
    Rounds,
    add_project_argument,
    exit_status,
    for_each_project,
    fresh_postgres_database,
    percentile,
    postgres_cpu_seconds,
    print_measures,
    project,
    setup_django_on_postgres,
    temp_workdir,
    write_section,
)
from benchmarks._support.payments import sandbox_with_payments, shared_directory, store_pending
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
TOKEN = "tests-callback-token-0123456789"  # noqa: S105  (tests.settings' CALLBACK_TOKENS)
QUEUE = "paycollect-bench"  # CELERY_TASK_DEFAULT_QUEUE of the benchmark settings
ORM_QUEUE = "paycollect-bench-orm"  # the ORM bare pipeline's (CELERY_TASK_ROUTES)
FLOOR_QUEUE = "paycollect-bench-bare"  # the hand-written floor's Redis list
WRK_SCRIPT = Path(__file__).resolve().parent / "_support" / "callback.lua"
BARE_WORKER = Path(__file__).resolve().parent / "_support" / "bare_worker.py"
LABELS = {
    "intake": "intake",
    "orm": "ORM bare view (create, Celery publish)",
    "floor": "hand-written floor (INSERT built once, LPUSH)",
}
PIPELINES = {
    "intake": "the app (Celery worker)",
    "orm": "ORM bare pipeline (create, publish, Celery task: fetch, envelope and status with the ORM, mark)",
    "floor": "hand-written floor (INSERT, LPUSH, BRPOP, fetch, one UPDATE)",
}


@dataclass
class Block:
    """One wrk run against one URL."""

    requests: int
    seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    cpu_us: float  # CPU time of the server's worker processes (all their threads) per request

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


class Server:
    """A gunicorn of the test project: sync workers (a production default), access log off."""

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
    wrk: str, server: Server, path: str, seconds: int, args: argparse.Namespace, community: str
) -> Block:
    seed = str(random.randrange(1, 2**31))  # distinct uuids in every run
    command = [wrk, "-t", "1", "-c", str(args.connections), "-d", f"{seconds}s", "--timeout", "10s"]
    command += ["-s", str(WRK_SCRIPT), f"{server.url}{path}", "--", seed, community]
    cpu = server.cpu()
    done = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603
    cpu = server.cpu() - cpu
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")
    requests, duration, p50, p95, p99, errors, non_2xx = (int(x) for x in line.split()[1:])
    if errors or non_2xx or not requests:
        raise SystemExit(f"{path}: {errors} socket errors, {non_2xx} answers other than 2xx:\n{done.stdout}")
    return Block(requests, duration / 1e6, p50 / 1000, p95 / 1000, p99 / 1000, cpu / requests * 1e6)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each measure (default 3)")
    parser.add_argument("--seconds", type=int, default=3, help="seconds of each intake block (default 3)")
    parser.add_argument("--connections", type=int, default=4, help="wrk connections (default 4)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers (default 2)")
    parser.add_argument(
        "--rates", default="35,100", help="callbacks per second of the delay measure (default 35,100)"
    )
    parser.add_argument(
        "--callbacks", type=int, default=300, help="callbacks per URL, rate and round (default 300)"
    )
    parser.add_argument(
        "--worker-processes", type=int, default=2, help="processes of each worker (default 2)"
    )
    parser.add_argument(
        "--floor", action="store_true", help="add the hand-written floor (information) to both measures"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a PAYCOLLECT setting of the server and the worker, e.g. CALLBACK_PUBLISH_LINGER=0.05",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    add_project_argument(parser)
    args = parser.parse_args()
    args.rates = [float(rate) for rate in args.rates.split(",") if rate.strip()]

    def one() -> dict[str, Any]:
        with temp_workdir() as workdir, stopped_on_exit() as stack:
            return run(Path(workdir), stack, args)

    with shared_directory():  # the sandbox's payments made by the first project, copied by the second
        results = for_each_project(__file__, args, one)
    if args.results:
        return 0
    return report(results, args)


def run(workdir: Path, stack: contextlib.ExitStack, args: argparse.Namespace) -> dict[str, Any]:
    wrk = ensure_wrk()
    began = time.monotonic()
    print(f"[{project()}] starting PostgreSQL, Redis and the sandbox...", flush=True)
    # The payments the callbacks of the delay measure name, started and completed at the sandbox (those of
    # an earlier project or script copied). Paying keeps the sandbox's process busy for some 45 s: in a
    # thread, while PostgreSQL starts and migrates on the other core. The thread runs only code imported
    # here, before Django's set-up (the client and the sandbox's helpers import no Django).
    import django_paycollect.client
    import django_paycollect.sandbox.testing  # noqa: F401

    pipelines = 3 if args.floor else 2
    needed = pipelines * args.callbacks * args.rounds * len(args.rates)
    sandbox_stack = stack.enter_context(contextlib.ExitStack())  # the thread's own: stopped with the rest
    with ThreadPoolExecutor(1) as pool:
        paying = pool.submit(sandbox_with_payments, workdir, sandbox_stack, needed)
        broker = start_redis(stack)
        database = fresh_postgres_database(start_postgres(stack), "bench_intake")
        setup_django_on_postgres(database)
        from django.db import connection

        from benchmarks._support.bare import BareCallback

        with connection.schema_editor() as editor:
            editor.create_model(BareCallback)
        sandbox, uuids = paying.result()
    info = sandbox.info
    community = str(info["community_id"])
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
        "PAYCOLLECT_BENCH_BARE_QUEUE": FLOOR_QUEUE,
        "PAYCOLLECT_BENCH_PAYCOLLECT": json.dumps(paycollect),
        "PYTHONPATH": str(REPO),
    }
    print("starting gunicorn...", flush=True)
    server = Server(stack, env, workdir / "gunicorn.log", args.workers)
    paths = {
        name: f"/{url}/{TOKEN}/"
        for name, url in (("intake", "paycollect/callback"), ("orm", "bare-orm"), ("floor", "bare-pipeline"))
        if name != "floor" or args.floor
    }
    blocks: dict[str, list[Block]] = {name: [] for name in paths}
    warmed = {name: drive(wrk, server, path, 1, args, community).requests for name, path in paths.items()}
    names = list(paths)
    for number in range(args.rounds):
        turn = number % len(names)
        for name in names[turn:] + names[:turn]:
            blocks[name].append(drive(wrk, server, paths[name], args.seconds, args, community))
        print(
            f"intake round {number + 1}/{args.rounds}: "
            + ", ".join(f"{name} {blocks[name][-1].rate:.0f} req/s" for name in names),
            flush=True,
        )
    check_stored(warmed["intake"] + sum(b.requests for b in blocks["intake"]))
    print(f"(set-up and intake: {time.monotonic() - began:.0f} s)", flush=True)

    import redis

    queues = redis.Redis.from_url(broker)
    messages = {name: queues.llen(name) for name in (QUEUE, ORM_QUEUE, FLOOR_QUEUE)}
    queues.delete(QUEUE, ORM_QUEUE, FLOOR_QUEUE)  # what the intake blocks queued names no payment
    verification = measure_delays(stack, workdir, env, server, info, uuids, args) if args.callbacks else {}
    return {
        "blocks": {name: [asdict(b) for b in found] for name, found in blocks.items()},
        "messages": messages,
        **verification,
    }


def check_stored(sent: int) -> None:
    """Every callback answered 200 is stored queued (not received: no publish failed)."""
    from django.db.models import Count

    from django_paycollect.models import ReceivedCallback

    states = dict(ReceivedCallback.objects.values_list("state").annotate(n=Count("pk")))
    # wrk counts the answers it read: the requests in flight when a block ends are stored, not counted.
    if set(states) != {ReceivedCallback.QUEUED} or states[ReceivedCallback.QUEUED] < sent:
        raise SystemExit(f"expected {sent} callbacks or more, all queued; the database holds {states}")


def celery_worker(
    stack: contextlib.ExitStack,
    env: dict[str, str],
    queue: str,
    processes: int,
    log: Path,
    *,
    wait: bool = True,
) -> subprocess.Popen[bytes]:
    """A Celery worker of ``queue``; with ``wait``, once it says it is ready."""
    command = [sys.executable, "-m", "celery", "-A", "tests.celery_app", "worker", "-P", "prefork"]
    command += ["-c", str(processes), "-Q", queue, "--without-gossip", "--without-mingle"]
    command += ["--without-heartbeat", "-l", "info"]
    worker = spawn(stack, command, env=env, log=log)
    if wait:
        worker_ready(queue, worker, log)
    return worker


def worker_ready(queue: str, worker: subprocess.Popen[bytes], log: Path) -> None:
    wait_until(
        f"the Celery worker of {queue}", lambda: " ready." in log.read_text(errors="replace"), worker, log
    )


def measure_delays(
    stack: contextlib.ExitStack,
    workdir: Path,
    env: dict[str, str],
    server: Server,
    info: dict[str, Any],
    uuids: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Receipt to verification (ms) of every callback, by rate, pipeline and round.

    The callbacks name ``uuids``, payments the site started (stored PENDING here, as
    ``services.start_payment`` leaves them) and the sandbox completed: verification applies a status change,
    the common case.
    """
    from django_paycollect.models import Transaction

    names = ["intake", "orm", *(["floor"] if args.floor else [])]
    # The two workers start while the payments are stored: the three wait for imports and disks, not for
    # each other; the rounds begin once all are done.
    log, orm_log = workdir / "worker.log", workdir / "orm-worker.log"
    worker = celery_worker(stack, env, QUEUE, args.worker_processes, log, wait=False)
    orm_worker = celery_worker(stack, env, ORM_QUEUE, args.worker_processes, orm_log, wait=False)
    store_pending(str(info["community_id"]), uuids)
    worker_ready(QUEUE, worker, log)
    worker_ready(ORM_QUEUE, orm_worker, orm_log)
    floor_workers = [
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
            log=workdir / f"floor-worker-{number}.log",
        )
        for number in range(args.worker_processes if args.floor else 0)
    ]
    pids = {
        "intake": lambda: [worker.pid, *children(worker.pid)],
        "orm": lambda: [orm_worker.pid, *children(orm_worker.pid)],
        "floor": lambda: [p.pid for p in floor_workers],
    }

    def cpu_now(name: str) -> dict[str, float]:
        database = postgres_cpu_seconds(env["PAYCOLLECT_TEST_POSTGRES"]) or 0.0
        return {"worker": sum(process_cpu(pid) for pid in pids[name]()), "postgres": database}

    urls = {
        "intake": f"{server.url}/paycollect/callback/{TOKEN}/",
        "orm": f"{server.url}/bare-orm/{TOKEN}/",
        "floor": f"{server.url}/bare-pipeline/{TOKEN}/",
    }
    delays: dict[str, dict[str, list[list[float]]]] = {}
    cpu: dict[str, dict[str, dict[str, float]]] = {}
    runs: dict[str, list[float]] = {}  # the app's task's own run time (ms), from the worker's log
    unused = iter(uuids)
    for rate in args.rates:
        began = time.monotonic()
        key = f"{rate:g}"
        delays[key] = {name: [] for name in names}
        cpu[key] = {name: {"worker": 0.0, "postgres": 0.0} for name in names}
        runs[key] = []
        for number in range(args.rounds):
            turn = number % len(names)
            for name in names[turn:] + names[:turn]:
                chosen = [next(unused) for _ in range(args.callbacks)]
                print(f"round {number + 1}: {len(chosen)} callbacks at {rate:g}/s to {name}...", flush=True)
                before, logged = cpu_now(name), log.stat().st_size
                steady_load(urls[name], chosen, rate, info)
                delays[key][name].append(verification_delays(name, chosen))
                if name == "intake":
                    runs[key] += task_run_times(log, logged)
                for part, seconds in cpu_now(name).items():
                    spent = (seconds - before[part]) * 1e6 / (args.rounds * len(chosen))
                    cpu[key][name][part] += spent
        print(f"(delays at {rate:g}/s: {time.monotonic() - began:.0f} s)", flush=True)
    found: dict[str, Any] = {"delays": delays, "cpu": cpu, "runs": runs}
    if project() == "receivers":
        found["history_rows"] = Transaction.history.model.objects.count()  # type: ignore[attr-defined]
    return found


def task_run_times(log: Path, start: int) -> list[float]:
    """Milliseconds each ``process_callbacks`` task of one callback ran, as the worker logs it ("succeeded
    in 0.0123s: {'processed': 1}"), from byte ``start`` of its log."""
    with log.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode(errors="replace")
    found = re.findall(r"succeeded in ([0-9.]+)s: \{'processed': 1\}", text)
    return [float(seconds) * 1000 for seconds in found]


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


def verification_delays(name: str, uuids: list[str], timeout: float = 180.0) -> list[float]:
    """Receipt to verification (ms) of the callbacks naming ``uuids``, once all are processed."""
    from benchmarks._support.bare import BareCallback
    from django_paycollect.models import ReceivedCallback

    if name == "intake":
        rows = ReceivedCallback.objects.filter(transaction_uuid__in=uuids)
        done = rows.filter(state=ReceivedCallback.PROCESSED)
    else:
        rows = BareCallback.objects.filter(transaction_uuid__in=uuids)
        done = rows.filter(processed_at__isnull=False)
    deadline = time.monotonic() + timeout
    while done.count() < len(uuids):
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: {done.count()} of {len(uuids)} callbacks verified in {timeout:g} s")
        time.sleep(0.2)  # the last callbacks verify within a second: a short look saves seconds a round
    return sorted(
        (processed - received).total_seconds() * 1000
        for received, processed in rows.values_list("received_at", "processed_at")
    )


# --- the report ------------------------------------------------------------------------------------------


def project_measures(found: dict[str, Any], args: argparse.Namespace) -> tuple[list[Measure], list[str]]:
    blocks = {name: [Block(**b) for b in found["blocks"][name]] for name in found["blocks"]}

    def rounds(name: str, attribute: str) -> Rounds:
        return Rounds([getattr(b, attribute) for b in blocks[name]])

    def ratios(name: str, base: str) -> Rounds:
        return Rounds([a.rate / b.rate for a, b in zip(blocks[name], blocks[base], strict=True)])

    ratio = ratios("intake", "orm")
    measures = [
        Measure(
            "intake throughput (gunicorn, real publish)",
            f"{rounds('intake', 'rate').text(' req/s', 0)}",
            f"{LABELS['orm']} {rounds('orm', 'rate').text(' req/s', 0)}",
            ratio.median,
            f"≥ {TARGET_RATIO:g} (rounds' ratios {min(ratio.values):.2f} to {max(ratio.values):.2f})",
            ratio.median >= TARGET_RATIO,
        ),
    ]
    for share, attribute in (("p50", "p50_ms"), ("p95", "p95_ms")):
        ours, base = rounds("intake", attribute), rounds("orm", attribute)
        measures.append(
            Measure(
                f"intake request latency {share} ({args.connections} connections)",
                ours.text(" ms", 1),
                f"{LABELS['orm']} {base.text(' ms', 1)}",
                base.median / ours.median,
                "(reported)",
                None,
            )
        )
    measures += [
        Measure(
            "CPU per request in the gunicorn workers, intake",
            rounds("intake", "cpu_us").text(" µs", 0),
            f"{LABELS['orm']} {rounds('orm', 'cpu_us').text(' µs', 0)}",
            rounds("orm", "cpu_us").median / rounds("intake", "cpu_us").median,
            "(reported)",
            None,
        ),
    ]
    if "floor" in blocks:
        measures.append(
            Measure(
                "intake throughput beside the hand-written floor",
                f"{rounds('intake', 'rate').median:.0f} req/s",
                f"{LABELS['floor']} {rounds('floor', 'rate').text(' req/s', 0)}",
                ratios("intake", "floor").median,
                "(information, not a target)",
                None,
            )
        )
    details = [
        f"req/s per round, {name}: " + ", ".join(f"{b.rate:.0f}" for b in blocks[name]) for name in blocks
    ]
    details.append(
        "requests per round (p50 and p95 are each round's own): "
        + ", ".join(f"{name} {min(b.requests for b in blocks[name])} or more" for name in blocks)
    )
    for rate, at_rate in found.get("delays", {}).items():
        for share in (0.5, 0.95):
            ours = Rounds([percentile(r, share) for r in at_rate["intake"]])
            base = Rounds([percentile(r, share) for r in at_rate["orm"]])
            target = share == 0.95
            measures.append(
                Measure(
                    f"receipt to verification p{share * 100:.0f}, {rate} callbacks/s",
                    ours.text(" ms", 1),
                    f"ORM bare pipeline {base.text(' ms', 1)}",
                    base.median / ours.median,
                    f"≥ {TARGET_RATIO:g}" if target else "(reported)",
                    base.median / ours.median >= TARGET_RATIO if target else None,
                )
            )
            if "floor" in at_rate:
                floor = Rounds([percentile(r, share) for r in at_rate["floor"]])
                measures.append(
                    Measure(
                        f"receipt to verification p{share * 100:.0f} beside the hand-written floor, {rate}/s",
                        f"{ours.median:.1f} ms",
                        f"hand-written floor {floor.text(' ms', 1)}",
                        floor.median / ours.median,
                        "(information, not a target)",
                        None,
                    )
                )
        ran = found["runs"][rate]
        every = [delay for per_round in at_rate["intake"] for delay in per_round]
        if ran:
            measures.append(
                Measure(
                    f"the verifying task's own run time p50 (p95), {rate}/s",
                    f"{percentile(ran, 0.5):.1f} ms ({percentile(ran, 0.95):.1f} ms)",
                    f"receipt to verification, all rounds, {percentile(every, 0.5):.1f} ms",
                    None,
                    "(reported: the rest is intake, the publish and Celery's delivery)",
                    None,
                )
            )
        spent, base_spent = found["cpu"][rate]["intake"], found["cpu"][rate]["orm"]
        for part, what in (("worker", "the worker's processes"), ("postgres", "PostgreSQL")):
            measures.append(
                Measure(
                    f"CPU per verification, {what}, {rate}/s",
                    f"{spent[part]:.0f} µs",
                    f"ORM bare pipeline {base_spent[part]:.0f} µs",
                    base_spent[part] / spent[part] if spent[part] else None,
                    "(reported)",
                    None,
                )
            )
        for name, per_round in at_rate.items():
            details.append(
                f"{rate}/s, {name}: samples per round "
                + ", ".join(str(len(r)) for r in per_round)
                + "; p50 per round "
                + ", ".join(f"{percentile(r, 0.5):.1f}" for r in per_round)
                + "; p95 per round "
                + ", ".join(f"{percentile(r, 0.95):.1f}" for r in per_round)
                + " ms"
            )
    messages = found["messages"]
    details.append(
        f"messages queued by the intake rounds: app {messages[QUEUE]}, ORM bare view {messages[ORM_QUEUE]}"
        + (f", hand-written floor {messages[FLOOR_QUEUE]}" if args.floor else "")
    )
    if "history_rows" in found:
        details.append(f"simple-history rows written for Transaction: {found['history_rows']}")
    return measures, details


def report(results: dict[str, Any], args: argparse.Namespace) -> int:
    everything: list[Measure] = []
    tables: list[tuple[str, list[Measure]]] = []
    details: list[str] = []
    for name, found in results.items():
        measures, more = project_measures(found, args)
        print(f"-- {PROJECTS[name]}:")
        print_measures(measures)
        everything += measures
        tables.append((f"In {PROJECTS[name]}", measures))
        details += [f"[{name}] {line}" for line in more]
    print("\n".join(details))
    rates = " and ".join(f"{rate:g}" for rate in args.rates)
    write_section(
        "callback_intake_gunicorn",
        "Callback intake and verification",
        summary=(
            f"gunicorn ({args.workers} sync workers) serving the test project on PostgreSQL, Celery "
            f"publishing to Redis (nothing patched), wrk with {args.connections} connections; {args.rounds} "
            f"rounds of {args.seconds} s per URL, the order turning: the callback URL, the ORM bare view "
            "(the same body stored with `create` in a table of the same shape, a Celery task published with "
            "`.delay` after the commit: the target's baseline), and with `--floor` the hand-written floor "
            "(an INSERT built once and an `LPUSH`, for information). Then a Celery worker for each "
            f"({args.worker_processes} processes) and {args.callbacks} callbacks per pipeline, round and "
            f"rate at {rates} a second, {args.rounds} rounds, each naming a payment the site stored "
            "PENDING and the sandbox completed: receipt to verification (`processed_at - received_at`), "
            "nearest rank, p50 and p95 of each round; the median of the rounds with their spread. The ORM "
            "bare pipeline's task fetches the transaction with `requests`, stores the envelope row "
            "(`ApiCall.objects.create`) and the status (`select_for_update().get()`, `save()`) in one "
            "`atomic()`, and marks the callback with `update()`. Ratios are baseline over ours for "
            "latencies and CPU, ours over baseline for throughput: higher is better for the app."
        ),
        measures=[],
        tables=tables,
        details=details,
    )
    return exit_status(everything, args.strict)


if __name__ == "__main__":
    sys.exit(main())
