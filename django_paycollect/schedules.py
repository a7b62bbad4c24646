"""The periodic tasks, importable from settings (this module imports no models)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery.schedules import crontab

#: Beat entries to merge into ``CELERY_BEAT_SCHEDULE`` (plain beat, or django-celery-beat, which
#: copies them into its tables at start)::
#:
#:     from django_paycollect.schedules import BEAT_SCHEDULE
#:     CELERY_BEAT_SCHEDULE = {**BEAT_SCHEDULE, ...}
#:
#: ``expires`` drops a run still queued when the next one is due, so a slow worker never piles
#: them up.
BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    # Callbacks whose verification was lost (a worker killed with its message, a broker restarted
    # without it, queueing that failed) are queued again once PAYCOLLECT["CALLBACK_REQUEUE_AFTER"]
    # has passed, so none waits for the broker's visibility timeout, nor for a person.
    "paycollect-sweep-callbacks": {
        "task": "paycollect.sweep_callbacks",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 55},
    },
    "paycollect-reconcile": {
        "task": "paycollect.reconcile",
        "schedule": timedelta(minutes=15),
        "kwargs": {"older_than": "30m"},
        "options": {"expires": 14 * 60},
    },
    "paycollect-prune": {
        "task": "paycollect.prune",
        "schedule": crontab(hour=3, minute=30),
        "kwargs": {"older_than": "90d"},
        "options": {"expires": 6 * 3600},
    },
}
