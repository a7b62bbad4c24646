"""Servers a benchmark starts for itself and stops on exit (Ctrl-C and SIGTERM included): PostgreSQL and Redis
as ``.ci/postgres.sh`` and ``.ci/redis.sh`` start them, on free ports and in directories of their own, and
process groups of our own (gunicorn, a Celery worker) killed whole.

Use them inside :func:`stopped_on_exit`, an ``ExitStack`` that a SIGTERM unwinds as Ctrl-C does.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import REPO


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def stopped_on_exit() -> Iterator[contextlib.ExitStack]:
    """An ExitStack whose callbacks also run on SIGTERM (turned into SystemExit) and on Ctrl-C."""

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    # Python leaves SIGINT ignored when it started so (a shell's background job): Ctrl-C must still stop us.
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with contextlib.ExitStack() as stack:
            yield stack
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, interrupt)


def _as_postgres(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root (CI and this machine run as root): its tools run as "postgres".
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _ci_server(script: str, env: dict[str, str], printed_variable: str) -> str:
    """Run one of the scripts CI starts its servers with; the value it prints for ``printed_variable``."""
    printed = subprocess.run(  # noqa: S603 (our own script)
        ["/bin/bash", str(REPO / ".ci" / script)],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    match = re.search(rf"{printed_variable}=(\S+)", printed)
    if match is None:
        raise SystemExit(f".ci/{script} printed no server: {printed!r}")
    return match[1]


def durable_wanted() -> bool:
    """Whether the benchmarks start their PostgreSQL durable (the headline): unless
    ``PAYCOLLECT_BENCH_PG_DURABLE=0`` asks for the test server's settings (reported, labelled)."""
    return os.environ.get("PAYCOLLECT_BENCH_PG_DURABLE", "1") != "0"


def start_postgres(stack: contextlib.ExitStack, *, durable: bool | None = None) -> str:
    """A PostgreSQL server of this run (``.ci/postgres.sh`` on a free port, its data in a new directory on
    the disk), stopped when ``stack`` closes. Returns ``host:port:dbname:user``.

    ``durable`` (default: :func:`durable_wanted`): PostgreSQL's own defaults, fsync and synchronous commit
    on, as a site runs it (``PAYCOLLECT_PG_DURABLE=1``); otherwise the test server's fsync=off and
    synchronous_commit=off, whose figures :func:`~benchmarks._support.write_section` labels."""
    from . import note_postgres

    durable = durable_wanted() if durable is None else durable
    port = free_port()
    # In /tmp itself (a disk here, not memory: durable commits must reach one): the "postgres" user must
    # reach the data directory.
    directory = Path(tempfile.mkdtemp(prefix="paycollect-bench-pg-", dir="/tmp"))
    directory.chmod(0o755)
    stack.callback(shutil.rmtree, directory, ignore_errors=True)
    data = directory / "data"
    env = {
        "PAYCOLLECT_PG_PORT": str(port),
        "PAYCOLLECT_PG_DATA": str(data),
        "PAYCOLLECT_PG_DURABLE": "1" if durable else "0",
    }
    server = _ci_server("postgres.sh", env, "PAYCOLLECT_TEST_POSTGRES")
    pg_ctl = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1]
    stop = _as_postgres([str(pg_ctl), "-D", str(data), "-m", "immediate", "-w", "stop"])
    stack.callback(subprocess.run, stop, capture_output=True, check=False)
    note_postgres(server)
    return server


def start_redis(stack: contextlib.ExitStack) -> str:
    """A Redis server of this run (``.ci/redis.sh`` on a free port), stopped when ``stack`` closes.
    Returns its URL."""
    port = free_port()
    directory = Path(tempfile.mkdtemp(prefix="paycollect-bench-redis-"))
    stack.callback(shutil.rmtree, directory, ignore_errors=True)
    env = {"PAYCOLLECT_REDIS_PORT": str(port), "PAYCOLLECT_REDIS_DATA": str(directory)}
    server = _ci_server("redis.sh", env, "PAYCOLLECT_TEST_REDIS")
    stop = ["redis-cli", "-h", "127.0.0.1", "-p", str(port), "shutdown", "nosave"]
    stack.callback(subprocess.run, stop, capture_output=True, check=False)
    return server


def spawn(
    stack: contextlib.ExitStack, command: list[str], *, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """Start ``command`` in a process group of its own, its output in ``log``; the whole group is stopped
    (SIGTERM, then SIGKILL) when ``stack`` closes."""
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    stack.callback(stop_group, process)
    return process


def stop_group(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


def wait_until(what: str, ready: Callable[[], bool], process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``ready`` for up to a minute; stop with the log's tail when ``process`` exits or time runs out."""
    deadline = time.monotonic() + 60
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise SystemExit(f"{what} did not start (exit status {process.poll()}):\n{tail}")
        time.sleep(0.1)


def ensure_wrk() -> str:
    """The path of ``wrk``, installed from Debian's packages when missing (``apt-get install wrk``, as
    root)."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("installing wrk (apt-get install wrk)...", flush=True)
        quiet = {"check": False, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.run(["apt-get", "update", "-qq"], **quiet)  # type: ignore[call-overload]  # noqa: S607
        subprocess.run(  # type: ignore[call-overload]
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "wrk"],  # noqa: S607
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            **quiet,
        )
        found = shutil.which("wrk")
    if not found:
        raise SystemExit("needs wrk: apt-get install wrk (Debian's package)")
    return found


def process_cpu(pid: int) -> float:
    """User plus system CPU seconds of a process, all its threads (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
