"""The two runners of the app's jobs: Celery (the default) and Django's task framework.

Each job is written once, as a plain function whose first argument is the task running it (:func:`job`
registers it and returns its Celery task, made of that very function). The function reads of that task only
what both runners give: ``request.id`` (stored on the ApiCall rows it causes), ``request.retries``,
``request.is_eager`` (nothing can run later: retry now or leave it to the sweep), ``name``,
``max_retries``, and ``retry(exc=, countdown=, max_retries=, args=, kwargs=)``, which raises. On Celery that
is the bound task itself. On Django's framework (``PAYCOLLECT["TASK_RUNNER"] = "django"``) it is a
:class:`DjangoRun`, made by the task :mod:`.on_django` builds for each job: a retry enqueues the same task
again, due ``countdown`` seconds later (``run_after``), carrying its number and the first attempt's id.

:func:`send` is how a job (or the route of a stored callback) queues another, on the project's runner.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from celery import shared_task
from django.db import router, transaction
from django.utils import timezone

from ..conf import paycollect_settings

logger = logging.getLogger("django_paycollect.tasks")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Job:
    """A job: its plain function, its Celery options and its Celery task (made of that function)."""

    function: Callable[..., Any]
    options: dict[str, Any]
    celery: Any


#: Every job, by its short name ("process_callbacks"); each is also a Django task of :mod:`.on_django`.
JOBS: dict[str, Job] = {}
#: The backend alias and queue of the app's Django tasks: the ones a plain ``manage.py db_worker`` serves.
DJANGO_BACKEND = "default"


def job(name: str, **celery_options: Any) -> Callable[[F], Any]:
    """Register the decorated function as the job ``name`` and return its Celery task
    (``paycollect.<name>``), bound: Celery passes itself as the function's first argument."""

    def register(function: F) -> Any:
        celery = shared_task(name=f"paycollect.{name}", **{"bind": True, **celery_options})(function)
        JOBS[name] = Job(function, celery_options, celery)
        return celery

    return register


def runner() -> str:
    """``"celery"`` or ``"django"``: ``PAYCOLLECT["TASK_RUNNER"]``."""
    return str(paycollect_settings.TASK_RUNNER)


def uses_django() -> bool:
    return runner() == "django"


def framework() -> Any:
    """Django's task framework: ``django.tasks`` (Django 6.0 and later), or the ``django_tasks`` backport."""
    try:
        return importlib.import_module("django.tasks")
    except ImportError:
        return importlib.import_module("django_tasks")


def django_backend() -> Any:
    """The task backend the app's Django tasks are enqueued on."""
    return framework().task_backends[DJANGO_BACKEND]


def django_runs_later() -> bool:
    """Whether the backend runs a task later, in a worker (the database's), rather than at once (the
    immediate backend): only then is there a later for a retry."""
    return bool(django_backend().supports_defer)


def in_callbacks_transaction() -> str | None:
    """The database alias where a callback's task row can be written in the transaction that stores the
    callback: the Django runner, on django-tasks-db's backend, writing to the database of the app's
    callbacks. None otherwise (the callback is handed on after the commit)."""
    if not uses_django():
        return None
    try:
        from django_tasks_db.backend import DatabaseBackend
    except ImportError:
        return None
    from ..models import ReceivedCallback

    if not isinstance(django_backend(), DatabaseBackend):
        return None
    alias = router.db_for_write(ReceivedCallback)
    return alias if _tasks_alias() == alias else None


def send(name: str, *args: Any, countdown: float | None = None, **kwargs: Any) -> None:
    """Queue the job ``name`` on the project's runner, due in ``countdown`` seconds. Raises when it could
    not be queued."""
    if uses_django():
        _enqueue(name, args, kwargs, countdown)
        return
    options = {"countdown": countdown} if countdown is not None else {}
    if kwargs:
        JOBS[name].celery.apply_async(args, kwargs, **options)
    else:
        JOBS[name].celery.apply_async(args, **options)


def _enqueue(name: str, args: Any, kwargs: dict[str, Any], countdown: float | None) -> Any:
    from . import on_django as tasks_on_django

    task = getattr(tasks_on_django, name)
    if countdown and django_runs_later():
        task = task.using(run_after=timezone.now() + dt.timedelta(seconds=countdown))
    # A savepoint inside the caller's transaction: a refused enqueue leaves what the caller wrote intact
    # (then recorded as not queued, for the sweep).
    with transaction.atomic(using=_tasks_alias()):
        return task.enqueue(*args, **kwargs)


def _tasks_alias() -> str | None:
    try:
        from django_tasks_db.models import DBTaskResult
    except ImportError:
        return None
    return router.db_for_write(DBTaskResult)


# --- the task a job runs in, on Django's framework ----------------------------------------------------------


class Rescheduled(Exception):
    """Raised by :meth:`DjangoRun.retry` once the next attempt is enqueued: the attempt ends there."""

    def __init__(self, countdown: float) -> None:
        super().__init__(f"retrying in {countdown:g} s")
        self.countdown = countdown


@dataclass
class _Request:
    id: str
    retries: int
    is_eager: bool


@dataclass
class DjangoRun:
    """What a job reads of the task running it, for a Django task (see the module's docstring)."""

    job_name: str
    request: _Request
    max_retries: int | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"paycollect.{self.job_name}"

    def retry(
        self,
        exc: BaseException | None = None,
        countdown: float | None = None,
        max_retries: int | None = None,
        args: Any = None,
        kwargs: dict[str, Any] | None = None,
    ) -> NoReturn:
        """As Celery's: past ``max_retries`` (or with nothing to run later) ``exc`` is raised; otherwise the
        task is enqueued again, due in ``countdown`` seconds, and :class:`Rescheduled` raised."""
        limit = self.max_retries if max_retries is None else max_retries
        if self.request.is_eager or (limit is not None and self.request.retries >= limit):
            if exc is not None:
                raise exc
            raise RuntimeError(f"{self.name}: no retries left")
        delay = float(countdown or 0)
        again = {
            **(self.kwargs if kwargs is None else kwargs),
            "retries": self.request.retries + 1,
            "first_id": self.request.id,
        }
        try:
            _enqueue(self.job_name, tuple(self.args if args is None else args), again, delay)
        except Exception:
            logger.exception("%s %s: its retry could not be queued", self.name, self.request.id)
            if exc is not None:
                raise exc from None
            raise
        raise Rescheduled(delay)


def run_on_django(
    name: str, context: Any, args: tuple[Any, ...], kwargs: dict[str, Any], retries: int, first_id: str | None
) -> Any:
    """Run the job ``name`` in a Django task (``context``: its TaskContext). A retry's attempt ends with
    ``{"retry_in": seconds}``; what the job returns or raises is the task's result."""
    request = _Request(first_id or str(context.task_result.id), retries, is_eager=not django_runs_later())
    run = DjangoRun(name, request, JOBS[name].options.get("max_retries"), args, kwargs)
    try:
        return JOBS[name].function(run, *args, **kwargs)
    except Rescheduled as again:
        return {"retry_in": again.countdown}
