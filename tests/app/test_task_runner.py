"""PAYCOLLECT["TASK_RUNNER"] = "django": the app's jobs on Django's task framework, in this process.

The callback's task row is written in the transaction that stores the callback (django-tasks-db's backend),
a retry is the same task enqueued again at the same delay (``run_after``), the immediate backend verifies in
the request, and the checks refuse a TASKS setting that cannot run the jobs. The worker processes
(``manage.py db_worker``) are tests/worker's.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from django_paycollect import checks, tasks
from django_paycollect.models import ReceivedCallback, Transaction, TransactionStatusChange
from django_paycollect.services.callback_ledger import CALLBACK_RETRY_DELAYS, store_callback
from django_paycollect.tasks import runners
from tests.support.callbacks import body_for, post

pytest.importorskip("django_tasks_db", reason='needs the "tasks" extra (django-tasks-db)')
from django_tasks_db.models import DBTaskResult

CB = ReceivedCallback
DATABASE_BACKEND = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
PROCESS_CALLBACKS = "django_paycollect.tasks.on_django.process_callbacks"


def immediate_backend() -> dict[str, Any]:
    return {"default": {"BACKEND": f"{runners.framework().__name__}.backends.immediate.ImmediateBackend"}}


@pytest.fixture
def on_django(settings: Any) -> Any:
    """The Django runner on django-tasks-db's backend, no Celery app needed."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "django"}
    settings.TASKS = DATABASE_BACKEND
    return settings


def django_tasks() -> Any:
    """The app's Django tasks (imported when used: defining them validates them against TASKS)."""
    from django_paycollect.tasks import on_django

    return on_django


def run_worker() -> None:
    """What ``manage.py db_worker --batch`` does, in this process: every task due, then exit."""
    call_command("db_worker", batch=True, startup_delay=False, interval=0, verbosity=0, reload=False)


def successes(txn: Transaction) -> int:
    return TransactionStatusChange.objects.filter(transaction=txn, to_status=Transaction.SUCCESSFUL).count()


@pytest.mark.django_db(transaction=True)
def test_a_stored_callback_and_its_task_commit_together_and_one_db_worker_run_verifies_it(
    paycollect_in_process, pay, on_django, client
):
    sb = paycollect_in_process
    txn = pay("120.00")
    sb.control.complete(txn.uuid)

    assert post(client, body_for(txn.uuid)).status_code == 200
    callback = CB.objects.get()
    assert callback.state == CB.QUEUED  # stored, not verified in the request
    [row] = DBTaskResult.objects.all()
    assert (row.task_path, row.args_kwargs["args"]) == (PROCESS_CALLBACKS, [[callback.pk]])

    run_worker()
    callback.refresh_from_db()
    assert callback.state == CB.PROCESSED
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert successes(txn) == 1
    assert callback.task_id == str(row.pk)  # the task that verified it, as on Celery


@pytest.mark.django_db(transaction=True)
def test_a_callback_whose_storing_transaction_rolls_back_leaves_no_task_behind(on_django):
    def store_then_fail() -> None:
        with transaction.atomic(), tasks.handing_on() as hand_on:
            stored = store_callback(transaction_uuid=body_for()["transaction_uuid"], claimed_status="PAID")
            hand_on(stored.to_verify)
            assert DBTaskResult.objects.count() == 1  # written in the same transaction
            raise RuntimeError("the request failed after the callback was stored")

    with pytest.raises(RuntimeError):
        store_then_fail()
    assert not CB.objects.exists()
    assert not DBTaskResult.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_refused_enqueue_leaves_the_callback_stored_for_the_sweep(on_django, client, monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the task table is gone")

    monkeypatch.setattr(runners, "_enqueue", refuse)
    assert post(client, body_for()).status_code == 200
    callback = CB.objects.get()
    assert callback.state == CB.RECEIVED  # recorded not queued: the sweep queues it again
    assert "the task table is gone" in callback.error
    assert not DBTaskResult.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_verification_that_must_wait_is_the_same_task_again_due_after_the_same_delay(
    paycollect_in_process, pay, on_django, client
):
    sb = paycollect_in_process
    # A fetch moments ago would defer the second attempt: this test moves its due time, not the clock.
    on_django.PAYCOLLECT = {**on_django.PAYCOLLECT, "CALLBACK_FETCH_INTERVAL": 0}
    txn = pay("130.00")
    sb.control.complete(txn.uuid)
    sb.control.fault("fetch_transaction", "status", status=503, times=None)
    post(client, body_for(txn.uuid))
    before = timezone.now()
    run_worker()  # the service answers 503: the verification is retried later

    callback = CB.objects.get()
    assert callback.state == CB.QUEUED
    [retry] = DBTaskResult.objects.filter(status="READY")
    assert retry.task_path == PROCESS_CALLBACKS
    assert retry.args_kwargs["args"] == [[callback.pk]]
    delay = (retry.run_after - before).total_seconds()
    assert CALLBACK_RETRY_DELAYS[0] - 1 < delay < CALLBACK_RETRY_DELAYS[0] + 5

    sb.control.clear_faults()
    DBTaskResult.objects.filter(pk=retry.pk).update(run_after=timezone.now())  # as if the delay were over
    run_worker()
    callback.refresh_from_db()
    assert callback.state == CB.PROCESSED
    assert successes(Transaction.objects.get()) == 1


@pytest.mark.django_db(transaction=True)
def test_a_read_that_meets_the_service_down_is_retried_as_a_new_task_of_the_same_id(
    paycollect_in_process, on_django
):
    sb = paycollect_in_process
    sb.control.fault("prepare_amount", "status", status=503, times=None)
    first = django_tasks().prepare_amount.enqueue(amount="100.00")
    run_worker()
    assert DBTaskResult.objects.get(pk=first.id).return_value["retry_in"] > 0
    [retry] = DBTaskResult.objects.filter(status="READY")
    assert retry.args_kwargs["kwargs"] == {"amount": "100.00", "retries": 1, "first_id": str(first.id)}
    assert retry.run_after > timezone.now() + dt.timedelta(milliseconds=500)

    sb.control.clear_faults()
    DBTaskResult.objects.filter(pk=retry.pk).update(run_after=timezone.now())
    run_worker()
    retry.refresh_from_db()
    assert retry.status == "SUCCESSFUL"
    assert float(retry.return_value) > 100


@pytest.mark.django_db(transaction=True)
def test_the_immediate_backend_verifies_in_the_request_after_the_commit(
    paycollect_in_process, pay, settings, client
):
    sb = paycollect_in_process
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "django"}
    settings.TASKS = immediate_backend()
    txn = pay("140.00")
    sb.control.complete(txn.uuid)
    assert post(client, body_for(txn.uuid)).status_code == 200
    assert CB.objects.get().state == CB.PROCESSED
    assert successes(Transaction.objects.get()) == 1


@pytest.mark.django_db(transaction=True)
def test_the_sweep_and_reconciliation_run_as_django_tasks(paycollect_in_process, pay, on_django):
    sb = paycollect_in_process
    txn = pay("150.00")
    sb.control.complete(txn.uuid)
    stuck = CB.objects.create(
        state=CB.RECEIVED,
        transaction_uuid=txn.uuid,
        claimed_status="SUCCESSFUL",
        dedupe_key=f"{txn.uuid}|SUCCESSFUL",
        next_attempt_at=timezone.now() - dt.timedelta(hours=1),
    )
    django_tasks().sweep_callbacks.enqueue()
    run_worker()  # the sweep enqueues it, and the same run verifies it
    stuck.refresh_from_db()
    assert stuck.state == CB.PROCESSED

    reconciled = django_tasks().reconcile.enqueue(older_than="0s")
    run_worker()
    assert DBTaskResult.objects.get(pk=reconciled.id).return_value["errors"] == 0


@pytest.mark.django_db(transaction=True)
def test_reconciliation_fans_out_in_chunk_tasks_on_the_django_runner(
    paycollect_in_process, pay, on_django, monkeypatch
):
    monkeypatch.setattr("django_paycollect.reconciliation.steps.CHUNK_SIZE", 2)
    txns = [pay("10.00") for _ in range(3)]
    for txn in txns:
        paycollect_in_process.control.complete(txn.uuid)
    Transaction.objects.update(created_at=timezone.now() - dt.timedelta(hours=1))
    reconciled = django_tasks().reconcile.enqueue(older_than="0s")
    run_worker()  # the run, then its two chunks, each a task of its own

    assert DBTaskResult.objects.get(pk=reconciled.id).return_value["chunks"] == 2
    chunks = DBTaskResult.objects.filter(task_path="django_paycollect.tasks.on_django.reconcile_chunk")
    assert sorted(len(chunk.args_kwargs["args"][0]) for chunk in chunks) == [1, 2]
    assert {chunk.status for chunk in chunks} == {"SUCCESSFUL"}
    assert set(Transaction.objects.values_list("status", flat=True)) == {Transaction.SUCCESSFUL}


# --- the checks -------------------------------------------------------------------------------------------


def ids(messages: list[Any]) -> list[str]:
    return [message.id for message in messages]


def test_with_the_django_runner_no_celery_app_is_needed(on_django, monkeypatch):
    from celery import _state

    monkeypatch.setattr(_state, "get_current_app", lambda: pytest.fail("the Celery app was looked up"))
    assert checks.check_callbacks_can_be_verified() == []
    assert checks.check_worker_keeps_sessions() == []
    assert checks.check_task_runner() == []


def test_the_runner_is_one_of_two_words(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "rq"}
    assert "paycollect.E010" in ids(checks.check_settings())
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": " Django "}
    assert runners.runner() == "django"


@pytest.mark.parametrize(
    "tasks_setting",
    [
        {"other": DATABASE_BACKEND["default"]},
        {"default": {"BACKEND": "no.such.Backend"}},
        "dummy",
    ],
)
def test_a_tasks_setting_that_cannot_run_the_jobs_is_refused(settings, tasks_setting):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "django"}
    if tasks_setting == "dummy":
        tasks_setting = {
            "default": {"BACKEND": f"{runners.framework().__name__}.backends.dummy.DummyBackend"}
        }
    settings.TASKS = tasks_setting
    assert ids(checks.check_task_runner()) == ["paycollect.E022"]


def test_no_tasks_setting_is_the_immediate_backend_refused_outside_debug(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "django"}  # tests/settings.py sets no TASKS
    [error] = checks.check_task_runner()
    assert error.id == "paycollect.E023"
    assert "TASKS is not set" in error.msg


def test_the_immediate_backend_is_refused_outside_debug_unless_the_project_says_so(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "django"}
    settings.TASKS = immediate_backend()
    settings.DEBUG = False
    assert ids(checks.check_task_runner()) == ["paycollect.E023"]
    settings.DEBUG = True
    assert checks.check_task_runner() == []
    settings.DEBUG = False
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "ALLOW_IMMEDIATE_TASKS": "true"}
    assert checks.check_task_runner() == []


def test_celery_stays_the_default_and_its_checks_apply(settings):
    assert runners.runner() == "celery"
    assert checks.check_task_runner() == []
