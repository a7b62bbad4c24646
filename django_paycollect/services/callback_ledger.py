r"""The callback ledger: the one owner of ``ReceivedCallback.state``.

Every stored callback's life is written here, and only here: storing it (or its refusal, as *invalid*),
deduplicating redeliveries, claiming it for verification (a redelivery, the admin, the command, the sweep),
recording that its queueing failed, verifying it against the service, and recording why it waits or
failed. The states::

    received --queued--> queued --verified--> processed
       ^                   |  \--failed----> failed --(reprocess)--> queued
       |                   |
       +--queueing failed--+        duplicate, invalid: final when stored

Nothing here talks to a broker: the functions that claim a callback return it, and the caller hands it
to the worker after the commit (``tasks.hand_on``, the one route). A callback left *queued* because that
never happened is found by the sweep (:func:`claim_stuck_callbacks`) once overdue.
"""

from __future__ import annotations

import datetime as dt
import logging
import traceback
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from django import db
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..conf import paycollect_settings
from ..exceptions import NotFound, ServiceUnavailable, describe_error
from ..ids import canonical_uuid
from ..models import Community, DirectOrder, FetchMark, HousekeepingRun, ReceivedCallback, Transaction
from ..secrecy import scrub_error
from .calls import current_task_id
from .common import atomic, primary, unique
from .housekeeping import record_run
from .sync import apply_fetched, fetch_transaction
from .upserts import insert_callback, take_fetch_turn

logger = logging.getLogger("django_paycollect.callbacks")

#: Stored callbacks that may be claimed for verification again (by a redelivery, the admin or the command).
REPROCESSABLE_STATES = (ReceivedCallback.RECEIVED, ReceivedCallback.QUEUED, ReceivedCallback.FAILED)
#: Seconds before each retry of a callback whose transaction could not be fetched.
CALLBACK_RETRY_DELAYS = (5, 30, 120, 600, 1800)
#: Database errors that say "not now" (connection refused, lost, server restarting), not "never": nothing
#: can be recorded, so the verification is retried (or left to the sweep), never marked failed.
DATABASE_UNAVAILABLE = (db.OperationalError, db.InterfaceError)


# --- storing -------------------------------------------------------------------------------------------


def dedupe_key(uuid: str, claimed_status: str) -> str:
    """One key per (transaction, claimed status): the uuid in its canonical form, whatever its spelling."""
    return f"{canonical_uuid(uuid)}|{claimed_status.upper()}"


@dataclass(frozen=True)
class StoredCallback:
    """The row :func:`store_callback` stored (``callback_id``; a duplicate's own row for a redelivery), and
    the callback to hand to the worker after the commit (``to_verify``: the new one, the original of a
    redelivery that is verified again, or None)."""

    callback_id: int
    to_verify: int | None


def store_invalid_callback(reason: str, **fields: Any) -> ReceivedCallback:
    """Store a callback refused by intake (state *invalid*, with the reason): final, never verified."""
    return primary(ReceivedCallback).create(state=ReceivedCallback.INVALID, invalid_reason=reason, **fields)


def store_callback(**fields: Any) -> StoredCallback:
    """Store a well-formed callback (its claims, body and headers as ``fields``), queued for verification.

    A new callback costs one INSERT (:func:`~.upserts.insert_callback`); a redelivery three queries (the
    INSERT, which the unique ``dedupe_key`` turns into nothing inserted, the original's lookup, the
    duplicate's INSERT), plus one when it has the original verified again (see :func:`_verify_again`). No
    database error either way: a redelivery flood leaves the database's log quiet.
    """
    key = dedupe_key(fields["transaction_uuid"], fields["claimed_status"])
    for _attempt in range(2):
        now = timezone.now()
        callback = ReceivedCallback(
            state=ReceivedCallback.QUEUED,
            dedupe_key=key,
            received_at=now,
            queued_at=now,
            next_attempt_at=now,
            **fields,
        )
        if insert_callback(callback):
            pk = callback.pk
            logger.info(
                "callback #%s stored for %s (claims %s)", pk, key.split("|")[0], fields["claimed_status"]
            )
            return StoredCallback(pk, pk)
        original = (
            primary(ReceivedCallback)
            .filter(dedupe_key=key)
            .select_related("transaction")
            .only("pk", "state", "claimed_status", "transaction_uuid", "transaction__status")
            .first()
        )
        if original is None:
            continue  # pruned a moment ago: this one is the first again
        duplicate = primary(ReceivedCallback).create(
            state=ReceivedCallback.DUPLICATE,
            duplicate_of=original,
            outcome=f"redelivery of callback #{original.pk}",
            **fields,
        )
        again = _verify_again(original) and requeue_callback(original.pk, states=(original.state,))
        logger.info("callback #%s is a redelivery of #%s", duplicate.pk, original.pk)
        return StoredCallback(duplicate.pk, original.pk if again else None)
    raise RuntimeError("the callback could not be stored")  # pragma: no cover (needs two prunes in a row)


def _verify_again(original: ReceivedCallback) -> bool:
    """Whether a redelivery ("did you get it?") has its original verified again: one never verified (not
    queued, or failed), or one that found the transaction still open while claiming an outcome (sent before
    the service's own records said so), once a fetch is due. The caller's claim makes it happen once."""
    if original.state in (ReceivedCallback.RECEIVED, ReceivedCallback.FAILED):
        return True
    txn = original.transaction
    return (
        original.state == ReceivedCallback.PROCESSED
        and txn is not None
        and txn.status in Transaction.OPEN_STATUSES
        and original.claimed_status.upper() not in Transaction.OPEN_STATUSES
        and callback_fetch_due(original.transaction_uuid)
    )


# --- claiming for verification, and what happens when queueing fails -------------------------------------


def requeue_callback(
    callback_id: int, states: tuple[str, ...] = REPROCESSABLE_STATES, *, fresh: bool = True
) -> bool:
    """Claim a stored callback for verification (state *queued*), once: False when in another state.

    ``fresh``: a person or the sender asks again, so only a fetch sent from now on answers it
    (``queued_at``); the sweep, which only hands on a question already asked, passes False.
    """
    now = timezone.now()
    asked = {"queued_at": now} if fresh else {}
    claimed = primary(ReceivedCallback).filter(pk=callback_id, state__in=states)
    return bool(claimed.update(state=ReceivedCallback.QUEUED, next_attempt_at=now, **asked))


def callback_not_queued(callback_ids: int | Collection[int], error: BaseException) -> None:
    """Record that handing queued callbacks (one id, or several handed on together) to the worker failed:
    each is *received* again, with the reason (shown in the admin), and the next sweep queues it again.
    Nothing is lost. One UPDATE, however many."""
    ids = [callback_ids] if isinstance(callback_ids, int) else list(callback_ids)
    now = timezone.now()
    reason = scrub_error(f"{type(error).__name__}: {error}")
    primary(ReceivedCallback).filter(pk__in=ids, state=ReceivedCallback.QUEUED).update(
        state=ReceivedCallback.RECEIVED,
        next_attempt_at=now,
        error=f"could not be queued for verification at {now:%Y-%m-%d %H:%M:%S} UTC ({reason[:300]}); "
        "the sweep queues it again",
    )


def reprocess_callback(callback_id: int, *, afresh: bool = True, here: bool = False) -> str | None:
    """Verify a stored callback again, as a person asks (the admin's action, the command).

    Claims it (None when its state has nothing to verify: processed, duplicate, invalid, or claimed by
    someone else meanwhile). ``afresh``: only a fetch sent from now on answers it, and one made moments ago
    does not defer it. ``here``: verified now, in this process, and its state after that is returned;
    otherwise *queued* is returned and the caller hands it to the worker after the commit
    (``tasks.hand_on``; should that never happen, the sweep does).
    """
    if not requeue_callback(callback_id, fresh=afresh):
        return None
    if not here:
        return ReceivedCallback.QUEUED
    try:
        return run_verification(callback_id, force=afresh, may_retry=False).state
    except Exception as exc:  # the database, gone mid-way: recorded if it can be
        callback_failed(callback_id, exc, traceback.format_exc())
        return primary(ReceivedCallback).values_list("state", flat=True).get(pk=callback_id)


# --- the sweep: nothing stays unverified because a message was lost ----------------------------------


def requeue_after() -> dt.timedelta:
    """``PAYCOLLECT["CALLBACK_REQUEUE_AFTER"]``: how long past its due time a queued callback is stuck."""
    return dt.timedelta(seconds=paycollect_settings.seconds("CALLBACK_REQUEUE_AFTER") or 0)


def stuck_filter(now: dt.datetime | None = None) -> Q:
    """The one definition of a stuck callback (the sweep, the admin's filter, the dashboard, check
    ``paycollect.W005``): received ones (queueing failed) at once, and queued ones whose verification was
    due more than ``CALLBACK_REQUEUE_AFTER`` ago (a worker died with the message, the broker lost it, or
    the database was down while it ran)."""
    cutoff = (now or timezone.now()) - requeue_after()
    overdue = Q(next_attempt_at__lt=cutoff) | Q(next_attempt_at__isnull=True, received_at__lt=cutoff)
    return Q(state=ReceivedCallback.RECEIVED) | (Q(state=ReceivedCallback.QUEUED) & overdue)


#: Callbacks one sweep queues again at most (the rest wait for the next run, a minute later).
SWEEP_BATCH = 1000


@dataclass
class Sweep:
    """What one sweep did: the callbacks it queued again, and when the oldest of them was due."""

    requeued: list[int] = field(default_factory=list)
    oldest_due: dt.datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "requeued": len(self.requeued),
            "ids": self.requeued[:100],
            "oldest_due": self.oldest_due.isoformat() if self.oldest_due else None,
        }


def claim_stuck_callbacks(limit: int = SWEEP_BATCH) -> Sweep:
    """Claim every stuck callback (see :func:`stuck_filter`) for verification again, oldest first, each
    once: runs may overlap, and the claim (a conditional UPDATE) gives each callback to one of them.
    The caller hands ``requeued`` to the worker (``tasks.callbacks.sweep``). Records the run
    (:func:`~.housekeeping.record_run`)."""
    now = timezone.now()
    rows = list(
        primary(ReceivedCallback)
        .filter(stuck_filter(now))
        .annotate(due=Coalesce("next_attempt_at", "received_at"))
        .order_by("due", "pk")
        .values_list("pk", "due")[:limit]
    )
    result = Sweep()
    for pk, due_at in rows:
        claimed = (
            primary(ReceivedCallback)
            .filter(stuck_filter(now), pk=pk)
            .update(state=ReceivedCallback.QUEUED, next_attempt_at=timezone.now())
        )
        if claimed:
            result.requeued.append(pk)
            result.oldest_due = due_at if result.oldest_due is None else min(result.oldest_due, due_at)
    if result.requeued:
        logger.warning(
            "sweep: queued %d stuck callback(s) again (the oldest due since %s)",
            len(result.requeued),
            result.oldest_due,
        )
    record_run(HousekeepingRun.SWEEP)  # a stopped beat shows as a sweep that is late (reporting.housekeeping)
    return result


# --- verification ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verification:
    """What one run of :func:`run_verification` came to: the callback's state, and when it is to be
    verified again (``retry_in`` seconds, None when not), with the error that made it wait."""

    state: str
    retry_in: float | None = None
    error: BaseException | None = None


def run_verification(callback_id: int, *, force: bool = False, may_retry: bool = True) -> Verification:
    """Verify a stored callback (:func:`verify_callback`) and record whatever it came to.

    Deferred (its transaction was fetched moments ago), it waits, and ``retry_in`` says when. The service
    unavailable: while ``may_retry`` and retries are left (``CALLBACK_RETRY_DELAYS``), it waits too;
    then it is *failed*, as when the service does not know the uuid or anything else went wrong (kept
    on the callback, with the traceback, for the admin). A database that cannot be reached is raised:
    nothing can be recorded.
    """
    try:
        return Verification(verify_callback(callback_id, force=force).state)
    except FetchDeferred as deferred:
        callback_waiting(callback_id, deferred.seconds, outcome=f"waiting: {deferred}"[:500])
        return Verification(ReceivedCallback.QUEUED, retry_in=deferred.seconds)
    except ServiceUnavailable as exc:
        attempts = primary(ReceivedCallback).values_list("attempts", flat=True).get(pk=callback_id)
        if may_retry and attempts <= len(CALLBACK_RETRY_DELAYS):
            delay = CALLBACK_RETRY_DELAYS[max(attempts, 1) - 1]
            callback_waiting(
                callback_id,
                delay,
                error=f"{describe_error(exc)}; trying again in {delay} s "
                f"(attempt {attempts} of {len(CALLBACK_RETRY_DELAYS) + 1})",
            )
            return Verification(ReceivedCallback.QUEUED, retry_in=delay, error=exc)
        callback_failed(callback_id, exc, traceback.format_exc())
        return Verification(ReceivedCallback.FAILED, error=exc)
    except NotFound as exc:
        # The service does not know the uuid: a forged or mistaken callback, not our bug.
        logger.warning("callback %s names a transaction the service does not know", callback_id)
        callback_failed(callback_id, exc)
        return Verification(ReceivedCallback.FAILED, error=exc)
    except DATABASE_UNAVAILABLE:
        raise
    except Exception as exc:  # a permanent error: kept on the callback for the admin, not retried
        logger.exception("callback %s could not be verified", callback_id)
        callback_failed(callback_id, exc, traceback.format_exc())
        return Verification(ReceivedCallback.FAILED, error=exc)


class FetchDeferred(Exception):
    """A callback's transaction was fetched for another callback moments ago: verify it again later.

    Raised by :func:`verify_callback` instead of a second fetch within ``CALLBACK_FETCH_INTERVAL``;
    ``seconds`` is when the next fetch of that transaction is allowed. Not an error: the callback
    stays queued (``next_attempt_at`` says until when) and the task tries again then.
    """

    def __init__(self, callback_id: int, uuid: str, seconds: float) -> None:
        super().__init__(
            f"callback #{callback_id}: transaction {uuid} was fetched moments ago for another callback; "
            f"verify again in {seconds:.1f} s"
        )
        self.callback_id = callback_id
        self.uuid = uuid
        self.seconds = seconds


def callback_fetch_interval() -> dt.timedelta:
    """``PAYCOLLECT["CALLBACK_FETCH_INTERVAL"]``: callbacks fetch a transaction at most once per this long."""
    return dt.timedelta(seconds=paycollect_settings.seconds("CALLBACK_FETCH_INTERVAL") or 0)


#: Added to a deferral, so the deferred verification finds the interval over rather than just not yet.
_DEFER_MARGIN = 0.25


def claim_fetch(callback: ReceivedCallback, asked: dt.datetime, *, force: bool) -> dt.datetime:
    """Step 1 of a verification: take the right to fetch the callback's uuid now (at most once per interval,
    across processes) and count the attempt, in one commit before the fetch, so other processes see the
    claim (inside a caller's atomic block, both commit with it). Returns when the right was taken. Raises
    :class:`FetchDeferred` when another verification took it less than an interval ago (unless ``force``: a
    person asked), and :class:`~django_paycollect.exceptions.NotFound` when a fetch sent after ``asked``
    found that the service does not know the uuid. One statement (:func:`~.upserts.take_fetch_turn`), one
    more to read the mark when refused; never a database error."""
    task_id = current_task_id.get()
    with atomic(ReceivedCallback):
        taken = _take_turn(callback.pk, callback.transaction_uuid, asked, force=force)
        counted = {"task_id": task_id} if task_id else {}
        primary(ReceivedCallback).filter(pk=callback.pk).update(attempts=F("attempts") + 1, **counted)
    callback.attempts += 1
    callback.task_id = task_id or callback.task_id
    return taken


def _take_turn(callback_id: int, uuid: str, asked: dt.datetime, *, force: bool) -> dt.datetime:
    while True:
        interval = callback_fetch_interval()
        taken = take_fetch_turn(uuid, None if force else interval.total_seconds(), asked=asked)
        if taken is not None:
            return taken
        now = timezone.now()
        mark = primary(FetchMark).filter(uuid=uuid).values_list("claimed_at", "not_found_at").first()
        if mark is None:  # pruned a moment ago: the next claim inserts it again
            continue
        claimed_at, not_found_at = mark
        if not_found_at is not None and not_found_at >= asked:
            raise NotFound(
                f"the service does not know it (answered by the fetch sent at "
                f"{not_found_at:%Y-%m-%d %H:%M:%S} for another callback)"
            )
        last = claimed_at or now
        wait = max(0.0, (last + interval - now).total_seconds()) + _DEFER_MARGIN
        raise FetchDeferred(callback_id, uuid, wait)


def callback_fetch_due(uuid: str) -> bool:
    """Whether a callback may fetch ``uuid`` now: nobody took the right to in the last interval."""
    claimed_at = primary(FetchMark).filter(uuid=uuid).values_list("claimed_at", flat=True).first()
    return claimed_at is None or claimed_at <= timezone.now() - callback_fetch_interval()


def verify_callback(callback_id: int, *, force: bool = False) -> ReceivedCallback:
    """Verify a stored callback: fetch its transaction from the service and apply what the service says.

    The callback's claims are never applied; they only say which transaction to fetch (a renewal charge, a
    new uuid, is created from the fetched object). Idempotent: a callback already processed is left alone.
    Raises the contract's error when the service cannot be read: the caller retries on
    :class:`ServiceUnavailable` and otherwise records the failure with :func:`callback_failed`.

    Fetches are bounded per transaction, across processes: a fetch sent after this callback was queued (for
    another callback, a browser return, a sync) answers it (``Transaction.fetch_sent_at``); otherwise at most
    one per ``CALLBACK_FETCH_INTERVAL`` is made (:class:`~django_paycollect.models.FetchMark`), a second
    raising :class:`FetchDeferred` unless ``force`` (a person asked again).
    """
    # Read without a lock: a lock would end with its transaction, before anything below. A run that
    # finishes first is left as it recorded by the guarded write of mark_verified.
    callback = unique(ReceivedCallback, pk=callback_id)
    if callback is None:
        raise ReceivedCallback.DoesNotExist(f"no stored callback #{callback_id}")
    if callback.state in (ReceivedCallback.PROCESSED, ReceivedCallback.DUPLICATE, ReceivedCallback.INVALID):
        return callback

    uuid = callback.transaction_uuid
    asked = callback.queued_at or callback.received_at
    known = unique(Transaction, uuid=uuid) if uuid else None
    if known is not None and known.fetch_sent_at is not None and known.fetch_sent_at >= asked:
        # Fetched after this callback was queued: what the service said then answers it too.
        when = f"{known.fetch_sent_at:%Y-%m-%d %H:%M:%S}"
        return mark_verified(callback, known, f"answered by the fetch sent at {when} (not fetched again)")

    sent_at = claim_fetch(callback, asked, force=force)
    community_id = known.community_id if known is not None else community_of(callback.merchant_id)
    try:
        fetch = fetch_transaction(uuid, community_id, known)
    except NotFound:
        primary(FetchMark).filter(uuid=uuid).filter(
            Q(not_found_at__isnull=True) | Q(not_found_at__lt=sent_at)
        ).update(not_found_at=sent_at)
        raise
    # The callback is marked verified in the transaction that records the fetch and applies it.
    apply_fetched(known, fetch, "callback", then=lambda applied: mark_verified(callback, applied))
    return callback


def mark_verified(callback: ReceivedCallback, txn: Transaction, answered: str = "") -> ReceivedCallback:
    """The last step of a verification: record what it found (one conditional UPDATE: a run that finished
    first is left as it recorded) and return the callback as recorded."""
    # An API payment's payment_id names the API payment, never a direct order: no lookup for it.
    if callback.payment_id and txn.direct_order_id is None and txn.payment_for != "API_PAYMENT":
        _link_direct_order(txn, callback.payment_id)

    notes = [f"service says {txn.service_status or '?'}; transaction is {txn.status}"]
    if answered:
        notes.append(answered)
    if callback.claimed_status and callback.claimed_status != txn.service_status:
        notes.append(f"the callback claimed {callback.claimed_status}")
    if callback.merchant_id and callback.merchant_id != txn.community_id:
        notes.append(f"the callback named community {callback.merchant_id}")
    if txn.amount_mismatch:
        notes.append("amount mismatch flagged")
    if callback.hint_errors:
        notes.append(f"malformed hints set aside: {', '.join(sorted(callback.hint_errors))}")
    done: dict[str, Any] = {
        "transaction": txn,
        "state": ReceivedCallback.PROCESSED,
        "processed_at": timezone.now(),
        "next_attempt_at": None,
        "outcome": "; ".join(notes),
        "error": "",
        "traceback": "",
    }
    primary(ReceivedCallback).filter(pk=callback.pk).exclude(state=ReceivedCallback.PROCESSED).update(**done)
    for name, value in done.items():
        setattr(callback, name, value)
    return callback


def callback_failed(callback_id: int, error: BaseException, traceback_text: str = "") -> None:
    """Record that a callback could not be verified (shown in the admin; reprocessable)."""
    primary(ReceivedCallback).filter(pk=callback_id).exclude(state=ReceivedCallback.PROCESSED).update(
        state=ReceivedCallback.FAILED,
        next_attempt_at=None,
        error=scrub_error(describe_error(error))[:2000],
        traceback=scrub_error(traceback_text)[-20000:],
    )


def callback_waiting(callback_id: int, seconds: float, *, error: str = "", outcome: str = "") -> None:
    """Record that a callback's verification is due again in ``seconds`` (a retry, or a deferral) and why.

    The sweep leaves it alone until then (plus ``CALLBACK_REQUEUE_AFTER``); the admin shows why it waits.
    """
    changes: dict[str, Any] = {"next_attempt_at": timezone.now() + dt.timedelta(seconds=seconds)}
    if error:
        changes["error"] = scrub_error(error)[:2000]
    if outcome:
        changes["outcome"] = outcome[:2000]
    waiting = primary(ReceivedCallback).filter(pk=callback_id, state__in=ReceivedCallback.WAITING_STATES)
    waiting.update(**changes)


def community_of(claimed: str) -> str | None:
    """The claimed community when we know it (settings or a row); otherwise the default one."""
    if claimed and (
        claimed == paycollect_settings.COMMUNITY_ID
        or primary(Community).filter(community_id=claimed).exists()
    ):
        return claimed
    return None


def _link_direct_order(txn: Transaction, payment_id: str) -> None:
    # Only the callback says which order a payment belongs to (the fetched transaction does not);
    # the transaction itself is verified, and how the service totals discount and VAT is not shown,
    # so the link is recorded without an amount rule of our own.
    order = primary(DirectOrder).filter(payment_id=payment_id, community_id=txn.community_id).first()
    if order is None or txn.direct_order_id is not None:
        return
    # Through save(), as every write of a transaction: a project's receivers hear of the link too. In the
    # transaction that applied the fetch, where the row is locked (sync.apply_fetched).
    txn.direct_order = order
    txn.save(update_fields=["direct_order", "updated_at"])
