"""Fetching a transaction and applying what the service says (callbacks, returns, admin, reconciliation)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, connections, router, transaction
from django.db.models import Field
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
from .calls import insert_api_call, recorded_read
from .common import logger, savepoint_if_atomic, send_after_commit
from .config import community_config, get_client
from .status import apply_status, leaves_status


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
    with transaction.atomic():
        created = False
        if txn is None:
            txn, created = _create_from_fetched(community_id, wanted_uuid, fetched)
            api_call.transaction = txn
        insert_api_call(api_call)  # the record of the read commits with what the read changed
        if not created and _changes_nothing(txn, fetched) and _record_unchanged(txn, envelope, sent_at):
            if then is not None:
                then(txn)
            return txn
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
                apply_status(txn, fetched.status, source=source)
            txn.outcome_unknown = False
        changed = [name for name in _SYNC_MAY_CHANGE if getattr(txn, name) != before[name]]
        txn.save(update_fields=["raw", "last_synced_at", "fetch_sent_at", "updated_at", *changed])
        if then is not None:
            then(txn)
    return txn


#: What :func:`_changes_nothing` reads of the stored row, and the fetch mark the write moves: the unlocked
#: write checks the row still holds what was read.
_UNCHANGED_WHEN = (
    "service_id",
    "status",
    "service_status",
    "status_unrecognised",
    "outcome_unknown",
    "total_amount",
    "currency",
    "promocode_id",
    "fetch_sent_at",
)


def _changes_nothing(txn: Transaction, fetched: FetchedTransaction) -> bool:
    """Whether applying ``fetched`` to ``txn`` as read would change none of :data:`_SYNC_MAY_CHANGE`,
    link no series and send no signal (an open payment still open: most fetches of a reconciliation)."""
    info = fetched.recurring
    return (
        not (info is not None and info.parent_transaction)
        and (not fetched.id or fetched.id == txn.service_id)
        and not txn.outcome_unknown
        and not _differences(txn, fetched)
        and (not fetched.status or leaves_status(txn, fetched.status))
    )


def _record_unchanged(txn: Transaction, envelope: Envelope[FetchedTransaction], sent_at: dt.datetime) -> bool:
    """Record a fetch that changes nothing with one UPDATE and no lock, guarded by what was read
    (:data:`_UNCHANGED_WHEN`): False when the row changed since, and the caller applies the fetch under
    the row lock instead. Only the columns every sync writes are written."""
    now = timezone.now()
    raw = json_safe(envelope.data)
    fetch_sent_at = max(sent_at, txn.fetch_sent_at or sent_at)
    values = {"raw": raw, "last_synced_at": now, "fetch_sent_at": fetch_sent_at, "updated_at": now}
    if not _update_if_unchanged(txn, values):
        return False
    txn.raw, txn.last_synced_at, txn.fetch_sent_at, txn.updated_at = raw, now, fetch_sent_at, now
    return True


def _update_if_unchanged(txn: Transaction, values: dict[str, Any]) -> int:
    """``Transaction.objects.filter(pk=txn.pk, <each of _UNCHANGED_WHEN as txn holds it>).update(**values)``,
    written out: the ORM's ten lookups cost more instructions than the fetch itself, this a quarter of that.
    Returns the rows written (0 or 1)."""
    connection = connections[router.db_for_write(Transaction)]
    quote = connection.ops.quote_name
    columns, params = [], []
    for name, value in values.items():
        field = _FIELDS[name]
        columns.append(f"{quote(_COLUMNS[name])} = %s")
        params.append(field.get_db_prep_save(value, connection))
    conditions = [f"{quote(_COLUMNS['id'])} = %s"]
    params.append(txn.pk)
    for name in _UNCHANGED_WHEN:
        field, value = _FIELDS[name], getattr(txn, name)
        if value is None:
            conditions.append(f"{quote(_COLUMNS[name])} IS NULL")
        else:
            conditions.append(f"{quote(_COLUMNS[name])} = %s")
            params.append(field.get_db_prep_value(value, connection))
    table = quote(Transaction._meta.db_table)
    # Names from the model's meta, every value a parameter.
    sql = f"UPDATE {table} SET {', '.join(columns)} WHERE {' AND '.join(conditions)}"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)


#: The transaction's fields, and their columns, by name.
_FIELDS: dict[str, Field[Any, Any]] = {field.name: field for field in Transaction._meta.concrete_fields}
_COLUMNS: dict[str, str] = {name: field.column for name, field in _FIELDS.items() if field.column}


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
