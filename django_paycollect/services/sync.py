"""Fetching a transaction and applying what the service says (callbacks, returns, admin, reconciliation)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from .. import signals
from ..client import Envelope
from ..client import Transaction as FetchedTransaction
from ..conf import paycollect_settings
from ..exceptions import ServiceUsageError
from ..ids import canonical_uuid
from ..models import ApiCall, RecurringSeries, Transaction
from ..models.fields import json_safe
from .calls import recorded_read
from .common import atomic, lock_row, logger, primary, savepoint_if_atomic, send_after_commit, unique
from .config import community_config, get_client
from .status import apply_status


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
    Returns the transaction as applied: the instance given, updated in place (or the one found or created
    for a ``uuid``). Should applying fail, the instance given is left as it was.
    Raises :class:`ServiceUnavailable` when the service cannot be read (the caller decides to retry),
    :class:`NotFound` when it does not know the uuid.
    ``timeout`` and ``max_network_retries`` override the settings (a waiting customer: short, none).
    """
    uuid = canonical_uuid(uuid) if uuid else uuid
    if txn is None:
        if not uuid:
            raise ValueError("sync_transaction needs a transaction or a uuid")
        txn = unique(Transaction, uuid=uuid)
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
    fetch = fetch_transaction(
        wanted_uuid,
        txn.community_id if txn is not None else community_id,
        txn,
        timeout=timeout,
        max_network_retries=max_network_retries,
    )
    applied = apply_fetched(txn, fetch, source, then)
    if txn is None:
        return applied
    # The caller's instance says what the row says now, whichever path the row took.
    for field in Transaction._meta.concrete_fields:
        setattr(txn, field.attname, getattr(applied, field.attname))
    return txn


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


@dataclass(frozen=True)
class Fetch:
    """What :func:`fetch_transaction` read: the uuid asked for, in which community, the envelope, its API call
    (not stored yet: it is stored in the commit that applies it), and when the request was sent."""

    uuid: str
    community_id: str
    envelope: Envelope[FetchedTransaction]
    api_call: ApiCall
    sent_at: dt.datetime


def fetch_transaction(
    uuid: str,
    community_id: str | None,
    txn: Transaction | None = None,
    *,
    timeout: tuple[float, float] | None = None,
    max_network_retries: int | None = None,
) -> Fetch:
    """Fetch the transaction ``uuid`` from the service, with no transaction open and no lock held (the
    contract's error when it cannot be read). ``txn``: the stored row, linked to the API call."""
    config = community_config(community_id)
    client = get_client(config, timeout=timeout, max_network_retries=max_network_retries)
    sent_at = timezone.now()
    envelope, api_call = recorded_read(
        "get_transaction",
        config,
        lambda: client.get_transaction(community_id=config.community_id, transaction_uuid=uuid),
        links={"transaction": txn},
        save_success=False,
    )
    return Fetch(uuid, config.community_id, envelope, api_call, sent_at)


def apply_fetched(
    txn: Transaction | None, fetch: Fetch, source: str, then: Callable[[Transaction], object] | None = None
) -> Transaction:
    """Apply a fetched transaction: the one status change of the app (a callback, a return, a sync,
    reconciliation). In one database transaction on the app's database: the row locked, the record of the
    read stored, the status moved forward by the status machine, the row written by ``save()`` (a project's
    receivers and history hear of every change), ``then`` called; the signals follow the commit. Returns
    the row as written (a new instance: the caller's is not touched, so a rollback leaves it as it was); when
    applying fails, the read is stored on its own (:func:`record_fetch_alone`) and the error raised."""
    fetched = fetch.envelope.result
    try:
        with atomic():
            if txn is None:
                locked, created = _create_from_fetched(fetch.community_id, fetch.uuid, fetched)
            else:
                locked, created = lock_row(Transaction, txn.pk), False
            fetch.api_call.transaction = locked
            fetch.api_call.save()  # the record of the read commits with what the read changed
            before = {name: getattr(locked, name) for name in _SYNC_MAY_CHANGE}
            locked.raw = json_safe(fetch.envelope.data)
            locked.last_synced_at = timezone.now()
            # What the service said is at least as new as this: it answers every callback queued before.
            locked.fetch_sent_at = max(fetch.sent_at, locked.fetch_sent_at or fetch.sent_at)
            locked.service_id = fetched.id or locked.service_id
            _link_series(locked, fetched)
            differences = _differences(locked, fetched)
            if differences:
                if not locked.amount_mismatch:
                    locked.amount_mismatch = True
                    send_after_commit(
                        signals.amount_mismatch_detected, transaction=locked, differences=differences
                    )
                locked.service_status = fetched.status or ""
            else:
                if fetched.status:
                    apply_status(locked, fetched.status, source=source)
                locked.outcome_unknown = False
            if created:
                locked.save()
            else:
                changed = [name for name in _SYNC_MAY_CHANGE if getattr(locked, name) != before[name]]
                locked.save(update_fields=["raw", "last_synced_at", "fetch_sent_at", "updated_at", *changed])
            if then is not None:
                then(locked)
            return locked
    except BaseException:
        record_fetch_alone(fetch, txn)  # the read is recorded whatever became of applying it
        raise


def record_fetch_alone(fetch: Fetch, txn: Transaction | None) -> None:
    """Store a fetch's API call on its own, once what it was to be stored with rolled back: the read is
    recorded whatever became of applying it."""
    api_call = fetch.api_call
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
        with atomic():  # a savepoint: the caller's block stays usable after a conflict
            created = primary(Transaction).create(
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
        existing = primary(Transaction).select_for_update().filter(uuid=uuid).first()
        if existing is None:
            raise
        return existing, False
    return created, True


def _link_series(txn: Transaction, fetched: FetchedTransaction) -> None:
    info = fetched.recurring
    if info is None or not info.parent_transaction:
        return
    parent_uuid = canonical_uuid(info.parent_transaction)
    series, _ = (
        primary(RecurringSeries)
        .select_for_update()
        .get_or_create(parent_uuid=parent_uuid, defaults={"community_id": txn.community_id})
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
