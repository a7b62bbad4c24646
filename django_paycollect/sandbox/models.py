"""The sandbox's own state: a small ledger of the service's resources.

Money is ``DecimalField(max_digits=14, decimal_places=2)`` everywhere: amounts in the main unit, exact.
Timestamps of business events (transaction created, paid) use the sandbox clock (see ``clock.py``);
timestamps of deliveries and the journal use real time, because they describe real HTTP traffic.
"""

from __future__ import annotations

import uuid

from django.db import models

from .envelope import DecimalJSONDecoder, DecimalJSONEncoder


class SandboxState(models.Model):
    """Singleton row (pk=1): clock offset, runtime configuration, the seed's identity, callback plan."""

    clock_offset_seconds = models.BigIntegerField(default=0)
    # Overrides set through _control/config (callback_uuid_key, callback_retry_delays).
    config = models.JSONField(default=dict)
    # Identity of the seeded community so that _control/reset recreates the same credentials.
    seed = models.JSONField(default=dict)
    # Pending instructions for the next callbacks: [{"action": "drop"|"duplicate"|"delay", ...}].
    callback_plan = models.JSONField(default=list)

    def __str__(self) -> str:
        return "sandbox state"


class Community(models.Model):
    community_id = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    registered_name = models.CharField(max_length=200, blank=True)
    address = models.CharField(max_length=500, blank=True)
    email = models.CharField(max_length=254, blank=True)
    phone = models.CharField(max_length=32, blank=True)
    logo = models.BinaryField(blank=True, default=b"")
    logo_content_type = models.CharField(max_length=32, blank=True)
    app_modules = models.JSONField(default=list)
    # pay_using values enabled for this community (lower case).
    payment_methods = models.JSONField(default=list)
    kiosk_processor = models.CharField(max_length=64, blank=True)
    wallet_processor = models.CharField(max_length=64, blank=True)
    redirect_successful_only = models.CharField(max_length=2000, blank=True)
    # Other creation fields whose rules the spec does not show, secrets removed.
    extra = models.JSONField(default=dict, encoder=DecimalJSONEncoder, decoder=DecimalJSONDecoder)
    # Sandbox credentials, generated locally. They are shown on the sandbox dashboard (as the merchant
    # dashboard shows them) but never written to the journal or logs. Lookups go through the hash.
    api_key = models.CharField(max_length=128)
    api_key_sha256 = models.CharField(max_length=64, db_index=True)
    basic_username = models.CharField(max_length=64)
    basic_password = models.CharField(max_length=128)
    created = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} ({self.community_id})"


class ApiPayment(models.Model):
    """A variable-amount API payment; its pk is the spec's variable_amount_id."""

    community = models.ForeignKey(Community, on_delete=models.CASCADE, related_name="api_payments")
    name = models.CharField(max_length=200)
    redirect_url = models.CharField(max_length=2000, blank=True)
    callback_url = models.CharField(max_length=2000, blank=True)
    requires_member_id = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"


class FeeRule(models.Model):
    """Service fee for a payment method: amount * percentage / 100 + fixed_amount.

    A rule with a community applies before a global one (community null); a rule with a currency applies
    before one with an empty currency.
    """

    community = models.ForeignKey(Community, on_delete=models.CASCADE, null=True, blank=True)
    payment_method = models.CharField(max_length=64)
    currency = models.CharField(max_length=3, blank=True)
    percentage = models.DecimalField(max_digits=6, decimal_places=3)
    fixed_amount = models.DecimalField(max_digits=14, decimal_places=2)

    def __str__(self) -> str:
        return f"{self.payment_method}: {self.percentage}% + {self.fixed_amount}"


class Promocode(models.Model):
    class Kind(models.TextChoices):
        VALUE = "VALUE"
        PERCENTAGE = "PERCENTAGE"

    community = models.ForeignKey(Community, on_delete=models.CASCADE, related_name="promocodes")
    name = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # A money value for VALUE, a percentage for PERCENTAGE.
    value = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=3, default="EGP")
    expires_on = models.DateField(null=True, blank=True)
    min_amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    max_amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    # Empty: any payment_for.
    payment_for = models.CharField(max_length=32, blank=True)

    def __str__(self) -> str:
        return self.name


class DirectOrder(models.Model):
    community = models.ForeignKey(Community, on_delete=models.CASCADE, related_name="direct_orders")
    # payment_id of the spec: the order id, also the last segment of payment_link.
    payment_id = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=3)
    discount_amount = models.DecimalField(max_digits=14, decimal_places=2, default=0)
    vat_percentage = models.DecimalField(max_digits=6, decimal_places=3, default=0)
    payment_methods = models.JSONField(default=list)
    customer_name = models.CharField(max_length=200)
    customer_email = models.CharField(max_length=254)
    customer_mobile = models.CharField(max_length=32)
    customer_title = models.CharField(max_length=64, blank=True)
    address = models.CharField(max_length=500, blank=True)
    order_description = models.TextField(blank=True)
    allow_recurring_payments = models.BooleanField(default=False)
    expiry_date = models.DateField(null=True, blank=True)
    minimum_days_between_payments = models.PositiveIntegerField(null=True, blank=True)
    # Definitions as sent: [{"field_label", "field_type", "required", "field_choices"}].
    custom_fields = models.JSONField(default=list)
    tags = models.JSONField(default=list)
    redirect_url = models.CharField(max_length=2000, blank=True)
    callback_url = models.CharField(max_length=2000, blank=True)
    send_by_email = models.BooleanField(default=False)
    cc_email = models.CharField(max_length=254, blank=True)
    send_by_sms = models.BooleanField(default=False)
    paid = models.BooleanField(default=False)
    created = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} ({self.payment_id})"


class RecurringSeries(models.Model):
    community = models.ForeignKey(Community, on_delete=models.CASCADE)
    # UUID of the initial transaction: the spec's recurring.parent_transaction.
    parent_uuid = models.UUIDField(null=True, blank=True)
    expiry_date = models.DateField()
    minimum_days_between_payments = models.PositiveIntegerField()
    active = models.BooleanField(default=True)
    # Successful charges so far, the initial one included.
    recurring_count = models.PositiveIntegerField(default=0)
    next_charge_on = models.DateField(null=True, blank=True)
    # Renewals still to fail on purpose (_control/transactions/<uuid>/renewal-outcome).
    fail_next_renewals = models.PositiveIntegerField(default=0)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"recurring series #{self.pk}"


class Transaction(models.Model):
    class Status(models.TextChoices):
        PENDING = "PENDING"
        SUCCESSFUL = "SUCCESSFUL"
        FAILED = "FAILED"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True)
    community = models.ForeignKey(Community, on_delete=models.CASCADE, related_name="transactions")
    api_payment = models.ForeignKey(ApiPayment, on_delete=models.SET_NULL, null=True, blank=True)
    direct_order = models.ForeignKey(DirectOrder, on_delete=models.SET_NULL, null=True, blank=True)
    payment_for = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    total_amount = models.DecimalField(max_digits=14, decimal_places=2)
    original_amount = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    currency = models.CharField(max_length=3)
    pay_using = models.CharField(max_length=64)
    billing_name = models.CharField(max_length=200, blank=True)
    billing_email = models.CharField(max_length=254, blank=True)
    billing_phone = models.CharField(max_length=32, blank=True)
    member_id = models.CharField(max_length=128, blank=True)
    language = models.CharField(max_length=16, blank=True)
    promocode = models.ForeignKey(Promocode, on_delete=models.SET_NULL, null=True, blank=True)
    # {label: value} of the custom fields; null when there are none (as the spec's examples show).
    custom_fields_json = models.JSONField(
        null=True, blank=True, encoder=DecimalJSONEncoder, decoder=DecimalJSONDecoder
    )
    bill_reference = models.BigIntegerField(null=True, blank=True)
    series = models.ForeignKey(
        RecurringSeries, on_delete=models.SET_NULL, null=True, blank=True, related_name="transactions"
    )
    is_sub_payment = models.BooleanField(default=False)
    transaction_order = models.PositiveIntegerField(default=0)
    captured_at = models.DateTimeField(null=True, blank=True)
    refunded_amount = models.DecimalField(max_digits=14, decimal_places=2, default=0)
    created = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["community", "status"], name="pcsbx_tx_community_status")]

    def __str__(self) -> str:
        return f"transaction {self.uuid} ({self.status})"


class Refund(models.Model):
    transaction = models.ForeignKey(Transaction, on_delete=models.CASCADE, related_name="refunds")
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    created = models.DateTimeField()

    def __str__(self) -> str:
        return f"refund {self.amount} of {self.transaction_id}"


class OutboxMessage(models.Model):
    """An e-mail or SMS the live service would send to a customer; the sandbox only records it."""

    class Channel(models.TextChoices):
        EMAIL = "EMAIL"
        SMS = "SMS"

    direct_order = models.ForeignKey(DirectOrder, on_delete=models.CASCADE, related_name="outbox")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    to = models.CharField(max_length=254)
    cc = models.CharField(max_length=254, blank=True)
    subject = models.CharField(max_length=300, blank=True)
    body = models.TextField()
    created = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.channel} to {self.to}"


class CallbackDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "PENDING"  # waiting for its next attempt
        DELIVERING = "DELIVERING"  # an attempt is in flight
        DELIVERED = "DELIVERED"  # the receiver answered 2xx
        FAILED = "FAILED"  # every attempt failed
        DROPPED = "DROPPED"  # dropped on purpose (_control/callbacks/next)
        SKIPPED = "SKIPPED"  # no callback URL configured

    transaction = models.ForeignKey(
        Transaction, on_delete=models.CASCADE, related_name="callbacks", null=True, blank=True
    )
    url = models.CharField(max_length=2000, blank=True)
    # The exact JSON text sent, so a redelivery is byte-identical.
    body = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    redelivery_of = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True)
    note = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="pcsbx_cb_status_due")]

    def __str__(self) -> str:
        return f"callback #{self.pk} ({self.status})"


class CallbackAttempt(models.Model):
    delivery = models.ForeignKey(CallbackDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    http_status = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)

    def __str__(self) -> str:
        return f"attempt of callback #{self.delivery_id}"


class Fault(models.Model):
    class Kind(models.TextChoices):
        STATUS = "status"  # answer this status with an envelope
        HTML = "html"  # answer this status with an HTML body
        LATENCY = "latency"  # wait, then work normally
        RESET = "reset"  # reset the connection before the work
        DROP_AFTER = "drop_after"  # do the work, then drop the connection without answering

    #: The ``operation`` of a fault that applies to every operation.
    ANY_OPERATION = "*"

    operation = models.CharField(max_length=32)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    body = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    # status/html faults: do the work first, then answer the fault instead of the real response.
    after_work = models.BooleanField(default=False)
    # Uses left; null means every matching request until cleared.
    remaining = models.PositiveIntegerField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} fault on {self.operation}"


class JournalEntry(models.Model):
    """What a client sent to a spec operation, secrets redacted before storage."""

    created = models.DateTimeField()
    operation = models.CharField(max_length=32)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=2000)
    query = models.JSONField(default=dict)
    headers = models.JSONField(default=dict)
    body = models.JSONField(null=True, blank=True, encoder=DecimalJSONEncoder, decoder=DecimalJSONDecoder)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    fault = models.CharField(max_length=32, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


class MerchantInboxItem(models.Model):
    """A callback received by the sandbox's built-in demo merchant (the seeded API payment points there)."""

    received_at = models.DateTimeField()
    body = models.TextField()

    def __str__(self) -> str:
        return f"demo merchant callback #{self.pk}"
