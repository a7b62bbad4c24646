"""What is made on the service beside payments: direct orders (a payable order and its link) and recurring
series (the payments that repeat from a parent transaction)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ..client.redaction import REDACTED
from ..conf import paycollect_settings
from ..exceptions import Refusal, lazy_text
from .fields import MONEY, OPTIONAL_LINK, CanonicalUuidField, canonical_unique, exact_indexes
from .payments import Transaction


class DirectOrder(models.Model):
    """A payable order created on the service; the customer pays through ``payment_link``."""

    class State(models.TextChoices):
        NEW = "new", _("new")
        CREATED = "created", _("created on the service")
        REJECTED = "rejected", _("rejected by the service")
        UNKNOWN = "unknown", _("creation outcome unknown")

    NEW, CREATED, REJECTED, UNKNOWN = State.NEW, State.CREATED, State.REJECTED, State.UNKNOWN
    STATE_CHOICES = State.choices
    #: The spec's optional Direct order fields: sent only when set (blank, False or empty ones are left out).
    SENT_WHEN_SET: tuple[str, ...] = ("customer_title", "address", "order_description", "tags")
    SENT_WHEN_SET += ("send_by_email", "cc_email", "send_by_sms", "redirect_url", "callback_url", "paid")
    #: All the spec's Direct order fields kept in columns of the same name: what
    #: ``services.create_direct_order`` takes, stores and sends (beside ``custom_fields``, ``recurring`` and
    #: ``community_id``).
    SPEC_FIELDS: tuple[str, ...] = ("name", "amount", "currency", "discount_amount", "vat_percentage")
    SPEC_FIELDS += ("payment_methods", "customer_name", "customer_email", "customer_mobile", *SENT_WHEN_SET)

    community_id = models.CharField(_("community id"), max_length=100)
    state = models.CharField(_("state"), max_length=10, choices=STATE_CHOICES, default=NEW)
    name = models.CharField(_("order name"), max_length=200)
    amount = models.DecimalField(_("amount"), **MONEY)
    currency = models.CharField(_("currency"), max_length=3, default="EGP")
    discount_amount = models.DecimalField(_("discount"), null=True, blank=True, **MONEY)
    discount_currency = models.CharField(_("discount currency"), max_length=3, blank=True)
    vat_percentage = models.DecimalField(
        _("VAT percentage"), max_digits=5, decimal_places=2, null=True, blank=True
    )
    payment_methods = models.JSONField(_("payment methods"), default=list)
    customer_name = models.CharField(_("customer name"), max_length=200)
    customer_email = models.EmailField(_("customer e-mail"))
    customer_mobile = models.CharField(_("customer mobile"), max_length=32)
    customer_title = models.CharField(_("customer title"), max_length=100, blank=True)
    address = models.CharField(_("billing address"), max_length=300, blank=True)
    order_description = models.TextField(_("order description"), blank=True)
    custom_fields = models.JSONField(_("custom field definitions"), default=list, blank=True)
    tags = models.JSONField(_("tags"), default=list, blank=True)
    allow_recurring_payments = models.BooleanField(_("recurring order"), default=False)
    expiry_date = models.DateField(_("recurring until"), null=True, blank=True)
    minimum_days_between_payments = models.PositiveIntegerField(
        _("minimum days between payments"), null=True, blank=True
    )
    send_by_email = models.BooleanField(_("link sent by e-mail"), default=False)
    cc_email = models.EmailField(_("CC e-mail"), blank=True)
    send_by_sms = models.BooleanField(_("link sent by SMS"), default=False)
    redirect_url = models.URLField(_("redirect URL"), max_length=2000, blank=True)
    callback_url = models.URLField(_("callback URL"), max_length=2000, blank=True)
    paid = models.BooleanField(_("first payment marked paid"), default=False)
    payment_id = models.CharField(_("service's order id"), max_length=100, blank=True)
    payment_link = models.URLField(_("payment link"), max_length=2000, blank=True)
    service_message = models.TextField(_("service's message"), blank=True)
    merchant_reference = models.CharField(_("merchant reference"), max_length=200, blank=True)
    raw = models.JSONField(_("service's answer"), null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("created by"), null=True, **OPTIONAL_LINK
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("direct order")
        verbose_name_plural = _("direct orders")
        ordering = ["-created_at", "-pk"]
        indexes = exact_indexes(
            "order",
            community_id="community",
            state="state",
            customer_email="email",
            payment_id="payment_id",
            merchant_reference="reference",
        )

    def __str__(self) -> str:
        return f"{self.name} ({self.payment_id or self.get_state_display()})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The callback URL the service was given holds the secret token; the row keeps it without.
        self.callback_url = without_callback_token(self.callback_url)
        super().save(*args, **kwargs)


#: The end of the app's callback path, ``.../callback/<token>/`` (the token is one path segment).
CALLBACK_PATH = re.compile(r"(/callback/)([^/]+)(/?)$")


def without_callback_token(url: str) -> str:
    """``url`` with its callback token replaced by ``[redacted]``: the last segment of a path ending in
    ``callback/<token>/`` (the app's callback view, whichever token it held), and any path segment that is one
    of ``CALLBACK_TOKENS``. What ``DirectOrder`` stores and shows; the service is sent the whole URL."""
    if not url:
        return url
    parts = urlsplit(url)
    tokens = set(paycollect_settings.texts("CALLBACK_TOKENS"))
    path = "/".join(REDACTED if segment in tokens else segment for segment in parts.path.split("/"))
    path = CALLBACK_PATH.sub(lambda found: f"{found[1]}{REDACTED}{found[3]}", path)
    return urlunsplit(parts._replace(path=path))


class RecurringSeriesQuerySet(models.QuerySet["RecurringSeries"]):
    def with_renewals(self) -> RecurringSeriesQuerySet:
        """Fetch the renewals of the series read (their ids, in one query for all of them), which
        :attr:`RecurringSeries.renewal_count` counts, so a list needs no query per row. A prefetch, not an
        annotation: a changelist's count of the series never computes it."""
        stored = Transaction.objects.renewals().only("pk", "series_id").order_by()
        return self.prefetch_related(models.Prefetch("charges", queryset=stored, to_attr="stored_renewals"))


class RecurringSeries(models.Model):
    """A recurring series: its parent transaction and its charges (transactions with ``series`` set)."""

    class CancelState(models.TextChoices):
        NONE = "", _("not cancelled")
        PENDING = "pending", _("cancellation pending")
        DONE = "cancelled", _("cancelled")
        FAILED = "failed", _("cancellation failed")
        UNKNOWN = "unknown", _("cancellation outcome unknown")

    CANCEL_NONE, CANCEL_PENDING, CANCEL_DONE = CancelState.NONE, CancelState.PENDING, CancelState.DONE
    CANCEL_FAILED, CANCEL_UNKNOWN = CancelState.FAILED, CancelState.UNKNOWN
    CANCEL_CHOICES = CancelState.choices

    parent_uuid = CanonicalUuidField(_("parent transaction uuid"), max_length=64, unique=True)
    parent_transaction = models.OneToOneField(
        Transaction,
        verbose_name=_("parent transaction"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="series_as_parent",
    )
    community_id = models.CharField(_("community id"), max_length=100)
    expiry_date = models.DateField(_("recurring until"), null=True, blank=True)
    minimum_days_between_payments = models.PositiveIntegerField(
        _("minimum days between payments"), null=True, blank=True
    )
    active = models.BooleanField(_("active"), default=True, db_index=True)
    recurring_count = models.PositiveIntegerField(_("renewals charged"), default=0)
    cancel_state = models.CharField(
        _("cancellation"), max_length=10, choices=CANCEL_CHOICES, default=CANCEL_NONE, blank=True
    )
    cancelled_at = models.DateTimeField(_("cancelled at"), null=True, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("cancelled by"), null=True, **OPTIONAL_LINK
    )
    raw = models.JSONField(_("as the service last said"), null=True, blank=True)
    last_synced_at = models.DateTimeField(_("last synced at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    objects = RecurringSeriesQuerySet.as_manager()

    class Meta:
        verbose_name = _("recurring series")
        verbose_name_plural = _("recurring series")
        ordering = ["-created_at", "-pk"]
        constraints = [canonical_unique("parent_uuid", "paycollect_series_one_row_per_parent")]
        # The admin's changelist, newest first.
        indexes = [
            *exact_indexes("series", community_id="community"),
            models.Index(fields=["created_at"], name="paycollect_series_created"),
        ]

    def __str__(self) -> str:
        return gettext("series %(uuid)s") % {"uuid": self.parent_uuid}

    @property
    def renewal_count(self) -> int:
        """How many renewals the series has had: its successful charges after the first (:data:`RENEWAL`).

        The one count every surface shows. Two sources, the larger wins: the renewals stored here, and the
        service's ``recurring_count``, which counts every charge it executed, the first one included (its
        ``transaction_order`` runs 1, 2, 3, ...), so one less. A renewal's callback may be stored before the
        series is fetched again; a renewal whose callback never came is known only by the service's count.
        """
        prefetched = getattr(self, "stored_renewals", None)
        if prefetched is not None:
            stored = len(prefetched)
        else:
            stored = Transaction.objects.renewals().filter(series=self).count() if self.pk else 0
        return max(stored, self.recurring_count - 1, 0)

    def cancel_refusal(self) -> Refusal | None:
        """Why cancelling this series is refused before anything is sent, or None: a cancellation
        pending or done is not asked again (a failed or unknown one may be). Worded when read."""
        if self.cancel_state in (self.CANCEL_DONE, self.CANCEL_PENDING):
            label = dict(self.CANCEL_CHOICES)[self.cancel_state]
            return Refusal("series", lazy_text(_("Series already %(state)s."), state=label))
        return None
