"""Nothing silently stuck: a callback that could not be queued, or whose message was lost, is verified by
the sweep; what cannot be verified shows up in the system checks and the admin.

The worker suite (tests/worker/test_durability.py) proves the same against real worker crashes and
PostgreSQL and Redis outages; these tests pin each rule down in eager mode.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from celery import Celery, _state
from celery.exceptions import Retry
from django.core.checks import run_checks
from django.core.management import call_command
from django.db import OperationalError
from django.test import override_settings
from django.utils import timezone

from django_paycollect import tasks
from django_paycollect.models import ReceivedCallback, Transaction
from django_paycollect.sandbox.envelope import dumps
from django_paycollect.schedules import BEAT_SCHEDULE
from django_paycollect.services import callback_ledger
from django_paycollect.services.callback_ledger import stuck_filter
from django_paycollect.tasks import callbacks as callback_tasks
from tests.servers import free_port
from tests.support.payments import CALLBACK_TOKEN

ROOT = Path(__file__).resolve().parents[2]
URL = f"/paycollect/callback/{CALLBACK_TOKEN}/"
CB = ReceivedCallback


def post(client: Any, uuid: str, status: str = "SUCCESSFUL") -> Any:
    body = {"transaction_uuid": uuid, "transaction_status": status}
    return client.post(URL, data=dumps(body), content_type="application/json")


@contextmanager
def no_celery_app() -> Iterator[Celery]:
    """This process as in a project whose Celery app is never imported: tasks go to Celery's fallback app
    (created exactly as Celery creates it), whose broker is a closed port here instead of localhost:5672."""
    saved = (_state.default_app, _state._tls.current_app)
    fallback = Celery("default", fixups=[], set_as_current=False, loader="default")
    fallback.conf.broker_url = f"amqp://guest:guest@127.0.0.1:{free_port()}//"
    fallback.conf.broker_connection_timeout = 1
    _state.set_default_app(fallback)
    _state._tls.current_app = None
    try:
        yield fallback
    finally:
        _state.set_default_app(saved[0])
        _state._tls.current_app = saved[1]
        fallback.close()


# --- the missing Celery app -------------------------------------------------------------------------------


def test_the_newcomers_setup_without_a_celery_app_is_a_system_check_error():
    """Set up from the README (the app, PAYCOLLECT, urls, CELERY_TASK_ALWAYS_EAGER) without a Celery app."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "django", "check", "--settings=tests.newcomer_settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(paycollect.E009) Callbacks cannot be verified" in done.stderr
    assert "CELERY_TASK_ALWAYS_EAGER is True, but no Celery app reads Django settings" in done.stderr


def app_checks() -> list:
    # databases=[]: from Django 6.1 on, model checks would otherwise open a connection.
    return run_checks(include_deployment_checks=False, databases=[])


def callbacks_check_ids() -> list[str]:
    return [m.id for m in app_checks() if m.id == "paycollect.E009"]


def test_the_check_passes_with_the_projects_celery_app_and_fires_without_it():
    assert callbacks_check_ids() == []  # tests/celery_app.py, configured from settings, is loaded
    with no_celery_app():
        assert callbacks_check_ids() == ["paycollect.E009"]
    with no_celery_app() as fallback:
        fallback.conf.task_always_eager = True  # inline on the app the tasks use: nothing is lost
        assert callbacks_check_ids() == []


@pytest.mark.django_db(transaction=True)
def test_without_a_celery_app_a_callback_says_why_it_waits_and_the_sweep_verifies_it(
    client, admin_client, paycollect_live, pay
):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    with no_celery_app():
        assert post(client, txn.uuid).status_code == 200  # stored: the sender need not send it again
        # Handed to the publisher's thread (the fallback app is not eager), which finds no broker.
        assert callback_tasks.publisher.flush(timeout=30)
    callback = CB.objects.get()
    assert callback.state == CB.RECEIVED
    assert callback.attempts == 0
    assert "could not be queued for verification" in callback.error
    assert "OperationalError" in callback.error
    page = admin_client.get(f"/admin/paycollect/receivedcallback/{callback.pk}/change/").content.decode()
    assert "could not be queued for verification" in page
    listing = admin_client.get("/admin/paycollect/receivedcallback/", {"waiting": "stuck"})
    assert list(listing.context["cl"].result_list) == [callback]
    assert "stuck: the sweep queues it again" in listing.content.decode()

    # With the project's app back (the fix), the next sweep verifies it.
    assert tasks.sweep_callbacks.apply().get()["requeued"] == 1
    callback.refresh_from_db()
    assert callback.state == CB.PROCESSED
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.SUCCESSFUL


# --- queueing that fails, and the sweep -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_callback_whose_queueing_failed_is_verified_by_the_next_sweep(
    client, paycollect_live, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    down = ConnectionRefusedError("broker down")
    with mock.patch.object(tasks.process_callbacks, "apply_async", side_effect=down):
        assert post(client, txn.uuid).status_code == 200
    callback = CB.objects.get()
    assert callback.state == CB.RECEIVED
    assert "ConnectionRefusedError: broker down" in callback.error
    with mock.patch.object(
        tasks.process_callbacks, "apply_async", side_effect=ConnectionRefusedError("still down")
    ):
        # A sweep while the broker is still down leaves it received, with the new reason.
        assert callback_tasks.sweep().requeued == [callback.pk]
    callback.refresh_from_db()
    assert callback.state == CB.RECEIVED
    assert "ConnectionRefusedError: still down" in callback.error

    result = callback_tasks.sweep()
    assert result.requeued == [callback.pk]
    callback.refresh_from_db()
    assert callback.state == CB.PROCESSED
    assert callback.error == ""
    assert signal_log.count("payment_succeeded") == 1
    assert callback_tasks.sweep().requeued == []


def stored(state: str, due_ago: dt.timedelta | None, **fields: Any) -> ReceivedCallback:
    now = timezone.now()
    fields.setdefault("transaction_uuid", "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60")
    fields.setdefault("claimed_status", "SUCCESSFUL")
    return CB.objects.create(
        state=state,
        received_at=now - dt.timedelta(hours=1),
        next_attempt_at=None if due_ago is None else now - due_ago,
        **fields,
    )


@pytest.mark.django_db
def test_the_sweep_queues_again_exactly_the_stuck_callbacks(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_REQUEUE_AFTER": 120}
    minute, hour = dt.timedelta(minutes=1), dt.timedelta(hours=1)
    stuck = [
        stored(CB.RECEIVED, minute),  # queueing failed: at once
        stored(CB.RECEIVED, None),
        stored(CB.QUEUED, hour),  # its worker died, or the broker lost it
        stored(CB.QUEUED, None),  # an older row: received an hour ago
    ]
    left = [
        stored(CB.QUEUED, minute),  # due a minute ago: its worker may be on it
        stored(CB.QUEUED, -hour),  # a retry due in an hour
        stored(CB.FAILED, hour),
        stored(CB.PROCESSED, hour),
        stored(CB.DUPLICATE, hour),
        stored(CB.INVALID, hour),
    ]
    assert set(CB.objects.filter(stuck_filter()).values_list("pk", flat=True)) == {c.pk for c in stuck}
    with mock.patch.object(tasks.process_callbacks, "apply_async") as publish:
        first = callback_tasks.sweep(limit=3)
        second = callback_tasks.sweep()
        third = callback_tasks.sweep()
    oldest_first = [stuck[1].pk, stuck[2].pk, stuck[3].pk]  # due an hour ago, in the order they fell due
    assert first.requeued == oldest_first
    assert second.requeued == [stuck[0].pk]
    assert third.requeued == []  # each is queued again once per CALLBACK_REQUEUE_AFTER
    assert [c.args for c in publish.call_args_list] == [((first.requeued,),), ((second.requeued,),)]
    requeued = CB.objects.filter(pk__in=[c.pk for c in stuck], state=CB.QUEUED)
    assert requeued.filter(next_attempt_at__gte=timezone.now() - minute).count() == len(stuck)
    for callback in left:
        before = callback.state, callback.next_attempt_at
        callback.refresh_from_db()
        assert (callback.state, callback.next_attempt_at) == before


@pytest.mark.django_db
def test_the_sweep_publishes_its_callbacks_together_and_stops_at_the_first_refusal():
    stuck = [stored(CB.RECEIVED, dt.timedelta(minutes=1)) for _ in range(25)]
    ids = [c.pk for c in stuck]
    per_message = tasks.callbacks.CALLBACKS_PER_TASK
    with mock.patch.object(tasks.process_callbacks, "apply_async") as publish:
        assert callback_tasks.sweep().requeued == ids
    assert [c.args[0][0] for c in publish.call_args_list] == [
        ids[:per_message],
        ids[per_message : 2 * per_message],
        ids[2 * per_message :],
    ]
    assert set(CB.objects.values_list("state", flat=True)) == {CB.QUEUED}

    # The broker takes the first message, then refuses: it is asked once more, not once per callback.
    CB.objects.update(state=CB.RECEIVED)
    refused = [None, ConnectionRefusedError("broker down")]
    with mock.patch.object(tasks.process_callbacks, "apply_async", side_effect=refused) as publish:
        assert callback_tasks.sweep().requeued == ids
    assert publish.call_count == 2
    assert (
        list(CB.objects.filter(state=CB.QUEUED).order_by("pk").values_list("pk", flat=True))
        == ids[:per_message]
    )
    left = CB.objects.filter(pk__in=ids[per_message:])
    assert set(left.values_list("state", flat=True)) == {CB.RECEIVED}
    assert all(
        "(ConnectionRefusedError: broker down)" in error for error in left.values_list("error", flat=True)
    )


def test_the_sweep_runs_every_minute_from_the_beat_schedule():
    entry = BEAT_SCHEDULE["paycollect-sweep-callbacks"]
    assert entry["task"] == tasks.sweep_callbacks.name == "paycollect.sweep_callbacks"
    assert entry["schedule"] == dt.timedelta(minutes=1)
    assert entry["options"]["expires"] < 60


@pytest.mark.django_db(transaction=True)
def test_the_command_stuck_verifies_what_the_sweep_would(paycollect_live, pay, capsys):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    lost = stored(CB.QUEUED, dt.timedelta(hours=1), transaction_uuid=txn.uuid)
    recent = stored(CB.QUEUED, dt.timedelta(seconds=1), transaction_uuid=txn.uuid, claimed_status="PAID")
    call_command("paycollect_process_callbacks", "--stuck")
    out = capsys.readouterr().out
    assert f"callback #{lost.pk} ({txn.uuid} claims SUCCESSFUL): processed" in out
    assert "Processed 1 callback(s): 1 processed." in out
    lost.refresh_from_db()
    recent.refresh_from_db()
    assert (lost.state, recent.state) == (CB.PROCESSED, CB.QUEUED)


# --- what the checks and the admin show ---------------------------------------------------------------------


@pytest.mark.django_db
def test_the_database_checks_report_stuck_and_failed_callbacks(admin_client):
    def ids() -> list[str]:
        found = run_checks(databases=["default"])
        return sorted(m.id for m in found if m.id in ("paycollect.W005", "paycollect.W006"))

    assert ids() == []
    waiting = stored(CB.QUEUED, dt.timedelta(minutes=1))
    assert ids() == []  # waiting, not stuck
    stuck = stored(CB.QUEUED, dt.timedelta(hours=2))
    assert ids() == ["paycollect.W005"]
    stored(CB.FAILED, None, error="NotFoundError: not found")
    assert ids() == ["paycollect.W005", "paycollect.W006"]

    listing = admin_client.get("/admin/paycollect/receivedcallback/", {"waiting": "stuck"})
    assert list(listing.context["cl"].result_list) == [stuck]
    page = listing.content.decode()
    assert "2\xa0hours (stuck: the sweep queues it again)" in page
    listing = admin_client.get("/admin/paycollect/receivedcallback/", {"waiting": "yes"})
    assert set(listing.context["cl"].result_list) == {stuck, waiting}
    assert admin_client.get(f"/admin/paycollect/receivedcallback/{stuck.pk}/change/").status_code == 200


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("CALLBACK_REQUEUE_AFTER", 0),
        ("CALLBACK_REQUEUE_AFTER", "5m"),
        ("CALLBACK_REQUEUE_AFTER", float("nan")),
        ("CALLBACK_FETCH_INTERVAL", -1),
        ("CALLBACK_FETCH_INTERVAL", None),
        ("CALLBACK_FETCH_INTERVAL", True),
        ("RECONCILE_GIVE_UP_AFTER", 0),
        ("RECONCILE_GIVE_UP_AFTER", "7d"),
        ("RECONCILE_CONCURRENCY", 0),
        ("CALLBACK_PUBLISH_BUFFER", -1),
        ("CALLBACK_PUBLISH_BUFFER", 1e4),
        ("CALLBACK_PUBLISH_LINGER", -0.1),
        ("CALLBACK_PUBLISH_LINGER", "10ms"),
    ],
)
def test_the_sweep_age_and_the_fetch_interval_must_be_numbers_of_seconds(settings, key, value):
    with override_settings(PAYCOLLECT={**settings.PAYCOLLECT, key: value}):
        messages = [m for m in app_checks() if m.id == "paycollect.E010"]
    assert len(messages) == 1
    assert key in messages[0].msg


def test_the_defaults_pass_the_checks():
    assert [m.id for m in app_checks() if m.id == "paycollect.E010"] == []


# --- database errors are retried, never recorded as final -------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["verification", "recording the failure"])
def test_a_database_error_is_retried_and_the_callback_left_waiting(where):
    """Worker-side (not eager): the message is retried, the row stays queued for the sweep."""
    callback = stored(CB.QUEUED, dt.timedelta(seconds=1))
    down = OperationalError("server closed the connection unexpectedly")
    with ExitStack() as stack:
        retry = stack.enter_context(
            mock.patch.object(tasks.process_callbacks, "retry", side_effect=Retry("retry", down))
        )
        if where == "verification":
            stack.enter_context(mock.patch.object(callback_ledger, "verify_callback", side_effect=down))
        else:
            stack.enter_context(
                mock.patch.object(callback_ledger, "verify_callback", side_effect=RuntimeError("bug"))
            )
            stack.enter_context(mock.patch.object(callback_ledger, "callback_failed", side_effect=down))
        tasks.process_callbacks.push_request(id="t-db-down", retries=0, is_eager=False)
        stack.callback(tasks.process_callbacks.pop_request)
        with pytest.raises(Retry):
            tasks.process_callbacks.run([callback.pk])
    assert retry.call_args.kwargs["countdown"] == callback_tasks.CALLBACK_DATABASE_RETRY_DELAYS[0]
    callback.refresh_from_db()
    assert callback.state == CB.QUEUED
    assert callback.error == ""
