"""Callback intake with a real broker: callbacks POSTed to gunicorn are handed to each web process's
publisher, which publishes them together from its own thread, and real ``celery worker`` processes verify them
against the sandbox. A web process that exits publishes what it holds; one killed before it published loses
nothing: the rows stay queued, and the sweep queues them again once overdue by ``CALLBACK_REQUEUE_AFTER``.
"""

from __future__ import annotations

import signal
import statistics
import time
from collections import Counter
from typing import Any

import pytest

from django_paycollect.models import ReceivedCallback
from django_paycollect.tasks.callbacks import CALLBACKS_PER_TASK
from tests.support.worker import Web, wait_for
from tests.worker.test_durability import (
    REQUEUE_AFTER,
    SLACK,
    SWEEP_EVERY,
    claims,
    configure,
    paid_at_the_sandbox,
    post_all,
    settled_once,
)

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CB = ReceivedCallback


def held_by_the_publisher(sb: Any, start_worker: Any, start_web: Any, settings: Any) -> tuple[list[str], Web]:
    """Six paid callbacks to one web process whose publisher, after its first publish, waits an hour before
    the next: the first is verified, the five others are stored and answered 200, and held."""
    uuids = paid_at_the_sandbox(sb, 6)
    # Before any process starts: each reads the settings once, and a sweep task may run in any worker, which
    # must then count the callbacks overdue after the same CALLBACK_REQUEUE_AFTER.
    configure(settings, CALLBACK_PUBLISH_LINGER=3600)
    start_worker(concurrency=2)
    web = start_web(processes=1)
    assert post_all(web.url, claims(uuids[:1])) == [200]
    wait_for("the first to be verified", lambda: CB.objects.filter(state=CB.PROCESSED).count() == 1)
    assert post_all(web.url, claims(uuids[1:])) == [200] * 5
    time.sleep(1)
    assert CB.objects.filter(state=CB.QUEUED).count() == 5
    return uuids, web


def test_callbacks_are_published_together_and_verified_promptly(
    paycollect_live, start_worker, start_web, settings
):
    uuids = paid_at_the_sandbox(paycollect_live, 60)
    start_worker(concurrency=2)
    # Half a second between publishes: however slowly the machine answers, the 60 go in a few messages.
    configure(settings, CALLBACK_PUBLISH_LINGER=0.5)
    web = start_web()
    assert post_all(web.url, claims(uuids)) == [200] * 60
    wait_for("all 60 verified", lambda: CB.objects.filter(state=CB.PROCESSED).count() == 60, timeout=60)
    settled_once(uuids)

    delays = sorted(
        (processed - received).total_seconds()
        for received, processed in CB.objects.values_list("received_at", "processed_at")
    )
    # The callbacks one task verified carry its id: how they were handed on, and shared out.
    per_task = Counter(CB.objects.values_list("task_id", flat=True))
    median = statistics.median(delays)
    print(f"\n60 callbacks verified by {len(per_task)} tasks; receipt to verification: median {median:.3f} s")
    assert max(per_task.values()) > 1  # handed on together, not one message each
    assert max(per_task.values()) <= CALLBACKS_PER_TASK  # a large batch shared out among the workers


def test_a_web_process_that_exits_publishes_what_it_holds(paycollect_live, start_worker, start_web, settings):
    uuids, web = held_by_the_publisher(paycollect_live, start_worker, start_web, settings)
    web.signal(signal.SIGTERM)  # a graceful stop (a deploy, max_requests): the held ones are published
    wait_for("the held five to be verified", lambda: CB.objects.filter(state=CB.PROCESSED).count() == 6)
    settled_once(uuids)


def test_a_web_process_killed_before_it_published_loses_nothing(
    paycollect_live, start_worker, start_web, settings
):
    uuids, web = held_by_the_publisher(paycollect_live, start_worker, start_web, settings)
    web.signal(signal.SIGKILL)  # gone with what it held: never published
    time.sleep(1)
    assert CB.objects.filter(state=CB.QUEUED).count() == 5

    start_worker(concurrency=1, env={"PAYCOLLECT_WORKER_SWEEP_EVERY": str(SWEEP_EVERY)}, beat=True)
    sweeping = time.monotonic()  # the sweep runs from now on; the callbacks were due seconds ago
    wait_for(
        "the sweep to verify them", lambda: CB.objects.filter(state=CB.PROCESSED).count() == 6, timeout=60
    )
    took = time.monotonic() - sweeping
    print(f"\nweb process killed before publishing: verified {took:.1f} s after the sweep began to run")
    assert took < REQUEUE_AFTER + SWEEP_EVERY + SLACK
    settled_once(uuids)
