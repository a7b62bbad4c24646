"""One task per operation of the service layer: the reads, then the state-changing ones."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from django.apps import apps

from .. import services
from ..amounts import amount_text
from ..client import Logo
from ..exceptions import PaymentRefused
from ..models import RecurringSeries, StatisticsSnapshot, Transaction
from ..services.common import primary
from .delivery import (
    READ_TASK,
    WRITE_TASK,
    amount_or_none,
    order_result,
    read_with_retries,
    refund_result,
    series_result,
    transaction_result,
    user_by_id,
    write_once,
)
from .runners import job

# --- reads -------------------------------------------------------------------------------------


@job("prepare_amount", **READ_TASK)
def prepare_amount(
    self: Any,
    amount: str,
    currency: str | None = None,
    payment_method: str | None = None,
    community_id: str | None = None,
) -> str:
    """The total with the service's fees for ``amount``, as a string."""
    total = read_with_retries(
        self,
        lambda: services.prepare_amount(
            amount,
            currency=currency,
            payment_method=payment_method,
            community_id=community_id,
        ),
    )
    return amount_text(total)


@job("sync_transaction", **READ_TASK)
def sync_transaction(
    self: Any,
    transaction_id: int | None = None,
    uuid: str | None = None,
    community_id: str | None = None,
) -> dict[str, Any]:
    """Fetch a transaction (by primary key, or by uuid) and apply what the service says."""
    known = primary(Transaction).get(pk=transaction_id) if transaction_id is not None else None
    txn = read_with_retries(
        self, lambda: services.sync_transaction(known, uuid=uuid, community_id=community_id)
    )
    return transaction_result(txn)


@job("validate_promocode", **READ_TASK)
def validate_promocode(
    self: Any,
    name: str,
    amount: str,
    phone_number: str,
    currency: str | None = None,
    payment_for: str = "API_PAYMENT",
    community_id: str | None = None,
    variable_amount_id: int | None = None,
) -> dict[str, Any]:
    """Check a promocode; pass ``promocode_id`` of the result to ``start_payment``."""
    result = read_with_retries(
        self,
        lambda: services.validate_promocode(
            name,
            amount=amount,
            phone_number=phone_number,
            currency=currency,
            payment_for=payment_for,
            community_id=community_id,
            variable_amount_id=variable_amount_id,
        ),
    )
    return {
        "value": amount_or_none(result.value),
        "currency": result.currency,
        "promocode_id": result.promocode_id,
    }


@job("fetch_statistics", **READ_TASK)
def fetch_statistics(self: Any, community_id: str | None = None) -> dict[str, Any]:
    """Read the dashboard statistics and keep them as a StatisticsSnapshot."""
    snapshot: StatisticsSnapshot = read_with_retries(self, lambda: services.fetch_statistics(community_id))
    return {
        "snapshot_id": snapshot.pk,
        "community_id": snapshot.community_id,
        "balance": amount_or_none(snapshot.balance),
        "total_settled": amount_or_none(snapshot.total_settled),
        "total_number_of_transactions": snapshot.total_number_of_transactions,
    }


# --- state-changing operations -----------------------------------------------------------------------


@job("start_payment", **WRITE_TASK)
def start_payment(
    self: Any,
    amount: str,
    billing_data: Mapping[str, str],
    merchant_object: Sequence[Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Start a payment. ``merchant_object`` is ``["app_label.model", pk]``; other keywords are those of
    ``services.start_payment`` in JSON form (``recurring={"expiry_date": "2026-01-31", ...}``).
    """
    obj = None
    if merchant_object:
        label, pk = merchant_object
        obj = apps.get_model(label)._default_manager.get(pk=pk)

    def call() -> dict[str, Any]:
        txn = services.start_payment(amount=amount, billing_data=billing_data, merchant_object=obj, **options)
        return transaction_result(txn)

    return write_once(self, call)


@job("create_direct_order", **WRITE_TASK)
def create_direct_order(self: Any, user_id: Any = None, **fields: Any) -> dict[str, Any]:
    """Create a direct order; ``fields`` as for ``services.create_direct_order``, amounts as strings."""
    return write_once(
        self, lambda: order_result(services.create_direct_order(user=user_by_id(user_id), **fields))
    )


@job("capture", **WRITE_TASK)
def capture(self: Any, transaction_id: int, user_id: Any = None) -> dict[str, Any]:
    """Capture a successful transaction."""

    def call() -> dict[str, Any]:
        txn = primary(Transaction).get(pk=transaction_id)
        return transaction_result(services.capture(txn, user=user_by_id(user_id)))

    return write_once(self, call)


@job("refund", **WRITE_TASK)
def refund(
    self: Any,
    transaction_id: int,
    amount: str | services.Remainder = services.ALL_REFUNDABLE,
    user_id: Any = None,
    expected_refundable: str | None = None,
) -> dict[str, Any]:
    """Refund ``amount`` (decimal text); left out, all still refundable. None, "" or a blank is refused,
    never taken for "all" (``services.refund_amount`` reads it). Pass ``expected_refundable`` (what the
    user was shown) so that a second click or a second message is refused instead of doubled.
    """

    def call() -> dict[str, Any]:
        done = services.refund(
            primary(Transaction).get(pk=transaction_id),
            amount,
            user=user_by_id(user_id),
            expected_refundable=expected_refundable,
        )
        return refund_result(done)

    # A refund never sent is recorded as failed; a retry makes a new Refund row.
    return write_once(self, call)


@job("cancel_recurring", **WRITE_TASK)
def cancel_recurring(self: Any, series_id: int, user_id: Any = None) -> dict[str, Any]:
    """Stop future charges of a recurring series."""

    def call() -> dict[str, Any]:
        series = primary(RecurringSeries).get(pk=series_id)
        return series_result(services.cancel_recurring(series, user=user_by_id(user_id)))

    return write_once(self, call)


@job("create_community", **WRITE_TASK)
def create_community(
    self: Any,
    name: str,
    logo_base64: str,
    logo_filename: str = "logo.png",
    user_id: Any = None,
    **fields: Any,
) -> dict[str, Any]:
    """Create a community. The logo travels in the message as base64 (a png or jpg of a few hundred
    kilobytes): no storage shared between web and worker processes is needed, and nothing is left
    to clean up afterwards.
    """
    try:
        content = base64.b64decode(logo_base64, validate=True)
    except (binascii.Error, ValueError):
        raise PaymentRefused({"logo": ["Send the logo's bytes as base64."]}) from None

    def call() -> dict[str, Any]:
        done = services.create_community(
            logo=Logo(logo_filename, content), name=name, user=user_by_id(user_id), **fields
        )
        # Sent without an answer, it may exist now: its ApiCall is flagged and reconciliation reports it.
        return {"created": None if done.outcome_unknown else True, "outcome_unknown": done.outcome_unknown}

    return write_once(self, call)
