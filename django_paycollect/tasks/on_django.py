"""The app's jobs as tasks of Django's task framework (``PAYCOLLECT["TASK_RUNNER"] = "django"``).

One task per job of :data:`.runners.JOBS`, of the same name (``on_django.process_callbacks``): a thin adapter
that runs the job's function (the one Celery runs too) with a :class:`~.runners.DjangoRun` for the task.
Enqueued on the ``"default"`` backend's ``"default"`` queue, so a plain ``manage.py db_worker``
(django-tasks-db) runs them. Besides the job's own arguments each takes ``retries`` (the attempt's number)
and ``first_id`` (the first attempt's id, which the ApiCall rows of every attempt carry), both set by a retry.

Imported only by the Django runner and by the worker that runs its tasks: defining a task asks the TASKS
backend to validate it, which a project on Celery need not have configured.
"""

from __future__ import annotations

from typing import Any

from . import callbacks, housekeeping, operations  # noqa: F401  (the jobs, registered in runners.JOBS)
from .runners import JOBS, framework, run_on_django


def _django_task(name: str) -> Any:
    def run(context: Any, *args: Any, retries: int = 0, first_id: str | None = None, **kwargs: Any) -> Any:
        return run_on_django(name, context, args, kwargs, retries, first_id)

    # A module-level name of this module, as the framework requires: the worker imports the task by its path
    # (django_paycollect.tasks.on_django.<job>).
    run.__name__ = run.__qualname__ = name
    return framework().task(takes_context=True)(run)


for _name in JOBS:
    globals()[_name] = _django_task(_name)
