"""The periodic tasks, importable from settings (this module imports no models)."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any, cast

from celery.schedules import crontab
from celery.schedules import schedule as every

#: Beat entries to merge into ``CELERY_BEAT_SCHEDULE = {**BEAT_SCHEDULE, ...}`` (docs/celery.md). ``expires``
#: drops a run still queued when the next one is due, so a slow worker never piles them up.
BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    # Callbacks whose verification was lost are queued again once PAYCOLLECT["CALLBACK_REQUEUE_AFTER"] has
    # passed, so none waits for the broker's visibility timeout, nor for a person.
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


def beat_interval(task: str) -> timedelta:
    """How often beat runs ``task`` (``"paycollect.reconcile"``): the shortest interval among the current
    Celery app's beat entries naming it (``CELERY_BEAT_SCHEDULE``), or else among :data:`BEAT_SCHEDULE`'s. A
    schedule may be seconds, a ``timedelta``, a ``celery.schedules.schedule`` or a ``crontab`` (its longest
    gap)."""
    from celery import current_app

    for entries in (current_app.conf.beat_schedule or {}, BEAT_SCHEDULE):
        found = [
            interval
            for entry in entries.values()
            if isinstance(entry, dict) and entry.get("task") == task
            if (interval := _interval(entry.get("schedule"))) is not None
        ]
        if found:
            return min(found)
    raise ValueError(f"{task} is not a periodic task of django_paycollect")


def _interval(schedule: Any) -> timedelta | None:
    if isinstance(schedule, timedelta):
        return schedule
    if isinstance(schedule, (int, float)) and not isinstance(schedule, bool):
        return timedelta(seconds=schedule)
    if isinstance(schedule, every):
        return cast(timedelta, schedule.run_every)
    if isinstance(schedule, crontab):
        # The gaps between its next few runs (a crontab's runs need not be evenly spaced): the longest.
        runs = [schedule.now()]
        for _ in range(8):
            start, step, _now = schedule.remaining_delta(runs[-1])
            runs.append(start + step)
        gaps: list[timedelta] = [later - earlier for earlier, later in itertools.pairwise(runs[1:])]
        return max(gaps)
    return None  # another kind (solar, a project's own): the default applies
