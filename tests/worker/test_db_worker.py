"""The Django runner's guarantees with real ``manage.py db_worker`` processes (django-tasks-db), on PostgreSQL
and on an SQLite file shared by every process: what tests/worker's Celery tests show of Celery. The core
cases (one verification under redelivery, the retry's delay) run on both runners side by side
(``deployment``: Celery's worker on Redis, on PostgreSQL as that suite runs).

Callbacks arrive over real HTTP at gunicorn (``PAYCOLLECT["TASK_RUNNER"] = "django"``, no Celery app, no
broker: tests/worker/settings_tasks.py), whose request writes the callback and its task row in one
transaction; ``db_worker`` processes verify them against the sandbox. Checked here: one verification per
callback however often it is delivered, a verification that must wait retried at the ledger's delays
(``run_after``), a worker killed mid-task leaving nothing stranded (the sweep's command, as its timer runs
it), the service down and then verified, and (PostgreSQL) the database stopped under a backlog and none
stranded. Effects are read in the database: the processes are not this one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from django_paycollect.services.callback_ledger import CALLBACK_RETRY_DELAYS
from tests.servers import gunicorn_serving
from tests.support.worker import ROOT, ThrowawayPostgres, Worker, wait_for
from tests.worker.test_durability import claims, paid_at_the_sandbox, post_all

pytest.importorskip("django_tasks_db", reason='needs the "tasks" extra (django-tasks-db)')

pytestmark = [pytest.mark.worker]

#: Seconds a queued callback may be overdue before the sweep takes it again (the default is 300).
REQUEUE_AFTER = 4
#: What "settled by the sweep" allows on top: the sweep's period (a second here), a verification, a start.
SLACK = 15
TASK_TABLE = "django_tasks_database_dbtaskresult"
PROCESS_CALLBACKS = "django_paycollect.tasks.on_django.process_callbacks"


@dataclass
class Site:
    """The database of one test and what its processes share: PAYCOLLECT_TASKS_DB and PAYCOLLECT."""

    database: str  # an SQLite file's path, or host:port:dbname:user
    paycollect: dict[str, Any]
    directory: Path
    query: Callable[[str], list[tuple[Any, ...]]]
    processes: list[Worker] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PAYCOLLECT_TEST_"))}
        return {
            **environ,
            "DJANGO_SETTINGS_MODULE": "tests.worker.settings_tasks",
            "PAYCOLLECT_TASKS_DB": self.database,
            "PAYCOLLECT_TASKS_PAYCOLLECT": json.dumps(self.paycollect),
            "PYTHONPATH": str(ROOT),
        }

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "django", *args]
        done = subprocess.run(command, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300)  # noqa: S603
        if done.returncode:
            pytest.fail(f"manage.py {' '.join(args)} exited with {done.returncode}:\n{done.stderr[-3000:]}")
        return done

    def start(self, name: str, command: str) -> Worker:
        """A process group running ``command`` (bash) in the site's environment, killed at teardown."""
        log = self.directory / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603
                ["bash", "-c", command],  # noqa: S607
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        worker = Worker(name, process, log)
        self.processes.append(worker)
        return worker

    def db_worker(self, *, supervised: bool = False) -> Worker:
        """``manage.py db_worker``; ``supervised``: started again whenever it exits, as systemd's
        Restart=always does (db_worker exits when its database goes away)."""
        run = f"{sys.executable} -m django db_worker --interval 0.2 --no-startup-delay -v 1"
        command = f"while true; do {run}; sleep 0.5; done" if supervised else f"exec {run}"
        worker = self.start(f"db-worker-{len(self.processes) + 1}", command)
        wait_for(f"{worker.name} to start", lambda: "Starting worker" in worker.log_text())
        return worker

    def sweep_timer(self, every: float = 1.0) -> Worker:
        """The sweep as its timer runs it (``paycollect_process_callbacks --stuck``), every ``every`` s."""
        run = f"{sys.executable} -m django paycollect_process_callbacks --stuck -v 0"
        return self.start("sweep-timer", f"while true; do {run}; sleep {every}; done")

    def states(self) -> dict[str, int]:
        try:
            return dict(self.query("SELECT state, count(*) FROM paycollect_receivedcallback GROUP BY state"))
        except Exception:  # the database down, or starting again
            return {}

    def successes(self) -> dict[str, int]:
        """Per transaction uuid, its changes to SUCCESSFUL (one payment_succeeded each)."""
        rows = self.query(
            "SELECT t.uuid, count(c.id) FROM paycollect_transaction t"
            " LEFT JOIN paycollect_transactionstatuschange c"
            " ON c.transaction_id = t.id AND c.to_status = 'SUCCESSFUL' GROUP BY t.uuid"
        )
        return {str(uuid): count for uuid, count in rows}


def _sqlite_query(path: Path) -> Callable[[str], list[tuple[Any, ...]]]:
    def query(sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(path, timeout=30) as db:
            return db.execute(sql).fetchall()

    return query


def _django_query(sql: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return list(cursor.fetchall())


@pytest.fixture(params=["postgresql", "sqlite"])
def site(
    request: pytest.FixtureRequest,
    transactional_db: None,
    paycollect_live: Any,
    settings: Any,
    tmp_path: Path,
) -> Iterator[Site]:
    """The Django runner's site: on PostgreSQL, this run's test database (which the test reads through the
    ORM's connection); on SQLite, a file of the test's own, migrated first. Its processes are killed
    before the database is flushed or removed."""
    paycollect = {**settings.PAYCOLLECT, "CALLBACK_REQUEUE_AFTER": REQUEUE_AFTER}
    if request.param == "postgresql":
        if connection.vendor != "postgresql":
            pytest.skip("the test database is not PostgreSQL (PAYCOLLECT_TEST_POSTGRES)")
        database = connection.settings_dict
        name = f"{database['HOST']}:{database['PORT']}:{database['NAME']}:{database['USER']}"
        served = Site(name, paycollect, tmp_path, _django_query)
    else:
        path = tmp_path / "site.sqlite3"
        served = Site(str(path), paycollect, tmp_path, _sqlite_query(path))
        served.manage("migrate", "--noinput", "-v", "0")
    yield served
    for process in served.processes:
        process.kill()
        print(f"--- log of {process.name} (last 3000 characters)\n{process.log_text()[-3000:]}")


@pytest.fixture
def web(site: Site) -> Iterator[str]:
    with _web(site) as url:
        yield url


@contextmanager
def _web(site: Site) -> Iterator[str]:
    """The test project in gunicorn on the site's database: one process of four threads (SQLite's writer
    is one at a time whatever the count)."""
    with gunicorn_serving(
        "tests.wsgi:application",
        "-w",
        "1",
        "--threads",
        "4",
        cwd=ROOT,
        env=site.env,
        log=site.directory / "gunicorn.log",
        probe="/paycollect/return/status/",
    ) as url:
        yield url


def settled_once(site: Site, uuids: list[str]) -> None:
    assert site.successes() == dict.fromkeys(uuids, 1)


# --- the tests -------------------------------------------------------------------------------------------


@dataclass
class Deployment:
    """The core cases' two runners on one site: its web process and how to start a worker."""

    runner: str
    site: Site
    web: str
    start_worker: Callable[[], Any]


@pytest.fixture(params=["django", "celery"])
def deployment(request: pytest.FixtureRequest, site: Site, settings: Any) -> Iterator[Deployment]:
    """The Django runner (gunicorn and db_worker on the site), or Celery (gunicorn and a Celery worker on
    Redis, as tests/worker's Celery tests start them; on PostgreSQL only, as that suite runs)."""
    if request.param == "django":
        with _web(site) as url:
            yield Deployment("django", site, url, site.db_worker)
        return
    if not site.database.count(":"):
        pytest.skip("the Celery worker suite runs on PostgreSQL")
    settings.PAYCOLLECT = site.paycollect  # what start_web and start_worker pass their processes
    start_worker = request.getfixturevalue("start_worker")
    web = request.getfixturevalue("start_web")()
    yield Deployment("celery", site, web.url, lambda: start_worker(concurrency=2))


def test_each_callback_is_verified_once_however_often_it_is_delivered(paycollect_live, deployment):
    site = deployment.site
    uuids = paid_at_the_sandbox(paycollect_live, 6)
    deployment.start_worker()
    deployment.start_worker()
    # Every callback five times over, concurrently, while two workers verify.
    assert post_all(deployment.web, claims(uuids) * 5) == [200] * 30

    wait_for("every callback verified", lambda: site.states().get("processed", 0) == 6, timeout=60)
    settled_once(site, uuids)
    assert site.states() == {"processed": 6, "duplicate": 24}
    [(attempts,)] = site.query(
        "SELECT max(attempts) FROM paycollect_receivedcallback WHERE state = 'processed'"
    )
    assert attempts == 1
    if deployment.runner == "django":
        # Each stored callback's task row was written with it, in the request.
        [(tasks,)] = site.query(f"SELECT count(*) FROM {TASK_TABLE} WHERE task_path = '{PROCESS_CALLBACKS}'")  # noqa: S608
        assert tasks >= 6


def test_the_service_down_then_verified_at_the_ledger_s_retry_delay(paycollect_live, deployment):
    sb = paycollect_live
    site = deployment.site
    [uuid] = paid_at_the_sandbox(sb, 1)
    sb.control.fault("fetch_transaction", "status", status=503, times=None)
    deployment.start_worker()
    assert post_all(deployment.web, claims([uuid])) == [200]
    wait_for(
        "the first attempt to meet the service down",
        lambda: (
            site.query("SELECT state FROM paycollect_receivedcallback WHERE error LIKE '%trying again in%'")
            == [("queued",)]
        ),
    )
    attempted = time.monotonic()
    sb.control.clear_faults()
    delay = CALLBACK_RETRY_DELAYS[0]

    if deployment.runner == "django":
        # The same task enqueued again, due after the first delay (a task due at once has django-tasks-db's
        # run_after of the year 9999).
        def retry_row() -> Any:
            rows = site.query(
                f"SELECT enqueued_at, run_after FROM {TASK_TABLE} WHERE run_after < '3000-01-01'"  # noqa: S608
            )
            return rows[0] if rows else None

        enqueued_at, run_after = wait_for("the retry to be enqueued", retry_row)
        if isinstance(run_after, str):  # SQLite gives text
            enqueued_at, run_after = (
                dt.datetime.fromisoformat(enqueued_at),
                dt.datetime.fromisoformat(run_after),
            )
        assert delay - 1 < (run_after - enqueued_at).total_seconds() <= delay + 1

    wait_for("the retry to verify it", lambda: site.states() == {"processed": 1}, timeout=30)
    took = time.monotonic() - attempted
    print(f"\n{deployment.runner}: the service back, verified {took:.1f} s after the first attempt")
    assert delay - 1 < took < delay + SLACK  # not sooner than the ledger's delay, on either runner
    settled_once(site, [uuid])


def test_a_worker_killed_mid_verification_leaves_nothing_stranded(paycollect_live, site, web):
    sb = paycollect_live
    [uuid] = paid_at_the_sandbox(sb, 1)
    sb.control.fault("fetch_transaction", "latency", latency_ms=5000)
    first = site.db_worker()
    assert post_all(web, claims([uuid])) == [200]
    wait_for(
        "the verification to start",
        lambda: site.query("SELECT attempts FROM paycollect_receivedcallback") == [(1,)],
    )
    time.sleep(0.5)  # inside the fetch now
    first.kill()
    killed_at = time.monotonic()
    sb.control.clear_faults()
    # Its task stays "running" for good: db_worker never takes it again. The callback waits in the ledger.
    assert site.query(f"SELECT status FROM {TASK_TABLE}") == [("RUNNING",)]  # noqa: S608
    site.db_worker()
    assert site.states() == {"queued": 1}

    site.sweep_timer()
    wait_for("the sweep to settle it", lambda: site.states() == {"processed": 1}, timeout=60)
    took = time.monotonic() - killed_at
    print(f"\ndb_worker killed mid-task: verified {took:.1f} s later (sweep after {REQUEUE_AFTER} s)")
    assert took < REQUEUE_AFTER + SLACK
    settled_once(site, [uuid])


# --- PostgreSQL stopped under a backlog -------------------------------------------------------------------


@pytest.fixture
def throwaway_site(
    paycollect_live: Any, settings: Any, tmp_path: Path
) -> Iterator[tuple[Site, ThrowawayPostgres]]:
    """A site on a PostgreSQL cluster of the test's own, which it stops and starts."""
    database = ThrowawayPostgres()
    paycollect = {**settings.PAYCOLLECT, "CALLBACK_REQUEUE_AFTER": REQUEUE_AFTER}
    address = f"127.0.0.1:{database.port}:paycollect:postgres"

    def query(sql: str) -> list[tuple[Any, ...]]:
        with database.connect() as db:
            return db.execute(sql).fetchall()

    served = Site(address, paycollect, tmp_path, query)
    try:
        database.start()
        database.create_database()
        served.manage("migrate", "--noinput", "-v", "0")
        yield served, database
    finally:
        for process in served.processes:
            process.kill()
            print(f"--- log of {process.name} (last 3000 characters)\n{process.log_text()[-3000:]}")
        database.destroy()


@pytest.mark.postgres
def test_postgresql_stopped_and_started_under_a_backlog_strands_nothing(paycollect_live, throwaway_site):
    sb = paycollect_live
    site, database = throwaway_site
    uuids = paid_at_the_sandbox(sb, 20)
    sb.control.fault("fetch_transaction", "latency", latency_ms=300, times=None)  # a backlog builds up
    site.db_worker(supervised=True)
    site.db_worker(supervised=True)
    site.sweep_timer()
    with gunicorn_serving(
        "tests.wsgi:application",
        "-w",
        "2",
        cwd=ROOT,
        env=site.env,
        log=site.directory / "gunicorn.log",
        probe="/paycollect/return/status/",
    ) as web:
        assert post_all(web, claims(uuids)) == [200] * 20
        wait_for("a few verifications", lambda: site.states().get("processed", 0) >= 3)
        database.stop()
        time.sleep(3)  # the workers meet the outage with most of the backlog still queued
        database.start()
        recovered = time.monotonic()
        sb.control.clear_faults()
        wait_for("every callback verified", lambda: site.states() == {"processed": 20}, timeout=90)
    took = time.monotonic() - recovered
    print(f"\nPostgreSQL outage: all 20 callbacks verified {took:.1f} s after it came back")
    assert took < REQUEUE_AFTER + SLACK
    settled_once(site, uuids)


def test_the_app_s_tasks_are_found_by_their_path(site):
    """A task row names what db_worker imports: a module-level task of the app, on the default queue."""
    site.manage(
        "shell", "-c", "from django_paycollect.tasks import on_django; on_django.sweep_callbacks.enqueue()"
    )
    [(path, queue)] = site.query(f"SELECT task_path, queue_name FROM {TASK_TABLE}")  # noqa: S608
    assert (path, queue) == ("django_paycollect.tasks.on_django.sweep_callbacks", "default")
    site.manage("db_worker", "--batch", "--no-startup-delay", "-v", "0")
    assert site.query(f"SELECT status FROM {TASK_TABLE}") == [("SUCCESSFUL",)]  # noqa: S608
