"""How the club reacts to payments: receivers of django-paycollect's signals.

The app sends each signal once per real change, after the commit, whatever told it (the verified
callback, the customer's return, the admin's sync, reconciliation). So this is the one place that
marks a membership paid: views never do, and a forged return or callback cannot.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db.models import F
from django.dispatch import receiver
from django.utils import timezone

from django_paycollect import signals
from django_paycollect.models import DirectOrder, RecurringSeries, Transaction

from .models import Membership

logger = logging.getLogger("clubsite.members")


def membership_of(txn: Transaction | None) -> Membership | None:
    """The membership a payment is for: its merchant object, or the first payment's for a renewal."""
    if txn is None:
        return None
    content_type = ContentType.objects.get_for_model(Membership)
    if txn.content_type_id == content_type.pk and txn.object_id:
        return Membership.objects.filter(pk=txn.object_id).first()
    if txn.series_id is not None:
        series = RecurringSeries.objects.filter(pk=txn.series_id).select_related("parent_transaction").first()
        if series is not None and series.parent_transaction_id != txn.pk:
            return membership_of(series.parent_transaction)
    return None


def _is_renewal(txn: Transaction) -> bool:
    return bool(txn.series_id and txn.parent_uuid and txn.parent_uuid != txn.uuid)


@receiver(signals.payment_succeeded, dispatch_uid="clubsite-membership-paid")
def membership_paid(sender: Any, transaction: Transaction, **kwargs: Any) -> None:
    if _is_renewal(transaction):
        return  # recurring_charge_succeeded extends the membership
    membership = membership_of(transaction)
    if membership is None or membership.status == Membership.PAID:
        return
    today = timezone.localdate()
    Membership.objects.filter(pk=membership.pk).exclude(status=Membership.PAID).update(
        status=Membership.PAID,
        paid_at=timezone.now(),
        paid_until=today + membership.period(),
        updated_at=timezone.now(),
    )
    logger.info("%s is paid (transaction %s)", membership.reference, transaction.uuid)


@receiver(signals.payment_failed, dispatch_uid="clubsite-membership-failed")
def membership_payment_failed(sender: Any, transaction: Transaction, **kwargs: Any) -> None:
    if _is_renewal(transaction):
        return
    membership = membership_of(transaction)
    if membership is None:
        return
    # A failed attempt never undoes a payment that succeeded.
    Membership.objects.filter(pk=membership.pk).exclude(status=Membership.PAID).update(
        status=Membership.FAILED, updated_at=timezone.now()
    )
    logger.info("%s: payment %s failed", membership.reference, transaction.uuid)


@receiver(signals.recurring_charge_succeeded, dispatch_uid="clubsite-membership-renewed")
def membership_renewed(sender: Any, transaction: Transaction, series: RecurringSeries, **kwargs: Any) -> None:
    membership = membership_of(transaction)
    if membership is None:
        return
    start = max(membership.paid_until or timezone.localdate(), timezone.localdate())
    Membership.objects.filter(pk=membership.pk).update(
        paid_until=start + membership.period(), renewals=F("renewals") + 1, updated_at=timezone.now()
    )
    logger.info("%s renewed by charge %s", membership.reference, transaction.uuid)


@receiver(signals.recurring_series_cancelled, dispatch_uid="clubsite-membership-renewal-cancelled")
def membership_renewal_cancelled(sender: Any, series: RecurringSeries, **kwargs: Any) -> None:
    membership = membership_of(series.parent_transaction)
    if membership is not None:
        Membership.objects.filter(pk=membership.pk).update(renewal_cancelled_at=timezone.now())


@receiver(signals.direct_order_created, dispatch_uid="clubsite-invoice-created")
def invoice_created(sender: Any, direct_order: DirectOrder, **kwargs: Any) -> None:
    logger.info("invoice %s created: %s", direct_order.pk, direct_order.payment_link)


@receiver(signals.amount_mismatch_detected, dispatch_uid="clubsite-amount-mismatch")
def amount_mismatch(
    sender: Any, transaction: Transaction, differences: dict[str, Any], **kwargs: Any
) -> None:
    # The status was not applied; someone must look at it (the admin lists flagged transactions).
    logger.error("transaction %s differs from what we asked: %s", transaction.uuid, differences)
