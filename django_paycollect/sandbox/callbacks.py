"""Callback delivery over real HTTP from a background thread, with a delivery log and retries.

The schedule is the sandbox's own (the spec shows no retry policy, signing or expected reply): the first
attempt right away, then one retry after each delay of ``CALLBACK_RETRY_DELAYS`` (default 1 s, 5 s, 30 s,
2 min, 10 min; changeable at run time through ``_control/config``); any 2xx answer counts as delivered,
anything else (other status, refused connection, timeout) as a failure. Delays are real time: moving the
sandbox clock does not hurry retries. No signature or extra header is sent, because the service sends none.

Every delivery is a row claimed with a conditional UPDATE, so two processes serving the same database never
send one attempt twice.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from django.db import close_old_connections, connection, transaction
from django.db.models import F
from django.utils import timezone

from .conf import get_settings
from .envelope import dumps
from .journal import redact_url
from .models import CallbackAttempt, CallbackDelivery
from .state import get_state, writing

if TYPE_CHECKING:
    from .models import Transaction

logger = logging.getLogger(__name__)

PLAN_ACTIONS = ("drop", "duplicate", "delay")
USER_AGENT = "paycollect-sandbox"
_MAX_IDLE_WAIT = 1.0


def retry_delays() -> list[float]:
    configured = get_state().config.get("callback_retry_delays")
    if isinstance(configured, list):
        return [float(v) for v in configured]
    return get_settings().callback_retry_delays


def enqueue(tx: Transaction, url: str, body: dict[str, Any]) -> list[CallbackDelivery]:
    """Record the callback(s) of a completed transaction; must run inside ``state.writing()``."""
    text = dumps(body)
    moment = timezone.now()
    if not url:
        return [
            CallbackDelivery.objects.create(
                transaction=tx,
                url="",
                body=text,
                status=CallbackDelivery.Status.SKIPPED,
                note="no callback URL configured",
                created=moment,
            )
        ]
    state = get_state()
    step: dict[str, Any] = {}
    if state.callback_plan:
        step = dict(state.callback_plan[0])
        state.callback_plan = state.callback_plan[1:]
        state.save(update_fields=["callback_plan"])
    action = step.get("action")
    copies = 2 if action == "duplicate" else 1
    deliveries = []
    for _ in range(copies):
        delivery = CallbackDelivery(
            transaction=tx, url=url, body=text, created=moment, next_attempt_at=moment
        )
        if action == "drop":
            delivery.status = CallbackDelivery.Status.DROPPED
            delivery.note = "dropped on purpose (_control/callbacks/next)"
            delivery.next_attempt_at = None
        elif action == "delay":
            delay = float(step.get("delay_seconds", 0))
            delivery.next_attempt_at = moment + dt.timedelta(seconds=delay)
            delivery.note = f"delayed {delay:g} s on purpose"
        elif action == "duplicate":
            delivery.note = "duplicate on purpose"
        delivery.save()
        deliveries.append(delivery)
    transaction.on_commit(wake)
    return deliveries


def redeliver(delivery_id: int) -> CallbackDelivery:
    """Send a stored callback again, byte for byte, as a new delivery (a duplicate to the receiver)."""
    with writing():
        original = CallbackDelivery.objects.get(pk=delivery_id)
        delivery = CallbackDelivery.objects.create(
            transaction=original.transaction,
            url=original.url,
            body=original.body,
            created=timezone.now(),
            next_attempt_at=timezone.now(),
            redelivery_of=original,
            note=f"redelivery of #{original.pk}",
        )
        if not delivery.url:
            delivery.status = CallbackDelivery.Status.SKIPPED
            delivery.save(update_fields=["status"])
        transaction.on_commit(wake)
    return delivery


def add_plan(action: str, times: int, delay_seconds: float) -> list[dict[str, Any]]:
    with writing():
        state = get_state()
        step: dict[str, Any] = {"action": action}
        if action == "delay":
            step["delay_seconds"] = delay_seconds
        state.callback_plan = [*state.callback_plan, *([step] * times)]
        state.save(update_fields=["callback_plan"])
        return list(state.callback_plan)


def deliver_due() -> float:
    """Attempt every delivery that is due; return seconds until the next one (capped)."""
    moment = timezone.now()
    due = list(
        CallbackDelivery.objects.filter(status=CallbackDelivery.Status.PENDING, next_attempt_at__lte=moment)
        .order_by("next_attempt_at", "id")
        .values_list("id", flat=True)[:50]
    )
    for delivery_id in due:
        _attempt(delivery_id)
    upcoming = (
        CallbackDelivery.objects.filter(status=CallbackDelivery.Status.PENDING)
        .order_by("next_attempt_at")
        .values_list("next_attempt_at", flat=True)
        .first()
    )
    if upcoming is None:
        return _MAX_IDLE_WAIT
    return max(0.0, min(_MAX_IDLE_WAIT, (upcoming - timezone.now()).total_seconds()))


def _attempt(delivery_id: int) -> None:
    import requests

    with writing():
        claimed = CallbackDelivery.objects.filter(
            pk=delivery_id, status=CallbackDelivery.Status.PENDING
        ).update(status=CallbackDelivery.Status.DELIVERING, attempts=F("attempts") + 1)
    if not claimed:
        return
    delivery = CallbackDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None:  # removed by _control/reset meanwhile
        return
    started = timezone.now()
    clock = time.monotonic()
    http_status: int | None = None
    error = excerpt = ""
    try:
        response = requests.post(
            delivery.url,
            data=delivery.body.encode("utf-8"),
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
            timeout=get_settings().callback_timeout,
            allow_redirects=False,
        )
        http_status = response.status_code
        excerpt = response.content[:500].decode("utf-8", errors="replace")
    except requests.RequestException as exc:
        # The class and a short reason, never the exception's text: it repeats the URL, whose query may
        # hold the merchant's callback token.
        error = f"{type(exc).__name__}: {_reason(exc)}"
    duration_ms = int((time.monotonic() - clock) * 1000)
    ok = http_status is not None and 200 <= http_status < 300
    try:
        with writing():
            if not CallbackDelivery.objects.filter(pk=delivery_id).exists():
                return
            CallbackAttempt.objects.create(
                delivery_id=delivery_id,
                started_at=started,
                duration_ms=duration_ms,
                http_status=http_status,
                error=error[:300],
                response_excerpt=excerpt[:500],
            )
            update: dict[str, Any]
            if ok:
                update = {"status": CallbackDelivery.Status.DELIVERED, "delivered_at": timezone.now()}
            else:
                delays = retry_delays()
                attempts = delivery.attempts
                if attempts <= len(delays):
                    update = {
                        "status": CallbackDelivery.Status.PENDING,
                        "next_attempt_at": timezone.now() + dt.timedelta(seconds=delays[attempts - 1]),
                    }
                else:
                    update = {"status": CallbackDelivery.Status.FAILED, "next_attempt_at": None}
            CallbackDelivery.objects.filter(pk=delivery_id).update(**update)
    except Exception:
        logger.exception("could not record the attempt of callback #%s", delivery_id)


def _reason(exc: Exception) -> str:
    import requests

    if isinstance(exc, requests.Timeout):
        return "no answer in time"
    if isinstance(exc, requests.ConnectionError):
        return "connection failed (refused, reset or unreachable)"
    return "request failed"


def as_dict(delivery: CallbackDelivery, with_attempts: bool = True) -> dict[str, Any]:
    from .envelope import loads

    data: dict[str, Any] = {
        "id": delivery.pk,
        "transaction_uuid": str(delivery.transaction.uuid) if delivery.transaction else None,
        "url": redact_url(delivery.url),
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt_at": delivery.next_attempt_at.isoformat() if delivery.next_attempt_at else None,
        "delivered_at": delivery.delivered_at.isoformat() if delivery.delivered_at else None,
        "created": delivery.created.isoformat(),
        "redelivery_of": delivery.redelivery_of_id,
        "note": delivery.note,
        "body": loads(delivery.body),
    }
    if with_attempts:
        data["attempt_log"] = [
            {
                "started_at": attempt.started_at.isoformat(),
                "duration_ms": attempt.duration_ms,
                "http_status": attempt.http_status,
                "error": attempt.error,
                "response_excerpt": attempt.response_excerpt,
            }
            for attempt in delivery.attempt_log.order_by("id")
        ]
    return data


# --- the worker thread ----------------------------------------------------------------------------


class _Worker(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="paycollect-sandbox-callbacks", daemon=True)
        self.event = threading.Event()
        self.stopping = False

    def run(self) -> None:
        # A crash mid-attempt leaves rows DELIVERING; they are due again. Only stale ones: another process
        # serving the same database may be delivering the recent ones right now.
        stale = timezone.now() - dt.timedelta(seconds=get_settings().callback_timeout + 30)
        try:
            with writing():
                CallbackDelivery.objects.filter(
                    status=CallbackDelivery.Status.DELIVERING, next_attempt_at__lt=stale
                ).update(status=CallbackDelivery.Status.PENDING)
        except Exception:
            logger.exception("could not requeue interrupted callbacks")
        while not self.stopping:
            wait = _MAX_IDLE_WAIT
            # Cleared before looking, so a wake-up arriving during the pass is not lost.
            self.event.clear()
            try:
                close_old_connections()
                wait = deliver_due()
            except Exception:
                logger.exception("callback delivery loop failed; retrying")
            finally:
                connection.close()
            self.event.wait(timeout=wait)


_worker: _Worker | None = None
_worker_lock = threading.Lock()


def ensure_worker() -> None:
    """Start the delivery thread of this process once (when CALLBACK_WORKER is on)."""
    global _worker
    if _worker is not None and _worker.is_alive():
        return
    if not get_settings().callback_worker:
        return
    with _worker_lock:
        if _worker is None or not _worker.is_alive():
            _worker = _Worker()
            _worker.start()


def stop_worker(timeout: float = 10.0) -> None:
    """Stop this process's delivery thread after its current pass (a test that mounted the sandbox and is
    done with it: the thread must not outlive the test database). The next callback starts it again."""
    global _worker
    with _worker_lock:
        worker, _worker = _worker, None
    if worker is not None and worker.is_alive():
        worker.stopping = True
        worker.event.set()
        worker.join(timeout)


def wake() -> None:
    ensure_worker()
    if _worker is not None:
        _worker.event.set()
