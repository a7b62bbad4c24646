"""Recurring series: cancelling one, settling an unknown cancellation, counting missed charges."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from .. import signals
from ..client.types import OperationMessage
from ..models import RecurringSeries, Transaction
from .calls import Sent, guarded_write
from .common import lock_row, primary, recorded_user, require_autocommit, row_locked, send_after_commit
from .config import community_config
from .sync import sync_transaction


def cancel_recurring(series: RecurringSeries, *, user: Any = None) -> RecurringSeries:
    """Stop future charges of a recurring series (past charges are unaffected). Never resent.

    Returns the series, its ``cancel_state`` cancelled or unknown; refused, :class:`StateConflict` (its state)
    or :class:`PaymentRefused` (the service); never sent, :class:`ServiceUnavailable` (a failed or unknown
    cancellation may be asked again).
    """
    require_autocommit("cancel_recurring")

    def claim() -> RecurringSeries:
        found = lock_row(RecurringSeries, series.pk)
        refusal = found.cancel_refusal()
        if refusal is not None:
            raise refusal.conflict()
        found.cancel_state = RecurringSeries.CANCEL_PENDING
        found.save(update_fields=["cancel_state"])
        return found

    def record(claimed: RecurringSeries, sent: Sent[OperationMessage]) -> RecurringSeries:
        done = lock_row(RecurringSeries, claimed.pk)
        if sent.error is None:
            done.cancel_state = RecurringSeries.CANCEL_DONE
            done.active = False
            done.cancelled_at = timezone.now()
            done.cancelled_by = recorded_user(user)
            send_after_commit(
                signals.recurring_series_cancelled,
                sender=RecurringSeries,
                series=done,
                user=recorded_user(user),
            )
        else:
            done.cancel_state = (
                RecurringSeries.CANCEL_UNKNOWN if sent.unknown else RecurringSeries.CANCEL_FAILED
            )
        done.save()
        return done

    return guarded_write(
        "cancel_recurring",
        config=lambda claimed: community_config(claimed.community_id),
        claim=claim,
        send=lambda client, claimed: client.cancel_recurring(transaction_uuid=claimed.parent_uuid),
        links=lambda claimed: {"series": claimed, "transaction": claimed.parent_transaction},
        record=record,
    )


def settle_unknown_cancel(series: RecurringSeries) -> RecurringSeries:
    """Learn whether a cancellation of unknown outcome took effect, from the parent's ``recurring.active``."""
    parent = series.parent_transaction or primary(Transaction).filter(uuid=series.parent_uuid).first()
    if parent is None:
        return series
    sync_transaction(parent, source="reconcile")
    with row_locked(RecurringSeries, series.pk) as locked:
        # PENDING too: a process killed mid-call leaves it so (the caller decides it is old enough).
        if locked.cancel_state not in (RecurringSeries.CANCEL_UNKNOWN, RecurringSeries.CANCEL_PENDING):
            return locked
        if not locked.active:  # _link_series copied the fetched "active"
            locked.cancel_state = RecurringSeries.CANCEL_DONE
            locked.cancelled_at = locked.cancelled_at or timezone.now()
            send_after_commit(
                signals.recurring_series_cancelled, sender=RecurringSeries, series=locked, user=None
            )
        else:
            locked.cancel_state = RecurringSeries.CANCEL_FAILED  # still charging: it may be cancelled again
        locked.save()
    return locked


def missed_charges(series: RecurringSeries) -> int:
    """How many charges the service executed that we never heard of (from the parent's recurring_count).

    Their uuids arrive only by callback, so they cannot be fetched; the count is for the report.
    """
    parent = series.parent_transaction or primary(Transaction).filter(uuid=series.parent_uuid).first()
    if parent is None:
        return 0
    sync_transaction(parent, source="reconcile")
    series.refresh_from_db()
    known = series.charges.filter(status=Transaction.SUCCESSFUL).count()
    return max(0, series.recurring_count - known)
