"""What the API reads from devices, and the public views of what it answers.

Amounts are answered as strings with two decimals (``"100.00"``), never as floats; what the device sends never
carries an amount to charge: a payable ``reference`` the server resolves (see :mod:`.payables`).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from .. import services
from ..amounts import AmountField
from ..models import DirectOrder, RecurringSeries, Refund, Transaction

#: A payment's ``state``, for a page that polls: one small vocabulary over the spec's statuses.
STATE_UNKNOWN, STATE_OPEN, STATE_PAID, STATE_CLOSED = "unknown", "open", "paid", "closed"


def payment_state(txn: Transaction) -> str:
    """``unknown`` (starting it got no answer: never start it again, it is being found out), ``open`` (waiting
    for the customer), ``paid`` (successful), ``closed`` (failed, rejected, abandoned or expired)."""
    if txn.outcome_unknown and txn.status == Transaction.NEW:
        return STATE_UNKNOWN
    if txn.status in Transaction.OPEN_STATUSES:
        return STATE_OPEN
    if txn.status == Transaction.SUCCESSFUL:
        return STATE_PAID
    return STATE_CLOSED


class ReferenceField(serializers.CharField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 200)
        kwargs.setdefault(
            "help_text", _("What is being paid for, as the site names it (an order number, a plan).")
        )
        super().__init__(**kwargs)


class BillingInputSerializer(serializers.Serializer[dict[str, Any]]):
    """The customer's details; each completes or replaces the default the payable hook gives."""

    name = serializers.CharField(max_length=200, required=False)
    email = serializers.CharField(max_length=254, required=False)
    phone_number = serializers.CharField(
        max_length=32,
        required=False,
        help_text=_(
            "Optional when the payable hook's billing data gives one; the service needs a phone, so "
            "without either a 400 names billing_data.phone_number."
        ),
    )


class StartPaymentRequestSerializer(serializers.Serializer[dict[str, Any]]):
    reference = ReferenceField()
    pay_using = serializers.CharField(
        max_length=40, required=False, help_text=_("card, kiosk, ... (default: the site's).")
    )
    billing_data = BillingInputSerializer(required=False)
    promocode = serializers.CharField(
        max_length=50, required=False, allow_blank=True, help_text=_("A promocode the customer typed.")
    )
    language = serializers.CharField(max_length=16, required=False)


class QuoteRequestSerializer(serializers.Serializer[dict[str, Any]]):
    reference = ReferenceField()
    pay_using = serializers.CharField(max_length=40, required=False)


class QuoteSerializer(serializers.Serializer[dict[str, Any]]):
    reference = serializers.CharField()
    amount = AmountField()
    fees = AmountField()
    total_amount = AmountField()
    currency = serializers.CharField()


class PromocodeRequestSerializer(serializers.Serializer[dict[str, Any]]):
    reference = ReferenceField()
    promocode = serializers.CharField(max_length=50)
    phone_number = serializers.CharField(
        max_length=32,
        required=False,
        help_text=_(
            "The customer's phone, which the service checks a promocode against. Optional when the site "
            "knows one (the payable hook's billing data); otherwise a 400 names phone_number."
        ),
    )


class PromocodeSerializer(serializers.Serializer[dict[str, Any]]):
    reference = serializers.CharField()
    promocode = serializers.CharField()
    valid = serializers.BooleanField()
    value = AmountField(allow_null=True)
    currency = serializers.CharField(allow_null=True)


class PaymentSerializer(serializers.ModelSerializer[Transaction]):
    """The public view of a payment: what its customer may see, and nothing more (no keys, no other ids)."""

    reference = serializers.CharField(source="merchant_reference", read_only=True)
    state = serializers.SerializerMethodField(help_text=_("unknown, open, paid or closed."))
    amount = AmountField(source="total_amount", read_only=True)
    paid_at = serializers.DateTimeField(source="succeeded_at", read_only=True, allow_null=True)

    class Meta:
        model = Transaction
        fields = [
            "uuid",
            "reference",
            "status",
            "state",
            "amount",
            "currency",
            "pay_using",
            "iframe_url",
            "bill_reference",
            "kiosk_message",
            "created_at",
            "paid_at",
        ]
        read_only_fields = fields

    def get_state(self, txn: Transaction) -> str:
        return payment_state(txn)


class StaffPaymentSerializer(PaymentSerializer):
    """A payment as staff see it after a capture: its capture and what is refunded."""

    # Every amount written by the app's own field: DRF's decimal fields follow COERCE_DECIMAL_TO_STRING, and
    # with it off would write money as JSON floats.
    captured_amount = AmountField(read_only=True)
    refunded_amount = AmountField(read_only=True)
    refundable_amount = AmountField(read_only=True)

    class Meta(PaymentSerializer.Meta):
        fields = [
            *PaymentSerializer.Meta.fields,
            "capture_state",
            "captured_amount",
            "refunded_amount",
            "refundable_amount",
        ]
        read_only_fields = fields


class RefundRequestSerializer(serializers.Serializer[dict[str, Any]]):
    """Each amount read by the service layer's own reading of it, as the admin and the tasks read them."""

    amount = AmountField(
        read=services.refund_amount,
        required=False,
        help_text=_(
            'The amount to refund, e.g. "25.00". Leave it out to refund all that is still refundable; '
            'null, "" or blanks are refused (400), never taken for "all".'
        ),
    )
    expected_refundable = AmountField(
        read=services.expected_refundable_amount,
        required=False,
        help_text=_(
            "What the caller showed as refundable: a refund is refused (409) if it changed meanwhile. "
            'Left out, it is not checked; null or "" is refused (400).'
        ),
    )


class RefundSerializer(serializers.ModelSerializer[Refund]):
    payment = serializers.CharField(source="transaction.uuid", read_only=True)
    amount = AmountField(read_only=True)
    currency = serializers.CharField(source="transaction.currency", read_only=True)

    class Meta:
        model = Refund
        fields = ["id", "payment", "amount", "currency", "state", "error", "created_at", "completed_at"]
        read_only_fields = fields


class SeriesSerializer(serializers.ModelSerializer[RecurringSeries]):
    renewals = serializers.IntegerField(
        source="renewal_count",
        read_only=True,
        help_text=_("Renewals so far: the series' successful charges after the first."),
    )

    class Meta:
        model = RecurringSeries
        fields = ["id", "parent_uuid", "active", "cancel_state", "cancelled_at", "renewals"]
        read_only_fields = fields


class DirectOrderViewSerializer(serializers.ModelSerializer[DirectOrder]):
    amount = AmountField(read_only=True)

    class Meta:
        model = DirectOrder
        fields = [
            "id",
            "state",
            "name",
            "amount",
            "currency",
            "payment_link",
            "merchant_reference",
            "customer_name",
            "customer_email",
            "customer_mobile",
            "created_at",
        ]
        read_only_fields = fields


class ProblemSerializer(serializers.Serializer[dict[str, Any]]):
    """An answer that is not field errors: 409, 404, 503 (and 429, DRF's ``detail``)."""

    code = serializers.CharField(help_text=_("conflict, not_found, service_unavailable or configuration."))
    detail = serializers.CharField()
    field_errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text=_("The refusal's messages by field path (409 only)."),
    )
