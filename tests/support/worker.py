"""Helpers of the worker suite (tests/worker): Celery worker and gunicorn processes, a bounded wait, and a
PostgreSQL and a Redis of a test's own to stop and start."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("PAYCOLLECT_TEST_REDIS", "")
#: Every wait in this suite is bounded by this many seconds.
WAIT = 30.0


def wait_for(what: str, condition: Callable[[], Any], timeout: float = WAIT, interval: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


@dataclass
class Worker:
    """A ``celery worker`` process group; ``kill()`` is SIGKILL for all of it, as a machine dying would."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """Warm shutdown, then SIGKILL if it takes too long."""
        if not self.alive():
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


def worker_environment(settings: Any, worker_queue: str) -> dict[str, str]:
    """What the web and worker processes of a test share: settings module, database, PAYCOLLECT, queue."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.worker.settings",
        "PAYCOLLECT_TEST_DB_NAME": connection.settings_dict["NAME"],
        "PAYCOLLECT_WORKER_PAYCOLLECT": json.dumps(settings.PAYCOLLECT),
        "PAYCOLLECT_WORKER_QUEUE": worker_queue,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    }


@dataclass
class Web:
    """A gunicorn of the test project (its master and workers, one process group)."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def signal(self, number: int, timeout: float = 10) -> None:
        """Send ``number`` to every process of it, and wait for the master to exit."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, number)
        self.process.wait(timeout=timeout)


def _as_postgres(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root: in CI and here the tests do, so its tools run as "postgres".
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class ThrowawayPostgres:
    """A PostgreSQL cluster of one test, on a free port, stopped and started by it (never the shared one)."""

    def __init__(self) -> None:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not found:
            pytest.skip("needs PostgreSQL's server binaries (bash .ci/postgres.sh installs them)")
        self.bin = found[-1].parent
        self.port = free_port()
        # In /tmp itself: the "postgres" user must reach it, and a TMPDIR (CI's) may be private to root.
        self.directory = Path(tempfile.mkdtemp(prefix="paycollect-throwaway-pg-", dir="/tmp"))
        self.data = self.directory / "data"
        self.data.mkdir()
        if os.geteuid() == 0:
            self.directory.chmod(0o755)
            shutil.chown(self.data, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(  # noqa: S603
            _as_postgres([str(self.bin / tool), *args]), check=True, capture_output=True, timeout=120
        )

    @property
    def env(self) -> dict[str, str]:
        """The processes' database: this cluster's "paycollect" database."""
        return {
            "PAYCOLLECT_TEST_POSTGRES": f"127.0.0.1:{self.port}:paycollect:postgres",
            "PAYCOLLECT_TEST_DB_NAME": "paycollect",
        }

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c synchronous_commit=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-w", "-l", str(self.data / "server.log"), "-o", options, "start"
        )

    def stop(self) -> None:
        """As an outage: every connection is cut, and nothing answers until :meth:`start`."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop")

    def create_database(self) -> None:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "paycollect")

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname=paycollect", autocommit=True
        )

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "immediate", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)


class ThrowawayRedis:
    """A Redis of one test, without persistence: a restart loses every message, as the issue describes."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        log = (self.directory / f"redis-{self.port}.log").open("ab")
        self.process = subprocess.Popen(command, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
        import redis

        client = redis.Redis.from_url(self.url)
        wait_for("redis to answer", lambda: _pings(client))
        client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # gone at once, and with it every message
            self.process.wait(timeout=10)


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


def worker_command(
    name: str, queue: str, directory: Path, concurrency: int = 2, beat: bool = False, lean: bool = True
) -> list[str]:
    """The ``celery worker`` command of the suite's workers (see ``start_worker``); an embedded beat keeps
    its schedule in ``directory``."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "tests.worker.celery_app",
        "worker",
        "-P",
        "prefork",
        "-c",
        str(concurrency),
        "-n",
        name,
        "-Q",
        queue,
        *(["--without-gossip", "--without-mingle", "--without-heartbeat"] if lean else []),
        "-l",
        "info",
        *(["-B", "-s", str(directory / f"{name.split('@')[0]}-beat-schedule")] if beat else []),
    ]
