"""A worker keeps its PostgreSQL session from one verification to the next, as the deployment docs set it up
(``CONN_MAX_AGE`` and ``CELERY_DB_REUSE_MAX``, tests/worker/settings.py), and still drops a session the
database ended: the next verification after that is done on a new one.

Sessions are counted twice: the worker's backends by pid (``pg_stat_activity``: the same ones before and
after), and ``pg_stat_database.sessions``, every session ever opened on the test database.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection

from django_paycollect.models import ReceivedCallback, Transaction
from tests.support.worker import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

#: Callbacks verified after the warm-up, each in a message of its own (as they come at a slow rate).
CALLBACKS = 20


def queued_callback(txn: Transaction) -> ReceivedCallback:
    return ReceivedCallback.objects.create(
        state=ReceivedCallback.QUEUED,
        transaction_uuid=txn.uuid,
        claimed_status="SUCCESSFUL",
        dedupe_key=f"{txn.uuid}|SUCCESSFUL",
    )


def verify(producer, callbacks: list[ReceivedCallback]) -> None:
    """Each callback in a message of its own, then wait until every one is processed."""
    for callback in callbacks:
        producer.send_task("paycollect.process_callbacks", kwargs={"callback_ids": [callback.pk]})
    ids = [c.pk for c in callbacks]
    wait_for(
        f"{len(ids)} callbacks to be verified",
        lambda: (
            ReceivedCallback.objects.filter(pk__in=ids, state=ReceivedCallback.PROCESSED).count() == len(ids)
        ),
    )


def other_backends() -> dict[int, object]:
    """The client sessions on the test database other than this test's own: pid -> when it started."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return dict(cursor.fetchall())


def sessions_opened() -> int:
    """Sessions ever opened on the test database (PostgreSQL 14 and later), as the statistics say now."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


@pytest.fixture
def postgres_14(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int")
        if cursor.fetchone()[0] < 140000:
            pytest.skip("pg_stat_database.sessions needs PostgreSQL 14")


def settled_sessions() -> int:
    # A backend's statistics reach the shared counters when it ends, or within a second of going idle.
    time.sleep(1.5)
    return sessions_opened()


def test_a_worker_verifies_callback_after_callback_on_one_database_session(
    paycollect_live, start_worker, producer, pay, postgres_14
):
    sb = paycollect_live
    transactions = [pay(f"{10 + n}.00") for n in range(CALLBACKS + 2)]
    for txn in transactions:
        sb.control.complete(txn.uuid)
    callbacks = [queued_callback(txn) for txn in transactions]

    start_worker(concurrency=1)
    verify(producer, callbacks[:2])  # warm-up: the pool process opens its session
    worker_sessions = other_backends()
    before = settled_sessions()

    verify(producer, callbacks[2:])

    assert settled_sessions() - before == 0
    assert len(worker_sessions) == 1  # kept after its task, not closed
    assert other_backends() == worker_sessions
    assert Transaction.objects.filter(status=Transaction.SUCCESSFUL).count() == len(transactions)


def test_a_worker_whose_session_the_database_ended_verifies_the_next_callbacks_on_a_new_one(
    paycollect_live, start_worker, producer, pay
):
    sb = paycollect_live
    transactions = [pay(f"{20 + n}.00") for n in range(4)]
    for txn in transactions:
        sb.control.complete(txn.uuid)
    callbacks = [queued_callback(txn) for txn in transactions]

    start_worker(concurrency=1)
    verify(producer, callbacks[:1])
    (ended,) = other_backends()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [ended])
    wait_for("the session to end", lambda: ended not in other_backends())

    # The first task meets the ended session and is retried (database unavailable); the session is dropped
    # after that task, so its retry and the rest are verified on a new one, which is kept.
    verify(producer, callbacks[1:])
    assert len(other_backends()) == 1
    assert ended not in other_backends()
