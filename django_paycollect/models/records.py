"""What is kept for people and for the record: API calls, statistics snapshots, received callbacks,
fetch marks, when the housekeeping jobs last ran, and the permission holder of the dashboard."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .fields import MONEY, OPTIONAL_LINK, CanonicalUuidField, exact_indexes
from .orders import DirectOrder, RecurringSeries
from .payments import Refund, Transaction

#: What an ApiCall links to, each link optional (``OPTIONAL_LINK``).
_API_CALLS_LINK: dict[str, Any] = {**OPTIONAL_LINK, "related_name": "api_calls"}


class ApiCall(models.Model):
    """One call of the client, whatever its outcome: what was sent (no secrets, PII masked) and the answer."""

    #: The client's operations (``client.OPERATIONS``, whose names ``operation`` holds), in words.
    OPERATION_LABELS = {
        "prepare_amount": _("prepare amount"),
        "pay": _("pay"),
        "get_transaction": _("fetch transaction"),
        "capture": _("capture"),
        "refund": _("refund"),
        "cancel_recurring": _("cancel recurring"),
        "validate_promocode": _("validate promocode"),
        "create_community": _("create community"),
        "dashboard_statistics": _("dashboard statistics"),
        "create_direct_order": _("create direct order"),
    }

    operation = models.CharField(_("operation"), max_length=32)
    community_id = models.CharField(_("community id"), max_length=100, blank=True)
    method = models.CharField(_("HTTP method"), max_length=8)
    path = models.CharField(_("path"), max_length=500)
    request_body = models.JSONField(_("request body"), null=True, blank=True)
    sent = models.BooleanField(_("sent"), default=True)
    http_status = models.PositiveSmallIntegerField(_("HTTP status"), null=True, blank=True)
    code = models.IntegerField(_("envelope status.code"), null=True, blank=True)
    message = models.TextField(_("service's message"), blank=True)
    errors = models.JSONField(_("errors"), default=list, blank=True)
    data = models.JSONField(_("data"), null=True, blank=True)
    count = models.IntegerField(_("count"), null=True, blank=True)
    next = models.TextField(_("next page"), blank=True)
    previous = models.TextField(_("previous page"), blank=True)
    error_class = models.CharField(_("error class"), max_length=64, blank=True)
    error_message = models.TextField(_("error message"), blank=True)
    body_excerpt = models.TextField(_("answer's excerpt"), blank=True)
    outcome_unknown = models.BooleanField(_("outcome unknown"), default=False)
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    task_id = models.CharField(_("Celery task id"), max_length=255, blank=True)
    transaction = models.ForeignKey(Transaction, verbose_name=_("transaction"), null=True, **_API_CALLS_LINK)
    direct_order = models.ForeignKey(
        DirectOrder, verbose_name=_("direct order"), null=True, **_API_CALLS_LINK
    )
    refund = models.ForeignKey(Refund, verbose_name=_("refund"), null=True, **_API_CALLS_LINK)
    series = models.ForeignKey(
        RecurringSeries, verbose_name=_("recurring series"), null=True, **_API_CALLS_LINK
    )
    created_at = models.DateTimeField(_("called at"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("API call")
        verbose_name_plural = _("API calls")
        ordering = ["-created_at", "-pk"]
        indexes = [
            *exact_indexes(
                "call",
                operation="operation",
                community_id="community",
                error_class="error_class",
                task_id="task_id",
            ),
            models.Index(
                fields=["outcome_unknown"], condition=Q(outcome_unknown=True), name="paycollect_call_unknown"
            ),
        ]

    def __str__(self) -> str:
        return gettext("%(operation)s: %(outcome)s, at %(at)s") % {
            "operation": self.get_operation_display(),
            "outcome": self.error_class or self.http_status,
            "at": f"{self.created_at:%Y-%m-%d %H:%M:%S}",
        }

    @property
    def succeeded(self) -> bool:
        return not self.error_class

    def get_operation_display(self) -> str:
        return str(self.OPERATION_LABELS.get(self.operation, self.operation))


class StatisticsSnapshot(models.Model):
    """A community's dashboard statistics at a time."""

    community_id = models.CharField(_("community id"), max_length=100)
    taken_at = models.DateTimeField(_("taken at"), default=timezone.now, db_index=True)
    balance = models.DecimalField(_("balance"), null=True, **MONEY)
    total_settled = models.DecimalField(_("total settled"), null=True, **MONEY)
    total_number_of_transactions = models.BigIntegerField(_("number of transactions"), null=True)
    total_collected_transactions = models.DecimalField(_("total collected"), null=True, **MONEY)
    weekly_collected_transactions = models.DecimalField(_("collected this week"), null=True, **MONEY)
    raw = models.JSONField(_("as the service answered"), null=True)

    class Meta:
        verbose_name = _("statistics snapshot")
        verbose_name_plural = _("statistics snapshots")
        ordering = ["-taken_at", "-pk"]
        indexes = exact_indexes("stats", community_id="community")

    def __str__(self) -> str:
        return gettext("%(community)s at %(at)s") % {
            "community": self.community_id,
            "at": f"{self.taken_at:%Y-%m-%d %H:%M}",
        }


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

    RECEIVED, QUEUED, PROCESSED = State.RECEIVED, State.QUEUED, State.PROCESSED
    FAILED, DUPLICATE, INVALID = State.FAILED, State.DUPLICATE, State.INVALID
    #: Not verified yet, and not given up on: the sweep re-queues those left too long.
    WAITING_STATES = (RECEIVED, QUEUED)
    STATE_CHOICES = State.choices

    received_at = models.DateTimeField(_("received at"), default=timezone.now, db_index=True)
    state = models.CharField(_("state"), max_length=10, choices=STATE_CHOICES, default=RECEIVED)
    #: Position of the matching token in PAYCOLLECT["CALLBACK_TOKENS"] (never the token itself).
    token_index = models.PositiveSmallIntegerField(_("token"), null=True, blank=True)
    remote_addr = models.GenericIPAddressField(_("sender's address"), null=True, blank=True)
    headers = models.JSONField(_("headers"), default=dict, blank=True)
    body = models.TextField(_("body"), blank=True)
    invalid_reason = models.TextField(_("why it is invalid"), blank=True)
    # What the body claims; never applied as such.
    transaction_uuid = CanonicalUuidField(_("transaction uuid"), max_length=64, blank=True)
    claimed_status = models.CharField(_("claimed status"), max_length=64, blank=True)
    payment_id = models.CharField(_("payment id"), max_length=100, blank=True)
    merchant_id = models.CharField(_("merchant id"), max_length=100, blank=True)
    member_id = models.CharField(_("member id"), max_length=100, blank=True)
    total_amount = models.DecimalField(_("total amount"), null=True, blank=True, **MONEY)
    total_amount_piasters = models.BigIntegerField(_("total amount in piasters"), null=True, blank=True)
    is_sub_payment = models.BooleanField(_("renewal charge"), null=True, blank=True)
    parent_transaction = CanonicalUuidField(_("parent transaction uuid"), max_length=64, blank=True)
    message = models.TextField(_("message"), blank=True)
    custom_fields = models.JSONField(_("custom fields"), default=dict, blank=True)
    #: Hints the body sent malformed, ``{"recurring.parent_transaction": [messages]}``: stored as not sent.
    hint_errors = models.JSONField(_("malformed hints"), default=dict, blank=True)
    #: "<uuid>|<claimed status>" on the first delivery only, NULL on the others (a unique constraint,
    #: ``paycollect_callback_dedupe_key``, makes redeliveries duplicates; NULLs never collide).
    dedupe_key = models.CharField(_("duplicates key"), max_length=200, null=True, blank=True)  # noqa: DJ001
    duplicate_of = models.ForeignKey(
        "self", verbose_name=_("duplicate of"), null=True, related_name="+", **OPTIONAL_LINK
    )
    transaction = models.ForeignKey(
        Transaction, verbose_name=_("transaction"), null=True, related_name="callbacks", **OPTIONAL_LINK
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    task_id = models.CharField(_("Celery task id"), max_length=255, blank=True)
    #: When verification was last asked for (arrival, a redelivery, "verify again", the sweep): a fetch
    #: of the transaction sent after this answers the callback. None on older rows: ``received_at``.
    queued_at = models.DateTimeField(_("verification asked at"), null=True, blank=True)
    #: When a worker should be verifying it (queued now, or a retry due later). A received or queued
    #: callback past this by ``CALLBACK_REQUEUE_AFTER`` is stuck, and the sweep queues it again.
    next_attempt_at = models.DateTimeField(_("next attempt due at"), null=True, blank=True)
    processed_at = models.DateTimeField(_("processed at"), null=True, blank=True)
    outcome = models.TextField(_("processing result"), blank=True)
    error = models.TextField(_("error"), blank=True)
    traceback = models.TextField(_("traceback"), blank=True)

    class Meta:
        verbose_name = _("received callback")
        verbose_name_plural = _("received callbacks")
        ordering = ["-received_at", "-pk"]
        permissions = [("reprocess_receivedcallback", _("Can reprocess received callbacks"))]
        # Unique constraints rather than unique=True on the hot write paths: no LIKE twin (exact_indexes).
        constraints = [models.UniqueConstraint(fields=["dedupe_key"], name="paycollect_callback_dedupe_key")]
        indexes = [
            *exact_indexes("callback", state="state", transaction_uuid="txn_uuid"),
            # Callback health on the dashboard (``reporting``): states of a period's callbacks.
            models.Index(fields=["received_at", "state", "processed_at"], name="paycollect_callback_report"),
            # The admin's exact searches by payment id and Celery task id.
            models.Index(fields=["payment_id"], name="paycollect_callback_payment"),
            models.Index(fields=["task_id"], name="paycollect_callback_task"),
        ]

    def __str__(self) -> str:
        return gettext("callback %(uuid)s %(status)s (%(state)s)") % {
            "uuid": self.transaction_uuid or "?",
            "status": self.claimed_status,
            "state": self.get_state_display(),
        }

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
    """When the right to fetch a uuid was last taken (``upserts.take_fetch_turn``): a row per uuid, taken at
    most once per ``CALLBACK_FETCH_INTERVAL``, so 300 callbacks of one uuid cost a fetch or two (a callback
    queued before a fetch was sent is answered by it). Browser returns take theirs, rows ``return:<uuid>``."""

    uuid = CanonicalUuidField(_("transaction uuid"), max_length=64)
    #: The last time a verification took the right to fetch this uuid.
    claimed_at = models.DateTimeField(_("last fetch claimed at"), null=True, blank=True)
    #: When a fetch that the service answered "not found" (404) was sent.
    not_found_at = models.DateTimeField(_("not found by the fetch sent at"), null=True, blank=True)

    class Meta:
        verbose_name = _("fetch mark")
        verbose_name_plural = _("fetch marks")
        constraints = [models.UniqueConstraint(fields=["uuid"], name="paycollect_fetchmark_uuid")]

    def __str__(self) -> str:
        return gettext("fetch mark of %(uuid)s") % {"uuid": self.uuid}


class HousekeepingRun(models.Model):
    """When a periodic job (the callback sweep, reconciliation) last ran to its end, a row per job: a stopped
    beat makes no noise of its own, so the admin, the dashboard, ``paycollect_report`` and ``paycollect.W007``
    say when a job is late (:func:`django_paycollect.reporting.housekeeping`). A job that never ran is only
    *not run yet* (``paycollect.I001``); ``watched_since`` is when its row was made."""

    SWEEP = "sweep"
    RECONCILIATION = "reconciliation"
    JOB_CHOICES = [(SWEEP, _("callback sweep")), (RECONCILIATION, _("reconciliation"))]

    job = models.CharField(_("job"), max_length=32, choices=JOB_CHOICES)
    last_run_at = models.DateTimeField(_("last ran at"), null=True, blank=True)
    watched_since = models.DateTimeField(_("watched since"), default=timezone.now)

    class Meta:
        verbose_name = _("housekeeping run")
        verbose_name_plural = _("housekeeping runs")
        constraints = [models.UniqueConstraint(fields=["job"], name="paycollect_housekeepingrun_job")]

    def __str__(self) -> str:
        return str(self.get_job_display())
