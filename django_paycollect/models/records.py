"""What is kept for people and for the record: API calls, statistics snapshots, received callbacks,
fetch marks, and the permission holder of the dashboard."""

from __future__ import annotations

import datetime as dt

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from . import MONEY, CanonicalUuidField, DirectOrder, RecurringSeries, Refund, Transaction


class ApiCall(models.Model):
    """One call of the client, whatever its outcome: what was sent (no secrets, PII masked) and the answer."""

    operation = models.CharField(max_length=32, db_index=True)
    community_id = models.CharField(max_length=100, blank=True, db_index=True)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    request_body = models.JSONField(null=True, blank=True)
    sent = models.BooleanField(default=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    code = models.IntegerField(_("envelope status.code"), null=True, blank=True)
    message = models.TextField(blank=True)
    errors = models.JSONField(default=list, blank=True)
    data = models.JSONField(null=True, blank=True)
    count = models.IntegerField(null=True, blank=True)
    next = models.TextField(blank=True)
    previous = models.TextField(blank=True)
    error_class = models.CharField(max_length=64, blank=True, db_index=True)
    error_message = models.TextField(blank=True)
    body_excerpt = models.TextField(blank=True)
    outcome_unknown = models.BooleanField(default=False)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    task_id = models.CharField(_("Celery task id"), max_length=255, blank=True, db_index=True)
    transaction = models.ForeignKey(
        Transaction, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_calls"
    )
    direct_order = models.ForeignKey(
        DirectOrder, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_calls"
    )
    refund = models.ForeignKey(
        Refund, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_calls"
    )
    series = models.ForeignKey(
        RecurringSeries, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_calls"
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("API call")
        verbose_name_plural = _("API calls")
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(
                fields=["outcome_unknown"], condition=Q(outcome_unknown=True), name="paycollect_call_unknown"
            )
        ]

    def __str__(self) -> str:
        outcome = self.error_class or str(self.http_status)
        return f"{self.operation} {outcome} at {self.created_at:%Y-%m-%d %H:%M:%S}"

    @property
    def succeeded(self) -> bool:
        return not self.error_class


class StatisticsSnapshot(models.Model):
    """A community's dashboard statistics at a time."""

    community_id = models.CharField(max_length=100, db_index=True)
    taken_at = models.DateTimeField(default=timezone.now, db_index=True)
    balance = models.DecimalField(null=True, **MONEY)
    total_settled = models.DecimalField(null=True, **MONEY)
    total_number_of_transactions = models.BigIntegerField(null=True)
    total_collected_transactions = models.DecimalField(null=True, **MONEY)
    weekly_collected_transactions = models.DecimalField(null=True, **MONEY)
    raw = models.JSONField(null=True)

    class Meta:
        verbose_name = _("statistics snapshot")
        ordering = ["-taken_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.community_id} at {self.taken_at:%Y-%m-%d %H:%M}"


class ReceivedCallback(models.Model):
    """A callback POST as it arrived, stored before anything else is done with it.

    Nothing in it is trusted: ``claimed_status`` is what the body says, and verification fetches the
    transaction from the service and applies what the service says instead. Deliveries of the same
    (transaction uuid, claimed status) after the first are stored too, marked ``duplicate``, and not
    processed again.
    """

    class State(models.TextChoices):
        """Owned by the callback ledger (``services.callback_ledger``): nothing else writes it."""

        RECEIVED = "received", _("received (not queued)")
        QUEUED = "queued", _("queued for verification")
        PROCESSED = "processed", _("verified and applied")
        FAILED = "failed", _("verification failed")
        DUPLICATE = "duplicate", _("duplicate delivery")
        INVALID = "invalid", _("invalid")

    RECEIVED, QUEUED, PROCESSED, FAILED, DUPLICATE, INVALID = (
        State.RECEIVED,
        State.QUEUED,
        State.PROCESSED,
        State.FAILED,
        State.DUPLICATE,
        State.INVALID,
    )
    #: Not verified yet, and not given up on: the sweep re-queues those left too long.
    WAITING_STATES = (RECEIVED, QUEUED)
    STATE_CHOICES = State.choices

    received_at = models.DateTimeField(default=timezone.now, db_index=True)
    state = models.CharField(max_length=10, choices=STATE_CHOICES, default=RECEIVED, db_index=True)
    #: Position of the matching token in PAYCOLLECT["CALLBACK_TOKENS"] (never the token itself).
    token_index = models.PositiveSmallIntegerField(null=True, blank=True)
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    headers = models.JSONField(default=dict, blank=True)
    body = models.TextField(blank=True)
    invalid_reason = models.TextField(blank=True)
    # What the body claims; never applied as such.
    transaction_uuid = CanonicalUuidField(max_length=64, blank=True, db_index=True)
    claimed_status = models.CharField(max_length=64, blank=True)
    payment_id = models.CharField(max_length=100, blank=True)
    merchant_id = models.CharField(max_length=100, blank=True)
    member_id = models.CharField(max_length=100, blank=True)
    total_amount = models.DecimalField(null=True, blank=True, **MONEY)
    total_amount_piasters = models.BigIntegerField(null=True, blank=True)
    is_sub_payment = models.BooleanField(null=True, blank=True)
    parent_transaction = CanonicalUuidField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    custom_fields = models.JSONField(default=dict, blank=True)
    #: Hints the body sent malformed, ``{"recurring.parent_transaction": [messages]}``: stored as not sent.
    hint_errors = models.JSONField(_("malformed hints"), default=dict, blank=True)
    #: "<uuid>|<claimed status>" on the first delivery only; a unique index makes redeliveries duplicates.
    dedupe_key = models.CharField(max_length=200, null=True, blank=True, unique=True)
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    transaction = models.ForeignKey(
        Transaction, null=True, blank=True, on_delete=models.SET_NULL, related_name="callbacks"
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    task_id = models.CharField(max_length=255, blank=True)
    #: When verification was last asked for (arrival, a redelivery, "verify again", the sweep): a fetch
    #: of the transaction sent after this answers the callback. None on older rows: ``received_at``.
    queued_at = models.DateTimeField(_("verification asked at"), null=True, blank=True)
    #: When a worker should be verifying it (queued now, or a retry due later). A received or queued
    #: callback past this by ``CALLBACK_REQUEUE_AFTER`` is stuck, and the sweep queues it again.
    next_attempt_at = models.DateTimeField(_("next attempt due at"), null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(_("processing result"), blank=True)
    error = models.TextField(blank=True)
    traceback = models.TextField(blank=True)

    class Meta:
        verbose_name = _("received callback")
        verbose_name_plural = _("received callbacks")
        ordering = ["-received_at", "-pk"]
        permissions = [("reprocess_receivedcallback", _("Can reprocess received callbacks"))]
        indexes = [
            # Callback health on the dashboard (``reporting``): states of a period's callbacks.
            models.Index(fields=["received_at", "state", "processed_at"], name="paycollect_callback_report"),
            # The admin's exact searches by payment id and Celery task id.
            models.Index(fields=["payment_id"], name="paycollect_callback_payment"),
            models.Index(fields=["task_id"], name="paycollect_callback_task"),
        ]

    def __str__(self) -> str:
        return f"callback {self.transaction_uuid or '?'} {self.claimed_status or ''} ({self.state})"

    @property
    def waiting_since(self) -> dt.datetime | None:
        """Since when a callback not yet verified has been due (None once it is final or failed)."""
        if self.state not in self.WAITING_STATES:
            return None
        return self.next_attempt_at or self.queued_at or self.received_at


class Dashboard(models.Model):
    """The admin's payments dashboard: no table, only its place in the admin and its permission.

    The figures come from :mod:`django_paycollect.reporting`; ``paycollect.view_dashboard`` lets a
    user see them without the permissions of the records they summarise.
    """

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("view_dashboard", _("Can view the payments dashboard"))]
        verbose_name = _("dashboard")
        verbose_name_plural = _("dashboard")

    def __str__(self) -> str:
        return str(self._meta.verbose_name)


class FetchMark(models.Model):
    """When a callback's verification last took the right to fetch a uuid: a row per uuid, for all processes.

    It bounds what callbacks can make us ask of the service: a verification takes the right to fetch
    (``claimed_at``) at most once per ``CALLBACK_FETCH_INTERVAL`` per uuid; a callback queued before a
    fetch was sent is answered by that fetch instead (``Transaction.fetch_sent_at``, or
    ``not_found_at`` for a uuid the service does not know). So 300 callbacks claiming 300 statuses of
    one uuid cost a fetch or two, not 300.
    """

    uuid = CanonicalUuidField(_("transaction uuid"), max_length=64, unique=True)
    #: The last time a verification took the right to fetch this uuid.
    claimed_at = models.DateTimeField(null=True, blank=True)
    #: When a fetch that the service answered "not found" (404) was sent.
    not_found_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("fetch mark")

    def __str__(self) -> str:
        return f"fetch mark of {self.uuid}"
