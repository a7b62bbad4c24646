"""Real Celery worker processes on a real Redis, against this test run's PostgreSQL database.

Skipped unless PAYCOLLECT_TEST_REDIS is set (``eval "$(bash .ci/redis.sh)"``) and the database is
PostgreSQL (PAYCOLLECT_TEST_POSTGRES): the worker processes must share the test's database, which an
in-memory SQLite database cannot be.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("PAYCOLLECT_TEST_REDIS", "")
#: Every wait in this suite is bounded by this many seconds.
WAIT = 30.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if REDIS_URL:
        return
    skip = pytest.mark.skip(
        reason='needs a Redis broker: eval "$(bash .ci/redis.sh)" sets PAYCOLLECT_TEST_REDIS'
    )
    for item in items:
        if "worker" in item.keywords:
            item.add_marker(skip)


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


@pytest.fixture(scope="session")
def worker_queue() -> Iterator[str]:
    """A queue of this test run only, so several runs may share one Redis."""
    name = f"paycollect-tests-{uuid.uuid4().hex[:12]}"
    yield name
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    client.delete(name)
    client.close()


@pytest.fixture(scope="session")
def producer(worker_queue: str) -> Iterator[Celery]:
    """A Celery app that only sends (to the real broker) and reads results; never runs a task itself."""
    app = Celery(
        "paycollect-worker-tests-producer", broker=REDIS_URL, backend=REDIS_URL, set_as_current=False
    )
    app.conf.update(task_default_queue=worker_queue, broker_connection_retry_on_startup=True)
    yield app
    app.close()


@pytest.fixture
def start_worker(
    transactional_db: None, paycollect_live: Any, settings: Any, worker_queue: str, tmp_path: Path
) -> Iterator[Callable[..., Worker]]:
    """``start_worker(concurrency=2, env={...})`` -> a ready Worker; every worker is killed at teardown.

    Depends on transactional_db so that workers are gone before the database is flushed.
    """
    workers: list[Worker] = []

    def start(concurrency: int = 2, env: dict[str, str] | None = None) -> Worker:
        name = f"w{len(workers) + 1}-{uuid.uuid4().hex[:6]}@paycollect-tests"
        log = tmp_path / f"{name.split('@')[0]}.log"
        environ = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.worker.settings",
            "PAYCOLLECT_TEST_DB_NAME": connection.settings_dict["NAME"],
            "PAYCOLLECT_WORKER_PAYCOLLECT": json.dumps(settings.PAYCOLLECT),
            "PAYCOLLECT_WORKER_QUEUE": worker_queue,
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
            **(env or {}),
        }
        command = [
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
            worker_queue,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "info",
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603
                command, cwd=ROOT, env=environ, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        worker = Worker(name, process, log)
        workers.append(worker)

        def ready() -> bool:
            if not worker.alive():
                pytest.fail(f"worker {name} exited with {process.returncode}:\n{worker.log_text()[-3000:]}")
            return " ready." in worker.log_text()

        wait_for(f"worker {name} to be ready", ready)
        return worker

    yield start
    for worker in workers:
        worker.kill()
        # Shown by pytest only when the test failed.
        print(f"--- log of {worker.name} (last 4000 characters)\n{worker.log_text()[-4000:]}")
