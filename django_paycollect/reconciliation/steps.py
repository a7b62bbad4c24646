"""Reconciliation as a list of small named steps, each asking the service layer about one kind of doubt.

A step selects the rows it is unsure about (:meth:`Step.select`), describes one for the report
(:meth:`Step.describe`) and settles or reviews it (:meth:`Step.handle`). :func:`reconcile` runs
:data:`STEPS` in order; an item that fails is reported as an error and the run goes on.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.db import connections, models, router
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from .. import services
from ..conf import paycollect_settings
from ..exceptions import PayCollectConfigurationError, ServiceLayerError, describe_error
from ..models import ApiCall, DirectOrder, HousekeepingRun, RecurringSeries, Refund, Transaction
from ..services.common import primary
from ..services.config import cached_communities
from ..services.housekeeping import record_run
from .report import Finding, Progress, ProgressCallback, Summary

logger = logging.getLogger("django_paycollect.reconciliation")
_MISCONFIGURED = "reconciliation: %s %s: the payments configuration is wrong: %s"

_CHUNK = 200
#: Past this many open transactions, the reconcile task hands them to other workers in ``reconcile_chunk``
#: tasks of this many each (a constant: how work is shared out, which no site had a reason to turn).
CHUNK_SIZE = 500
#: How often an open transaction more than a day old is fetched again (at most).
STALE_OPEN_INTERVAL = timedelta(hours=6)
#: How long a community creation of unknown outcome keeps being reported for review.
COMMUNITY_REVIEW_DAYS = 7


def _chunked(queryset: models.QuerySet[Any], *related: str) -> tuple[int, Iterator[Any]]:
    """The matching rows' count, and the rows read a chunk of primary keys at a time (no long cursor)."""
    pks = list(queryset.order_by("pk").values_list("pk", flat=True))
    manager = primary(queryset.model)

    def rows() -> Iterator[Any]:
        for start in range(0, len(pks), _CHUNK):
            chunk = pks[start : start + _CHUNK]
            batch = manager.select_related(*related).in_bulk(chunk) if related else manager.in_bulk(chunk)
            yield from (batch[pk] for pk in chunk if pk in batch)

    return len(pks), rows()


def _label(txn: Transaction) -> str:
    return txn.uuid or f"#{txn.pk}"


@dataclass
class Run:
    """One reconciliation: its scope and cutoff, its summary, and the transactions it fetched already."""

    summary: Summary
    progress: ProgressCallback | None
    community_id: str | None
    older_than: timedelta
    now: datetime = field(default_factory=timezone.now)
    fetched: set[int] = field(default_factory=set)
    #: The summary, progress and ``fetched`` are shared by concurrent fetchers.
    lock: Any = field(default_factory=threading.RLock)

    @property
    def cutoff(self) -> datetime:
        return self.now - self.older_than

    @property
    def scope(self) -> Q:
        return Q(community_id=self.community_id) if self.community_id else Q()

    def fetch(self, txn: Transaction) -> Transaction:
        """Fetch a transaction once per run; returns it as stored afterwards."""
        with self.lock:
            if txn.pk in self.fetched or not txn.uuid:
                return txn
            self.fetched.add(txn.pk)
        before = txn.status
        txn = services.sync_transaction(txn, source="reconcile")
        with self.lock:
            self.summary.fetched += 1
            if txn.status != before:
                self.summary.changed += 1
        return txn

    def each(self, step: Step, total: int, items: Iterable[Any], *, workers: int = 1) -> None:
        """``step.handle`` each item, ``workers`` at a time (threads, each with its own connection)."""
        iterator = iter(items)
        done = 0

        def one(item: Any) -> None:
            nonlocal done
            try:
                finding = step.handle(self, item)
            except Exception as exc:  # one bad item must not stop the run
                if isinstance(exc, PayCollectConfigurationError):  # the site's fault: said, with no traceback
                    logger.error(_MISCONFIGURED, step.phase, item.pk, describe_error(exc))
                elif not isinstance(exc, ServiceLayerError):
                    logger.exception("reconciliation: %s %s failed", step.phase, item.pk)
                finding = step.describe(item, f"error: {describe_error(exc)}"[:500], error=True)
            with self.lock:
                done += 1
                if finding.changed or finding.needs_review or finding.error:
                    self.summary.findings.append(finding)
                if self.progress is not None:
                    self.progress(Progress(step.phase, done, total, finding))

        if workers <= 1 or total <= 1:
            for item in iterator:
                one(item)
            return

        def fetcher() -> None:
            try:
                while True:
                    with self.lock:
                        item = next(iterator, None)
                    if item is None:
                        return
                    one(item)
            finally:
                connections.close_all()  # this thread's connections only

        # Each thread runs in a copy of this context: the task id its ApiCall rows name, the community cache.
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(fetcher,), daemon=True)
            for _ in range(min(workers, total))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def concurrency(model: type[models.Model] = Transaction) -> int:
    """How many fetches run at once: ``RECONCILE_CONCURRENCY``, or 1 where threads cannot help.

    Inside ``transaction.atomic`` (a test case's transaction too) other threads would not see the
    uncommitted rows, and SQLite allows one writer at a time: both stay sequential.
    """
    connection = connections[router.db_for_write(model)]
    if connection.in_atomic_block or connection.vendor == "sqlite":
        return 1
    return paycollect_settings.count("RECONCILE_CONCURRENCY")


def open_at_the_service() -> Q:
    """Open at the service: PENDING, or NEW with a uuid (accepted, not paid yet)."""
    return Q(status=Transaction.PENDING) | Q(status=Transaction.NEW, uuid__isnull=False)


def give_up_after() -> timedelta | None:
    """``RECONCILE_GIVE_UP_AFTER`` as an age, or None (open transactions are fetched whatever their age)."""
    seconds = paycollect_settings.seconds("RECONCILE_GIVE_UP_AFTER")
    return None if seconds is None else timedelta(seconds=seconds)


def given_up(now: datetime) -> Q | None:
    """Open transactions reconciliation no longer fetches (older than ``RECONCILE_GIVE_UP_AFTER``) but lists
    for a person; None when it fetches them whatever their age."""
    age = give_up_after()
    return None if age is None else open_at_the_service() & Q(created_at__lt=now - age)


class Step:
    """One kind of doubt: which rows, how each is named, what is done with it."""

    phase: ClassVar[str]
    kind: ClassVar[str]
    related: ClassVar[tuple[str, ...]] = ()

    def select(self, run: Run) -> models.QuerySet[Any]:
        raise NotImplementedError

    def label(self, item: Any) -> str:
        return _label(item)  # a transaction, unless the step says otherwise

    def describe(self, item: Any, outcome: str = "", **flags: bool) -> Finding:
        return Finding(self.phase, self.kind, item.pk, self.label(item), outcome, **flags)

    def handle(self, run: Run, item: Any) -> Finding:
        raise NotImplementedError

    def review(self, item: Any, outcome: str) -> Finding:
        return self.describe(item, outcome, needs_review=True)


class AbandonUnknownStarts(Step):
    """Starts of unknown outcome: no uuid, nothing to fetch; closed so the reference can be paid again."""

    phase, kind = "unknown starts", "transaction"

    def select(self, run: Run) -> models.QuerySet[Transaction]:
        return primary(Transaction).filter(
            run.scope,
            status=Transaction.NEW,
            uuid__isnull=True,
            outcome_unknown=True,
            created_at__lt=run.cutoff,
        )

    def handle(self, run: Run, item: Transaction) -> Finding:
        if not services.abandon_unknown_start(item):
            return self.describe(item, "settled meanwhile")
        run.summary.abandoned += 1
        return self.describe(item, "start outcome unknown: abandoned", changed=True)


class FetchOpenTransactions(Step):
    """Open transactions nobody heard of for a while (fetched at most once per ``older_than``).

    A payment page left open stays PENDING at the service for good: past a day old, such a transaction
    is fetched at most every ``STALE_OPEN_INTERVAL``, so they never crowd out the rest.
    """

    phase, kind = "open transactions", "transaction"

    def select(self, run: Run) -> models.QuerySet[Transaction]:
        stale_cutoff = run.now - max(run.older_than, STALE_OPEN_INTERVAL)
        selected = primary(Transaction).filter(
            run.scope,
            open_at_the_service(),
            Q(last_synced_at__isnull=True)
            | Q(created_at__gte=run.now - timedelta(days=1), last_synced_at__lt=run.cutoff)
            | Q(last_synced_at__lt=stale_cutoff),
            created_at__lt=run.cutoff,
        )
        # Past RECONCILE_GIVE_UP_AFTER not at all: the dashboard lists them for a person.
        age = give_up_after()
        return selected if age is None else selected.filter(created_at__gte=run.now - age)

    def handle(self, run: Run, item: Transaction) -> Finding:
        finding = self.describe(item)
        before = item.status
        txn = run.fetch(item)
        if txn.status != before:
            finding.outcome, finding.changed = f"{before} -> {txn.status}", True
        else:
            finding.outcome = f"still {txn.status}"
        if txn.amount_mismatch:
            finding.outcome += "; the service's amount or currency differs: check it"
            finding.needs_review = True
        return finding


class SettleCancellations(Step):
    """Cancellations: unknown ones are settled from ``recurring.active``; pending ones mean a process died."""

    phase, kind = "cancellations", "series"

    def select(self, run: Run) -> models.QuerySet[RecurringSeries]:
        recent_cancel = primary(ApiCall).filter(
            series=OuterRef("pk"), operation="cancel_recurring", created_at__gte=run.cutoff
        )
        return (
            primary(RecurringSeries)
            .filter(
                run.scope,
                cancel_state__in=(RecurringSeries.CANCEL_UNKNOWN, RecurringSeries.CANCEL_PENDING),
            )
            .exclude(Exists(recent_cancel))
        )  # too recent: the service may still be acting on it

    def label(self, item: RecurringSeries) -> str:
        return item.parent_uuid

    def handle(self, run: Run, item: RecurringSeries) -> Finding:
        settled = services.settle_unknown_cancel(item)
        if settled.cancel_state == RecurringSeries.CANCEL_PENDING:
            # Left pending only when the series' parent transaction is unknown here: nothing to fetch.
            return self.review(
                item,
                "cancellation pending since before the cutoff, and the parent transaction is unknown here: "
                "check the service's dashboard, then cancel again if it still charges",
            )
        finding = self.describe(item)
        if settled.cancel_state == RecurringSeries.CANCEL_DONE:
            finding.outcome, finding.changed = "cancellation took effect", True
        elif settled.cancel_state == RecurringSeries.CANCEL_FAILED:
            finding.outcome, finding.changed = "cancellation did not take effect: it may be sent again", True
        else:
            finding.outcome = f"left {settled.get_cancel_state_display()}"
        if finding.changed:
            run.summary.cancels_settled += 1
        return finding


class ReviewRefunds(Step):
    """Refunds the service never confirmed: their transaction is fetched, and they are reported."""

    phase, kind, related = "refunds", "refund", ("transaction",)

    def select(self, run: Run) -> models.QuerySet[Refund]:
        return primary(Refund).filter(
            Q(state=Refund.UNKNOWN) | Q(state=Refund.PENDING, created_at__lt=run.cutoff),
            Q(transaction__community_id=run.community_id) if run.community_id else Q(),
        )

    def label(self, item: Refund) -> str:
        return f"#{item.pk} of {_label(item.transaction)}"

    def handle(self, run: Run, item: Refund) -> Finding:
        run.fetch(item.transaction)
        why = "outcome unknown" if item.state == Refund.UNKNOWN else "still pending (the process stopped?)"
        return self.review(
            item,
            f"refund of {item.amount} {item.transaction.currency}: {why}; the service's transaction "
            "does not show refunds: check its dashboard, then resolve the refund in the admin",
        )


class ReviewCaptures(Step):
    """Captures the service never confirmed: their transaction is fetched, and they are reported."""

    phase, kind = "captures", "capture"

    def select(self, run: Run) -> models.QuerySet[Transaction]:
        return primary(Transaction).filter(
            run.scope,
            Q(capture_state=Transaction.CAPTURE_UNKNOWN)
            | Q(capture_state=Transaction.CAPTURE_PENDING, updated_at__lt=run.cutoff),
        )

    def handle(self, run: Run, item: Transaction) -> Finding:
        txn = run.fetch(item)
        why = "outcome unknown" if txn.capture_state == Transaction.CAPTURE_UNKNOWN else "still pending"
        return self.review(
            item, f"capture {why}; the service's transaction does not show captures: check its dashboard"
        )


class ReviewDirectOrders(Step):
    """Direct orders of unknown creation: no lookup exists, so only a person can tell."""

    phase, kind = "direct orders", "direct_order"

    def select(self, run: Run) -> models.QuerySet[DirectOrder]:
        return primary(DirectOrder).filter(
            run.scope, Q(state=DirectOrder.UNKNOWN) | Q(state=DirectOrder.NEW, created_at__lt=run.cutoff)
        )

    def label(self, item: DirectOrder) -> str:
        return f"#{item.pk} {item.name!r}"

    def handle(self, run: Run, item: DirectOrder) -> Finding:
        return self.review(
            item,
            "creation outcome unknown: look for it in the service's dashboard before creating it again"
            if item.state == DirectOrder.UNKNOWN
            else "never sent or never answered (the process stopped?): check the dashboard",
        )


class ReviewCommunityCreations(Step):
    """Community creations of unknown outcome: the spec shows no way to read communities, so only a person
    can tell. Reported for ``COMMUNITY_REVIEW_DAYS``, then left to the ApiCall row."""

    phase, kind = "community creations", "api_call"

    def select(self, run: Run) -> models.QuerySet[ApiCall]:
        return primary(ApiCall).filter(
            run.scope,
            operation="create_community",
            outcome_unknown=True,
            created_at__lt=run.cutoff,
            created_at__gte=timezone.now() - timedelta(days=COMMUNITY_REVIEW_DAYS),
        )

    def label(self, item: ApiCall) -> str:
        return f"create_community #{item.pk}"

    def handle(self, run: Run, item: ApiCall) -> Finding:
        return self.review(
            item,
            f"creation outcome unknown ({item.error_class} at {item.created_at:%Y-%m-%d %H:%M}): "
            "look for the community in the service's dashboard before creating it again",
        )


class CountMissedCharges(Step):
    """Active recurring series: charges the service made that no callback told us of."""

    phase, kind = "recurring series", "series"

    def select(self, run: Run) -> models.QuerySet[RecurringSeries]:
        return (
            primary(RecurringSeries)
            .filter(
                run.scope,
                Q(last_synced_at__isnull=True) | Q(last_synced_at__lt=run.cutoff),
                active=True,
            )
            .exclude(cancel_state=RecurringSeries.CANCEL_DONE)
        )

    def label(self, item: RecurringSeries) -> str:
        return item.parent_uuid

    def handle(self, run: Run, item: RecurringSeries) -> Finding:
        missed = services.missed_charges(item)
        if item.parent_transaction_id is not None:
            run.fetched.add(item.parent_transaction_id)
        if missed:
            run.summary.missed_charges += missed
            return self.review(
                item,
                f"{missed} charge(s) made by the service that no callback told us of: their uuids "
                "are in the service's dashboard; sync them by uuid",
            )
        return self.describe(item, "every charge known")


#: The steps of a run, in order: closing what cannot be fetched first, then fetching, then reviewing.
STEPS: tuple[Step, ...] = (
    AbandonUnknownStarts(),
    FetchOpenTransactions(),
    SettleCancellations(),
    ReviewRefunds(),
    ReviewCaptures(),
    ReviewDirectOrders(),
    ReviewCommunityCreations(),
    CountMissedCharges(),
)


def reconcile(
    community_id: str | None = None,
    older_than: timedelta = timedelta(minutes=30),
    progress: ProgressCallback | None = None,
    *,
    fan_out: Callable[[list[int]], Any] | None = None,
) -> Summary:
    """Settle what is uncertain, step by step (:data:`STEPS`), item by item; ``progress`` is called after
    each item.

    Open transactions are fetched ``RECONCILE_CONCURRENCY`` at a time. With ``fan_out`` (the reconcile
    task passes one that queues ``reconcile_chunk`` tasks), more than :data:`CHUNK_SIZE` of them
    are handed out in chunks of that size, so several workers fetch them at once. Records the run's end
    (``services.housekeeping.record_run``), whatever its items came to.
    """
    summary = Summary(community_id=community_id, older_than=older_than)
    run = Run(summary, progress, community_id, older_than)
    with cached_communities():
        for step in STEPS:
            if isinstance(step, FetchOpenTransactions):
                _fetch_open(run, step, fan_out)
            else:
                run.each(step, *_chunked(step.select(run), *step.related))
    summary.finished_at = timezone.now()
    # A stopped beat shows as reconciliation that is late (reporting.housekeeping).
    record_run(HousekeepingRun.RECONCILIATION, summary.finished_at)
    return summary


def _fetch_open(run: Run, step: FetchOpenTransactions, fan_out: Callable[[list[int]], Any] | None) -> None:
    """Open transactions ``RECONCILE_CONCURRENCY`` at a time, or, past :data:`CHUNK_SIZE` with a
    ``fan_out``, handed out in chunks of that size to other workers."""
    selected = step.select(run)
    if (too_old := given_up(run.now)) is not None:  # not fetched: counted, for a person
        run.summary.given_up = primary(Transaction).filter(run.scope, too_old).count()
    total, rows = _chunked(selected)
    if fan_out is not None and total > CHUNK_SIZE:
        pks = list(selected.order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(pks), CHUNK_SIZE):
            fan_out(pks[start : start + CHUNK_SIZE])
            run.summary.chunks += 1
        run.summary.chunked = len(pks)
        return
    run.each(step, total, rows, workers=concurrency())


def reconcile_chunk(pks: list[int], progress: ProgressCallback | None = None) -> Summary:
    """Fetch the open transactions among ``pks`` (a chunk a larger run handed out: ``reconcile``'s
    ``fan_out``), ``RECONCILE_CONCURRENCY`` at a time."""
    summary = Summary(community_id=None, older_than=timedelta(0))
    run = Run(summary, progress, None, timedelta(0))
    still_open = primary(Transaction).filter(open_at_the_service(), pk__in=pks)
    with cached_communities():
        run.each(FetchOpenTransactions(), *_chunked(still_open), workers=concurrency())
    summary.finished_at = timezone.now()
    return summary
