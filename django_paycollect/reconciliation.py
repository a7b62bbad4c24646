"""Reconciliation and pruning: the periodic housekeeping behind ``paycollect_reconcile``, ``paycollect_prune``
and their Celery tasks.

:func:`reconcile` looks for everything we are unsure about and asks the service, through the service
layer only (which fetches, locks, applies and signals):

* transactions still open (PENDING, or NEW with a uuid) that nobody heard of for ``older_than``:
  fetched again (``services.sync_transaction``), so a lost callback costs a delay, not a payment;
* starts of unknown outcome (NEW, no uuid): the service has no lookup by our reference, so they are
  closed as ABANDONED (``services.abandon_unknown_start``) and the reference can be paid again;
* cancellations of unknown outcome: settled from the parent's ``recurring.active``
  (``services.settle_unknown_cancel``);
* refunds and captures of unknown outcome, and those left pending by a process that stopped
  mid-call: the spec's transaction shows neither, so their transaction is fetched again and they are
  reported as needing review (resolved in the admin, ``services.resolve_refund``); so are direct
  orders whose creation had an unknown outcome;
* active recurring series: charges the service executed that we never heard of
  (``services.missed_charges``) are reported.

An item that fails is counted and reported; the run goes on. Runs may overlap (beat and a manual
command): every step is idempotent under the service layer's row locks.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import models, router, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from . import services
from .exceptions import ServiceLayerError, describe_error
from .models import ApiCall, DirectOrder, FetchMark, ReceivedCallback, RecurringSeries, Refund, Transaction

logger = logging.getLogger("django_paycollect.reconciliation")

M = TypeVar("M", bound=models.Model)

# --- ages ("30m", "2h", "90d") ----------------------------------------------------------------------

_AGE = re.compile(r"\s*(\d{1,6})\s*([smhdw])\s*", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_age(text: str, *, allow_zero: bool = True) -> timedelta:
    """``"30m"`` -> 30 minutes; units s, m, h, d, w. Raises ValueError with a message for people."""
    match = _AGE.fullmatch(str(text))
    if match is None:
        raise ValueError(
            f"{text!r} is not an age: write a whole number and a unit, s, m, h, d or w (30m, 2h, 90d)"
        )
    age = timedelta(**{_UNITS[match[2].lower()]: int(match[1])})
    if not age and not allow_zero:
        raise ValueError(f"{text!r}: the age must be more than zero")
    return age


def format_age(age: timedelta) -> str:
    seconds = int(age.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# --- reconciliation ------------------------------------------------------------------------------------


@dataclass
class Finding:
    """What reconciliation did with one item, or why it needs a person."""

    phase: str
    kind: str  # transaction, refund, capture, series, direct_order, api_call
    object_id: int
    label: str
    outcome: str
    #: Status moved, start abandoned, cancellation settled: something changed.
    changed: bool = False
    needs_review: bool = False
    error: bool = False

    def __str__(self) -> str:
        return f"{self.kind} {self.label}: {self.outcome}"


@dataclass
class Progress:
    """Passed to the ``progress`` callable after each item: ``done`` of ``total`` in ``phase``."""

    phase: str
    done: int
    total: int
    finding: Finding


@dataclass
class Summary:
    community_id: str | None
    older_than: timedelta
    started_at: datetime = field(default_factory=timezone.now)
    finished_at: datetime | None = None
    #: Transactions fetched again (open ones, and those of refunds and captures to review).
    fetched: int = 0
    #: Of which the status moved.
    changed: int = 0
    abandoned: int = 0
    cancels_settled: int = 0
    missed_charges: int = 0
    #: Every finding worth reading: changes, reviews, errors (not the "still pending" ones).
    findings: list[Finding] = field(default_factory=list)

    @property
    def needs_review(self) -> list[Finding]:
        return [f for f in self.findings if f.needs_review]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.error]

    @property
    def seconds(self) -> float:
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable (the reconcile task's result)."""
        return {
            "community_id": self.community_id,
            "older_than": format_age(self.older_than),
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "fetched": self.fetched,
            "changed": self.changed,
            "abandoned": self.abandoned,
            "cancels_settled": self.cancels_settled,
            "missed_charges": self.missed_charges,
            "needs_review": len(self.needs_review),
            "errors": len(self.errors),
            "findings": [asdict(f) for f in self.findings],
        }

    def lines(self) -> list[str]:
        scope = f"community {self.community_id}" if self.community_id else "all communities"
        lines = [
            f"Reconciliation of {scope} (older than {format_age(self.older_than)}) "
            f"took {self.seconds:.1f} s:",
            f"  transactions fetched again: {self.fetched} ({self.changed} changed status)",
            f"  unknown starts abandoned: {self.abandoned}",
            f"  unknown cancellations settled: {self.cancels_settled}",
            f"  recurring charges we never heard of: {self.missed_charges}",
            f"  need review: {len(self.needs_review)}",
        ]
        lines += [f"    - {f}" for f in self.needs_review]
        lines.append(f"  errors: {len(self.errors)}")
        lines += [f"    - {f}" for f in self.errors]
        return lines


ProgressCallback = Callable[[Progress], None]

_CHUNK = 200
#: How often an open transaction more than a day old is fetched again (at most).
STALE_OPEN_INTERVAL = timedelta(hours=6)


def _chunked(queryset: models.QuerySet[M], *related: str) -> tuple[int, Iterator[M]]:
    """The matching rows' count, and the rows read a chunk of primary keys at a time (no long cursor)."""
    pks = list(queryset.order_by("pk").values_list("pk", flat=True))
    manager = queryset.model._default_manager

    def rows() -> Iterator[M]:
        for start in range(0, len(pks), _CHUNK):
            chunk = pks[start : start + _CHUNK]
            batch = manager.select_related(*related).in_bulk(chunk) if related else manager.in_bulk(chunk)
            yield from (batch[pk] for pk in chunk if pk in batch)

    return len(pks), rows()


class _Run:
    def __init__(self, summary: Summary, progress: ProgressCallback | None) -> None:
        self.summary = summary
        self.progress = progress
        self.fetched: set[int] = set()  # transactions already fetched in this run

    def each(
        self,
        phase: str,
        total: int,
        items: Iterable[M],
        handle: Callable[[M], Finding],
        describe: Callable[[M], Finding],
    ) -> None:
        for done, item in enumerate(items, 1):
            try:
                finding = handle(item)
            except Exception as exc:  # one bad item must not stop the run
                if not isinstance(exc, ServiceLayerError):
                    logger.exception("reconciliation: %s %s failed", phase, item.pk)
                finding = describe(item)
                finding.outcome = f"error: {describe_error(exc)}"[:500]
                finding.error = True
            if finding.changed or finding.needs_review or finding.error:
                self.summary.findings.append(finding)
            if self.progress is not None:
                self.progress(Progress(phase, done, total, finding))

    def fetch(self, txn: Transaction) -> Transaction:
        """Fetch a transaction once per run; returns it as stored afterwards."""
        if txn.pk in self.fetched or not txn.uuid:
            return txn
        self.fetched.add(txn.pk)
        before = txn.status
        txn = services.sync_transaction(txn, source="reconcile")
        self.summary.fetched += 1
        if txn.status != before:
            self.summary.changed += 1
        return txn


def _label(txn: Transaction) -> str:
    return txn.uuid or f"#{txn.pk}"


#: How long a community creation of unknown outcome keeps being reported for review.
COMMUNITY_REVIEW_DAYS = 7


def reconcile(
    community_id: str | None = None,
    older_than: timedelta = timedelta(minutes=30),
    progress: ProgressCallback | None = None,
) -> Summary:
    """Settle what is uncertain, item by item; ``progress`` is called after each item."""
    summary = Summary(community_id=community_id, older_than=older_than)
    run = _Run(summary, progress)
    cutoff = timezone.now() - older_than
    scope = Q(community_id=community_id) if community_id else Q()

    # 1. Starts of unknown outcome: no uuid, nothing to fetch; closed so the reference can be paid again.
    def describe_start(txn: Transaction) -> Finding:
        return Finding("unknown starts", "transaction", txn.pk, _label(txn), "")

    def abandon(txn: Transaction) -> Finding:
        finding = describe_start(txn)
        if services.abandon_unknown_start(txn):
            summary.abandoned += 1
            finding.outcome, finding.changed = "start outcome unknown: abandoned", True
        else:
            finding.outcome = "settled meanwhile"
        return finding

    starts = Transaction.objects.filter(
        scope, status=Transaction.NEW, uuid__isnull=True, outcome_unknown=True, created_at__lt=cutoff
    )
    run.each("unknown starts", *_chunked(starts), abandon, describe_start)

    # 2. Open transactions nobody heard of for a while (fetched at most once per older_than).
    def describe_open(txn: Transaction) -> Finding:
        return Finding("open transactions", "transaction", txn.pk, _label(txn), "")

    def sync(txn: Transaction) -> Finding:
        finding = describe_open(txn)
        before = txn.status
        txn = run.fetch(txn)
        if txn.status != before:
            finding.outcome, finding.changed = f"{before} -> {txn.status}", True
        else:
            finding.outcome = f"still {txn.status}"
        if txn.amount_mismatch:
            finding.outcome += "; the service's amount or currency differs: check it"
            finding.needs_review = True
        return finding

    # A payment page left open stays PENDING at the service for good: past a day old, such a
    # transaction is fetched at most every STALE_OPEN_INTERVAL, so they never crowd out the rest.
    now = timezone.now()
    stale_cutoff = now - max(older_than, STALE_OPEN_INTERVAL)
    open_ = Transaction.objects.filter(
        scope,
        Q(status=Transaction.PENDING) | Q(status=Transaction.NEW, uuid__isnull=False),
        Q(last_synced_at__isnull=True)
        | Q(created_at__gte=now - timedelta(days=1), last_synced_at__lt=cutoff)
        | Q(last_synced_at__lt=stale_cutoff),
        created_at__lt=cutoff,
    )
    run.each("open transactions", *_chunked(open_), sync, describe_open)

    # 3. Cancellations: unknown ones are settled from recurring.active; pending ones mean a process died.
    def describe_series(series: RecurringSeries) -> Finding:
        return Finding("cancellations", "series", series.pk, series.parent_uuid, "")

    def settle(series: RecurringSeries) -> Finding:
        finding = describe_series(series)
        settled = services.settle_unknown_cancel(series)
        if settled.cancel_state == RecurringSeries.CANCEL_PENDING:
            # Left pending only when the series' parent transaction is unknown here: nothing to fetch.
            finding.outcome = (
                "cancellation pending since before the cutoff, and the parent transaction is unknown here: "
                "check the service's dashboard, then cancel again if it still charges"
            )
            finding.needs_review = True
            return finding
        if settled.cancel_state == RecurringSeries.CANCEL_DONE:
            finding.outcome, finding.changed = "cancellation took effect", True
        elif settled.cancel_state == RecurringSeries.CANCEL_FAILED:
            finding.outcome, finding.changed = "cancellation did not take effect: it may be sent again", True
        else:
            finding.outcome = f"left {settled.get_cancel_state_display()}"
        if finding.changed:
            summary.cancels_settled += 1
        return finding

    recent_cancel = ApiCall.objects.filter(
        series=OuterRef("pk"), operation="cancel_recurring", created_at__gte=cutoff
    )
    cancels = RecurringSeries.objects.filter(
        scope,
        cancel_state__in=(RecurringSeries.CANCEL_UNKNOWN, RecurringSeries.CANCEL_PENDING),
    ).exclude(Exists(recent_cancel))  # too recent: the service may still be acting on it
    run.each("cancellations", *_chunked(cancels), settle, describe_series)

    # 4. Refunds and captures the service never confirmed: fetch their transaction, report them.
    def describe_refund(refund: Refund) -> Finding:
        return Finding("refunds", "refund", refund.pk, f"#{refund.pk} of {_label(refund.transaction)}", "")

    def review_refund(refund: Refund) -> Finding:
        finding = describe_refund(refund)
        run.fetch(refund.transaction)
        why = "outcome unknown" if refund.state == Refund.UNKNOWN else "still pending (the process stopped?)"
        finding.outcome = (
            f"refund of {refund.amount} {refund.transaction.currency}: {why}; the service's transaction "
            "does not show refunds: check its dashboard, then resolve the refund in the admin"
        )
        finding.needs_review = True
        return finding

    refunds = Refund.objects.filter(
        Q(state=Refund.UNKNOWN) | Q(state=Refund.PENDING, created_at__lt=cutoff),
        Q(transaction__community_id=community_id) if community_id else Q(),
    )
    run.each("refunds", *_chunked(refunds, "transaction"), review_refund, describe_refund)

    def describe_capture(txn: Transaction) -> Finding:
        return Finding("captures", "capture", txn.pk, _label(txn), "")

    def review_capture(txn: Transaction) -> Finding:
        finding = describe_capture(txn)
        txn = run.fetch(txn)
        why = "outcome unknown" if txn.capture_state == Transaction.CAPTURE_UNKNOWN else "still pending"
        finding.outcome = (
            f"capture {why}; the service's transaction does not show captures: check its dashboard"
        )
        finding.needs_review = True
        return finding

    captures = Transaction.objects.filter(
        scope,
        Q(capture_state=Transaction.CAPTURE_UNKNOWN)
        | Q(capture_state=Transaction.CAPTURE_PENDING, updated_at__lt=cutoff),
    )
    run.each("captures", *_chunked(captures), review_capture, describe_capture)

    # 5. Direct orders of unknown creation: no lookup exists, so only a person can tell.
    def describe_order(order: DirectOrder) -> Finding:
        return Finding("direct orders", "direct_order", order.pk, f"#{order.pk} {order.name!r}", "")

    def review_order(order: DirectOrder) -> Finding:
        finding = describe_order(order)
        finding.outcome = (
            "creation outcome unknown: look for it in the service's dashboard before creating it again"
            if order.state == DirectOrder.UNKNOWN
            else "never sent or never answered (the process stopped?): check the dashboard"
        )
        finding.needs_review = True
        return finding

    orders = DirectOrder.objects.filter(
        scope, Q(state=DirectOrder.UNKNOWN) | Q(state=DirectOrder.NEW, created_at__lt=cutoff)
    )
    run.each("direct orders", *_chunked(orders), review_order, describe_order)

    # 6. Community creations of unknown outcome: the spec shows no way to read communities, so only
    # a person can tell. Reported for COMMUNITY_REVIEW_DAYS, then left to the ApiCall row.
    def describe_creation(call: ApiCall) -> Finding:
        return Finding("community creations", "api_call", call.pk, f"create_community #{call.pk}", "")

    def review_creation(call: ApiCall) -> Finding:
        finding = describe_creation(call)
        finding.outcome = (
            f"creation outcome unknown ({call.error_class} at {call.created_at:%Y-%m-%d %H:%M}): "
            "look for the community in the service's dashboard before creating it again"
        )
        finding.needs_review = True
        return finding

    creations = ApiCall.objects.filter(
        scope,
        operation="create_community",
        outcome_unknown=True,
        created_at__lt=cutoff,
        created_at__gte=timezone.now() - timedelta(days=COMMUNITY_REVIEW_DAYS),
    )
    run.each("community creations", *_chunked(creations), review_creation, describe_creation)

    # 7. Recurring series: charges the service made that no callback told us of.
    def describe_active(series: RecurringSeries) -> Finding:
        return Finding("recurring series", "series", series.pk, series.parent_uuid, "")

    def count_missed(series: RecurringSeries) -> Finding:
        finding = describe_active(series)
        missed = services.missed_charges(series)
        if series.parent_transaction_id is not None:
            run.fetched.add(series.parent_transaction_id)
        if missed:
            summary.missed_charges += missed
            finding.outcome = (
                f"{missed} charge(s) made by the service that no callback told us of: their uuids "
                "are in the service's dashboard; sync them by uuid"
            )
            finding.needs_review = True
        else:
            finding.outcome = "every charge known"
        return finding

    active = RecurringSeries.objects.filter(
        scope,
        Q(last_synced_at__isnull=True) | Q(last_synced_at__lt=cutoff),
        active=True,
    ).exclude(cancel_state=RecurringSeries.CANCEL_DONE)
    run.each("recurring series", *_chunked(active), count_missed, describe_active)

    summary.finished_at = timezone.now()
    return summary


# --- pruning -----------------------------------------------------------------------------------


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

#: Final callback states: nothing will happen to such a callback any more.
FINAL_CALLBACK_STATES = (ReceivedCallback.PROCESSED, ReceivedCallback.DUPLICATE, ReceivedCallback.INVALID)


def prune(
    older_than: timedelta,
    *,
    dry_run: bool = False,
    include_unprocessed: bool = False,
    batch_size: int = 5000,
    progress: PruneProgress | None = None,
) -> PruneResult:
    """Delete ApiCall and ReceivedCallback rows older than ``older_than``, ``batch_size`` rows at a time.

    Each batch is one short transaction deleting a range of primary keys, so a million rows never
    hold a lock or a transaction for long, and memory holds one batch of ids. Callbacks never
    processed are kept unless ``include_unprocessed``. ``progress(name, deleted, total)`` is called
    after each batch. No model signals are sent for these log rows.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    started = time.monotonic()
    result = PruneResult(cutoff=timezone.now() - older_than, dry_run=dry_run)
    calls = ApiCall.objects.filter(created_at__lt=result.cutoff)
    old_callbacks = ReceivedCallback.objects.filter(received_at__lt=result.cutoff)
    callbacks = (
        old_callbacks if include_unprocessed else old_callbacks.filter(state__in=FINAL_CALLBACK_STATES)
    )
    if not include_unprocessed:
        result.unprocessed_kept = old_callbacks.exclude(state__in=FINAL_CALLBACK_STATES).count()
    marks = FetchMark.objects.filter(claimed_at__lt=result.cutoff)
    if dry_run:
        result.api_calls = calls.count()
        result.callbacks = callbacks.count()
        result.fetch_marks = marks.count()
        return result

    result.api_calls, batches = _delete_in_batches("API calls", calls, batch_size, progress)
    result.batches += batches

    def unlink_duplicates(batch: models.QuerySet[ReceivedCallback]) -> None:
        # Newer deliveries may point at a deleted first one (duplicate_of, SET_NULL): unlink them here,
        # since the raw delete below does not run Django's on_delete.
        ReceivedCallback.objects.filter(duplicate_of__in=batch.values("pk")).update(duplicate_of=None)

    result.callbacks, batches = _delete_in_batches(
        "callbacks", callbacks, batch_size, progress, before_delete=unlink_duplicates
    )
    result.batches += batches
    result.fetch_marks, batches = _delete_in_batches("fetch marks", marks, batch_size, progress)
    result.batches += batches
    result.seconds = time.monotonic() - started
    return result


def _delete_in_batches(
    name: str,
    queryset: models.QuerySet[M],
    batch_size: int,
    progress: PruneProgress | None,
    before_delete: Callable[[models.QuerySet[M]], None] | None = None,
) -> tuple[int, int]:
    """Delete the rows of ``queryset`` in pk order, ``batch_size`` at a time; returns (deleted, batches)."""
    total = queryset.count() if progress is not None else 0
    using = router.db_for_write(queryset.model)
    deleted = batches = 0
    while True:
        with transaction.atomic(using=using):
            pks = list(queryset.order_by("pk").values_list("pk", flat=True)[:batch_size])
            if not pks:
                break
            # The first batch_size matching rows are exactly the matching rows between the first and
            # the last pk: one DELETE by a closed pk range, no list of thousands of parameters. The
            # lower bound matters: without it the planner may scan every remaining old row again in
            # each batch, which made pruning a million rows quadratic.
            batch = queryset.filter(pk__gte=pks[0], pk__lte=pks[-1])
            if before_delete is not None:
                before_delete(batch)
            # QuerySet.delete() would load every row to run on_delete and signals, 100 pks per
            # statement; these log rows have neither, so one direct DELETE per batch.
            deleted += batch._raw_delete(using)
        batches += 1
        if progress is not None:
            progress(name, deleted, max(total, deleted))
        if len(pks) < batch_size:
            break
    return deleted, batches
