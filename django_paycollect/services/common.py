"""What every operation shares: validated arguments, locks, autocommit, signals after the commit."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from django.db import router, transaction
from django.db.models import Manager, Model
from rest_framework import serializers as drf_serializers

from ..client import field_errors_from
from ..exceptions import PaymentRefused, ServiceUsageError
from ..models import Transaction

logger = logging.getLogger("django_paycollect.services")
M = TypeVar("M", bound=Model)


def validated(
    serializer_class: type[drf_serializers.Serializer[Any]], data: Mapping[str, Any]
) -> dict[str, Any]:
    serializer = serializer_class(data=dict(data))
    if not serializer.is_valid():
        raise PaymentRefused(field_errors_from([serializer.errors]))
    return dict(serializer.validated_data)


def recorded_user(user: Any) -> Any:
    """The user to record, or None for anonymous users and callers without one (tasks, commands)."""
    return user if getattr(user, "pk", None) else None


def write_alias(model: type[Model] = Transaction) -> str:
    """The database the project's router gives for writing ``model``: every atomic block, lock and decision
    read of the service layer uses it, so nothing is decided on a replica that lags (check
    ``paycollect.E021`` holds that the app's models share one)."""
    return router.db_for_write(model)


def primary(model: type[M]) -> Manager[M]:
    """``model``'s default manager on its write database (:func:`write_alias`): for every read a decision
    is made on. Pages and reports read through the plain manager, which the router may send to a replica."""
    return model._default_manager.db_manager(write_alias(model))


def unique(model: type[M], **lookup: Any) -> M | None:
    """The row of ``model`` a unique ``lookup`` names, read on its write database, or None. ``get()``, not
    ``first()``: a unique lookup needs no ORDER BY, and compiling one was a good part of a read's cost."""
    try:
        return primary(model).get(**lookup)
    except model.DoesNotExist:  # type: ignore[attr-defined]
        return None


def atomic(model: type[Model] = Transaction) -> transaction.Atomic:
    """``transaction.atomic`` on ``model``'s write database (not the default alias, where a project's router
    may not put the app's models)."""
    return transaction.atomic(using=write_alias(model))


def require_autocommit(operation: str) -> None:
    if transaction.get_connection(write_alias()).in_atomic_block:
        raise ServiceUsageError(
            f"{operation} changes money at the service and must not run inside transaction.atomic "
            "(a rollback would forget what the service did). Call it from a view marked "
            "transaction.non_atomic_requests, or from its Celery task."
        )


def send_after_commit(signal: Any, *, sender: type[Model] = Transaction, **kwargs: Any) -> None:
    def send() -> None:
        for receiver, result in signal.send_robust(sender=sender, **kwargs):
            if isinstance(result, Exception):
                logger.error("receiver %r of a paycollect signal failed", receiver, exc_info=result)

    # After the commit of the database the change was written to: on another alias it would be sent at once.
    transaction.on_commit(send, using=write_alias(sender))


def savepoint_if_atomic(model: type[Model]) -> AbstractContextManager[Any]:
    """For an INSERT that may meet a unique violation: outside atomic it commits alone and the violation
    harms nothing; inside an outer atomic block a savepoint keeps that block usable after it."""
    using = write_alias(model)
    inside = transaction.get_connection(using).in_atomic_block
    return transaction.atomic(using=using) if inside else nullcontext()


def lock_row(model: type[M], pk: int) -> M:
    """The row, locked until the end of the caller's transaction (``select_for_update``)."""
    return primary(model).select_for_update().get(pk=pk)


@contextmanager
def row_locked(model: type[M], pk: int) -> Iterator[M]:
    with atomic(model):
        yield lock_row(model, pk)


#: A call still "pending" after this long was left by a process that died; no answer will come.
STALE_IN_FLIGHT = dt.timedelta(minutes=15)
