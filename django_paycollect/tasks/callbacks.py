"""Handing stored callbacks to the worker, verifying them there, and the sweep."""

from __future__ import annotations

import atexit
import functools
import importlib
import logging
import os
from collections import Counter
from typing import Any, NoReturn

from celery import shared_task

from .. import services
from ..conf import paycollect_settings
from .delivery import _REDELIVERABLE, _task_id
from .outbox import Publisher

logger = logging.getLogger("django_paycollect.tasks")

#: Seconds before each retry of a callback whose verification met an unreachable database (then, if
#: it is still down, the sweep takes over once it is back).
CALLBACK_DATABASE_RETRY_DELAYS = (2, 5, 10, 20, 30, 60, 60, 60)
#: Callbacks one ``process_callbacks`` task verifies in turn at most: a larger batch handed on by a web
#: process is shared out in messages of this many, so a burst is verified by several worker processes at once.
CALLBACKS_PER_TASK = 10

# --- callbacks and housekeeping ------------------------------------------------------------------


def queue_verification(callback_id: int, *, force: bool = False) -> None:
    """Hand a queued callback to :func:`process_callback`, here and now. When that fails it stays stored,
    *received* with the reason (``services.callback_not_queued``), and the next sweep queues it again:
    nothing is lost and the sender still gets its 200. How long this waits for an unreachable broker is
    Celery's publish retry policy (``CELERY_TASK_PUBLISH_RETRY_POLICY``). ``force``: a person asked."""
    try:
        if force:
            process_callback.delay(callback_id, force=True)
        else:
            process_callback.delay(callback_id)
    except Exception as exc:
        logger.exception("callback #%s could not be queued for verification", callback_id)
        services.callback_not_queued(callback_id, exc)


def hand_on(callback_id: int) -> None:
    """After the commit of a callback the view stored: give it to this process's publisher, which sends it
    to the worker from its own thread (:mod:`.outbox`), so the request never waits for the broker.

    Eager (``CELERY_TASK_ALWAYS_EAGER``: the demo, the tests) it is verified here, as
    :func:`queue_verification` does; so it is with ``CALLBACK_PUBLISH_BUFFER`` 0, or when the buffer is full.
    """
    try:
        buffered = not process_callback.app.conf.task_always_eager and publish_buffer() > 0 and threads_run()
        if buffered and publisher.submit(callback_id):
            return
        if buffered:
            logger.warning(
                "callback #%s: %d callbacks wait to be handed to the worker (CALLBACK_PUBLISH_BUFFER); "
                "published in its request",
                callback_id,
                publisher.waiting(),
            )
    except Exception:  # a broken setting must not turn the 200 of a stored callback into a 503
        logger.exception(
            "callback #%s: the publisher could not take it; published in its request", callback_id
        )
    queue_verification(callback_id)


def publish_buffer() -> int:
    return int(paycollect_settings.or_default("CALLBACK_PUBLISH_BUFFER"))


@functools.cache
def threads_run() -> bool:
    """Whether a thread this process starts runs between requests: not under uWSGI started without Python
    threads (neither ``enable-threads`` nor ``threads`` above 1), which holds the interpreter while it waits
    for the next request. There callbacks are published in their request, as a warning says once."""
    try:
        uwsgi = importlib.import_module("uwsgi")  # exists only inside a uWSGI process
    except ImportError:
        return True
    options = getattr(uwsgi, "opt", {})
    if _option_on(options.get("enable-threads")) or _threads(options.get("threads")) > 1:
        return True
    logger.warning(
        "uWSGI runs this process without Python threads: callbacks are published to the worker in their "
        "request, not by the publisher thread (set enable-threads = true)"
    )
    return False


def _option_on(value: Any) -> bool:
    # uWSGI gives options as bytes, a bool for a bare flag, or a list when given more than once.
    if isinstance(value, list):
        return any(_option_on(item) for item in value)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "false", "no", "off", "n", "f")
    return bool(value)


def _threads(value: Any) -> int:
    if isinstance(value, list):
        value = value[-1] if value else None
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _publish(callback_ids: list[int]) -> None:
    process_callbacks.apply_async((callback_ids,))


#: This process's publisher; a forked child starts afresh, and what waits is published at exit.
publisher = Publisher(
    _publish,
    services.callback_not_queued,
    capacity=publish_buffer,
    linger=lambda: float(paycollect_settings.or_default("CALLBACK_PUBLISH_LINGER")),
)
os.register_at_fork(after_in_child=publisher.after_fork_in_child)
atexit.register(publisher.close)


def sweep(limit: int = services.SWEEP_BATCH) -> services.Sweep:
    """Queue again every stuck callback (``services.claim_stuck_callbacks``), oldest first, each once.

    They go in ``process_callbacks`` messages of :data:`CALLBACKS_PER_TASK`: a thousand stuck callbacks are
    a hundred publishes, not a thousand. A broker that refuses one is not asked again this run: that message's
    callbacks and the rest are recorded *received* with the reason, for the next sweep."""
    result = services.claim_stuck_callbacks(limit)
    _share_out(result.requeued)
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
            if eager:
                raise
            _retry_without_database(self, exc, [callback_id])
    if done.retry_in is not None and not eager:
        # Eager, nothing runs later: the sweep (or paycollect_process_callbacks --stuck) does.
        raise self.retry(exc=done.error, countdown=done.retry_in, max_retries=self.request.retries + 1)
    return done.state


@shared_task(name="paycollect.process_callbacks", ignore_result=True, **_REDELIVERABLE)
def process_callbacks(self: Any, callback_ids: list[int]) -> dict[str, int]:
    """Verify the callbacks a web process handed on together (:func:`hand_on`), each as
    :func:`process_callback` does. Safe to run twice.

    Up to :data:`CALLBACKS_PER_TASK` are verified here, in turn; the rest are shared out in messages of as
    many, so a burst is verified by several worker processes at once. A callback whose verification waits
    (a retry, a deferral) goes on alone, as a ``process_callback`` message due when it is; the rest do not
    wait for it. Returns how many ended in each state.
    """
    eager = bool(self.request.is_eager)
    ids = list(callback_ids)
    if len(ids) > CALLBACKS_PER_TASK and not eager:
        _share_out(ids[CALLBACKS_PER_TASK:])
        ids = ids[:CALLBACKS_PER_TASK]
    states: Counter[str] = Counter()
    with _task_id(self):
        for position, callback_id in enumerate(ids):
            try:
                done = services.run_verification(callback_id, may_retry=not eager)
            except services.DATABASE_UNAVAILABLE as exc:
                if eager:
                    raise
                _retry_without_database(self, exc, ids[position:], batch=True)
            states[done.state] += 1
            if done.retry_in is not None and not eager:
                _verify_later(callback_id, done.retry_in)
    return dict(states)


def _share_out(callback_ids: list[int]) -> None:
    chunks = [
        callback_ids[n : n + CALLBACKS_PER_TASK] for n in range(0, len(callback_ids), CALLBACKS_PER_TASK)
    ]
    for sent, chunk in enumerate(chunks):
        try:
            process_callbacks.apply_async((chunk,))
        except Exception as exc:
            rest = [pk for left in chunks[sent:] for pk in left]
            logger.exception("%d callback(s) could not be queued for verification", len(rest))
            services.callback_not_queued(rest, exc)
            return


def _retry_without_database(
    task: Any, exc: BaseException, ids: list[int], *, batch: bool = False
) -> NoReturn:
    """Nothing could be recorded: the callbacks are still waiting in the database, so whatever happens to
    this message the sweep finds them. Retried, never acknowledged as done; a batch's retry carries only
    ``ids``, its callbacks not verified yet."""
    retries = task.request.retries
    named = ", ".join(f"#{pk}" for pk in ids)
    if retries >= len(CALLBACK_DATABASE_RETRY_DELAYS):
        logger.error("callback %s: the database is still unreachable; left to the sweep", named)
        raise exc
    logger.warning("callback %s: the database is unreachable (%s); retrying", named, exc)
    changed: dict[str, Any] = {"args": [ids], "kwargs": {}} if batch else {}
    raise task.retry(
        exc=exc, countdown=CALLBACK_DATABASE_RETRY_DELAYS[retries], max_retries=retries + 1, **changed
    ) from None


def _verify_later(callback_id: int, countdown: float) -> None:
    try:
        process_callback.apply_async((callback_id,), countdown=countdown)
    except Exception:
        # Its row says when it is due (next_attempt_at): the sweep queues it once overdue.
        logger.exception(
            "callback #%s: its next verification could not be queued; left to the sweep", callback_id
        )


@shared_task(name="paycollect.sweep_callbacks", ignore_result=True, **_REDELIVERABLE)
def sweep_callbacks(self: Any) -> dict[str, Any]:
    """Queue again the callbacks left received or queued too long (see :func:`sweep`).

    In the beat schedule every minute: a worker killed with its messages, a broker restarted without
    them, a database down while verifications ran: each such callback is verified at most
    ``CALLBACK_REQUEUE_AFTER`` (plus a minute) after it was due, whatever the broker's visibility timeout.
    """
    with _task_id(self):
        return sweep().as_dict()
