"""A worker's database sessions, from task to task: what Django's request signals do for a view.

Celery's Django fixup closes every connection around each task (since Celery 5.6 whatever ``CONN_MAX_AGE``
says) unless ``CELERY_DB_REUSE_MAX`` is set (docs/deployment.md, check ``paycollect.W009``); then these
handlers look after the sessions instead. Around a task that returned, ``close_old_connections()`` drops a
session too old or left unusable (honouring ``CONN_HEALTH_CHECKS``); after a task that raised or is retried,
every session is closed, since one interrupted mid-query (a time limit, the database going away) may still
look usable, and a retry is due on a sound one. Eager tasks follow their caller's process's rules: left alone.
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
