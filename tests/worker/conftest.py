"""Real Celery worker processes on a real Redis, against this test run's PostgreSQL database.

Skipped unless PAYCOLLECT_TEST_REDIS is set (``eval "$(bash .ci/redis.sh)"``) and the database is
PostgreSQL (PAYCOLLECT_TEST_POSTGRES): the worker processes must share the test's database, which an
in-memory SQLite database cannot be.
"""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from celery import Celery

from tests.servers import free_port, gunicorn_command
from tests.support.worker import REDIS_URL, ROOT, Web, Worker, wait_for, worker_command, worker_environment


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if REDIS_URL:
        return
    skip = pytest.mark.skip(
        reason='needs a Redis broker: eval "$(bash .ci/redis.sh)" sets PAYCOLLECT_TEST_REDIS'
    )
    for item in items:
        if "worker" in item.keywords:
            item.add_marker(skip)


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
    """``start_worker(concurrency=2, env={...}, beat=False, lean=True)`` -> a ready Worker; every worker is
    killed at teardown. ``beat`` embeds celery beat (-B), with the sweep every PAYCOLLECT_WORKER_SWEEP_EVERY
    seconds. ``lean`` turns off gossip, mingle and heartbeat (quicker to start); ``lean=False`` runs the
    worker as ``celery -A mysite worker`` does in the deployment docs.

    Depends on transactional_db so that workers are gone before the database is flushed.
    """
    workers: list[Worker] = []

    def start(
        concurrency: int = 2, env: dict[str, str] | None = None, beat: bool = False, lean: bool = True
    ) -> Worker:
        name = f"w{len(workers) + 1}-{uuid.uuid4().hex[:6]}@paycollect-tests"
        log = tmp_path / f"{name.split('@')[0]}.log"
        environ = {**worker_environment(settings, worker_queue), **(env or {})}
        command = worker_command(name, worker_queue, tmp_path, concurrency=concurrency, beat=beat, lean=lean)
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
        if beat:
            wait_for(f"the beat of {name}", lambda: "beat: Starting..." in worker.log_text())
        return worker

    yield start
    for worker in workers:
        worker.kill()
        # Shown by pytest only when the test failed.
        print(f"--- log of {worker.name} (last 4000 characters)\n{worker.log_text()[-4000:]}")


# --- a web process, and services of a test's own ----------------------------------------------------------


@pytest.fixture
def start_web(
    transactional_db: None, paycollect_live: Any, settings: Any, worker_queue: str, tmp_path: Path
) -> Iterator[Callable[..., Web]]:
    """``start_web(env={...}, processes=2)`` -> the test project in gunicorn (``.url``), on the worker
    settings (the same database, PAYCOLLECT and queue as the workers): callbacks go through a real WSGI
    server and a real broker publish."""
    servers: list[Web] = []

    def start(env: dict[str, str] | None = None, processes: int = 2) -> Web:
        port = free_port()
        log = tmp_path / f"web-{len(servers) + 1}.log"
        options = ("-w", str(processes), "--threads", "4", "--graceful-timeout", "2")
        command = gunicorn_command("tests.wsgi:application", port, *options)
        with log.open("wb") as out:
            server = subprocess.Popen(  # noqa: S603
                command,
                cwd=ROOT,
                env={**worker_environment(settings, worker_queue), **(env or {})},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        web = Web(f"http://127.0.0.1:{port}", server, log)
        servers.append(web)

        def ready() -> bool:
            if server.poll() is not None:
                pytest.fail(f"gunicorn exited with {server.returncode}:\n{log.read_text()[-3000:]}")
            try:
                requests.get(f"{web.url}/paycollect/return/status/", timeout=10)
            except requests.RequestException:
                return False
            return True

        wait_for("gunicorn to answer", ready, interval=0.2)
        return web

    yield start
    for web in servers:
        try:
            web.signal(signal.SIGTERM)
        except subprocess.TimeoutExpired:
            web.signal(signal.SIGKILL)
        print(
            f"--- log of {web.log.name} (last 3000 characters)\n{web.log.read_text(errors='replace')[-3000:]}"
        )
