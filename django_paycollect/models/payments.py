"""Transactions (payments as started here or learned from the service), their status history and their
refunds, each refund with its own state at the service."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import F, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ..client import KNOWN_TRANSACTION_STATUSES, TransactionStatus
from ..exceptions import Refusal, lazy_text
from .fields import MONEY, OPTIONAL_LINK, ZERO, CanonicalUuidField, canonical_unique, exact_indexes

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

#: A renewal: a successful charge of a recurring series other than its first (the parent). The one definition
#: of a renewal, which the series admin, the cancel confirmation, the dashboard and the REST API count
#: (``RecurringSeries.renewal_count``, ``Transaction.objects.renewals()``); its partial index is below.
RENEWAL = Q(succeeded_at__isnull=False) & ~Q(parent_uuid="") & ~Q(parent_uuid=F("uuid"))


class TransactionQuerySet(models.QuerySet["Transaction"]):
    def open(self) -> TransactionQuerySet:
        return self.filter(status__in=Transaction.OPEN_STATUSES)

    def renewals(self) -> TransactionQuerySet:
        """The renewals among these transactions (:data:`RENEWAL`)."""
        return self.filter(RENEWAL)

    def with_refundable(self) -> TransactionQuerySet:
        """Annotate ``holding``: the refunds whose money may have left (pending or of unknown outcome).

        ``Transaction.refundable_amount`` reads it, so a changelist needs no query per row.
        """
        in_flight = (
            Refund.objects.filter(transaction=OuterRef("pk"), state__in=Refund.IN_FLIGHT_STATES)
            .order_by()
            .values("transaction")
            .annotate(total=Sum("amount"))
            .values("total")
        )
        money = models.DecimalField(**MONEY)
        return self.annotate(
            holding=Coalesce(Subquery(in_flight, output_field=money), Value(ZERO), output_field=money)
        )


class Transaction(models.Model):
    """A payment, as started here or as learned from the service (renewal charges, callbacks).

    ``status`` only moves forward (see ``services.status.apply_status``); ``service_status`` is the latest
    status text the service reported, whatever it is, and ``status_unrecognised`` flags one we do
    not know. Before the service has accepted it, a transaction is NEW; REJECTED when the service
    refused to start it; ABANDONED when starting it had an unknown outcome that was never confirmed.
    """

    class Status(models.TextChoices):
        """The service's statuses, in its own words and case, and our three before it knows one."""

        NEW = "NEW", _("new (not yet accepted by the service)")
        PENDING = TransactionStatus.PENDING, _("pending")
        SUCCESSFUL = TransactionStatus.SUCCESSFUL, _("successful")
        FAILED = TransactionStatus.FAILED, _("failed")
        REJECTED = "REJECTED", _("rejected by the service")
        ABANDONED = "ABANDONED", _("abandoned (start outcome unknown)")

    NEW, PENDING, SUCCESSFUL = Status.NEW, Status.PENDING, Status.SUCCESSFUL
    FAILED, REJECTED, ABANDONED = Status.FAILED, Status.REJECTED, Status.ABANDONED
    STATUS_CHOICES = Status.choices
    OPEN_STATUSES = (NEW, PENDING)
    KNOWN_SERVICE_STATUSES = KNOWN_TRANSACTION_STATUSES

    class CaptureState(models.TextChoices):
        NONE = "", _("not captured")
        PENDING = "pending", _("capture pending")
        DONE = "captured", _("captured")
        FAILED = "failed", _("capture failed")
        UNKNOWN = "unknown", _("capture outcome unknown")

    CAPTURE_NONE, CAPTURE_PENDING, CAPTURE_DONE = CaptureState.NONE, CaptureState.PENDING, CaptureState.DONE
    CAPTURE_FAILED, CAPTURE_UNKNOWN = CaptureState.FAILED, CaptureState.UNKNOWN
    CAPTURE_CHOICES = CaptureState.choices

    uuid = CanonicalUuidField(_("transaction uuid"), max_length=64, null=True, blank=True)
    # Indexed: a browser return may name a transaction by this id alone.
    service_id = models.BigIntegerField(_("service's transaction id"), null=True, blank=True, db_index=True)
    community_id = models.CharField(_("community id"), max_length=100)
    status = models.CharField(_("status"), max_length=16, choices=STATUS_CHOICES, default=NEW)
    service_status = models.CharField(_("status reported by the service"), max_length=64, blank=True)
    status_unrecognised = models.BooleanField(_("unrecognised status"), default=False)
    total_amount = models.DecimalField(_("total amount"), **MONEY)
    original_amount = models.DecimalField(_("amount without fees"), null=True, blank=True, **MONEY)
    currency = models.CharField(_("currency"), max_length=3, default="EGP")
    total_amount_piasters = models.BigIntegerField(_("total amount in piasters"), null=True, blank=True)
    payment_for = models.CharField(_("payment for"), max_length=40, blank=True)
    member_id = models.CharField(_("member id"), max_length=100, blank=True)
    custom_fields = models.JSONField(_("custom fields"), default=list, blank=True)
    variable_amount_id = models.PositiveIntegerField(_("variable amount id"), null=True, blank=True)
    pay_using = models.CharField(_("payment method"), max_length=40, blank=True)
    promocode_id = models.PositiveIntegerField(_("promocode id"), null=True, blank=True)
    iframe_url = models.URLField(_("payment page URL"), max_length=2000, blank=True)
    bill_reference = models.CharField(_("kiosk bill reference"), max_length=64, blank=True)
    kiosk_message = models.TextField(_("kiosk message"), blank=True)
    customer_name = models.CharField(_("customer name"), max_length=200, blank=True)
    customer_email = models.EmailField(_("customer e-mail"), blank=True)
    customer_phone = models.CharField(_("customer phone"), max_length=32, blank=True)
    merchant_reference = models.CharField(_("merchant reference"), max_length=200, blank=True)
    content_type = models.ForeignKey(
        ContentType, verbose_name=_("merchant object type"), null=True, **OPTIONAL_LINK
    )
    object_id = models.CharField(_("merchant object id"), max_length=64, blank=True)
    #: The user the payment belongs to, set when it is started for one (the REST API's payments).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("owner"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="paycollect_transactions",
    )
    merchant_object = GenericForeignKey("content_type", "object_id")
    capture_state = models.CharField(
        _("capture"), max_length=10, choices=CAPTURE_CHOICES, default=CAPTURE_NONE, blank=True
    )
    captured_amount = models.DecimalField(_("captured amount"), default=ZERO, **MONEY)
    captured_at = models.DateTimeField(_("captured at"), null=True, blank=True)
    captured_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("captured by"), null=True, related_name="+", **OPTIONAL_LINK
    )
    refunded_amount = models.DecimalField(_("refunded amount"), default=ZERO, **MONEY)
    outcome_unknown = models.BooleanField(_("outcome unknown"), default=False, db_index=True)
    amount_mismatch = models.BooleanField(_("amount mismatch"), default=False)
    last_error = models.TextField(_("last error"), blank=True)
    raw = models.JSONField(_("last fetched object"), null=True, blank=True)
    last_synced_at = models.DateTimeField(_("last synced at"), null=True, blank=True)
    #: When the last fetch whose answer was applied was sent: it answers every callback queued before.
    fetch_sent_at = models.DateTimeField(_("last fetch sent at"), null=True, blank=True)
    direct_order = models.ForeignKey(
        "DirectOrder",
        verbose_name=_("direct order"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="transactions",
    )
    series = models.ForeignKey(
        "RecurringSeries",
        verbose_name=_("recurring series"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="charges",
    )
    parent_uuid = CanonicalUuidField(_("parent transaction uuid"), max_length=64, blank=True)
    transaction_order = models.IntegerField(_("order within the series"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, db_index=True)
    #: When the status became SUCCESSFUL here (``services.status.apply_status``): the day money came in.
    succeeded_at = models.DateTimeField(_("successful since"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = TransactionQuerySet.as_manager()

    class Meta:
        verbose_name = _("transaction")
        verbose_name_plural = _("transactions")
        ordering = ["-created_at", "-pk"]
        permissions = [
            ("capture_transaction", _("Can capture transactions")),
            ("refund_transaction", _("Can refund transactions")),
            ("cancel_recurringseries", _("Can cancel recurring series")),
            ("sync_transaction", _("Can sync transactions from the service")),
            # One permission for the three exports (transactions, refunds, renewals): they carry the same
            # customers' data out of the admin.
            ("export_transaction", _("Can export transactions, refunds and renewals")),
        ]
        constraints = [
            # A double click or a re-rendered page must not start a second payment for one reference.
            models.UniqueConstraint(
                fields=["community_id", "merchant_reference"],
                condition=Q(status__in=["NEW", "PENDING"]) & ~Q(merchant_reference=""),
                name="paycollect_one_open_payment_per_reference",
            ),
            models.CheckConstraint(
                condition=Q(refunded_amount__lte=models.F("total_amount")),
                name="paycollect_refunds_within_amount",
            ),
            canonical_unique("uuid", "paycollect_txn_one_row_per_uuid"),
            # A constraint, not unique=True: no LIKE twin (see exact_indexes). Lookups by uuid use it.
            models.UniqueConstraint(fields=["uuid"], name="paycollect_txn_uuid"),
        ]
        indexes = [
            # Identifiers and states, matched only exactly: plain indexes, no LIKE twin (see exact_indexes).
            *exact_indexes(
                "txn",
                community_id="community",
                status="status",
                customer_email="email",
                merchant_reference="reference",
                parent_uuid="parent_uuid",
            ),
            models.Index(fields=["status", "created_at"], name="paycollect_txn_status_created"),
            # Flags the admin filters on and reconciliation looks for: rare, so partial indexes stay small.
            models.Index(
                fields=["amount_mismatch"], condition=Q(amount_mismatch=True), name="paycollect_txn_mismatch"
            ),
            models.Index(
                fields=["status_unrecognised"],
                condition=Q(status_unrecognised=True),
                name="paycollect_txn_unrecognised",
            ),
            models.Index(
                fields=["capture_state"], condition=~Q(capture_state=""), name="paycollect_txn_capture"
            ),
            # The dashboard's figures (``reporting``): payments of one community and currency by day.
            models.Index(
                fields=["community_id", "currency", "created_at", "status", "total_amount"],
                name="paycollect_txn_report_started",
            ),
            models.Index(
                fields=["community_id", "currency", "succeeded_at", "total_amount", "refunded_amount"],
                condition=Q(succeeded_at__isnull=False),
                name="paycollect_txn_report_paid",
            ),
            models.Index(
                fields=["community_id", "currency", "succeeded_at", "total_amount"],
                condition=RENEWAL,
                name="paycollect_txn_report_renewal",
            ),
            # Payments open at the service (reconciliation.open_at_the_service), by community and age: the
            # dashboard counts those open too long to fetch any more. Partial: open rows are few.
            models.Index(
                fields=["community_id", "created_at"],
                condition=Q(status="PENDING") | Q(status="NEW", uuid__isnull=False),
                name="paycollect_txn_open",
            ),
            # Transactions the service accepted, counted beside its statistics.
            models.Index(
                fields=["community_id"], condition=Q(uuid__isnull=False), name="paycollect_txn_report_known"
            ),
            # The admin's sort by amount, ties broken by id in the same direction (changelists).
            models.Index(fields=["total_amount", "id"], name="paycollect_txn_amount_sort"),
        ]

    def __str__(self) -> str:
        return self.uuid or gettext("transaction #%(pk)s (not started)") % {"pk": self.pk}

    @property
    def refundable_amount(self) -> Decimal:
        """Paid, minus refunded, minus refunds pending or of unknown outcome: what may still be refunded.

        The one definition of it: ``services.refund`` checks it under a row lock, the admin shows it.
        """
        holding = getattr(self, "holding", None)
        if holding is None:
            holding = self.refunds.filter(state__in=Refund.IN_FLIGHT_STATES).aggregate(s=Sum("amount"))["s"]
        # Quantized: SQLite hands sums back as 5 rather than 5.00.
        return (self.total_amount - self.refunded_amount - Decimal(holding or ZERO)).quantize(ZERO)

    @property
    def is_paid(self) -> bool:
        return self.status == self.SUCCESSFUL

    # The refusals are worded when read (lazy_text): in the language of the page that shows them.

    def refund_refusal(self, refundable: Decimal | None = None) -> Refusal | None:
        """Why a refund of this transaction is refused before anything is sent, or None. The one statement
        of the rule: ``services.refund`` checks it under the row lock, the admin's refund page shows it.
        ``refundable``: :attr:`refundable_amount`, when the caller has it already."""
        if self.status != self.SUCCESSFUL:
            message = _("Only a successful transaction can be refunded (status %(status)s).")
            return Refusal("transaction", lazy_text(message, status=self.status))
        if (self.refundable_amount if refundable is None else refundable) <= 0:
            return Refusal("amount", _("Nothing is left to refund (pending refunds count)."))
        return None

    def refund_limit_message(self, refundable: Decimal) -> StrOrPromise:
        """The refusal of an amount above what is still refundable (the service's and the refund form's)."""
        message = _("At most %(remainder)s %(currency)s can still be refunded.")
        return lazy_text(message, remainder=refundable, currency=self.currency)

    def capture_refusal(self) -> Refusal | None:
        """Why capturing this transaction is refused before anything is sent, or None."""
        if self.status != self.SUCCESSFUL:
            message = _("Only a successful transaction can be captured (status %(status)s).")
            return Refusal("transaction", lazy_text(message, status=self.status))
        if self.capture_state in (self.CAPTURE_DONE, self.CAPTURE_PENDING, self.CAPTURE_UNKNOWN):
            label = dict(self.CAPTURE_CHOICES)[self.capture_state]
            return Refusal("transaction", lazy_text(_("Capture already %(state)s."), state=label))
        return None


class TransactionStatusChange(models.Model):
    """Every change of a transaction's status, with what caused it."""

    class Source(models.TextChoices):
        """What caused the change."""

        PAY = "pay", _("pay")
        SYNC = "sync", _("sync")
        CALLBACK = "callback", _("callback")
        RETURN = "return", _("customer's return")
        ADMIN = "admin", _("admin")
        RECONCILE = "reconcile", _("reconciliation")

    transaction = models.ForeignKey(
        Transaction, verbose_name=_("transaction"), on_delete=models.CASCADE, related_name="status_changes"
    )
    # The choices only word the values (get_*_display): a value outside them is shown as it is.
    from_status = models.CharField(_("from status"), max_length=16, choices=Transaction.STATUS_CHOICES)
    to_status = models.CharField(_("to status"), max_length=16, choices=Transaction.STATUS_CHOICES)
    service_status = models.CharField(_("status reported by the service"), max_length=64, blank=True)
    source = models.CharField(_("caused by"), max_length=32, choices=Source.choices)
    at = models.DateTimeField(_("at"), default=timezone.now)

    class Meta:
        verbose_name = _("status change")
        verbose_name_plural = _("status changes")
        ordering = ["at", "pk"]

    def __str__(self) -> str:
        return gettext("%(before)s → %(after)s (%(source)s)") % {
            "before": self.get_from_status_display(),
            "after": self.get_to_status_display(),
            "source": self.get_source_display(),
        }


class Refund(models.Model):
    """A refund asked of the service. Recorded as pending before the call, so it is never lost or doubled."""

    class State(models.TextChoices):
        PENDING = "pending", _("pending")
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")
        UNKNOWN = "unknown", _("outcome unknown")

    PENDING, SUCCEEDED, FAILED, UNKNOWN = State.PENDING, State.SUCCEEDED, State.FAILED, State.UNKNOWN
    STATE_CHOICES = State.choices
    #: States whose money may have left although not yet counted in ``refunded_amount``.
    IN_FLIGHT_STATES = (PENDING, UNKNOWN)

    transaction = models.ForeignKey(
        Transaction, verbose_name=_("transaction"), on_delete=models.PROTECT, related_name="refunds"
    )
    amount = models.DecimalField(_("amount"), **MONEY)
    state = models.CharField(_("state"), max_length=10, choices=STATE_CHOICES, default=PENDING)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("requested by"), null=True, **OPTIONAL_LINK
    )
    service_message = models.TextField(_("service's message"), blank=True)
    error = models.TextField(_("error"), blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, db_index=True)
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)

    class Meta:
        verbose_name = _("refund")
        verbose_name_plural = _("refunds")
        ordering = ["-created_at", "-pk"]
        indexes = [
            *exact_indexes("refund", state="state"),
            # Refunds per day on the dashboard (``reporting``).
            models.Index(fields=["state", "completed_at"], name="paycollect_refund_report"),
        ]

    def __str__(self) -> str:
        return gettext("refund %(amount)s of transaction #%(transaction)s (%(state)s)") % {
            "amount": self.amount,
            "transaction": self.transaction_id,
            "state": self.get_state_display(),
        }
