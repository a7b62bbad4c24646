"""How the tasks are delivered and retried, and the JSON-serialisable results they return."""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, NoReturn, TypeVar

from django.contrib.auth import get_user_model

from ..amounts import amount_text
from ..exceptions import NotFound, PaymentRefused, ServiceUnavailable, StateConflict
from ..models import ApiCall, DirectOrder, RecurringSeries, Refund, Transaction
from ..services.calls import current_task_id, sent_by_task

logger = logging.getLogger("django_paycollect.tasks")

R = TypeVar("R")

#: Retries of a read meeting a transient error: exponential backoff from READ_BACKOFF seconds.
READ_MAX_RETRIES = 5
READ_BACKOFF = 2.0
READ_BACKOFF_CAP = 300.0
#: Seconds before each retry of a state-changing call that did nothing at the service (never sent, 429).
NOT_SENT_RETRY_DELAYS = (10, 60, 300)


# Idempotent tasks: redelivered when the worker dies before finishing (see the module docstring).
REDELIVERABLE: dict[str, Any] = {"acks_late": True, "reject_on_worker_lost": True}
READ_TASK: dict[str, Any] = {**REDELIVERABLE, "max_retries": READ_MAX_RETRIES}
# State-changing tasks: acknowledged before they run, never redelivered. A refusal is expected, logged without
# a traceback; a misconfiguration is logged with one, and never retried (only ServiceUnavailable is).
WRITE_TASK: dict[str, Any] = {
    "acks_late": False,
    "reject_on_worker_lost": False,
    "max_retries": len(NOT_SENT_RETRY_DELAYS),
    "throws": (PaymentRefused, StateConflict, NotFound),
}


@contextmanager
def recording_task_id(task: Any) -> Iterator[None]:
    token = current_task_id.set(getattr(task.request, "id", None) or "")
    try:
        yield
    finally:
        current_task_id.reset(token)


# --- retries ------------------------------------------------------------------------------------


def retry_read(task: Any, exc: ServiceUnavailable) -> NoReturn:
    """Retry a read with capped exponential backoff and jitter (the wait asked by a 429 if longer)."""
    delay = min(READ_BACKOFF_CAP, READ_BACKOFF * 2**task.request.retries)
    countdown = random.uniform(delay / 2, delay)  # noqa: S311  (jitter, so workers do not retry in step)
    if exc.retry_after:
        countdown = max(countdown, exc.retry_after)
    # Past max_retries (or when called as a plain function), retry() raises exc itself.
    raise task.retry(exc=exc, countdown=countdown) from None


def read_with_retries(task: Any, call: Callable[[], R]) -> R:
    """Run a read; when the service is unavailable retry it: later through the broker, or at once when eager.

    Eager runs retry in a loop here rather than through ``task.retry()``, which with
    ``CELERY_TASK_EAGER_PROPAGATES`` raises ``Retry`` to the caller instead of retrying.
    """
    with recording_task_id(task):
        for eager_retries in itertools.count():
            try:
                return call()
            except ServiceUnavailable as exc:
                if not task.request.is_eager:
                    retry_read(task, exc)
                if eager_retries >= task.max_retries:
                    raise
                logger.warning("%s: %s; trying again at once (eager)", task.name, exc)
    raise AssertionError("unreachable")  # pragma: no cover


def write_once(task: Any, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a state-changing operation at most once per delivery; retry only what did nothing at the service.

    The service layer raises :class:`ServiceUnavailable` for a state-changing call only when nothing
    happened at the service (the request never left, or it said "not now"), so that is retried. A
    delivery whose task id already made a call that may have taken effect returns what it left.
    """
    task_id: str = getattr(task.request, "id", None) or ""
    with recording_task_id(task):
        for eager_retries in itertools.count():
            earlier = sent_by_task(task_id)
            if earlier is not None:
                logger.warning(
                    "task %s %s delivered again after its call %s: not calling the service again",
                    task.name,
                    task_id,
                    earlier.pk,
                )
                return earlier_result(earlier)
            try:
                return call()
            except ServiceUnavailable as exc:
                retries = task.request.retries + eager_retries
                if retries >= len(NOT_SENT_RETRY_DELAYS):
                    raise
                if not task.request.is_eager:
                    raise task.retry(exc=exc, countdown=NOT_SENT_RETRY_DELAYS[retries]) from None
                logger.warning("%s: %s; trying again at once (eager)", task.name, exc)
    raise AssertionError("unreachable")  # pragma: no cover


# --- results (JSON-serialisable) ---------------------------------------------------------------


def amount_or_none(value: Decimal | None) -> str | None:
    return None if value is None else amount_text(value)


def transaction_result(txn: Transaction) -> dict[str, Any]:
    return {
        "transaction_id": txn.pk,
        "uuid": txn.uuid,
        "status": txn.status,
        "service_status": txn.service_status,
        "outcome_unknown": txn.outcome_unknown,
        "iframe_url": txn.iframe_url,
        "bill_reference": txn.bill_reference,
        "capture_state": txn.capture_state,
        "total_amount": amount_or_none(txn.total_amount),
        "currency": txn.currency,
    }


def refund_result(refund: Refund) -> dict[str, Any]:
    return {
        "refund_id": refund.pk,
        "transaction_id": refund.transaction_id,
        "amount": amount_or_none(refund.amount),
        "state": refund.state,
        "error": refund.error,
    }


def series_result(series: RecurringSeries) -> dict[str, Any]:
    return {
        "series_id": series.pk,
        "parent_uuid": series.parent_uuid,
        "cancel_state": series.cancel_state,
        "active": series.active,
    }


def order_result(order: DirectOrder) -> dict[str, Any]:
    return {
        "direct_order_id": order.pk,
        "state": order.state,
        "payment_id": order.payment_id,
        "payment_link": order.payment_link,
    }


def earlier_result(call: ApiCall) -> dict[str, Any]:
    """What an earlier delivery of this task left, in the shape the task returns."""
    result: dict[str, Any] = {"duplicate_delivery": True, "api_call_id": call.pk}
    if call.refund is not None:
        return result | refund_result(call.refund)
    if call.series is not None:
        return result | series_result(call.series)
    if call.direct_order is not None:
        return result | order_result(call.direct_order)
    if call.transaction is not None:
        return result | transaction_result(call.transaction)
    return result | {"created": call.succeeded, "outcome_unknown": call.outcome_unknown}


def user_by_id(user_id: Any) -> Any:
    if user_id is None:
        return None
    return get_user_model()._default_manager.filter(pk=user_id).first()
