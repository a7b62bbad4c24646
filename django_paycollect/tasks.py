"""Celery tasks: thin callers of the service layer, one per operation, plus callbacks and housekeeping.

The project's Celery app discovers these tasks (``app.autodiscover_tasks()``); with
``CELERY_TASK_ALWAYS_EAGER`` they run inline, which is what the demo and the tests use. Every task
stores its id on the ApiCall rows it causes (``services.current_task_id``), so the admin shows which
task made which call.

Arguments are JSON-serialisable: primary keys, amounts as strings (``"100.00"``, never floats),
dates as ISO text, users as ids. Results are small dicts of the same kind.

Delivery rules, and why:

* Reads (``sync_transaction``, ``fetch_statistics``, ``prepare_amount``, ``validate_promocode``),
  ``process_callback``, ``reconcile`` and ``prune`` are idempotent: running them twice gives the
  same state (verification applies what the service says, under a row lock, through a status
  machine that only moves forward). They ack late and are requeued when their worker dies
  (``acks_late``, ``reject_on_worker_lost``), and reads retry with backoff on the service layer's
  ``ServiceUnavailable``.
* State-changing operations (``start_payment``, ``create_direct_order``, ``capture``, ``refund``,
  ``cancel_recurring``, ``create_community``) ack early: a message redelivered after the request
  reached the service would send it again (a second refund, a second order mailed to the
  customer). If their worker dies, the row they left pending is reported by reconciliation instead.
  After an ambiguous failure the service layer records "outcome unknown" and the task does not call
  again; only what did nothing at the service (``ServiceUnavailable``: the request never left, or
  the service said "not now") is retried. As a second guard, a state-changing task whose id already
  made a call that may have taken effect (a broker redelivery, e.g. after Redis's
  ``visibility_timeout``) does not call again and returns what that call left
  (``services.sent_by_task``).

Keep the broker's ``visibility_timeout`` (Redis, SQS) longer than the longest retry countdown and
queue wait: a message held longer is handed to a second worker.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import logging
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, NoReturn, TypeVar

from celery import shared_task
from django.apps import apps
from django.contrib.auth import get_user_model

from . import reconciliation, services
from .client import Logo
from .exceptions import PaymentRefused, ServiceUnavailable
from .models import (
    ApiCall,
    DirectOrder,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
)

logger = logging.getLogger("django_paycollect.tasks")

R = TypeVar("R")

#: Seconds before each retry of a callback whose verification met an unreachable database (then, if
#: it is still down, the sweep takes over once it is back).
CALLBACK_DATABASE_RETRY_DELAYS = (2, 5, 10, 20, 30, 60, 60, 60)
#: Retries of a read meeting a transient error: exponential backoff from READ_BACKOFF seconds.
READ_MAX_RETRIES = 5
READ_BACKOFF = 2.0
READ_BACKOFF_CAP = 300.0
#: Seconds before each retry of a state-changing call that did nothing at the service (never sent, 429).
NOT_SENT_RETRY_DELAYS = (10, 60, 300)

# Re-exported for older imports: the schedule lives where settings can import it (no models there).
from .schedules import BEAT_SCHEDULE as BEAT_SCHEDULE  # noqa: E402

# Idempotent tasks: redelivered when the worker dies before finishing (see the module docstring).
_REDELIVERABLE: dict[str, Any] = {"bind": True, "acks_late": True, "reject_on_worker_lost": True}
_READ: dict[str, Any] = {**_REDELIVERABLE, "max_retries": READ_MAX_RETRIES}
# State-changing tasks: acknowledged before they run, never redelivered. PaymentRefused is an
# expected outcome (bad input, refused by the service), logged without a traceback.
_WRITE: dict[str, Any] = {
    "bind": True,
    "acks_late": False,
    "reject_on_worker_lost": False,
    "max_retries": len(NOT_SENT_RETRY_DELAYS),
    "throws": (PaymentRefused,),
}


@contextmanager
def _task_id(task: Any) -> Iterator[None]:
    token = services.current_task_id.set(getattr(task.request, "id", None) or "")
    try:
        yield
    finally:
        services.current_task_id.reset(token)


# --- retries ------------------------------------------------------------------------------------


def _retry_read(task: Any, exc: ServiceUnavailable) -> NoReturn:
    """Retry a read with capped exponential backoff and jitter (the wait asked by a 429 if longer)."""
    delay = min(READ_BACKOFF_CAP, READ_BACKOFF * 2**task.request.retries)
    countdown = random.uniform(delay / 2, delay)  # noqa: S311  (jitter, so workers do not retry in step)
    if exc.retry_after:
        countdown = max(countdown, exc.retry_after)
    # Past max_retries (or when called as a plain function), retry() raises exc itself.
    raise task.retry(exc=exc, countdown=countdown) from None


def _read(task: Any, call: Callable[[], R]) -> R:
    """Run a read; when the service is unavailable retry it: later through the broker, or at once when eager.

    Eager runs retry in a loop here rather than through ``task.retry()``, which with
    ``CELERY_TASK_EAGER_PROPAGATES`` raises ``Retry`` to the caller instead of retrying.
    """
    with _task_id(task):
        for eager_retries in itertools.count():
            try:
                return call()
            except ServiceUnavailable as exc:
                if not task.request.is_eager:
                    _retry_read(task, exc)
                if eager_retries >= task.max_retries:
                    raise
                logger.warning("%s: %s; trying again at once (eager)", task.name, exc)
    raise AssertionError("unreachable")  # pragma: no cover


def _write(task: Any, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a state-changing operation at most once per delivery; retry only what did nothing at the service.

    The service layer raises :class:`ServiceUnavailable` for a state-changing call only when nothing
    happened at the service (the request never left, or it said "not now"), so that is retried. A
    delivery whose task id already made a call that may have taken effect returns what it left.
    """
    task_id: str = getattr(task.request, "id", None) or ""
    with _task_id(task):
        for eager_retries in itertools.count():
            earlier = services.sent_by_task(task_id)
            if earlier is not None:
                logger.warning(
                    "task %s %s delivered again after its call %s: not calling the service again",
                    task.name,
                    task_id,
                    earlier.pk,
                )
                return _earlier_result(earlier)
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


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _transaction_result(txn: Transaction) -> dict[str, Any]:
    return {
        "transaction_id": txn.pk,
        "uuid": txn.uuid,
        "status": txn.status,
        "service_status": txn.service_status,
        "outcome_unknown": txn.outcome_unknown,
        "iframe_url": txn.iframe_url,
        "bill_reference": txn.bill_reference,
        "capture_state": txn.capture_state,
        "total_amount": _money(txn.total_amount),
        "currency": txn.currency,
    }


def _refund_result(refund: Refund) -> dict[str, Any]:
    return {
        "refund_id": refund.pk,
        "transaction_id": refund.transaction_id,
        "amount": _money(refund.amount),
        "state": refund.state,
        "error": refund.error,
    }


def _series_result(series: RecurringSeries) -> dict[str, Any]:
    return {
        "series_id": series.pk,
        "parent_uuid": series.parent_uuid,
        "cancel_state": series.cancel_state,
        "active": series.active,
    }


def _order_result(order: DirectOrder) -> dict[str, Any]:
    return {
        "direct_order_id": order.pk,
        "state": order.state,
        "payment_id": order.payment_id,
        "payment_link": order.payment_link,
    }


def _earlier_result(call: ApiCall) -> dict[str, Any]:
    """What an earlier delivery of this task left, in the shape the task returns."""
    result: dict[str, Any] = {"duplicate_delivery": True, "api_call_id": call.pk}
    if call.refund is not None:
        return result | _refund_result(call.refund)
    if call.series is not None:
        return result | _series_result(call.series)
    if call.direct_order is not None:
        return result | _order_result(call.direct_order)
    if call.transaction is not None:
        return result | _transaction_result(call.transaction)
    return result | {"created": call.succeeded, "outcome_unknown": call.outcome_unknown}


def _user(user_id: Any) -> Any:
    if user_id is None:
        return None
    return get_user_model()._default_manager.filter(pk=user_id).first()


def _decimal(value: Any, field: str) -> Decimal:
    # Amounts travel as text ("12.50"): a float (a JSON number) is refused like any service caller's.
    return services.money_argument(value, field)


# --- reads -------------------------------------------------------------------------------------


@shared_task(name="paycollect.prepare_amount", **_READ)
def prepare_amount(
    self: Any,
    amount: str,
    currency: str | None = None,
    payment_method: str | None = None,
    community_id: str | None = None,
) -> str:
    """The total with the service's fees for ``amount``, as a string."""
    total = _read(
        self,
        lambda: services.prepare_amount(
            _decimal(amount, "amount"),
            currency=currency,
            payment_method=payment_method,
            community_id=community_id,
        ),
    )
    return str(total)


@shared_task(name="paycollect.sync_transaction", **_READ)
def sync_transaction(
    self: Any,
    transaction_id: int | None = None,
    uuid: str | None = None,
    community_id: str | None = None,
) -> dict[str, Any]:
    """Fetch a transaction (by primary key, or by uuid) and apply what the service says."""
    known = Transaction.objects.get(pk=transaction_id) if transaction_id is not None else None
    txn = _read(self, lambda: services.sync_transaction(known, uuid=uuid, community_id=community_id))
    return _transaction_result(txn)


@shared_task(name="paycollect.validate_promocode", **_READ)
def validate_promocode(
    self: Any,
    name: str,
    amount: str,
    phone_number: str,
    currency: str | None = None,
    payment_for: str = "API_PAYMENT",
    community_id: str | None = None,
    variable_amount_id: int | None = None,
) -> dict[str, Any]:
    """Check a promocode; pass ``promocode_id`` of the result to ``start_payment``."""
    result = _read(
        self,
        lambda: services.validate_promocode(
            name,
            amount=_decimal(amount, "amount"),
            phone_number=phone_number,
            currency=currency,
            payment_for=payment_for,
            community_id=community_id,
            variable_amount_id=variable_amount_id,
        ),
    )
    return {"value": _money(result.value), "currency": result.currency, "promocode_id": result.promocode_id}


@shared_task(name="paycollect.fetch_statistics", **_READ)
def fetch_statistics(self: Any, community_id: str | None = None) -> dict[str, Any]:
    """Read the dashboard statistics and keep them as a StatisticsSnapshot."""
    snapshot: StatisticsSnapshot = _read(self, lambda: services.fetch_statistics(community_id))
    return {
        "snapshot_id": snapshot.pk,
        "community_id": snapshot.community_id,
        "balance": _money(snapshot.balance),
        "total_settled": _money(snapshot.total_settled),
        "total_number_of_transactions": snapshot.total_number_of_transactions,
    }


# --- state-changing operations -----------------------------------------------------------------------


@shared_task(name="paycollect.start_payment", **_WRITE)
def start_payment(
    self: Any,
    amount: str,
    billing_data: Mapping[str, str],
    merchant_object: Sequence[Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Start a payment. ``merchant_object`` is ``["app_label.model", pk]``; other keywords are those of
    ``services.start_payment`` in JSON form (``recurring={"expiry_date": "2026-01-31", ...}``).
    """
    obj = None
    if merchant_object:
        label, pk = merchant_object
        obj = apps.get_model(label)._default_manager.get(pk=pk)

    def call() -> dict[str, Any]:
        txn = services.start_payment(
            amount=_decimal(amount, "amount"), billing_data=billing_data, merchant_object=obj, **options
        )
        return _transaction_result(txn)

    return _write(self, call)


@shared_task(name="paycollect.create_direct_order", **_WRITE)
def create_direct_order(self: Any, user_id: Any = None, **fields: Any) -> dict[str, Any]:
    """Create a direct order; ``fields`` as for ``services.create_direct_order``, amounts as strings."""
    return _write(self, lambda: _order_result(services.create_direct_order(user=_user(user_id), **fields)))


@shared_task(name="paycollect.capture", **_WRITE)
def capture(self: Any, transaction_id: int, user_id: Any = None) -> dict[str, Any]:
    """Capture a successful transaction."""

    def call() -> dict[str, Any]:
        txn = Transaction.objects.get(pk=transaction_id)
        return _transaction_result(services.capture(txn, user=_user(user_id)))

    return _write(self, call)


@shared_task(name="paycollect.refund", **_WRITE)
def refund(
    self: Any,
    transaction_id: int,
    amount: str | None = None,
    user_id: Any = None,
    expected_refundable: str | None = None,
) -> dict[str, Any]:
    """Refund ``amount`` (default: all still refundable). Pass ``expected_refundable`` (what the user
    was shown) so that a second click or a second message is refused instead of doubled.
    """

    def call() -> dict[str, Any]:
        done = services.refund(
            Transaction.objects.get(pk=transaction_id),
            None if amount is None else _decimal(amount, "amount"),
            user=_user(user_id),
            expected_refundable=(
                None if expected_refundable is None else _decimal(expected_refundable, "expected_refundable")
            ),
        )
        return _refund_result(done)

    # A refund never sent is recorded as failed; a retry makes a new Refund row.
    return _write(self, call)


@shared_task(name="paycollect.cancel_recurring", **_WRITE)
def cancel_recurring(self: Any, series_id: int, user_id: Any = None) -> dict[str, Any]:
    """Stop future charges of a recurring series."""

    def call() -> dict[str, Any]:
        series = RecurringSeries.objects.get(pk=series_id)
        return _series_result(services.cancel_recurring(series, user=_user(user_id)))

    return _write(self, call)


@shared_task(name="paycollect.create_community", **_WRITE)
def create_community(
    self: Any,
    name: str,
    logo_base64: str,
    logo_filename: str = "logo.png",
    user_id: Any = None,
    **fields: Any,
) -> dict[str, Any]:
    """Create a community. The logo travels in the message as base64 (a png or jpg of a few hundred
    kilobytes): no storage shared between web and worker processes is needed, and nothing is left
    to clean up afterwards.
    """
    try:
        content = base64.b64decode(logo_base64, validate=True)
    except (binascii.Error, ValueError):
        raise PaymentRefused({"logo": ["Send the logo's bytes as base64."]}) from None

    def call() -> dict[str, Any]:
        done = services.create_community(
            logo=Logo(logo_filename, content), name=name, user=_user(user_id), **fields
        )
        # Sent without an answer, it may exist now: its ApiCall is flagged and reconciliation reports it.
        return {"created": None if done.outcome_unknown else True, "outcome_unknown": done.outcome_unknown}

    return _write(self, call)


# --- callbacks and housekeeping ------------------------------------------------------------------


def queue_verification(callback_id: int, *, force: bool = False) -> None:
    """Hand a queued callback to :func:`process_callback`. When that fails it stays stored, *received*
    with the reason (``services.callback_not_queued``), and the next sweep queues it again: nothing is
    lost and the sender still gets its 200. How long this waits for an unreachable broker is Celery's
    publish retry policy (``CELERY_TASK_PUBLISH_RETRY_POLICY``). ``force``: a person asked."""
    try:
        if force:
            process_callback.delay(callback_id, force=True)
        else:
            process_callback.delay(callback_id)
    except Exception as exc:
        logger.exception("callback #%s could not be queued for verification", callback_id)
        services.callback_not_queued(callback_id, exc)


def sweep(limit: int = services.SWEEP_BATCH) -> services.Sweep:
    """Queue again every stuck callback (``services.claim_stuck_callbacks``), oldest first, each once."""
    result = services.claim_stuck_callbacks(limit)
    for pk in result.requeued:
        queue_verification(pk)
    return result


# ignore_result: the callback's row holds the outcome. Queueing it then touches only the broker, never
# the result backend, so a result store that is down cannot hold up (or fail) the callback view.
@shared_task(
    name="paycollect.process_callback",
    max_retries=len(services.CALLBACK_RETRY_DELAYS),
    ignore_result=True,
    **_REDELIVERABLE,
)
def process_callback(self: Any, callback_id: int, force: bool = False) -> str:
    """Verify a stored callback against the service (``services.run_verification``). Safe to run twice:
    verification is idempotent.

    Returns the callback's state: ``processed``, ``failed``, or ``queued`` when its verification
    waits (a retry or a deferral; then the task is retried, or, eager, left to the sweep). ``force``:
    a person asked (the admin, the command), so a fetch made moments ago does not defer it.
    """
    eager = bool(self.request.is_eager)
    with _task_id(self):
        try:
            done = services.run_verification(callback_id, force=force, may_retry=not eager)
        except services.DATABASE_UNAVAILABLE as exc:
            # Nothing could be recorded: the callback is still waiting in the database, so whatever
            # happens to this message the sweep finds it. Retried, never acknowledged as done.
            if eager:
                raise
            retries = self.request.retries
            if retries >= len(CALLBACK_DATABASE_RETRY_DELAYS):
                logger.error("callback %s: the database is still unreachable; left to the sweep", callback_id)
                raise
            logger.warning("callback %s: the database is unreachable (%s); retrying", callback_id, exc)
            raise self.retry(
                exc=exc, countdown=CALLBACK_DATABASE_RETRY_DELAYS[retries], max_retries=retries + 1
            ) from None
    if done.retry_in is not None and not eager:
        # Eager, nothing runs later: the sweep (or paycollect_process_callbacks --stuck) does.
        raise self.retry(exc=done.error, countdown=done.retry_in, max_retries=self.request.retries + 1)
    return done.state


@shared_task(name="paycollect.sweep_callbacks", ignore_result=True, **_REDELIVERABLE)
def sweep_callbacks(self: Any) -> dict[str, Any]:
    """Queue again the callbacks left received or queued too long (see :func:`sweep`).

    In the beat schedule every minute: a worker killed with its messages, a broker restarted without
    them, a database down while verifications ran: each such callback is verified at most
    ``CALLBACK_REQUEUE_AFTER`` (plus a minute) after it was due, whatever the broker's visibility timeout.
    """
    with _task_id(self):
        return sweep().as_dict()


@shared_task(name="paycollect.reconcile", **_REDELIVERABLE)
def reconcile(self: Any, community_id: str | None = None, older_than: str = "30m") -> dict[str, Any]:
    """Settle what is uncertain (see ``reconciliation.reconcile``); returns the summary."""
    with _task_id(self):
        summary = reconciliation.reconcile(
            community_id=community_id, older_than=reconciliation.parse_age(older_than)
        )
    for line in summary.lines():
        logger.info("%s", line)
    return summary.as_dict()


@shared_task(name="paycollect.prune", **_REDELIVERABLE)
def prune(
    self: Any, older_than: str = "90d", include_unprocessed: bool = False, batch_size: int = 5000
) -> dict[str, Any]:
    """Delete old ApiCall and ReceivedCallback rows in batches (see ``reconciliation.prune``)."""
    result = reconciliation.prune(
        reconciliation.parse_age(older_than, allow_zero=False),
        include_unprocessed=include_unprocessed,
        batch_size=batch_size,
    )
    return result.as_dict()
