"""Handing stored callbacks to the worker, verifying them there, and the sweep."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from .. import services
from .delivery import _REDELIVERABLE, _task_id

logger = logging.getLogger("django_paycollect.tasks")

#: Seconds before each retry of a callback whose verification met an unreachable database (then, if
#: it is still down, the sweep takes over once it is back).
CALLBACK_DATABASE_RETRY_DELAYS = (2, 5, 10, 20, 30, 60, 60, 60)

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
