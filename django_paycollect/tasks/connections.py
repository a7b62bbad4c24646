"""A worker's database sessions, from task to task: what Django's request signals do for a view.

Celery's Django fixup closes every database connection before and after each task unless the Celery app
has ``db_reuse_max`` (``CELERY_DB_REUSE_MAX`` in Django settings); since Celery 5.6 it does so whatever
``CONN_MAX_AGE`` says. So each verification opened a PostgreSQL session of its own, which cost the
database more than the verification did. With ``CELERY_DB_REUSE_MAX`` set (see docs/deployment.md and
check ``paycollect.W009``) the fixup leaves the sessions alone, and these handlers look after them
instead, for every task the worker runs:

* before and after a task that returned: Django's ``close_old_connections()``, so a session older than
  ``CONN_MAX_AGE``, or one an error left unusable, is dropped (and ``CONN_HEALTH_CHECKS`` is honoured);
* after a task that raised or is retried: every session closed. A task interrupted mid-query (a time
  limit, the database going away) may leave a session that Django would still take for usable, and a
  retry is due on a sound one.

Eager tasks run in their caller's process (a request, a command), whose own rules apply: left alone.
"""

from __future__ import annotations

import contextlib
from typing import Any

from celery import signals, states
from django import db


def _eager(task: Any) -> bool:
    return bool(getattr(getattr(task, "request", None), "is_eager", False))


def before_task(sender: Any = None, **kwargs: Any) -> None:
    if not _eager(sender):
        db.close_old_connections()


def after_task(sender: Any = None, state: str | None = None, **kwargs: Any) -> None:
    if _eager(sender):
        return
    if state == states.SUCCESS:
        db.close_old_connections()
        return
    for connection in db.connections.all(initialized_only=True):
        with contextlib.suppress(db.Error):  # a session already gone: nothing left to close
            connection.close()


def connect() -> None:
    """Connect the handlers (once, whatever the imports)."""
    signals.task_prerun.connect(before_task, weak=False, dispatch_uid="paycollect-sessions-before-task")
    signals.task_postrun.connect(after_task, weak=False, dispatch_uid="paycollect-sessions-after-task")
