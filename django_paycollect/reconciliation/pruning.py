"""Pruning: old API calls, callbacks and fetch marks deleted in batches (``paycollect_prune``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import models, router, transaction
from django.utils import timezone

from ..models import ApiCall, FetchMark, ReceivedCallback

logger = logging.getLogger("django_paycollect.reconciliation")

M = TypeVar("M", bound=models.Model)


@dataclass
class PruneResult:
    cutoff: datetime
    dry_run: bool
    api_calls: int = 0
    callbacks: int = 0
    #: Fetch marks of transactions no callback named since the cutoff (see ``models.FetchMark``).
    fetch_marks: int = 0
    #: Old callbacks kept because they were never processed (received, queued or failed).
    unprocessed_kept: int = 0
    batches: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"cutoff": self.cutoff.isoformat()}

    def lines(self) -> list[str]:
        verb = "would delete" if self.dry_run else "deleted"
        lines = [
            f"API calls before {self.cutoff:%Y-%m-%d %H:%M} UTC: {verb} {self.api_calls}",
            f"Callbacks before {self.cutoff:%Y-%m-%d %H:%M} UTC: {verb} {self.callbacks}",
        ]
        if self.unprocessed_kept:
            lines.append(
                f"Kept {self.unprocessed_kept} old callback(s) never processed (received, queued or failed); "
                "--include-unprocessed deletes them too"
            )
        if not self.dry_run:
            lines.append(f"{self.batches} batch(es) in {self.seconds:.1f} s")
        return lines


PruneProgress = Callable[[str, int, int], None]

#: Rows per batch by default. Each batch costs milliseconds besides its rows (its key read, its commit,
#: Django's delete): on PostgreSQL a million rows took 2.0x one DELETE in batches of 5,000, 1.7x in batches
#: of 10,000, whose locks last tens of milliseconds.
BATCH_SIZE = 10_000

#: Final callback states: nothing will happen to such a callback any more.
FINAL_CALLBACK_STATES = (ReceivedCallback.PROCESSED, ReceivedCallback.DUPLICATE, ReceivedCallback.INVALID)


def prune(
    older_than: timedelta,
    *,
    dry_run: bool = False,
    include_unprocessed: bool = False,
    batch_size: int = BATCH_SIZE,
    progress: PruneProgress | None = None,
) -> PruneResult:
    """Delete ApiCall and ReceivedCallback rows older than ``older_than``, ``batch_size`` rows at a time.

    Each batch is one short transaction deleting a range of primary keys found by reading one key, so
    a million rows never hold a lock or a transaction for long, and memory holds no list of ids (but
    the last batch's, and the keys of callbacks, whose deletion Django collects). Callbacks never
    processed are kept unless ``include_unprocessed``. ``progress(name, deleted, total)`` is called
    after each batch.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    started = time.monotonic()
    result = PruneResult(cutoff=timezone.now() - older_than, dry_run=dry_run)
    calls = ApiCall.objects.filter(created_at__lt=result.cutoff)
    callbacks = ReceivedCallback.objects.filter(received_at__lt=result.cutoff)
    if not include_unprocessed:
        result.unprocessed_kept = callbacks.exclude(state__in=FINAL_CALLBACK_STATES).count()
        callbacks = callbacks.filter(state__in=FINAL_CALLBACK_STATES)
    marks = FetchMark.objects.filter(claimed_at__lt=result.cutoff)
    if dry_run:
        result.api_calls = calls.count()
        result.callbacks = callbacks.count()
        result.fetch_marks = marks.count()
        return result

    result.api_calls = _delete_in_batches("API calls", calls, result, batch_size, progress)
    result.callbacks = _delete_in_batches("callbacks", callbacks, result, batch_size, progress)
    result.fetch_marks = _delete_in_batches("fetch marks", marks, result, batch_size, progress)
    result.seconds = time.monotonic() - started
    return result


def _delete_in_batches(
    name: str,
    queryset: models.QuerySet[M],
    result: PruneResult,
    batch_size: int,
    progress: PruneProgress | None,
) -> int:
    """Delete the rows of ``queryset`` in pk order, ``batch_size`` at a time (counted in ``result.batches``);
    returns how many."""
    total = queryset.count() if progress is not None else 0
    using = router.db_for_write(queryset.model)
    deleted = 0
    # Every statement is bounded below by a key, the first batch by the table's first one: without it
    # SQLite reads the whole created_at index (and sorts it) to find the first batch.
    first = queryset.model._default_manager.using(using).order_by("pk").values_list("pk", flat=True)[:1]
    start = next(iter(first), None)
    if start is None:
        return 0
    remaining = queryset.filter(pk__gte=start)
    while True:
        with transaction.atomic(using=using):
            keys = remaining.order_by("pk").values_list("pk", flat=True)
            # The batch is every matching row up to the batch_size-th matching key: one key read (no list
            # of thousands in memory), then one DELETE by a closed key range.
            last = next(iter(keys[batch_size - 1 : batch_size]), None)
            final = last is None
            if final:  # fewer left than a batch: the last one, if any
                rest = list(keys[:batch_size])
                if not rest:
                    break
                last = rest[-1]
            # Django deletes rows that nothing points at and no signal receiver watches (API calls,
            # fetch marks) with one DELETE; callbacks run on_delete (a redelivery's duplicate_of is set
            # to null), reading only their primary keys, never their bodies.
            _total, per_model = remaining.filter(pk__lte=last).only("pk").delete()
            deleted += per_model.get(queryset.model._meta.label, 0)
        # The next batch starts after the last deleted key: read from the start each time, the pk
        # index would walk past every row deleted so far (dead entries until a vacuum), which made
        # pruning quadratic in the rows deleted.
        remaining = queryset.filter(pk__gt=last)
        result.batches += 1
        if progress is not None:
            progress(name, deleted, max(total, deleted))
        if final:
            break
    return deleted
