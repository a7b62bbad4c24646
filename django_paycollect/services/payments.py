"""Payments: fees, starting one, capturing it, promocodes, and closing one never answered."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError
from django.db.models import Model
from django.utils import timezone
from django.utils.translation import gettext_lazy

from .. import signals
from ..amounts import parse_amount
from ..client import to_piasters
from ..client.types import OperationMessage, PaymentStarted, PromocodeValidated
from ..conf import paycollect_settings
from ..exceptions import PaymentRefused
from ..ids import canonical_uuid
from ..models import Transaction
from ..models.fields import json_safe
from ..serializers import StartPaymentSerializer
from .calls import Sent, broken_answer, guarded_write, recorded_read
from .common import (
    atomic,
    lock_row,
    primary,
    recorded_user,
    require_autocommit,
    row_locked,
    send_after_commit,
    validated,
    write_alias,
)
from .config import community_config, get_client
from .status import apply_status, set_local_status


def prepare_amount(
    amount: Decimal | int | str,
    *,
    currency: str | None = None,
    payment_method: str | None = None,
    community_id: str | None = None,
) -> Decimal:
    """The total with the service's fees for ``amount`` (what Pay must charge when fees are in the bill)."""
    amount = parse_amount(amount, "amount")
    config = community_config(community_id)
    client = get_client(config)
    envelope, _ = recorded_read(
        "prepare_amount",
        config,
        lambda: client.prepare_amount(
            community_id=config.community_id,
            amount=amount,
            currency=currency,
            selected_payment_method=payment_method,
        ),
    )
    total = envelope.result.total_amount
    if total is None:
        raise broken_answer("prepare_amount", "total_amount")
    return total


def start_payment(
    *,
    amount: Decimal | int | str,
    billing_data: Mapping[str, str],
    merchant_reference: str = "",
    merchant_object: Model | None = None,
    currency: str | None = None,
    pay_using: str | None = None,
    community_id: str | None = None,
    variable_amount_id: int | None = None,
    membership_id: str | None = None,
    recurring: Mapping[str, Any] | None = None,
    promocode_id: int | None = None,
    custom_fields: list[Mapping[str, Any]] | None = None,
    language: str | None = None,
    owner: Any = None,
) -> Transaction:
    """Start a payment and return its Transaction, with ``iframe_url`` (or a kiosk ``bill_reference``).

    When ``merchant_reference`` already has an open (NEW or PENDING) transaction, that one is
    returned and nothing is charged again. When fees are added in the bill, prepare amount is
    called first and ``amount`` is the cost without fees. ``recurring`` is
    ``{"expiry_date": date, "minimum_days_between_payments": n}``. ``owner`` is the user the payment
    belongs to (the REST API shows a user only their own payments); an existing open transaction is
    returned whoever owns it, so the caller compares.
    Raises :class:`PaymentRefused` (naming the fields) when the input or the service refuses it;
    after an ambiguous failure the transaction is returned with ``outcome_unknown`` set.
    """
    require_autocommit("start_payment")
    data = validated(
        StartPaymentSerializer,
        {
            "amount": amount,
            "currency": currency or paycollect_settings.DEFAULT_CURRENCY,
            "pay_using": pay_using or paycollect_settings.DEFAULT_PAY_USING,
            "billing_data": dict(billing_data),
            "merchant_reference": merchant_reference,
            "community_id": community_id,
            "variable_amount_id": variable_amount_id,
            "membership_id": membership_id,
            "recurring": dict(recurring) if recurring else None,
            "promocode_id": promocode_id,
            "custom_fields": [dict(f) for f in custom_fields or []],
            "language": language,
        },
    )
    config = community_config(data["community_id"])
    amount_id = data["variable_amount_id"] or config.variable_amount_id
    if not amount_id:
        raise PaymentRefused(
            {"variable_amount_id": [gettext_lazy("No variable_amount_id given or configured.")]}
        )
    reference = data["merchant_reference"]
    open_ones = Transaction.objects.db_manager(write_alias()).open().filter(community_id=config.community_id)
    if reference and (found := open_ones.filter(merchant_reference=reference).first()) is not None:
        return found

    original = charged = data["amount"]
    if paycollect_settings.FEES_IN_BILL:
        charged = prepare_amount(
            original,
            currency=data["currency"],
            payment_method=data["pay_using"],
            community_id=config.community_id,
        )
    billing = data["billing_data"]
    try:
        with atomic():
            txn = primary(Transaction).create(
                community_id=config.community_id,
                total_amount=charged,
                original_amount=original,
                currency=data["currency"],
                total_amount_piasters=to_piasters(charged),
                payment_for="API_PAYMENT",
                member_id=data["membership_id"] or "",
                custom_fields=json_safe(data["custom_fields"]),
                variable_amount_id=amount_id,
                pay_using=data["pay_using"],
                customer_name=billing["name"],
                customer_email=billing["email"],
                customer_phone=billing["phone_number"],
                merchant_reference=reference,
                promocode_id=data["promocode_id"],
                content_type=ContentType.objects.get_for_model(merchant_object) if merchant_object else None,
                object_id=str(merchant_object.pk) if merchant_object else "",
                owner=recorded_user(owner),
            )
    except IntegrityError:
        # Another request started the same reference a moment ago: return that one.
        return open_ones.get(merchant_reference=reference)

    terms = data["recurring"]

    def record(txn: Transaction, sent: Sent[PaymentStarted]) -> Transaction:
        txn = lock_row(Transaction, txn.pk)
        if sent.envelope is not None:
            started = sent.envelope.result
            txn.uuid = canonical_uuid(started.transaction_uuid) if started.transaction_uuid else None
            txn.service_id = started.transaction_id
            txn.iframe_url = started.iframe_url or ""
            txn.bill_reference = started.bill_reference or ""
            txn.kiosk_message = started.message or ""
            apply_status(txn, started.transaction_status or Transaction.PENDING, source="pay")
        else:
            txn.last_error = sent.error_text
            if sent.unknown:
                txn.outcome_unknown = True
            else:
                set_local_status(txn, Transaction.REJECTED, source="pay")
        txn.save()
        return txn

    return guarded_write(
        "pay",
        config=lambda _: config,
        claim=lambda: txn,  # created above: the one open transaction of its reference
        send=lambda client, txn: client.pay(
            community_id=config.community_id,
            amount=charged,
            original_amount=original,
            currency=data["currency"],
            variable_amount_id=amount_id,
            pay_using=data["pay_using"],
            billing_data=billing,
            membership_id=data["membership_id"],
            is_recurring=True if terms else None,
            expiry_date=terms["expiry_date"] if terms else None,
            minimum_days_between_payments=terms["minimum_days_between_payments"] if terms else None,
            promocode_id=data["promocode_id"],
            custom_fields=data["custom_fields"] or None,
            language=data["language"],
        ),
        links=lambda txn: {"transaction": txn},
        record=record,
    )


def capture(txn: Transaction, *, user: Any = None) -> Transaction:
    """Capture a successful transaction. Recorded as pending before the call; never resent.

    Returns the transaction, its ``capture_state`` captured or unknown; refused, :class:`StateConflict` (its
    state) or :class:`PaymentRefused` (the service); never sent, :class:`ServiceUnavailable`.
    """
    require_autocommit("capture")

    def claim() -> Transaction:
        found = lock_row(Transaction, txn.pk)
        refusal = found.capture_refusal()
        if refusal is not None:
            raise refusal.conflict()
        found.capture_state = Transaction.CAPTURE_PENDING
        found.save(update_fields=["capture_state", "updated_at"])
        return found

    def record(claimed: Transaction, sent: Sent[OperationMessage]) -> Transaction:
        done = lock_row(Transaction, claimed.pk)
        if sent.error is None:
            done.capture_state = Transaction.CAPTURE_DONE
            done.captured_amount = done.total_amount
            done.captured_at = timezone.now()
            done.captured_by = recorded_user(user)
            send_after_commit(signals.capture_succeeded, transaction=done)
        else:
            done.capture_state = Transaction.CAPTURE_UNKNOWN if sent.unknown else Transaction.CAPTURE_FAILED
            done.last_error = sent.error_text
        done.save()
        return done

    return guarded_write(
        "capture",
        config=lambda claimed: community_config(claimed.community_id),
        claim=claim,
        send=lambda client, claimed: client.capture(transaction_uuid=claimed.uuid or ""),
        links=lambda claimed: {"transaction": claimed},
        record=record,
    )


def validate_promocode(
    name: str,
    *,
    amount: Decimal | int | str,
    phone_number: str,
    currency: str | None = None,
    payment_for: str = "API_PAYMENT",
    community_id: str | None = None,
    variable_amount_id: int | None = None,
) -> PromocodeValidated:
    """Check a promocode for an amount; pass ``promocode_id`` of the result to :func:`start_payment`."""
    amount = parse_amount(amount, "amount")
    config = community_config(community_id)
    client = get_client(config)
    amount_id = variable_amount_id or config.variable_amount_id
    envelope, _ = recorded_read(
        "validate_promocode",
        config,
        lambda: client.validate_promocode(
            name=name,
            community_id=config.community_id,
            phone_number=phone_number,
            amount=amount,
            currency=currency or paycollect_settings.DEFAULT_CURRENCY,
            payment_for=payment_for,
            variable_amount_id=amount_id or "",
        ),
    )
    if envelope.result.promocode_id is None:
        raise broken_answer("validate_promocode", "promocode_id")
    return envelope.result


def abandon_unknown_start(txn: Transaction) -> bool:
    """A payment whose start had an unknown outcome and was never confirmed: ABANDONED.

    The service has no lookup by merchant reference, so such a payment can only be confirmed by a
    callback. Without its page URL the customer cannot have paid it; after a while it is closed so
    the reference can be paid again. Returns True when it was abandoned.
    """
    with row_locked(Transaction, txn.pk) as locked:
        if locked.uuid or locked.status != Transaction.NEW or not locked.outcome_unknown:
            return False
        set_local_status(locked, Transaction.ABANDONED, source="reconcile")
        locked.save()
    return True
