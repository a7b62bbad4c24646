"""A membership of the club: what the member chose and whether it is paid.

The payment itself is django-paycollect's ``Transaction``, linked to the membership through its
``merchant_object``; the membership changes only when the app's signals say a payment succeeded or
failed (see receivers.py), never because a browser came back claiming so.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from django_paycollect.models import Transaction

ZERO = Decimal("0.00")
MONEY: dict[str, Any] = {"max_digits": 12, "decimal_places": 2}


class Plan(models.TextChoices):
    STANDARD = "standard", _("Standard")
    FAMILY = "family", _("Family")
    JUNIOR = "junior", _("Junior (under 18)")


class Billing(models.TextChoices):
    YEARLY = "yearly", _("Yearly, one payment")
    MONTHLY = "monthly", _("Monthly, renewed automatically")


class PayUsing(models.TextChoices):
    CARD = "card", _("Card, on the payment page")
    KIOSK = "kiosk", _("Cash at a kiosk, with a bill reference")


#: Prices in EGP, as Decimal (never float).
PRICES: dict[str, dict[str, Decimal]] = {
    Plan.STANDARD: {Billing.YEARLY: Decimal("1500.00"), Billing.MONTHLY: Decimal("150.00")},
    Plan.FAMILY: {Billing.YEARLY: Decimal("2500.00"), Billing.MONTHLY: Decimal("250.00")},
    Plan.JUNIOR: {Billing.YEARLY: Decimal("600.00"), Billing.MONTHLY: Decimal("60.00")},
}
CURRENCY = "EGP"
#: A monthly membership is charged again every 30 days, for at most a year.
RENEWAL_DAYS = 30
RENEWAL_YEARS = 1


def price_of(plan: str, billing: str) -> Decimal:
    return PRICES[plan][billing]


class Membership(models.Model):
    NEW, PENDING, PAID, FAILED = "new", "pending", "paid", "failed"
    STATUS_CHOICES = [
        (NEW, _("not paid yet")),
        (PENDING, _("payment in progress")),
        (PAID, _("paid")),
        (FAILED, _("payment failed")),
    ]

    #: In URLs instead of the primary key, so members cannot guess each other's pages.
    public_id = models.UUIDField(_("public id"), default=uuid.uuid4, unique=True, editable=False)
    #: The account that started it: the single-page checkout's member, or whoever joined while signed in
    #: (none for a visitor's join). The payable hook picks only the signed-in user's own memberships, never
    #: one found by e-mail: anyone can type any e-mail on the join form.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("account"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="club_memberships",
    )
    plan = models.CharField(_("plan"), max_length=16, choices=Plan.choices)
    billing = models.CharField(_("billing"), max_length=16, choices=Billing.choices, default=Billing.YEARLY)
    pay_using = models.CharField(_("payment method"), max_length=16, choices=PayUsing.choices)
    name = models.CharField(_("name"), max_length=200)
    email = models.EmailField(_("e-mail"))
    phone = models.CharField(_("mobile phone"), max_length=32)
    price = models.DecimalField(_("price"), **MONEY)
    promocode = models.CharField(_("promocode"), max_length=50, blank=True)
    promocode_id = models.PositiveIntegerField(_("promocode id"), null=True, blank=True)
    discount = models.DecimalField(_("discount"), default=ZERO, **MONEY)
    #: What the club asks: the price less the promocode's discount (the service's fees come on top).
    amount = models.DecimalField(_("amount"), **MONEY)
    #: The total with the service's fees, as prepare amount said when the member reviewed the order.
    total_with_fees = models.DecimalField(_("total with fees"), null=True, blank=True, **MONEY)
    status = models.CharField(_("status"), max_length=10, choices=STATUS_CHOICES, default=NEW, db_index=True)
    paid_at = models.DateTimeField(_("paid at"), null=True, blank=True)
    paid_until = models.DateField(_("paid until"), null=True, blank=True)
    renewals = models.PositiveIntegerField(_("renewal charges"), default=0)
    renewal_cancelled_at = models.DateTimeField(_("renewal cancelled at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")

    def __str__(self) -> str:
        return gettext("%(plan)s membership of %(name)s (%(status)s)") % {
            "plan": self.get_plan_display(),
            "name": self.name,
            "status": self.get_status_display(),
        }

    def get_absolute_url(self) -> str:
        return reverse("members:membership", args=[self.public_id])

    @property
    def reference(self) -> str:
        """The merchant reference of its payments: a second click gets the open payment, not a new one."""
        return f"membership-{self.pk}"

    @property
    def monthly(self) -> bool:
        return self.billing == Billing.MONTHLY

    @property
    def fees(self) -> Decimal | None:
        return None if self.total_with_fees is None else self.total_with_fees - self.amount

    @property
    def is_final(self) -> bool:
        return self.status in (self.PAID, self.FAILED)

    def recurring_terms(self) -> dict[str, Any] | None:
        if not self.monthly:
            return None
        today = timezone.localdate()
        return {
            "expiry_date": today.replace(year=today.year + RENEWAL_YEARS) - dt.timedelta(days=1),
            "minimum_days_between_payments": RENEWAL_DAYS,
        }

    def period(self) -> dt.timedelta:
        return dt.timedelta(days=RENEWAL_DAYS if self.monthly else 365)

    def payments(self) -> QuerySet[Transaction]:
        """Its payments, newest first (renewal charges of a monthly membership are in the admin's series)."""
        content_type = ContentType.objects.get_for_model(Membership)
        return Transaction.objects.filter(content_type=content_type, object_id=str(self.pk)).order_by(
            "-created_at", "-pk"
        )

    def latest_payment(self) -> Transaction | None:
        return self.payments().first()
