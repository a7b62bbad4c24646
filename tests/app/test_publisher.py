"""The web process's callback publisher (``tasks.callbacks.publisher``): the request hands a committed
callback on and returns; a thread publishes what waits, together, at most once per linger; a full buffer,
a failed publish, a fork and the process's exit each lose nothing. Then the task that verifies a batch
(``paycollect.process_callbacks``) and what the callback view hands it (``tasks.hand_on``)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any
from unittest import mock

import pytest
from celery.exceptions import Retry
from django.db import OperationalError
from django.utils import timezone

from django_paycollect import tasks
from django_paycollect.models import ReceivedCallback
from django_paycollect.services import callback_ledger
from django_paycollect.services.callback_ledger import Verification, store_callback
from django_paycollect.tasks import callbacks as callback_tasks
from django_paycollect.tasks import outbox
from django_paycollect.tasks.outbox import MAX_IDS_PER_MESSAGE, Publisher
from tests.example_project import ROOT
from tests.support.callbacks import body_for, post
from tests.support.celery import eager

CB = ReceivedCallback
#: The callback view's hand-on runs after the commit: these tests commit.
committed = pytest.mark.django_db(transaction=True)


class Broker:
    """What the publisher sends, message by message; ``hold`` keeps every publish waiting until released."""

    def __init__(self) -> None:
        self.messages: list[tuple[float, list[int]]] = []
        self.failures: list[tuple[list[int], BaseException]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.error: BaseException | None = None

    def publish(self, ids: list[int]) -> None:
        self.hold.wait(10)
        if self.error is not None:
            raise self.error
        self.messages.append((time.monotonic(), list(ids)))

    def not_queued(self, ids: list[int], error: BaseException) -> None:
        self.failures.append((list(ids), error))

    def published(self) -> list[int]:
        return [pk for _, ids in self.messages for pk in ids]


@pytest.fixture
def broker() -> Broker:
    return Broker()


@pytest.fixture
def make_publisher(broker: Broker) -> Iterator[Callable[..., Publisher]]:
    made: list[Publisher] = []

    def make(capacity: int = 100, linger: float = 0.05) -> Publisher:
        publisher = Publisher(
            broker.publish, broker.not_queued, capacity=lambda: capacity, linger=lambda: linger
        )
        made.append(publisher)
        return publisher

    yield make
    broker.hold.set()
    for publisher in made:
        publisher.close(timeout=5)


def test_a_callback_after_a_quiet_spell_is_published_at_once(make_publisher, broker):
    publisher = make_publisher(linger=10.0)
    submitted = time.monotonic()
    assert publisher.submit(1)
    assert publisher.flush(timeout=5)
    [(sent, ids)] = broker.messages
    assert ids == [1]
    assert sent - submitted < 0.5  # milliseconds in practice; the bound allows for a loaded machine


def test_a_burst_goes_in_one_message_after_the_linger(make_publisher, broker):
    publisher = make_publisher(linger=0.3)
    publisher.submit(1)
    assert publisher.flush(timeout=5)
    for pk in range(2, 52):
        assert publisher.submit(pk)
    assert publisher.flush(timeout=5)
    assert [ids for _, ids in broker.messages] == [[1], list(range(2, 52))]
    (first, _), (second, _) = broker.messages
    assert second - first >= 0.3  # at most one publish per linger
    assert publisher.stats.messages == 2
    assert publisher.stats.published == publisher.stats.submitted == 51


def test_a_full_message_goes_without_waiting_for_the_linger(make_publisher, broker):
    publisher = make_publisher(capacity=5000, linger=30.0)
    publisher.submit(0)
    assert publisher.flush(timeout=5)
    for pk in range(1, 2 * MAX_IDS_PER_MESSAGE + 1):
        publisher.submit(pk)
    deadline = time.monotonic() + 5
    while len(broker.published()) < 2 * MAX_IDS_PER_MESSAGE + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [len(ids) for _, ids in broker.messages] == [1, MAX_IDS_PER_MESSAGE, MAX_IDS_PER_MESSAGE]
    assert broker.published() == list(range(2 * MAX_IDS_PER_MESSAGE + 1))


def test_the_buffer_is_bounded(make_publisher, broker):
    publisher = make_publisher(capacity=3, linger=0.0)
    broker.hold.clear()  # the broker is slow: the first message is on its way, and three wait
    assert publisher.submit(1)
    deadline = time.monotonic() + 5
    while publisher.waiting() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert [publisher.submit(pk) for pk in (2, 3, 4, 5)] == [True, True, True, False]
    assert publisher.stats.refused == 1
    broker.hold.set()
    assert publisher.flush(timeout=5)
    assert broker.published() == [1, 2, 3, 4]


def test_a_failed_publish_records_every_callback_of_the_message(make_publisher, broker, caplog):
    publisher = make_publisher()
    broker.error = ConnectionRefusedError("broker down")
    for pk in (7, 8, 9):
        publisher.submit(pk)
    assert publisher.flush(timeout=5)
    # However the thread's timing split them into messages, each callback of a failed one is recorded once.
    failed = [ids for ids, _ in broker.failures]
    assert [pk for ids in failed for pk in ids] == [7, 8, 9]
    assert all(failed)
    assert all(isinstance(error, ConnectionRefusedError) for _, error in broker.failures)
    assert publisher.stats.not_queued == 3
    assert "could not be queued for verification" in caplog.text
    broker.error = None
    publisher.submit(10)
    assert publisher.flush(timeout=5)
    assert broker.published() == [10]  # the thread goes on


def test_exit_publishes_what_waits_and_counts_what_it_could_not(make_publisher, broker, caplog):
    publisher = make_publisher(linger=60.0)
    publisher.submit(1)
    assert publisher.flush(timeout=5)
    publisher.submit(2)
    publisher.submit(3)
    assert publisher.close(timeout=5) == 0  # the exit cuts the linger short
    assert broker.published() == [1, 2, 3]
    assert not publisher.submit(4)  # exiting: the caller publishes it itself

    stuck = make_publisher(linger=60.0)
    broker.hold.clear()
    stuck.submit(5)
    stuck.submit(6)
    with caplog.at_level(logging.WARNING):
        assert stuck.close(timeout=0.2) >= 1
    assert "they stay queued, and the sweep queues them again" in caplog.text


def test_the_first_callback_starts_the_thread_and_registers_the_fork_and_exit_hooks_once(make_publisher):
    with (
        mock.patch.object(outbox.os, "register_at_fork") as at_fork,
        mock.patch.object(outbox.atexit, "register") as at_exit,
    ):
        before = set(threading.enumerate())
        publisher = make_publisher()
        assert set(threading.enumerate()) == before  # made: nothing runs yet
        assert not at_fork.called
        assert not at_exit.called
        publisher.submit(1)
        publisher.submit(2)
        assert publisher.flush(timeout=5)
        publisher.after_fork_in_child()  # as in a forked child, which inherits the hooks
        publisher.submit(3)
        assert publisher.flush(timeout=5)
    at_fork.assert_called_once_with(after_in_child=publisher.after_fork_in_child)
    at_exit.assert_called_once_with(publisher.close)


IMPORT_THE_APP = """
import atexit, json, os, sys, threading
registered = []
os.register_at_fork = lambda **hooks: registered.append(("fork", repr(hooks)))
atexit.register = lambda function, *args, **kwargs: registered.append(("exit", repr(function))) or function
looked_up = []

class NoUwsgi:
    def find_spec(self, name, path=None, target=None):
        if name == "uwsgi":
            looked_up.append(name)
        return None

sys.meta_path.insert(0, NoUwsgi())
import django
django.setup()
before = set(threading.enumerate())
import django_paycollect.admin, django_paycollect.intake.views, django_paycollect.tasks
import django_paycollect.urls
from django.urls import reverse
reverse("paycollect:callback", args=["token"])
started = [t.name for t in set(threading.enumerate()) - before]
ours = [entry for entry in registered if "django_paycollect" in entry[1] or "Publisher" in entry[1]]
print(json.dumps({"hooks": ours, "threads": started, "uwsgi": looked_up}))
"""


def test_importing_the_app_starts_no_thread_registers_no_hook_and_reads_no_uwsgi_option():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(  # noqa: S603 (our own script)
        [sys.executable, "-c", IMPORT_THE_APP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"hooks": [], "threads": [], "uwsgi": []}


# The fork is the point: the parent's publisher thread is running, and the child must start its own.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_a_forked_child_publishes_its_own_callbacks_and_never_its_parents(make_publisher, broker):
    publisher = make_publisher(linger=60.0)
    publisher.submit(1)
    assert publisher.flush(timeout=5)
    publisher.submit(2)  # waits in the parent for the linger
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what its publisher sent, then leave at once
        try:
            publisher.submit(3)
            ok = publisher.flush(timeout=5)
            report = f"{ok} {broker.published()} {publisher.stats.submitted}"
        except BaseException as exc:  # pragma: no cover (reported to the parent)
            report = f"error {exc!r}"
        os.write(write, report.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        report = pipe.read()
    os.waitpid(pid, 0)
    assert report == "True [1, 3] 1"  # the parent's 1 was sent before the fork; its 2 is not the child's
    assert publisher.close(timeout=5) == 0
    assert broker.published() == [1, 2]


# --- what the callback view hands on ------------------------------------------------------------------


@pytest.fixture
def not_eager() -> Iterator[None]:
    """Celery with a broker, as in production (the tests' app is eager)."""
    with eager(False):
        yield


@committed
def test_eager_celery_verifies_in_the_request_as_before(client):
    with (
        mock.patch.object(tasks.process_callbacks, "apply_async") as publish,
        mock.patch.object(outbox.Publisher, "submit") as submit,
    ):
        assert post(client, body_for()).status_code == 200
    publish.assert_called_once_with(([CB.objects.get().pk],))
    submit.assert_not_called()


@committed
def test_with_a_broker_the_request_only_hands_the_callback_to_the_publisher(client, not_eager):
    with (
        mock.patch.object(tasks.process_callbacks, "apply_async") as publish,
        mock.patch.object(callback_tasks.publisher, "submit", return_value=True) as submit,
    ):
        assert post(client, body_for()).status_code == 200
    submit.assert_called_once_with(CB.objects.get().pk)
    publish.assert_not_called()
    assert CB.objects.get().state == CB.QUEUED


@committed
@pytest.mark.parametrize("why", ["buffer full", "buffer off"])
def test_a_callback_the_buffer_cannot_take_is_published_in_its_request(
    client, not_eager, settings, caplog, why
):
    if why == "buffer off":
        settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_PUBLISH_BUFFER": 0}
    full = mock.patch.object(callback_tasks.publisher, "submit", return_value=False)
    with mock.patch.object(tasks.process_callbacks, "apply_async") as publish, full as submit:
        assert post(client, body_for()).status_code == 200
    publish.assert_called_once_with(([CB.objects.get().pk],))
    if why == "buffer full":
        submit.assert_called_once()
        assert (
            "wait to be handed to the worker (CALLBACK_PUBLISH_BUFFER); published in its request"
            in caplog.text
        )
    else:
        submit.assert_not_called()


@pytest.fixture
def under_uwsgi(monkeypatch) -> Iterator[Callable[[dict[str, Any]], None]]:
    """This process as a uWSGI worker started with the given options (``uwsgi.opt``)."""

    def started_with(options: dict[str, Any]) -> None:
        module = type(os)("uwsgi")
        module.opt = options  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "uwsgi", module)
        outbox.threads_run.cache_clear()

    yield started_with
    outbox.threads_run.cache_clear()


@committed
@pytest.mark.parametrize(
    ("options", "publisher"),
    [
        ({}, False),
        ({"enable-threads": True}, True),  # a bare flag
        ({"enable-threads": b"true"}, True),
        ({"enable-threads": b"false"}, False),
        ({"threads": b"4"}, True),
        ({"threads": b"1"}, False),  # one thread per worker turns no threading on
        ({"threads": [b"1", b"2"]}, True),  # given twice: the last wins
        ({"master": True, "processes": b"4"}, False),
    ],
)
def test_under_uwsgi_without_threads_callbacks_are_published_in_their_request(
    client, not_eager, under_uwsgi, caplog, options, publisher
):
    under_uwsgi(options)
    with (
        mock.patch.object(tasks.process_callbacks, "apply_async") as publish,
        mock.patch.object(callback_tasks.publisher, "submit", return_value=True) as submit,
    ):
        for uuid in ("3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60", "7d1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f61"):
            assert post(client, body_for(uuid)).status_code == 200
    ids = list(CB.objects.order_by("pk").values_list("pk", flat=True))
    if publisher:
        assert [c.args for c in submit.call_args_list] == [(pk,) for pk in ids]
        publish.assert_not_called()
    else:
        assert [c.args for c in publish.call_args_list] == [(([pk],),) for pk in ids]
        submit.assert_not_called()
    warnings = [
        r for r in caplog.records if "uWSGI runs this process without Python threads" in r.getMessage()
    ]
    assert len(warnings) == (0 if publisher else 1)  # once per process, not per callback


@committed
def test_a_broken_publisher_never_turns_the_answer_into_an_error(client, not_eager, caplog):
    broken = mock.patch.object(callback_tasks.publisher, "submit", side_effect=RuntimeError("broken"))
    with broken, mock.patch.object(tasks.process_callbacks, "apply_async") as publish:
        assert post(client, body_for()).status_code == 200
    publish.assert_called_once_with(([CB.objects.get().pk],))
    assert "the publisher could not take it; published in its request" in caplog.text


@committed
def test_a_publish_that_fails_leaves_the_callbacks_received_for_the_sweep(client, not_eager, settings):
    """The real publisher and the ledger: the broker refuses, the rows say why, and the sweep takes them."""
    # The broker answers once both are stored: the in-memory SQLite of the tests allows one writer at a time.
    stored = threading.Event()

    def refuse(*args: Any, **kwargs: Any) -> None:
        stored.wait(10)
        raise ConnectionRefusedError("broker down")

    with mock.patch.object(tasks.process_callbacks, "apply_async", side_effect=refuse):
        for uuid in ("3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60", "7d1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f61"):
            assert post(client, body_for(uuid)).status_code == 200
        stored.set()
        assert callback_tasks.publisher.flush(timeout=10)
    assert set(CB.objects.values_list("state", flat=True)) == {CB.RECEIVED}
    for error in CB.objects.values_list("error", flat=True):
        assert "could not be queued for verification" in error
        assert "(ConnectionRefusedError: broker down); the sweep queues it again" in error
    with mock.patch.object(tasks.process_callbacks, "apply_async") as publish:
        requeued = callback_tasks.sweep().requeued
    assert sorted(requeued) == sorted(CB.objects.values_list("pk", flat=True))
    publish.assert_called_once_with((requeued,))


@committed
def test_a_callback_stored_and_never_published_is_found_by_the_sweep(client, not_eager, settings):
    """The process died between the commit and the publish: the row stays queued, and once overdue by
    CALLBACK_REQUEUE_AFTER the sweep queues it again."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_REQUEUE_AFTER": 60}
    with mock.patch.object(
        callback_tasks.publisher, "submit", return_value=True
    ):  # taken, then lost with the process
        assert post(client, body_for()).status_code == 200
    callback = CB.objects.get()
    assert callback.state == CB.QUEUED
    with mock.patch.object(tasks.process_callbacks, "apply_async") as publish:
        assert callback_tasks.sweep().requeued == []  # its worker may still be on it
        later = timezone.now() + dt.timedelta(seconds=61)
        with mock.patch.object(callback_ledger.timezone, "now", return_value=later):
            assert callback_tasks.sweep().requeued == [callback.pk]
    publish.assert_called_once_with(([callback.pk],))


# --- the task that verifies a batch ---------------------------------------------------------------------


def queued(n: int) -> list[int]:
    now = timezone.now()
    return [
        CB.objects.create(
            state=CB.QUEUED,
            transaction_uuid=f"3f1c2a9e-8b7d-4c6e-9f0a-{index:012d}",
            claimed_status="SUCCESSFUL",
            received_at=now,
            queued_at=now,
            next_attempt_at=now,
        ).pk
        for index in range(n)
    ]


def run_in_worker(stack: ExitStack, task: Any, *args: Any) -> Any:
    """Run ``task`` as a worker would (not eager), here."""
    task.push_request(id="t-batch", retries=0, is_eager=False)
    stack.callback(task.pop_request)
    return task.run(*args)


@pytest.mark.django_db(transaction=True)
def test_a_batch_is_verified_callback_by_callback(paycollect_live, pay, signal_log):
    txns = [pay(f"{10 + n}.00") for n in range(3)]
    for txn in txns:
        paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    ids = [store_callback(transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL").callback_id for txn in txns]
    assert tasks.process_callbacks.apply(args=[ids]).get() == {CB.PROCESSED: 3}
    assert set(CB.objects.values_list("state", flat=True)) == {CB.PROCESSED}
    assert signal_log.count("payment_succeeded") == 3


@pytest.mark.django_db
def test_a_large_batch_is_shared_out_among_the_workers():
    ids = queued(tasks.callbacks.CALLBACKS_PER_TASK * 2 + 5)
    done = Verification(CB.PROCESSED)
    with ExitStack() as stack:
        verify = stack.enter_context(mock.patch.object(callback_tasks, "run_verification", return_value=done))
        sent = stack.enter_context(mock.patch.object(tasks.process_callbacks, "apply_async"))
        assert run_in_worker(stack, tasks.process_callbacks, ids) == {CB.PROCESSED: 10}
    assert [c.args[0] for c in verify.call_args_list] == ids[:10]
    assert [c.args[0] for c in sent.call_args_list] == [(ids[10:20],), (ids[20:],)]


@pytest.mark.django_db
def test_a_batch_that_cannot_be_shared_out_leaves_the_rest_received(caplog):
    ids = queued(tasks.callbacks.CALLBACKS_PER_TASK + 3)
    with ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(callback_tasks, "run_verification", return_value=Verification(CB.PROCESSED))
        )
        stack.enter_context(
            mock.patch.object(
                tasks.process_callbacks, "apply_async", side_effect=ConnectionRefusedError("down")
            )
        )
        run_in_worker(stack, tasks.process_callbacks, ids)
    assert list(CB.objects.filter(state=CB.RECEIVED).values_list("pk", flat=True).order_by("pk")) == ids[10:]


@pytest.mark.django_db
def test_a_callback_that_must_wait_goes_on_alone_and_the_batch_does_not_wait():
    ids = queued(3)
    results = {
        ids[0]: Verification(CB.PROCESSED),
        ids[1]: Verification(CB.QUEUED, retry_in=4.5),  # deferred: fetched moments ago
        ids[2]: Verification(CB.FAILED),
    }
    with ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(callback_tasks, "run_verification", side_effect=lambda pk, **kw: results[pk])
        )
        later = stack.enter_context(mock.patch.object(tasks.process_callbacks, "apply_async"))
        states = run_in_worker(stack, tasks.process_callbacks, ids)
    assert states == {CB.PROCESSED: 1, CB.QUEUED: 1, CB.FAILED: 1}
    later.assert_called_once_with(([ids[1]],), countdown=4.5)


@pytest.mark.django_db
def test_a_database_down_mid_batch_retries_the_callbacks_not_verified_yet():
    ids = queued(4)
    down = OperationalError("server closed the connection unexpectedly")
    seen: list[int] = []

    def verify(pk: int, **kwargs: Any) -> Verification:
        seen.append(pk)
        if pk == ids[2]:
            raise down
        return Verification(CB.PROCESSED)

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(callback_tasks, "run_verification", side_effect=verify))
        retry = stack.enter_context(
            mock.patch.object(tasks.process_callbacks, "retry", side_effect=Retry("retry", down))
        )
        with pytest.raises(Retry):
            run_in_worker(stack, tasks.process_callbacks, ids)
    assert seen == ids[:3]
    assert retry.call_args.kwargs["args"] == [ids[2:]]
    assert retry.call_args.kwargs["kwargs"] == {}
    assert retry.call_args.kwargs["countdown"] == callback_tasks.CALLBACK_DATABASE_RETRY_DELAYS[0]
    assert set(CB.objects.filter(pk__in=ids[2:]).values_list("state", flat=True)) == {CB.QUEUED}


@pytest.mark.django_db
def test_a_persons_verify_again_is_published_in_the_request_and_forced(not_eager):
    (pk,) = queued(1)
    with (
        mock.patch.object(tasks.process_callbacks, "apply_async") as publish,
        mock.patch.object(callback_tasks.publisher, "submit", return_value=True) as submit,
    ):
        tasks.hand_on(pk, force=True)
    publish.assert_called_once_with(([pk], True))
    submit.assert_not_called()


@pytest.mark.django_db
def test_a_forced_batch_is_verified_forced_and_a_callback_that_waits_stays_forced():
    ids = queued(2)
    results = {
        ids[0]: Verification(CB.PROCESSED),
        ids[1]: Verification(CB.QUEUED, retry_in=30),
    }
    with ExitStack() as stack:
        verify = stack.enter_context(
            mock.patch.object(callback_tasks, "run_verification", side_effect=lambda pk, **kw: results[pk])
        )
        later = stack.enter_context(mock.patch.object(tasks.process_callbacks, "apply_async"))
        run_in_worker(stack, tasks.process_callbacks, ids, True)
    assert [c.kwargs["force"] for c in verify.call_args_list] == [True, True]
    later.assert_called_once_with(([ids[1]], True), countdown=30)
