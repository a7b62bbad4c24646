"""The worker's database sessions between tasks (``tasks.connections``) and the check that says what the
project must set for a worker to keep them (``paycollect.W009``). The worker suite
(tests/worker/test_connections.py) counts the sessions of a real worker."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from celery import signals
from django.core.checks import run_checks
from django.db import connection

from django_paycollect import tasks  # noqa: F401  (connects the handlers)
from tests.support.celery import eager


class Task:
    """What the handlers read of a task: its request's is_eager."""

    def __init__(self, *, eager: bool) -> None:
        self.request = SimpleNamespace(is_eager=eager)


TASK = Task(eager=False)
EAGER_TASK = Task(eager=True)


def session() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def run_task(task: Any = TASK, state: str = "SUCCESS") -> None:
    """What a worker does around a task, as far as these handlers see it."""
    signals.task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    session()  # the task's queries
    signals.task_postrun.send(
        sender=task, task_id="t", task=task, args=(), kwargs={}, retval=None, state=state
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
class TestSessionsBetweenTasks:
    @pytest.fixture(autouse=True)
    def kept(self) -> Iterator[None]:
        """CONN_MAX_AGE None (persistent): the session is kept unless something closes it."""
        connection.close()
        age = connection.settings_dict["CONN_MAX_AGE"]
        connection.settings_dict["CONN_MAX_AGE"] = None
        yield
        connection.settings_dict["CONN_MAX_AGE"] = age
        connection.close()

    def test_a_task_that_returned_leaves_its_session_for_the_next(self):
        first = session()
        run_task()
        run_task()
        assert session() == first

    @pytest.mark.parametrize("state", ["FAILURE", "RETRY"])
    def test_a_task_that_raised_or_is_retried_leaves_no_session(self, state):
        first = session()
        run_task(state=state)
        assert connection.connection is None
        assert session() != first

    def test_a_session_older_than_conn_max_age_is_replaced_before_the_task(self):
        first = session()
        connection.close_at = time.monotonic() - 1  # as CONN_MAX_AGE had passed
        signals.task_prerun.send(sender=TASK, task_id="t", task=TASK, args=(), kwargs={})
        assert session() != first

    def test_an_eager_task_leaves_its_callers_session_alone(self):
        first = session()
        connection.close_at = time.monotonic() - 1
        run_task(EAGER_TASK, state="FAILURE")
        assert session() == first


# --- the check ---------------------------------------------------------------------------------------------


def w009() -> list[str]:
    return [
        m.msg for m in run_checks(include_deployment_checks=False, databases=[]) if m.id == "paycollect.W009"
    ]


@contextmanager
def worker_settings(
    settings: Any, *, max_age: Any = 60, reuse: Any = 1000, engine: str = "postgresql"
) -> Iterator[None]:
    """The settings a worker would read: not eager, the given database and CELERY_DB_REUSE_MAX."""
    settings.DATABASES = {
        **settings.DATABASES,
        "default": {
            **settings.DATABASES["default"],
            "ENGINE": f"django.db.backends.{engine}",
            "CONN_MAX_AGE": max_age,
        },
    }
    settings.CELERY_DB_REUSE_MAX = reuse
    with eager(False):
        yield


def test_the_check_is_quiet_for_a_worker_that_keeps_its_sessions(settings):
    with worker_settings(settings):
        assert w009() == []
    with worker_settings(settings, max_age=None):
        assert w009() == []


def test_the_check_warns_when_the_database_does_not_keep_sessions(settings):
    with worker_settings(settings, max_age=0):
        (message,) = w009()
    assert "has CONN_MAX_AGE 0" in message
    assert "CELERY_DB_REUSE_MAX" not in message


def test_the_check_warns_when_celery_closes_every_session_around_each_task(settings):
    with worker_settings(settings, reuse=None):
        (message,) = w009()
    assert "CELERY_DB_REUSE_MAX is not set" in message


def test_the_check_is_quiet_on_sqlite_and_when_tasks_run_eagerly(settings):
    with worker_settings(settings, max_age=0, reuse=None, engine="sqlite3"):
        assert w009() == []
    with worker_settings(settings, max_age=0, reuse=None), eager(True):
        assert w009() == []
