"""Stored callbacks and the worker: the one route to verification, the job that verifies, and the sweep.

What stored or claimed a callback hands it on after the commit (:func:`hand_on`; the callback view through
:func:`handing_on`) to the project's runner (:mod:`.runners`). On Celery, in a
``paycollect.process_callbacks`` message from this process's publisher thread (:mod:`.outbox`) or, where
that cannot take it, from the caller's request. On Django's task framework, as an enqueued task: on
django-tasks-db's backend written in the transaction that stores the callback, so the two commit together;
on another backend, after the commit. Whatever is lost on the way stays in the database, and the sweep
(:func:`sweep`, every minute) hands it on again: the only fallback.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, NoReturn

from django.db import router, transaction

from ..conf import paycollect_settings
from ..services.callback_ledger import (
    DATABASE_UNAVAILABLE,
    SWEEP_BATCH,
    Sweep,
    callback_not_queued,
    claim_stuck_callbacks,
    run_verification,
)
from ..services.config import cached_communities
from .delivery import REDELIVERABLE, recording_task_id
from .outbox import Publisher, threads_run
from .runners import in_callbacks_transaction, job, send, uses_django

logger = logging.getLogger("django_paycollect.tasks")

#: Seconds before each retry of a callback whose verification met an unreachable database (then, if
#: it is still down, the sweep takes over once it is back).
CALLBACK_DATABASE_RETRY_DELAYS = (2, 5, 10, 20, 30, 60, 60, 60)
#: Callbacks one ``process_callbacks`` task verifies in turn at most: a larger batch (a web process's, the
#: sweep's) is shared out in messages of this many, so several worker processes verify a burst at once.
CALLBACKS_PER_TASK = 10


def hand_on(callback_id: int, *, force: bool = False) -> None:
    """Hand a committed callback (stored or claimed for verification) to the worker: the one route.

    This process's publisher publishes it from its own thread; it is published in the caller's request
    instead with eager Celery (verified here and now), ``CALLBACK_PUBLISH_BUFFER`` 0 or full, uWSGI without
    threads, and ``force`` (a person asked: a fetch made moments ago does not defer it). A publish that
    fails leaves it *received* for the sweep: nothing is lost and the sender still gets its 200. On Django's
    task framework it is enqueued here and now (one row on the database's backend).
    """
    if uses_django():
        _share_out([callback_id], force=force)
        return
    try:
        buffer = paycollect_settings.count("CALLBACK_PUBLISH_BUFFER")
        buffered = not force and not _eager() and buffer > 0 and threads_run()
        if buffered and publisher.submit(callback_id):
            return
        if buffered:
            logger.warning(
                "callback #%s: %d callbacks wait to be handed to the worker (CALLBACK_PUBLISH_BUFFER); "
                "published in its request",
                callback_id,
                publisher.waiting(),
            )
    except Exception:  # a broken publisher must not turn the 200 of a stored callback into a 503
        logger.exception(
            "callback #%s: the publisher could not take it; published in its request", callback_id
        )
    _share_out([callback_id], force=force)


@contextmanager
def handing_on(*, force: bool = False) -> Iterator[Callable[[int], None]]:
    """Where a callback is stored and then handed on: yields the function to call with its id.

    With the Django runner on django-tasks-db's backend, the block is a transaction and the callback's task
    row is written in it: the stored callback and its task commit together, or neither does. Otherwise the
    callback is handed on after the commit (:func:`hand_on`).
    """
    from ..models import ReceivedCallback

    alias = in_callbacks_transaction()
    if alias is None:
        write = router.db_for_write(ReceivedCallback)
        yield lambda pk: transaction.on_commit(partial(hand_on, pk, force=force), using=write)
        return
    with transaction.atomic(using=alias):
        yield lambda pk: _share_out([pk], force=force)


def _eager() -> bool:
    return bool(process_callbacks.app.conf.task_always_eager)


def _publish(callback_ids: list[int], *, force: bool = False, countdown: float | None = None) -> None:
    """One ``process_callbacks`` message (or task): every route's last step. Raises when not sent."""
    send("process_callbacks", *((callback_ids, True) if force else (callback_ids,)), countdown=countdown)


#: This process's publisher. Nothing runs before its first callback: then it starts its thread and registers
#: what a fork and the process's exit need (a forked child starts afresh; what waits is published at exit).
publisher = Publisher(
    _publish,
    callback_not_queued,
    capacity=lambda: paycollect_settings.count("CALLBACK_PUBLISH_BUFFER"),
    linger=lambda: paycollect_settings.seconds("CALLBACK_PUBLISH_LINGER") or 0.0,
)


def _share_out(callback_ids: list[int], *, force: bool = False) -> None:
    """Publish ``callback_ids`` here and now, in messages of :data:`CALLBACKS_PER_TASK`. A broker that
    refuses one is not asked again: that message's callbacks and the rest are recorded *received*, with the
    reason, for the next sweep."""
    chunks = [
        callback_ids[n : n + CALLBACKS_PER_TASK] for n in range(0, len(callback_ids), CALLBACKS_PER_TASK)
    ]
    for sent, chunk in enumerate(chunks):
        try:
            _publish(chunk, force=force)
        except Exception as exc:
            rest = [pk for left in chunks[sent:] for pk in left]
            logger.exception("%d callback(s) could not be queued for verification", len(rest))
            callback_not_queued(rest, exc)
            return


def sweep(limit: int = SWEEP_BATCH) -> Sweep:
    """Queue again every stuck callback (``callback_ledger.claim_stuck_callbacks``), oldest first, each
    once: a thousand stuck callbacks are a hundred publishes, not a thousand."""
    result = claim_stuck_callbacks(limit)
    _share_out(result.requeued)
    return result


# ignore_result: the callback's row holds the outcome. Queueing it then touches only the broker, never
# the result backend, so a result store that is down cannot hold up (or fail) the callback view.
@job("process_callbacks", ignore_result=True, **REDELIVERABLE)
def process_callbacks(self: Any, callback_ids: list[int], force: bool = False) -> dict[str, int]:
    """Verify stored callbacks against the service (``callback_ledger.run_verification``). Safe to run twice:
    verification is idempotent.

    Up to :data:`CALLBACKS_PER_TASK` are verified here, in turn; the rest are shared out in messages of as
    many, so a burst is verified by several worker processes at once. A callback whose verification waits
    (a retry, a deferral) goes on alone, in a message due when it is; the rest do not wait for it (eager,
    nothing runs later: the sweep, or ``paycollect_process_callbacks --stuck``, takes it). ``force``: a
    person asked (the admin), so a fetch made moments ago does not defer it. Returns how many ended in
    each state.
    """
    eager = bool(self.request.is_eager)
    ids = list(callback_ids)
    if len(ids) > CALLBACKS_PER_TASK and not eager:
        _share_out(ids[CALLBACKS_PER_TASK:], force=force)
        ids = ids[:CALLBACKS_PER_TASK]
    states: Counter[str] = Counter()
    # A message's callbacks read each community's credentials once (a burst names one community).
    with recording_task_id(self), cached_communities():
        for position, callback_id in enumerate(ids):
            try:
                done = run_verification(callback_id, force=force, may_retry=not eager)
            except DATABASE_UNAVAILABLE as exc:
                if eager:
                    raise
                _retry_without_database(self, exc, ids[position:], force)
            states[done.state] += 1
            if done.retry_in is not None and not eager:
                _verify_later(callback_id, done.retry_in, force)
    return dict(states)


def _retry_without_database(task: Any, exc: BaseException, ids: list[int], force: bool) -> NoReturn:
    """Nothing could be recorded: the callbacks are still waiting in the database, so whatever happens to
    this message the sweep finds them. Retried, never acknowledged as done, carrying only ``ids``, the
    callbacks not verified yet."""
    retries = task.request.retries
    named = ", ".join(f"#{pk}" for pk in ids)
    if retries >= len(CALLBACK_DATABASE_RETRY_DELAYS):
        logger.error("callback %s: the database is still unreachable; left to the sweep", named)
        raise exc
    logger.warning("callback %s: the database is unreachable (%s); retrying", named, exc)
    raise task.retry(
        exc=exc,
        countdown=CALLBACK_DATABASE_RETRY_DELAYS[retries],
        max_retries=retries + 1,
        args=[ids, True] if force else [ids],
        kwargs={},
    ) from None


def _verify_later(callback_id: int, countdown: float, force: bool) -> None:
    try:
        _publish([callback_id], force=force, countdown=countdown)
    except Exception:
        # Its row says when it is due (next_attempt_at): the sweep queues it once overdue.
        logger.exception(
            "callback #%s: its next verification could not be queued; left to the sweep", callback_id
        )


@job("sweep_callbacks", ignore_result=True, **REDELIVERABLE)
def sweep_callbacks(self: Any) -> dict[str, Any]:
    """Queue again the callbacks left received or queued too long (see :func:`sweep`).

    In the beat schedule every minute: a worker killed with its messages, a broker restarted without
    them, a database down while verifications ran: each such callback is verified at most
    ``CALLBACK_REQUEUE_AFTER`` (plus a minute) after it was due, whatever the broker's visibility timeout.
    """
    with recording_task_id(self):
        return sweep().as_dict()
