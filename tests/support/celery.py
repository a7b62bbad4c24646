"""The test project's Celery app, made eager or not for one test and then exactly as it was.

Its configuration reads the Django settings as they are at each lookup (``CELERY_TASK_ALWAYS_EAGER`` first,
on Celery before 5.7), unless a value was set on ``app.conf``, which then shadows them for good. So a test
sets the flag under both spellings and, after, takes its own values away again rather than writing back what
it read: written back, they would shadow the settings of every later test in the process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.celery_app import app

KEYS = ("task_always_eager", "CELERY_TASK_ALWAYS_EAGER")


@contextmanager
def eager(flag: bool) -> Iterator[None]:
    changes = app.conf.changes
    before = {key: changes[key] for key in KEYS if key in changes}
    for key in KEYS:
        app.conf[key] = flag
    try:
        yield
    finally:
        for key in KEYS:
            changes.pop(key, None)
        changes.update(before)
