"""The sandbox clock, the process-wide write lock and the singleton state row."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction
from django.utils import timezone

from .models import SandboxState

# SQLite allows one writer; a read-then-write transaction that loses the race fails at once with
# "database is locked" instead of waiting. Serialising the sandbox's own writes inside the process avoids
# that (on PostgreSQL it only costs a little concurrency, which a sandbox does not need).
WRITE_LOCK = threading.RLock()


@contextmanager
def writing() -> Iterator[None]:
    with WRITE_LOCK, transaction.atomic():
        yield


def get_state() -> SandboxState:
    state, _ = SandboxState.objects.get_or_create(pk=1)
    return state


def clock_offset() -> dt.timedelta:
    seconds = SandboxState.objects.filter(pk=1).values_list("clock_offset_seconds", flat=True).first()
    return dt.timedelta(seconds=seconds or 0)


def now() -> dt.datetime:
    """The sandbox clock: real time plus the offset added by _control/clock/advance (UTC)."""
    return timezone.now().astimezone(dt.UTC) + clock_offset()


def today() -> dt.date:
    return now().date()
