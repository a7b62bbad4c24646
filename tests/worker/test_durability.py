"""Nothing answered 200 is lost or stays unverified: a worker killed whole, PostgreSQL stopped under a
backlog, Redis down, Redis restarted without its messages, Redis killed again and again under a busy worker
(which stays up on Celery 5.6; 5.7.0's may exit, harmless under a supervisor: test_supervised.py). Each time
the sweep (celery beat, embedded in a worker here and run every second instead of every minute) brings every
callback back once ``CALLBACK_REQUEUE_AFTER`` has passed, whatever the broker's visibility timeout.

And a flood of callbacks claiming distinct statuses of one uuid, through two web processes and two worker
processes, fetches that transaction at most once per ``CALLBACK_FETCH_INTERVAL``.

Callbacks arrive over real HTTP at gunicorn, are queued on a real Redis and verified by real ``celery
worker`` processes against the sandbox. Services that a test stops are its own (a throwaway PostgreSQL
cluster, a throwaway Redis), never the shared ones. The whole file takes about three minutes.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import itertools
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests

from django_paycollect.models import ReceivedCallback, Transaction, TransactionStatusChange
from django_paycollect.sandbox.envelope import dumps
from tests.support.payments import BILLING, CALLBACK_TOKEN
from tests.support.worker import ROOT, ThrowawayPostgres, ThrowawayRedis, wait_for, worker_environment

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

#: Seconds a queued callback may be overdue before the sweep queues it again (the default is 300).
REQUEUE_AFTER = 4
#: The sweep's period in these tests (a minute in BEAT_SCHEDULE).
SWEEP_EVERY = 1
#: What "brought back within the sweep interval" allows on top: a verification's own time, a broker
#: reconnection, the sandbox's latency.
SLACK = 12
CB = ReceivedCallback


def configure(settings: Any, **extra: Any) -> None:
    """PAYCOLLECT of the processes the test starts (passed to them as JSON)."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_REQUEUE_AFTER": REQUEUE_AFTER, **extra}


def paid_at_the_sandbox(sb: Any, count: int) -> list[str]:
    """Payments the merchant's database has never seen (verification creates them from the fetch), paid."""
    uuids = []
    for n in range(count):
        started = sb.client.pay(
            community_id=sb.community_id,
            amount=Decimal(f"{10 + n}.00"),
            original_amount=Decimal(f"{10 + n}.00"),
            variable_amount_id=sb.variable_amount_id,
            billing_data=BILLING,
        )
        uuid = started.result.transaction_uuid
        sb.control.complete(uuid, "SUCCESSFUL")
        uuids.append(uuid)
    return uuids


def post_all(web: str, bodies: list[dict[str, Any]]) -> list[int]:
    url = f"{web}/paycollect/callback/{CALLBACK_TOKEN}/"

    def post(body: dict[str, Any]) -> int:
        response = requests.post(
            url, data=dumps(body), headers={"Content-Type": "application/json"}, timeout=60
        )
        return response.status_code

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(post, bodies))


def claims(uuids: list[str], status: str = "SUCCESSFUL") -> list[dict[str, Any]]:
    return [{"transaction_uuid": uuid, "transaction_status": status} for uuid in uuids]


def settled_once(uuids: list[str]) -> None:
    """Every transaction SUCCESSFUL, one row each, one change to SUCCESSFUL each (one payment_succeeded)."""
    assert Transaction.objects.filter(uuid__in=uuids, status=Transaction.SUCCESSFUL).count() == len(uuids)
    assert Transaction.objects.count() == len(uuids)
    changes = TransactionStatusChange.objects.filter(to_status=Transaction.SUCCESSFUL)
    assert changes.count() == len(uuids)


# --- a whole worker killed ---------------------------------------------------------------------------------


def test_a_worker_killed_whole_mid_verification_is_settled_by_the_sweep_despite_a_long_visibility_timeout(
    paycollect_live, start_worker, start_web, settings
):
    sb = paycollect_live
    configure(settings)
    [uuid] = paid_at_the_sandbox(sb, 1)
    sb.control.fault("fetch_transaction", "latency", latency_ms=5000)
    # The example project's visibility timeout: Redis would hand the message back after two hours.
    long_visibility = {"PAYCOLLECT_WORKER_VISIBILITY_TIMEOUT": "7200"}
    first = start_worker(concurrency=1, env=long_visibility)
    web = start_web(env=long_visibility)
    assert post_all(web.url, claims([uuid])) == [200]
    wait_for("the verification to start", lambda: CB.objects.filter(attempts=1).exists())
    time.sleep(0.5)  # inside the fetch now
    first.kill()  # SIGKILL of the main process and its children: the message stays unacknowledged
    killed_at = time.monotonic()
    sb.control.clear_faults()
    assert CB.objects.get().state == CB.QUEUED

    start_worker(
        concurrency=1, env={**long_visibility, "PAYCOLLECT_WORKER_SWEEP_EVERY": str(SWEEP_EVERY)}, beat=True
    )
    wait_for("the sweep to settle it", lambda: CB.objects.filter(state=CB.PROCESSED).exists(), timeout=60)
    took = time.monotonic() - killed_at
    print(f"\nworker killed whole: verified {took:.1f} s later (sweep after {REQUEUE_AFTER} s)")
    assert took < REQUEUE_AFTER + SWEEP_EVERY + SLACK
    settled_once([uuid])
    assert CB.objects.get().attempts == 2


# --- PostgreSQL stopped under a backlog -------------------------------------------------------------------


@pytest.fixture
def throwaway_postgres(settings: Any, worker_queue: str) -> Iterator[ThrowawayPostgres]:
    database = ThrowawayPostgres()
    try:
        database.start()
        database.create_database()
        env = {**worker_environment(settings, worker_queue), **database.env}
        subprocess.run(
            [sys.executable, "-m", "django", "migrate", "--noinput", "--skip-checks", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=300,
        )
        yield database
    finally:
        database.destroy()


def count_states(database: ThrowawayPostgres) -> dict[str, int]:
    try:
        with database.connect() as db:
            rows = db.execute(
                "SELECT state, count(*) FROM paycollect_receivedcallback GROUP BY state"
            ).fetchall()
    except Exception:  # down, or starting again
        return {}
    return dict(rows)


def test_postgresql_stopped_and_started_under_a_backlog_loses_nothing(
    paycollect_live, start_worker, start_web, settings, throwaway_postgres
):
    sb = paycollect_live
    configure(settings)
    database = throwaway_postgres
    uuids = paid_at_the_sandbox(sb, 30)
    sb.control.fault("fetch_transaction", "latency", latency_ms=300, times=None)  # a backlog builds up
    start_worker(
        concurrency=2, env={**database.env, "PAYCOLLECT_WORKER_SWEEP_EVERY": str(SWEEP_EVERY)}, beat=True
    )
    web = start_web(env=database.env)
    assert post_all(web.url, claims(uuids)) == [200] * 30

    wait_for("a few verifications", lambda: count_states(database).get("processed", 0) >= 3)
    database.stop()
    time.sleep(3)  # the workers meet the outage with most of the backlog still queued
    database.start()
    recovered = time.monotonic()
    sb.control.clear_faults()

    wait_for("every callback verified", lambda: count_states(database) == {"processed": 30}, timeout=90)
    took = time.monotonic() - recovered
    print(f"\nPostgreSQL outage: all 30 callbacks verified {took:.1f} s after it came back")
    assert took < REQUEUE_AFTER + SWEEP_EVERY + SLACK
    with database.connect() as db:
        successful = db.execute(
            "SELECT t.uuid, count(c.id) FROM paycollect_transaction t"
            " LEFT JOIN paycollect_transactionstatuschange c"
            " ON c.transaction_id = t.id AND c.to_status = 'SUCCESSFUL' GROUP BY t.uuid"
        ).fetchall()
    assert sorted(successful) == sorted((uuid, 1) for uuid in uuids)  # one row, one change, one signal each


# --- Redis down, then restarted without its messages ------------------------------------------------------


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    broker = ThrowawayRedis(tmp_path)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def test_redis_down_and_restarted_without_its_messages_loses_nothing(
    paycollect_live, start_worker, start_web, settings, throwaway_redis
):
    sb = paycollect_live
    configure(settings)
    broker = throwaway_redis
    env = {"PAYCOLLECT_TEST_REDIS": broker.url, "PAYCOLLECT_WORKER_SWEEP_EVERY": str(SWEEP_EVERY)}
    first_batch, second_batch = paid_at_the_sandbox(sb, 15), paid_at_the_sandbox(sb, 15)
    web = start_web(env=env)

    # 1. Redis is down while callbacks arrive: each is stored, answered 200, and says why it waits.
    worker = start_worker(concurrency=2, env=env, beat=True)
    broker.stop()
    started = time.monotonic()
    assert post_all(web.url, claims(first_batch)) == [200] * 15
    print(f"\nRedis down: 15 callbacks answered in {time.monotonic() - started:.1f} s")
    # The requests did not wait for the broker: the web processes' publishers meet it down, after the answers.
    waiting = CB.objects.filter(state=CB.RECEIVED)
    wait_for("the publishers to record them not queued", lambda: waiting.count() == 15)
    assert all(
        "could not be queued for verification" in error for error in waiting.values_list("error", flat=True)
    )
    broker.start()  # empty
    recovered = time.monotonic()
    wait_for(
        "the sweep to verify them", lambda: CB.objects.filter(state=CB.PROCESSED).count() == 15, timeout=90
    )
    print(f"Redis back: verified {time.monotonic() - recovered:.1f} s later")
    assert time.monotonic() - recovered < REQUEUE_AFTER + SWEEP_EVERY + SLACK
    worker.stop()

    # 2. Callbacks queued while no worker runs; Redis restarts without persistence and loses them all.
    assert post_all(web.url, claims(second_batch)) == [200] * 15
    assert CB.objects.filter(state=CB.QUEUED).count() == 15
    broker.stop()
    broker.start()
    recovered = time.monotonic()
    start_worker(concurrency=2, env=env, beat=True)
    wait_for(
        "the sweep to verify them", lambda: CB.objects.filter(state=CB.PROCESSED).count() == 30, timeout=90
    )
    took = time.monotonic() - recovered
    print(f"Redis restarted without its messages: verified {took:.1f} s later")
    assert took < REQUEUE_AFTER + SWEEP_EVERY + SLACK
    settled_once(first_batch + second_batch)


#: Celery 5.7.0's worker may exit after a broker outage ("Unrecoverable error" right after "Restoring
#: unacknowledged message(s)"), and the test below expects the same worker to stay up: on 5.7 it is expected
#: to fail (test_supervised.py shows the exit harmless under a supervisor) and runs to show when a release
#: fixes it.
CELERY_MAY_EXIT = tuple(int(part) for part in importlib.metadata.version("celery").split(".")[:2]) >= (5, 7)

#: Times the broker is killed under the busy worker in one run of the test below. Celery 5.7.0's worker
#: exited ("Unrecoverable error") in some outages only, depending on what its connection was doing at that
#: instant (waiting on Redis, with unacknowledged messages): one outage alone shows little.
OUTAGES = 3


def processed() -> int:
    return CB.objects.filter(state=CB.PROCESSED).count()


def running(worker: Any) -> bool:
    """True while the worker runs; fails the test with its log once it has exited."""
    if not worker.alive():
        pytest.fail(f"the worker exited with {worker.process.returncode}:\n{worker.log_text()[-4000:]}")
    return True


@pytest.mark.xfail(CELERY_MAY_EXIT, reason="Celery 5.7's worker may exit after a broker outage", strict=False)
@pytest.mark.parametrize("lean", [True, False], ids=["lean-worker", "default-worker"])
def test_redis_killed_under_a_busy_worker_again_and_again_the_same_worker_verifies_every_callback(
    paycollect_live, start_worker, start_web, settings, throwaway_redis, lean
):
    """The broker goes away under a busy worker (verifications hold their fetch a while; results and
    acknowledgements go to the same Redis) and comes back empty, three times. The worker stays up, connects
    again and consumes: what it held and what the broker lost is settled by the sweep, which the same
    worker runs, and callbacks sent after the outages are verified as usual. ``lean`` is the suite's
    worker (no gossip, mingle or heartbeat); otherwise the worker of the deployment docs."""
    sb = paycollect_live
    configure(settings)
    broker = throwaway_redis
    env = {"PAYCOLLECT_TEST_REDIS": broker.url, "PAYCOLLECT_WORKER_SWEEP_EVERY": str(SWEEP_EVERY)}
    batches = [paid_at_the_sandbox(sb, 8) for _ in range(OUTAGES)]
    after = paid_at_the_sandbox(sb, 6)
    sb.control.fault("fetch_transaction", "latency", latency_ms=300, times=None)  # every worker process busy
    worker = start_worker(concurrency=2, env=env, beat=True, lean=lean)
    web = start_web(env=env)
    sent: list[str] = []
    for batch in batches:
        assert post_all(web.url, claims(batch)) == [200] * len(batch)
        sent += batch
        verified = processed()
        wait_for("the worker to be busy", lambda n=verified: running(worker) and processed() > n)
        broker.stop()  # SIGKILL: every connection cut, every message gone
        time.sleep(2)  # the tasks in progress finish against a dead broker and results backend
        broker.start()
    recovered = time.monotonic()
    sb.control.clear_faults()

    every = len(sent)
    wait_for("every callback verified", lambda: running(worker) and processed() == every, timeout=90)
    took = time.monotonic() - recovered
    print(f"\nRedis killed {OUTAGES} times under a busy worker: all {every} verified {took:.1f} s after")
    assert worker.alive(), worker.log_text()[-4000:]
    assert "Unrecoverable error" not in worker.log_text()
    assert took < REQUEUE_AFTER + SWEEP_EVERY + SLACK

    # The same worker consumes again: new callbacks are verified as they were before the outages.
    assert post_all(web.url, claims(after[:3])) == [200] * 3
    wait_for("the later callbacks verified", lambda: running(worker) and processed() == every + 3)
    # And once more with the worker idle, waiting on Redis.
    broker.stop()
    time.sleep(1)
    broker.start()
    assert post_all(web.url, claims(after[3:])) == [200] * 3
    wait_for("the last callbacks verified", lambda: running(worker) and processed() == every + 6, timeout=60)
    assert worker.alive()
    assert "Unrecoverable error" not in worker.log_text()
    settled_once(sent + after)


# --- a flood of distinct claims, across processes ---------------------------------------------------------


def test_a_flood_of_distinct_claims_fetches_at_most_once_per_interval_across_processes(
    paycollect_live, start_worker, start_web, settings
):
    sb = paycollect_live
    interval = 2.0
    configure(settings, CALLBACK_FETCH_INTERVAL=interval)
    [uuid] = paid_at_the_sandbox(sb, 1)
    start_worker(concurrency=2)
    web = start_web(processes=2)

    statuses = ["SUCCESSFUL", *(f"CLAIM-{n}" for n in range(299))]
    bodies = [{"transaction_uuid": uuid, "transaction_status": status} for status in statuses]
    assert post_all(web.url, bodies) == [200] * 300
    wait_for("all 300 verified", lambda: CB.objects.filter(state=CB.PROCESSED).count() == 300, timeout=120)

    fetched = sorted(
        dt.datetime.fromisoformat(entry["created"]) for entry in sb.control.journal("fetch_transaction")
    )
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(fetched)]
    print(f"\n300 distinct claims: {len(fetched)} fetches, {gaps} s apart")
    # One fetch per interval at most, however the 300 were spread over the processes and over time.
    assert all(gap >= interval - 0.2 for gap in gaps), gaps
    assert fetched
    settled_once([uuid])
