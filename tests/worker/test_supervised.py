"""A worker run as production runs it: under a supervisor that starts it again whenever it exits (the shipped
units' ``Restart=always``, compose's ``restart: always``; see docs/deployment.md). Redis is killed again and
again under the busy worker, and the worker itself dies once in an outage. Whether the installed Celery's
worker stays up through an outage (5.6) or may exit (5.7.0: "Unrecoverable error" right after "Restoring
unacknowledged message(s)", docs/celery.md), nothing is stranded and every callback is verified once.

The supervisor is a thread of the test doing what systemd does: run the command, and when its main process
exits, kill what is left of its process group (``KillMode=control-group``), wait a moment (``RestartSec``) and
run it again.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db.models import Count

from tests.support.worker import ROOT, ThrowawayRedis, wait_for, worker_command, worker_environment
from tests.worker.test_durability import (
    CB,
    REQUEUE_AFTER,
    SLACK,
    SWEEP_EVERY,
    claims,
    configure,
    paid_at_the_sandbox,
    post_all,
    processed,
    settled_once,
)

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

#: Seconds between an exit and the next start (the shipped units wait 5).
RESTART_SEC = 1.0
#: Seconds a worker started again may take before it consumes (gossip and mingle on, a loaded machine).
STARTING = 10
#: Times Redis is killed under the busy worker: 5.7.0's worker exited in some outages only.
OUTAGES = 4


class Supervisor:
    """Runs ``command`` again whenever it exits, until :meth:`stop`; each run logs to a file of its own."""

    def __init__(self, command: list[str], env: dict[str, str], directory: Path) -> None:
        self.command, self.env, self.directory = command, env, directory
        self.exits: list[int] = []
        self.logs: list[Path] = []
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._supervise, name="supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _spawn(self) -> subprocess.Popen[bytes]:
        log = self.directory / f"supervised-run-{len(self.logs) + 1}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(  # noqa: S603
                self.command,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.logs.append(log)  # once it exists: the test reads it meanwhile
        return process

    def _supervise(self) -> None:
        while not self._stopping.is_set():
            process = self.process = self._spawn()
            while process.poll() is None:
                if self._stopping.wait(0.1):
                    return
            # The main process is gone: what is left of its group (pool processes, the embedded beat) too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            self.exits.append(process.returncode)
            self._stopping.wait(RESTART_SEC)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def runs(self) -> int:
        return len(self.logs)

    def ready(self) -> bool:
        """The current run has said it is ready."""
        return bool(self.logs) and " ready." in self.logs[-1].read_text(errors="replace")

    def log_text(self) -> str:
        return "".join(
            f"--- run {n}\n{log.read_text(errors='replace')}" for n, log in enumerate(self.logs, 1)
        )


def states() -> dict[str, int]:
    """The callbacks stored, by state."""
    return dict(CB.objects.order_by().values_list("state").annotate(n=Count("id")))


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    broker = ThrowawayRedis(tmp_path)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def supervised_worker(
    settings: Any, worker_queue: str, tmp_path: Path, throwaway_redis: ThrowawayRedis
) -> Iterator[Supervisor]:
    """The deployment docs' worker (gossip, mingle and heartbeat on) with an embedded beat sweeping every
    second, on the test's own Redis, under a :class:`Supervisor`; ready when yielded."""
    configure(settings)  # the sweep brings a callback back after seconds, not minutes
    env = {
        **worker_environment(settings, worker_queue),
        "PAYCOLLECT_TEST_REDIS": throwaway_redis.url,
        "PAYCOLLECT_WORKER_SWEEP_EVERY": str(SWEEP_EVERY),
    }
    command = worker_command("supervised@paycollect-tests", worker_queue, tmp_path, beat=True, lean=False)
    supervisor = Supervisor(command, env, tmp_path)
    supervisor.start()
    try:
        wait_for("the supervised worker to be ready", supervisor.ready, timeout=60)
        yield supervisor
    finally:
        supervisor.stop()
        # Shown by pytest only when the test failed.
        print(f"--- logs of the supervised worker (last 6000 characters)\n{supervisor.log_text()[-6000:]}")


def test_redis_killed_again_and_again_under_a_supervised_worker_strands_nothing(
    paycollect_live, supervised_worker, start_web, settings, throwaway_redis
):
    sb = paycollect_live
    supervisor, broker = supervised_worker, throwaway_redis
    web = start_web(env={"PAYCOLLECT_TEST_REDIS": broker.url})
    batches = [paid_at_the_sandbox(sb, 8) for _ in range(OUTAGES)]
    after = paid_at_the_sandbox(sb, 6)
    sb.control.fault("fetch_transaction", "latency", latency_ms=300, times=None)  # every pool process busy

    sent: list[str] = []
    for number, batch in enumerate(batches):
        assert post_all(web.url, claims(batch)) == [200] * len(batch)
        sent += batch
        verified = processed()
        # A worker started again after an exit takes a few seconds before it consumes.
        wait_for("the worker to be busy", lambda n=verified: processed() > n, timeout=60)
        broker.stop()  # SIGKILL: every connection cut, every message gone
        if number == 1 and supervisor.process is not None:
            # The worker dies too (its main process, as an exit ends it): the supervisor's path, every run.
            with contextlib.suppress(ProcessLookupError):
                os.kill(supervisor.process.pid, signal.SIGKILL)
        time.sleep(2)  # the tasks in progress finish against a dead broker and results backend
        broker.start()
    recovered = time.monotonic()
    sb.control.clear_faults()

    every = len(sent)
    try:
        wait_for("every callback verified", lambda: states() == {CB.PROCESSED: every}, timeout=90)
    except pytest.fail.Exception:
        print("callbacks by state:", states(), list(CB.objects.exclude(state=CB.PROCESSED).values()))
        raise
    took = time.monotonic() - recovered
    celery = importlib.metadata.version("celery")
    restarts = supervisor.runs() - 1
    print(
        f"\nCelery {celery}: Redis killed {OUTAGES} times under a supervised worker, which exited "
        f"{len(supervisor.exits)} times ({supervisor.log_text().count('Unrecoverable error')} unrecoverable "
        f"errors) and was started {restarts} times again: all {every} verified {took:.1f} s after"
    )
    # An exit in the last outage costs a start on top of the sweep's delay.
    assert took < REQUEUE_AFTER + SWEEP_EVERY + SLACK + RESTART_SEC + STARTING
    assert restarts >= 1  # the worker killed in the second outage came back

    # The supervised worker consumes again: new callbacks are verified as usual, busy or idle.
    assert post_all(web.url, claims(after[:3])) == [200] * 3
    wait_for("the later callbacks verified", lambda: processed() == every + 3, timeout=60)
    broker.stop()
    time.sleep(1)
    broker.start()
    assert post_all(web.url, claims(after[3:])) == [200] * 3
    wait_for("the last callbacks verified", lambda: processed() == every + 6, timeout=60)
    assert CB.objects.exclude(state=CB.PROCESSED).count() == 0
    settled_once(sent + after)
