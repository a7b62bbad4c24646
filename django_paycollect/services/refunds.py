"""Refunds, in three phases, and settling one of unknown outcome by hand."""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import Any, Final

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import signals
from ..amounts import EMPTY, MONEY_COLUMN_MAX, ZERO, parse_amount
from ..client.types import OperationMessage
from ..exceptions import StateConflict, lazy_text
from ..models import Refund, Transaction
from .calls import Sent, guarded_write
from .common import (
    STALE_IN_FLIGHT,
    lock_row,
    primary,
    recorded_user,
    require_autocommit,
    row_locked,
    send_after_commit,
)
from .config import community_config


class Remainder(enum.Enum):
    """What :func:`refund` refunds when its amount is left out."""

    ALL = "all that is still refundable"


#: The default amount of :func:`refund` (and of the refund task): all that is still refundable. Only
#: leaving the amount out says so; None, "" and blanks are refused, never read as "all".
ALL_REFUNDABLE: Final = Remainder.ALL

# Worded when read, in the language of the page or API answer that shows it.
EMPTY_AMOUNT = _(
    "An amount is required (e.g. 12.50); an empty amount does not mean all that is still refundable."
)


def refund_amount(value: Any) -> Decimal | Remainder:
    """The one reading of a refund's amount, which every surface calls (the REST API's field, the admin's
    refund page, the refund task, :func:`refund` itself).

    :data:`ALL_REFUNDABLE` (the amount left out) is returned as it is. Anything else is read as every amount
    is (:func:`~django_paycollect.amounts.parse_amount`: at least 0.01, at most ``MAX_AMOUNT``). None, "" and
    whitespace are refused: a blank box or a null that a front end sent for an empty field must never refund
    everything. Raises :class:`PaymentRefused` naming ``amount``.
    """
    if value is ALL_REFUNDABLE:
        return Remainder.ALL
    return parse_amount(value, "amount", blank=EMPTY_AMOUNT)


def expected_refundable_amount(value: Any) -> Decimal:
    """The one reading of :func:`refund`'s ``expected_refundable`` (what the caller showed as still
    refundable): 0.00 or more, up to what an amount column holds (a payment taken before ``MAX_AMOUNT`` was
    lowered may exceed it). Raises :class:`PaymentRefused` naming ``expected_refundable``."""
    return parse_amount(value, "expected_refundable", minimum=ZERO, maximum=MONEY_COLUMN_MAX, blank=EMPTY)


def refund(
    txn: Transaction,
    amount: Decimal | int | str | Remainder = ALL_REFUNDABLE,
    *,
    user: Any = None,
    expected_refundable: Decimal | int | str | None = None,
) -> Refund:
    """Refund ``amount`` of a successful transaction; left out, all that is still refundable.

    The amount is read by :func:`refund_amount`: None, "" or a blank is refused (:class:`PaymentRefused`
    naming ``amount``), never taken for "all".

    Three phases (docs/services.md), so that no race refunds more than was paid; never resent.
    ``expected_refundable`` is what the caller showed the user: when it changed meanwhile (a second click,
    another refund), the refund is refused under the lock instead of doubled.

    Returns the refund, succeeded or unknown. Refused by our checks, :class:`PaymentRefused` (the amount) or
    :class:`StateConflict` (what is refundable), no refund stored; refused by the service,
    :class:`PaymentRefused` with the failed refund as ``record`` (``refund_failed`` is sent); never sent,
    :class:`ServiceUnavailable`, the failed refund as ``record``.
    """
    require_autocommit("refund")
    if expected_refundable is not None:
        expected_refundable = expected_refundable_amount(expected_refundable)
    wanted = refund_amount(amount)

    def claim() -> Refund:
        found = lock_row(Transaction, txn.pk)
        refundable = found.refundable_amount
        refusal = found.refund_refusal(refundable)
        if refusal is not None and refusal.field == "transaction":  # not paid: said before anything else
            raise refusal.conflict()
        if expected_refundable is not None and expected_refundable != refundable:
            changed = _(
                "What is still refundable changed from %(shown)s to %(now)s %(currency)s meanwhile "
                "(another refund?); nothing was sent."
            )
            raise StateConflict(
                {
                    "amount": [
                        lazy_text(changed, shown=expected_refundable, now=refundable, currency=found.currency)
                    ]
                }
            )
        if refusal is not None:
            raise refusal.conflict()
        if wanted is not ALL_REFUNDABLE and wanted > refundable:
            raise StateConflict({"amount": [found.refund_limit_message(refundable)]})
        return primary(Refund).create(
            transaction=found,
            amount=refundable if wanted is ALL_REFUNDABLE else wanted,
            requested_by=recorded_user(user),
        )

    def record(pending: Refund, sent: Sent[OperationMessage]) -> Refund:
        paid = lock_row(Transaction, txn.pk)  # the transaction first, as every refund path locks them
        done = lock_row(Refund, pending.pk)
        done.completed_at = timezone.now()
        if sent.envelope is not None:
            done.service_message = sent.envelope.result.message or ""
        else:
            done.error = sent.error_text
        if sent.unknown:
            done.state = Refund.UNKNOWN
        else:
            _settle(done, paid, succeeded=sent.envelope is not None)
        done.save()
        return done

    return guarded_write(
        "refund",
        config=lambda pending: community_config(pending.transaction.community_id),
        claim=claim,
        send=lambda client, pending: client.refund(
            transaction_uuid=pending.transaction.uuid or "", refund_amount=pending.amount
        ),
        links=lambda pending: {"transaction": pending.transaction, "refund": pending},
        record=record,
    )


def resolve_refund(refund: Refund, *, succeeded: bool, user: Any = None) -> Refund:
    """Settle a refund of unknown outcome by hand, after checking the service's dashboard.

    The spec's transaction shows no refunds, so fetching cannot tell whether it happened. A refund
    still PENDING after :data:`STALE_IN_FLIGHT` was left by a process that died mid-call and is
    settled the same way; a younger one may still be waiting for its answer.
    """
    with row_locked(Transaction, refund.transaction_id) as locked:
        done = primary(Refund).select_for_update().get(pk=refund.pk)
        stale = done.state == Refund.PENDING and done.created_at < timezone.now() - STALE_IN_FLIGHT
        if done.state != Refund.UNKNOWN and not stale:
            only = _("Only a refund of unknown outcome or long pending is settled by hand (%(state)s).")
            raise StateConflict({"refund": [lazy_text(only, state=Refund.State(done.state).label)]})
        done.completed_at = timezone.now()
        who = getattr(recorded_user(user), "get_username", lambda: "someone")()
        done.error = f"resolved by hand by {who}"
        _settle(done, locked, succeeded=succeeded)
        done.save()
    return done


def _settle(done: Refund, paid: Transaction, *, succeeded: bool) -> None:
    """A refund's end, both rows locked: succeeded (added to what ``paid`` refunded) or failed; its signal
    follows the commit."""
    if succeeded:
        done.state = Refund.SUCCEEDED
        paid.refunded_amount += done.amount
        paid.save(update_fields=["refunded_amount", "updated_at"])
        send_after_commit(signals.refund_succeeded, sender=Refund, refund=done, transaction=paid)
    else:
        done.state = Refund.FAILED
        send_after_commit(
            signals.refund_failed, sender=Refund, refund=done, transaction=paid, error=done.error
        )
