"""The status machine: a transaction's status only moves forward, each change recorded."""

from __future__ import annotations

from django.utils import timezone

from .. import signals
from ..models import Transaction, TransactionStatusChange
from .common import logger, primary, send_after_commit

_RANK: dict[str, int] = {
    Transaction.NEW: 0,
    Transaction.PENDING: 1,
    Transaction.FAILED: 2,
    Transaction.REJECTED: 2,
    Transaction.ABANDONED: 2,
    Transaction.SUCCESSFUL: 3,
}


def apply_status(txn: Transaction, reported: str, *, source: str) -> bool:
    """Move ``txn`` (locked by the caller, who saves it) to the status the service reported, if that is
    forward: the one status change of a fetched transaction (``sync.apply_fetched``) and of a payment's
    answer.

    An unknown status is kept in ``service_status`` and flagged, never applied and never dropped.
    SUCCESSFUL is final: no late or forged message moves it back. FAILED may still become
    SUCCESSFUL, so a late payment after a failed attempt is recorded, not lost.
    Returns True when the status changed: the change's row is stored, and the signals follow after the
    commit.
    """
    txn.service_status = reported
    txn.status_unrecognised = reported not in Transaction.KNOWN_SERVICE_STATUSES
    if txn.status_unrecognised:
        logger.warning("transaction %s: unrecognised status %r kept, not applied", txn.uuid, reported)
        return False
    if _RANK[reported] <= _RANK[txn.status]:
        return False  # same or backward: a late, duplicated or forged message
    if reported == Transaction.SUCCESSFUL:
        txn.succeeded_at = timezone.now()  # the day the money came in, for the dashboard's figures
    set_local_status(txn, reported, source=source, service_status=reported)
    if reported == Transaction.SUCCESSFUL:
        send_after_commit(signals.payment_succeeded, transaction=txn)
        if txn.series_id and txn.parent_uuid and txn.parent_uuid != txn.uuid:
            send_after_commit(signals.recurring_charge_succeeded, transaction=txn, series=txn.series)
    elif reported == Transaction.FAILED:
        send_after_commit(signals.payment_failed, transaction=txn)
    return True


def set_local_status(txn: Transaction, status: str, *, source: str, service_status: str = "") -> None:
    """Move ``txn`` (locked by the caller, who saves it) to ``status``: the change's row stored, and
    ``transaction_status_changed`` queued for after the commit. Our own statuses (REJECTED, ABANDONED) come
    here directly; the service's through :func:`apply_status`."""
    before = txn.status
    if before == status:
        return
    txn.status = status
    primary(TransactionStatusChange).create(
        transaction=txn, from_status=before, to_status=status, service_status=service_status, source=source
    )
    send_after_commit(
        signals.transaction_status_changed,
        transaction=txn,
        from_status=before,
        to_status=status,
        source=source,
    )
