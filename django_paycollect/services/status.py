"""The status machine: a transaction's status only moves forward, each change recorded."""

from __future__ import annotations

import logging

from django.utils import timezone

from .. import signals
from ..models import (
    Transaction,
    TransactionStatusChange,
)
from .common import send_after_commit
from .rows import insert_row

logger = logging.getLogger("django_paycollect.services")


# --- the status machine -------------------------------------------------------------------

_RANK: dict[str, int] = {
    Transaction.NEW: 0,
    Transaction.PENDING: 1,
    Transaction.FAILED: 2,
    Transaction.REJECTED: 2,
    Transaction.ABANDONED: 2,
    Transaction.SUCCESSFUL: 3,
}


def apply_status(txn: Transaction, reported: str, *, source: str) -> bool:
    """Move ``txn`` (locked by the caller) to the status the service reported, if that is forward.

    An unknown status is kept in ``service_status`` and flagged, never applied and never dropped.
    SUCCESSFUL is final: no late or forged message moves it back. FAILED may still become
    SUCCESSFUL, so a late payment after a failed attempt is recorded, not lost.
    Returns True when the status changed; the signals follow after the commit.
    """
    moved_from = move_status(txn, reported)
    record_status(txn, moved_from, source=source)
    return moved_from is not None


def move_status(txn: Transaction, reported: str) -> str | None:
    """:func:`apply_status`'s decision, made on ``txn`` in memory only (``service_status``,
    ``status_unrecognised``, and for a forward move ``status`` and ``succeeded_at``): the status it moved
    from, or None. Nothing is recorded or sent: :func:`record_status` does that once the row is written
    (a sync writes it by an UPDATE guarded by what the decision read, or under the row lock)."""
    txn.service_status = reported
    txn.status_unrecognised = reported not in Transaction.KNOWN_SERVICE_STATUSES
    if txn.status_unrecognised:
        return None
    before = txn.status
    if _RANK[reported] <= _RANK[before]:
        return None  # same or backward: a late, duplicated or forged message
    txn.status = reported
    if reported == Transaction.SUCCESSFUL:
        txn.succeeded_at = timezone.now()  # the day the money came in, for the dashboard's figures
    return before


def record_status(txn: Transaction, moved_from: str | None, *, source: str) -> None:
    """What :func:`move_status` decided, once ``txn`` is written: the change's row, its signals queued
    for after the commit (nothing for no move; an unrecognised status logged)."""
    if moved_from is None:
        if txn.status_unrecognised:
            logger.warning(
                "transaction %s: unrecognised status %r kept, not applied", txn.uuid, txn.service_status
            )
        return
    reported = txn.status
    insert_row(
        TransactionStatusChange(
            transaction=txn,
            from_status=moved_from,
            to_status=reported,
            service_status=reported,
            source=source,
        )
    )
    send_after_commit(
        signals.transaction_status_changed,
        transaction=txn,
        from_status=moved_from,
        to_status=reported,
        source=source,
    )
    if reported == Transaction.SUCCESSFUL:
        send_after_commit(signals.payment_succeeded, transaction=txn)
        if txn.series_id and txn.parent_uuid and txn.parent_uuid != txn.uuid:
            send_after_commit(signals.recurring_charge_succeeded, transaction=txn, series=txn.series)
    elif reported == Transaction.FAILED:
        send_after_commit(signals.payment_failed, transaction=txn)


def set_local_status(txn: Transaction, status: str, *, source: str) -> None:
    before = txn.status
    if before == status:
        return
    txn.status = status
    TransactionStatusChange.objects.create(
        transaction=txn, from_status=before, to_status=status, source=source
    )
    send_after_commit(
        signals.transaction_status_changed,
        transaction=txn,
        from_status=before,
        to_status=status,
        source=source,
    )
