"""What every operation shares: validated arguments, locks, autocommit, signals after the commit."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from django.db import router, transaction
from django.db.models import Model
from rest_framework import serializers as drf_serializers

from ..client import (
    field_errors_from,
)
from ..exceptions import (
    PaymentRefused,
    ServiceUsageError,
)
from ..models import (
    Transaction,
)

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


def require_autocommit(operation: str) -> None:
    if transaction.get_connection(router.db_for_write(Transaction)).in_atomic_block:
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

    transaction.on_commit(send)


def savepoint_if_atomic(model: type[Model]) -> AbstractContextManager[Any]:
    """For an INSERT that may meet a unique violation: outside atomic it commits alone and the violation
    harms nothing; inside an outer atomic block a savepoint keeps that block usable after it."""
    connection = transaction.get_connection(router.db_for_write(model))
    return transaction.atomic() if connection.in_atomic_block else nullcontext()


def commit_unflushed(using: str) -> None:
    """Let the enclosing transaction commit without waiting for its write-ahead log to reach the disk.

    Only for what a crash may take back harmlessly: the commit is visible to every session at once, and
    at most the last fraction of a second of such commits is lost when PostgreSQL itself crashes (its
    ``synchronous_commit``, set for this transaction alone). Money data never goes this way. Other
    databases commit as they always do.
    """
    connection = transaction.get_connection(using)
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def lock_row(model: type[M], pk: int) -> M:
    """The row, locked until the end of the caller's transaction (``select_for_update``)."""
    return model._default_manager.select_for_update().get(pk=pk)


@contextmanager
def row_locked(model: type[M], pk: int) -> Iterator[M]:
    with transaction.atomic():
        yield lock_row(model, pk)


#: A call still "pending" after this long was left by a process that died; no answer will come.
STALE_IN_FLIGHT = dt.timedelta(minutes=15)
