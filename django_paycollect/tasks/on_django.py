"""The app's jobs as tasks of Django's task framework (``PAYCOLLECT["TASK_RUNNER"] = "django"``).

Each is a thin adapter: it runs the job of the same name (:data:`.runners.JOBS`, the function Celery runs
too) with a :class:`~.runners.DjangoRun` for the task. Enqueued on the ``"default"`` backend's
``"default"`` queue, so a plain ``manage.py db_worker`` (django-tasks-db) runs them. Besides the job's own
arguments each takes ``retries`` (the attempt's number) and ``first_id`` (the first attempt's id, which
the ApiCall rows of every attempt carry), both set by a retry.

Imported only by the Django runner and by the worker that runs its tasks: defining a task asks the TASKS
backend to validate it, which a project on Celery need not have configured.
"""

from __future__ import annotations

from typing import Any

from . import callbacks, housekeeping, operations  # noqa: F401  (the jobs, registered in runners.JOBS)
from .runners import framework, run_on_django

task = framework().task


@task(takes_context=True)
def process_callbacks(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("process_callbacks", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def sweep_callbacks(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("sweep_callbacks", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def reconcile(context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any) -> Any:
    return run_on_django("reconcile", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def reconcile_chunk(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("reconcile_chunk", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def prune(context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any) -> Any:
    return run_on_django("prune", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def prepare_amount(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("prepare_amount", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def sync_transaction(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("sync_transaction", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def validate_promocode(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("validate_promocode", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def fetch_statistics(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("fetch_statistics", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def start_payment(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("start_payment", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def create_direct_order(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("create_direct_order", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def capture(context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any) -> Any:
    return run_on_django("capture", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def refund(context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any) -> Any:
    return run_on_django("refund", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def cancel_recurring(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("cancel_recurring", context, args, kwargs, retries, first_id)


@task(takes_context=True)
def create_community(
    context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any
) -> Any:
    return run_on_django("create_community", context, args, kwargs, retries, first_id)
