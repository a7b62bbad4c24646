"""What every operation shares: validated arguments, locks, autocommit, signals after the commit."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar, overload

from django.db import router, transaction
from django.db.models import Model
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers as drf_serializers

from ..client import (
    field_errors_from,
)
from ..client.money import CENT
from ..exceptions import (
    PaymentRefused,
    ServiceUsageError,
    lazy_text,
)
from ..models import (
    Transaction,
)
from ..validators import max_amount

logger = logging.getLogger("django_paycollect.services")
M = TypeVar("M", bound=Model)


def _validated(
    serializer_class: type[drf_serializers.Serializer[Any]], data: Mapping[str, Any]
) -> dict[str, Any]:
    serializer = serializer_class(data=dict(data))
    if not serializer.is_valid():
        raise PaymentRefused(field_errors_from([serializer.errors]))
    return dict(serializer.validated_data)


@overload
def money_argument(value: Any, field: str, *, maximum: bool = ...) -> Decimal: ...
@overload
def money_argument(value: Any, field: str, *, required: bool, maximum: bool = ...) -> Decimal | None: ...
def money_argument(value: Any, field: str, *, required: bool = True, maximum: bool = True) -> Decimal | None:
    """The one check of every amount given to the service layer: an exact Decimal of at most two decimals,
    and (``maximum``) not above ``PAYCOLLECT["MAX_AMOUNT"]``.

    Accepts a ``Decimal``, an ``int`` or exact decimal text (``"12.50"``, what tasks receive) and
    returns it as a two-decimal ``Decimal``. Refuses, with a :class:`PaymentRefused` naming ``field``
    and saying what is wrong, before any row is written or any request sent: floats (``10.5`` is a
    binary approximation, and ``0.1 + 0.2`` is not 0.30), booleans, NaN, infinities, more than two
    decimals (never rounded away), anything that is not a number, and amounts above the maximum. None
    is refused when ``required``.
    """
    # Worded when read (lazy_text): in the language of the page or API answer that shows the refusal.
    if value is None:
        if required:
            raise PaymentRefused({field: [_("This field is required.")]})
        return None
    if isinstance(value, float):
        problem = lazy_text(
            _(
                "Pass amounts as Decimal (e.g. Decimal('12.50')) or decimal text, not the float %(value)s: "
                "a float cannot hold most amounts exactly."
            ),
            value=repr(value),
        )
    elif isinstance(value, bool) or not isinstance(value, (Decimal, int, str)):
        problem = lazy_text(
            _("Pass amounts as Decimal (e.g. Decimal('12.50')), not %(type)s."), type=type(value).__name__
        )
    else:
        try:
            amount = (
                value
                if isinstance(value, Decimal)
                else Decimal(value.strip() if isinstance(value, str) else value)
            )
        except InvalidOperation:
            amount = None
        if amount is None:
            problem = lazy_text(_("%(value)s is not a decimal amount."), value=repr(str(value)[:40]))
        elif amount.is_nan():
            problem = _("NaN (not a number) is not an amount.")
        elif amount.is_infinite():
            problem = _("An infinite value is not an amount.")
        else:
            try:
                cents = amount.quantize(CENT)
            except InvalidOperation:
                cents = None
            if cents is None:
                problem = lazy_text(_("%(value)s is too large to be an amount."), value=amount)
            elif cents != amount:
                problem = lazy_text(
                    _("%(value)s has more than two decimals; amounts are exact to 0.01, never rounded."),
                    value=amount,
                )
            elif maximum and cents > (limit := max_amount()):
                problem = lazy_text(
                    _("Must be at most %(limit)s (PAYCOLLECT['MAX_AMOUNT']), not %(value)s."),
                    limit=limit,
                    value=cents,
                )
            else:
                return cents
    raise PaymentRefused({field: [problem]})


def _user(user: Any) -> Any:
    """The user to record, or None for anonymous users and callers without one (tasks, commands)."""
    return user if getattr(user, "pk", None) else None


def _require_autocommit(operation: str) -> None:
    if transaction.get_connection(router.db_for_write(Transaction)).in_atomic_block:
        raise ServiceUsageError(
            f"{operation} changes money at the service and must not run inside transaction.atomic "
            "(a rollback would forget what the service did). Call it from a view marked "
            "transaction.non_atomic_requests, or from its Celery task."
        )


def _after_commit(signal: Any, *, sender: type[Model] = Transaction, **kwargs: Any) -> None:
    def send() -> None:
        for receiver, result in signal.send_robust(sender=sender, **kwargs):
            if isinstance(result, Exception):
                logger.error("receiver %r of a paycollect signal failed", receiver, exc_info=result)

    transaction.on_commit(send)


def savepoint_if_atomic(model: type[Model]) -> AbstractContextManager[Any]:
    """For an INSERT that may meet a unique violation: outside atomic it commits alone and the violation
    harms nothing; inside an outer atomic block a savepoint keeps that block usable after it."""
    connection = transaction.get_connection(router.db_for_write(model))
    return transaction.atomic() if connection.in_atomic_block else nullcontext()


def locked(model: type[M], pk: int) -> M:
    """The row, locked until the end of the caller's transaction (``select_for_update``)."""
    return model._default_manager.select_for_update().get(pk=pk)


@contextmanager
def _locked(model: type[M], pk: int) -> Iterator[M]:
    with transaction.atomic():
        yield locked(model, pk)


#: A call still "pending" after this long was left by a process that died; no answer will come.
STALE_IN_FLIGHT = dt.timedelta(minutes=15)
