"""When the periodic jobs last ran: each run of the sweep and of reconciliation records its end."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from ..models import HousekeepingRun
from .common import primary


def record_run(job: str, at: dt.datetime | None = None) -> None:
    """Record that ``job`` (``HousekeepingRun.SWEEP`` or ``RECONCILIATION``) ran to its end ``at`` (now).

    One statement, whether the job's row exists or not (``INSERT ... ON CONFLICT (job) DO UPDATE``): runs
    that overlap (beat and a command) never meet a unique violation."""
    when = at or timezone.now()
    primary(HousekeepingRun).bulk_create(
        [HousekeepingRun(job=job, last_run_at=when, watched_since=when)],
        update_conflicts=True,
        unique_fields=["job"],
        update_fields=["last_run_at"],
    )
