"""Fetching a transaction and applying what the service says (callbacks, returns, admin, reconciliation)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from .. import signals
from ..client import Envelope
from ..client import Transaction as FetchedTransaction
from ..conf import paycollect_settings
from ..exceptions import (
    ServiceUsageError,
)
from ..ids import canonical_uuid
from ..models import ApiCall, RecurringSeries, Transaction
from ..models.fields import json_safe
from .calls import recorded_read
from .common import logger, savepoint_if_atomic, send_after_commit
from .config import community_config, get_client
from .rows import insert_row, update_row
from .status import move_status, record_status


def sync_transaction(
    txn: Transaction | None = None,
    *,
    uuid: str | None = None,
    community_id: str | None = None,
    source: str = "sync",
    timeout: tuple[float, float] | None = None,
    max_network_retries: int | None = None,
) -> Transaction:
    """Fetch the transaction from the service and apply what it says (never what a message claimed).

    Given only a ``uuid`` we do not store yet (a renewal charge, a payment started elsewhere), the
    transaction is created from the fetched object and linked to its recurring series. When the
    fetched community, amount or currency differs from what we stored, the transaction is flagged
    and ``amount_mismatch_detected`` is sent instead of applying the status.
    Raises :class:`ServiceUnavailable` when the service cannot be read (the caller decides to retry),
    :class:`NotFound` when it does not know the uuid.
    ``timeout`` and ``max_network_retries`` override the settings (a waiting customer: short, none).
    """
    uuid = canonical_uuid(uuid) if uuid else uuid
    if txn is None:
        if not uuid:
            raise ValueError("sync_transaction needs a transaction or a uuid")
        txn = Transaction.objects.filter(uuid=uuid).first()
    return sync_stored(
        txn,
        uuid,
        community_id=community_id,
        source=source,
        timeout=timeout,
        max_network_retries=max_network_retries,
    )


def sync_stored(
    txn: Transaction | None,
    uuid: str | None,
    *,
    community_id: str | None,
    source: str,
    timeout: tuple[float, float] | None = None,
    max_network_retries: int | None = None,
    then: Callable[[Transaction], object] | None = None,
) -> Transaction:
    """:func:`sync_transaction` once the stored transaction (or its absence) is known. ``then`` is called
    with the transaction as applied, in the transaction that records the fetch and applies it (what the
    caller records of it commits with them, or not at all)."""
    if txn is not None and not txn.uuid:
        raise ServiceUsageError("this transaction was never accepted by the service: nothing to fetch")
    wanted_uuid = txn.uuid if txn is not None else uuid
    assert wanted_uuid
    config = community_config(txn.community_id if txn is not None else community_id)
    client = get_client(config, timeout=timeout, max_network_retries=max_network_retries)
    sent_at = timezone.now()
    envelope, api_call = recorded_read(
        "get_transaction",
        config,
        lambda: client.get_transaction(community_id=config.community_id, transaction_uuid=wanted_uuid),
        links={"transaction": txn},
        save_success=False,
    )
    try:
        return _apply_fetched(
            txn, wanted_uuid, config.community_id, envelope, api_call, sent_at, source, then
        )
    except BaseException:
        # Rolled back with what it would have changed: the read is still recorded, on its own.
        _record_after_rollback(api_call, txn)
        raise


#: Columns a sync may change, written only when they did (with what it always writes).
_SYNC_MAY_CHANGE = (
    "service_id",
    "series_id",
    "parent_uuid",
    "transaction_order",
    "amount_mismatch",
    "service_status",
    "status",
    "status_unrecognised",
    "succeeded_at",
    "outcome_unknown",
)


def _apply_fetched(
    txn: Transaction | None,
    wanted_uuid: str,
    community_id: str,
    envelope: Envelope[FetchedTransaction],
    api_call: ApiCall,
    sent_at: dt.datetime,
    source: str,
    then: Callable[[Transaction], object] | None = None,
) -> Transaction:
    fetched = envelope.result
    as_read: dict[str, Any] | None = None  # the caller's object as read, once the unlocked write changed it
    try:
        with transaction.atomic():
            created = False
            if txn is None:
                txn, created = _create_from_fetched(community_id, wanted_uuid, fetched)
                api_call.transaction = txn
            insert_row(api_call)  # the record of the read commits with what the read changed
            if not created and _plain(txn, fetched):
                as_read = _apply_unlocked(txn, envelope, sent_at, source)
                if as_read is not None:
                    if then is not None:
                        then(txn)
                    return txn
            return _apply_locked(txn, created, envelope, sent_at, source, then)
    except BaseException:
        if as_read is not None and txn is not None:  # rolled back: the object says what the row says
            _put_back(txn, as_read)
        raise


def _apply_locked(
    txn: Transaction,
    created: bool,
    envelope: Envelope[FetchedTransaction],
    sent_at: dt.datetime,
    source: str,
    then: Callable[[Transaction], object] | None,
) -> Transaction:
    fetched = envelope.result
    if not created:  # a row this block created is locked already, and fully read
        # The whole row: Django's deferred loading costs more than the few small columns it would skip.
        txn = Transaction.objects.select_for_update().get(pk=txn.pk)
    before = {name: getattr(txn, name) for name in _SYNC_MAY_CHANGE}
    txn.raw = json_safe(envelope.data)
    txn.last_synced_at = timezone.now()
    # What the service said is at least as new as this: it answers every callback queued before.
    txn.fetch_sent_at = max(sent_at, txn.fetch_sent_at or sent_at)
    txn.service_id = fetched.id or txn.service_id
    _link_series(txn, fetched)
    differences = _differences(txn, fetched)
    if differences:
        if not txn.amount_mismatch:
            txn.amount_mismatch = True
            send_after_commit(signals.amount_mismatch_detected, transaction=txn, differences=differences)
        txn.service_status = fetched.status or ""
    else:
        if fetched.status:
            record_status(txn, move_status(txn, fetched.status), source=source)
        txn.outcome_unknown = False
    changed = [name for name in _SYNC_MAY_CHANGE if getattr(txn, name) != before[name]]
    txn.save(update_fields=["raw", "last_synced_at", "fetch_sent_at", "updated_at", *changed])
    if then is not None:
        then(txn)
    return txn


#: What the unlocked write checks the row still holds, as the decision read it: what the decision reads
#: (the status machine's inputs, the amount, currency and promocode of the mismatch check, the series a
#: renewal's signal names), the fetch mark it moves, and ``updated_at``, which every save moves, so that
#: the row the signals carry is the row as it is.
_GUARDED_BY = (
    "service_id",
    "status",
    "service_status",
    "status_unrecognised",
    "outcome_unknown",
    "total_amount",
    "currency",
    "promocode_id",
    "fetch_sent_at",
    "series_id",
    "parent_uuid",
    "updated_at",
)
#: What the unlocked write reads and may change: put back on the caller's object when it wrote nothing.
_UNLOCKED_READS = tuple(dict.fromkeys((*_GUARDED_BY, *_SYNC_MAY_CHANGE, "raw", "last_synced_at")))


def _plain(txn: Transaction, fetched: FetchedTransaction) -> bool:
    """Whether ``fetched`` can be applied to ``txn`` without the row lock held first: it links no
    recurring series (which locks the series) and finds no mismatch (which flags the row instead). Most
    fetches are: an open payment still open, or one that was paid, failed or abandoned."""
    info = fetched.recurring
    return not (info is not None and info.parent_transaction) and not _differences(txn, fetched)


def _apply_unlocked(
    txn: Transaction, envelope: Envelope[FetchedTransaction], sent_at: dt.datetime, source: str
) -> dict[str, Any] | None:
    """Apply a :func:`_plain` fetch by one UPDATE guarded by the values the decision read
    (:data:`_GUARDED_BY`), without re-reading the row under its lock first. None, ``txn`` left as it was,
    when the row changed since it was read, or when a project listens to the transaction's ``pre_save`` or
    ``post_save`` and the fetch changes more than what every fetch writes: the caller applies the fetch under
    the row lock instead (and ``save()``). Otherwise what ``txn`` held before, for :func:`_put_back` should
    the transaction roll back.

    The UPDATE takes the row lock itself and, once it holds it, checks the status the decision was made
    from (PostgreSQL re-reads a row another transaction changed meanwhile): a status still only moves
    forward, under the lock. The status change's row and its signals (after the commit) are recorded only
    once the UPDATE matched. Written: the columns every fetch writes, and those of
    :data:`_SYNC_MAY_CHANGE` the fetch changed (none for an open payment still open)."""
    fetched = envelope.result
    read = {name: getattr(txn, name) for name in _UNLOCKED_READS}
    txn.service_id = fetched.id or txn.service_id
    moved_from = move_status(txn, fetched.status) if fetched.status else None
    txn.outcome_unknown = False
    now = timezone.now()
    values = {
        "raw": json_safe(envelope.data),
        "last_synced_at": now,
        # What the service said is at least as new as this: it answers every callback queued before.
        "fetch_sent_at": max(sent_at, txn.fetch_sent_at or sent_at),
        "updated_at": now,
    }
    changed = {name: getattr(txn, name) for name in _SYNC_MAY_CHANGE if getattr(txn, name) != read[name]}
    if changed and (pre_save.has_listeners(Transaction) or post_save.has_listeners(Transaction)):
        _put_back(txn, read)  # a project hears of every change of a transaction through save()
        return None
    values.update(changed)
    try:
        if not update_row(Transaction, txn.pk, values, equal={name: read[name] for name in _GUARDED_BY}):
            _put_back(txn, read)
            return None
        for name, value in values.items():
            setattr(txn, name, value)
        record_status(txn, moved_from, source=source)
    except BaseException:
        _put_back(txn, read)
        raise
    return read


def _put_back(txn: Transaction, read: dict[str, Any]) -> None:
    for name, value in read.items():
        setattr(txn, name, value)


def _record_after_rollback(api_call: ApiCall, txn: Transaction | None) -> None:
    api_call.pk = None
    api_call._state.adding = True
    api_call.transaction = txn if txn is not None and txn.pk is not None else None
    try:
        with savepoint_if_atomic(ApiCall):
            api_call.save()
    except Exception:  # the caller's own error matters more than this record
        logger.exception("the record of a fetch could not be saved after its transaction failed")


def _differences(txn: Transaction, fetched: FetchedTransaction) -> dict[str, tuple[Any, Any]]:
    """What the service says that contradicts what we asked for (the community is in the fetch's path)."""
    differences: dict[str, tuple[Any, Any]] = {}
    amount = fetched.total_amount
    # A promocode lowers the amount by a value only the service knows, so only a higher amount is wrong.
    expected_exactly = txn.promocode_id is None
    if amount is not None and (
        amount > txn.total_amount or (expected_exactly and amount != txn.total_amount)
    ):
        differences["total_amount"] = (str(txn.total_amount), str(amount))
    if fetched.total_amount_currency and fetched.total_amount_currency != txn.currency:
        differences["currency"] = (txn.currency, fetched.total_amount_currency)
    return differences


def _create_from_fetched(
    community_id: str, uuid: str, fetched: FetchedTransaction
) -> tuple[Transaction, bool]:
    """The transaction of a uuid we did not store, created from the fetched object (INSERT first: the
    caller has just looked the uuid up; only a concurrent creation makes it read the row)."""
    amount = fetched.total_amount if fetched.total_amount is not None else Decimal("0.00")
    try:
        with transaction.atomic():  # a savepoint: the caller's block stays usable after a conflict
            created = Transaction.objects.create(
                uuid=uuid,
                community_id=community_id,
                service_id=fetched.id,
                total_amount=amount,
                currency=fetched.total_amount_currency or paycollect_settings.DEFAULT_CURRENCY,
                total_amount_piasters=fetched.total_amount_piasters,
                payment_for=fetched.payment_for or "",
                member_id=fetched.member_id or "",
                custom_fields=json_safe(fetched.custom_fields_json) or [],
                status=Transaction.NEW,
            )
    except IntegrityError:
        existing = Transaction.objects.filter(uuid=uuid).first()
        if existing is None:
            raise
        return existing, False
    return created, True


def _link_series(txn: Transaction, fetched: FetchedTransaction) -> None:
    info = fetched.recurring
    if info is None or not info.parent_transaction:
        return
    parent_uuid = canonical_uuid(info.parent_transaction)
    series, _ = RecurringSeries.objects.select_for_update().get_or_create(
        parent_uuid=parent_uuid, defaults={"community_id": txn.community_id}
    )
    if parent_uuid == txn.uuid:
        series.parent_transaction = txn
    series.expiry_date = info.expiry_date or series.expiry_date
    series.minimum_days_between_payments = (
        info.minimum_days_between_payments or series.minimum_days_between_payments
    )
    if info.recurring_count is not None:
        series.recurring_count = max(series.recurring_count, info.recurring_count)
    if info.active is not None and series.cancel_state != RecurringSeries.CANCEL_DONE:
        series.active = info.active
    series.raw = json_safe(dict(info.extra) | {"type": info.type})
    series.last_synced_at = timezone.now()
    series.save()
    txn.series = series
    txn.parent_uuid = parent_uuid
    txn.transaction_order = info.transaction_order
