"""Handing stored callbacks to the worker without a broker round trip in the callback request (docs/celery.md,
"How a callback reaches the worker").

The stored row is the queue (a transactional outbox): after the commit the callback view hands its primary key
to this process's :class:`Publisher`, which only appends it to a buffer. A daemon thread publishes what waits
at most once per ``CALLBACK_PUBLISH_LINGER``, a burst's callbacks in one ``paycollect.process_callbacks``
message: a publish costs the web process about a millisecond of CPU, whatever it carries. A failed publish is
recorded (*received*) for the sweep; ids a dead process held stay *queued*, which the sweep takes once
overdue. Nothing runs at import: the thread, and the fork and exit hooks, start with the first callback.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import db

logger = logging.getLogger("django_paycollect.tasks")

#: Callbacks in one ``paycollect.process_callbacks`` message at most (a message of a thousand ids is about
#: 7 KB); more waiting go in the next message, at once.
MAX_IDS_PER_MESSAGE = 1000
#: Seconds a process exiting waits for its waiting callbacks to be published (the rest wait for the sweep).
EXIT_WAIT = 5.0


@dataclass
class PublisherStats:
    """What one process's publisher did since it started (or since the fork that made the process)."""

    submitted: int = 0
    published: int = 0
    messages: int = 0
    not_queued: int = 0
    refused: int = 0  # the buffer was full (or the process exiting): published in the request instead


class Publisher:
    """A bounded buffer of callback ids and the thread that publishes them (see the module's docstring).

    ``publish(ids)`` sends one message for up to :data:`MAX_IDS_PER_MESSAGE` ids and raises when it could
    not; ``not_queued(ids, error)`` records that. ``capacity()`` and ``linger()`` are read when used, so a
    settings change applies at once.
    """

    def __init__(
        self,
        publish: Callable[[list[int]], object],
        not_queued: Callable[[list[int], BaseException], object],
        *,
        capacity: Callable[[], int],
        linger: Callable[[], float],
    ) -> None:
        self._publish = publish
        self._not_queued = not_queued
        self._capacity = capacity
        self._linger = linger
        # The fork and exit hooks, registered with the first thread (a child inherits them).
        self._hooked = False
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._waiting: deque[int] = deque()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._in_flight = 0  # ids taken from the buffer and not yet published (or recorded not queued)
        self._last_flush = float("-inf")  # the first publish goes at once, whatever the linger
        self.stats = PublisherStats()

    def after_fork_in_child(self) -> None:
        """A new process: none of the parent's state is ours (its lock may even be held by its thread)."""
        self._reset()

    def submit(self, callback_id: int) -> bool:
        """Hand on a committed callback; False when the buffer is full or the process exiting (then the
        caller publishes it itself)."""
        with self._lock:
            if self._closing or len(self._waiting) >= self._capacity():
                self.stats.refused += 1
                return False
            self._waiting.append(callback_id)
            self.stats.submitted += 1
            if self._thread is None:
                self._start()
            # Woken only when it waits for a first id, or to publish a full message: not for every id,
            # which would cost the requests a thread switch each.
            if len(self._waiting) in (1, MAX_IDS_PER_MESSAGE):
                self._wakeup.notify()
        return True

    def _start(self) -> None:
        if not self._hooked:
            os.register_at_fork(after_in_child=self.after_fork_in_child)
            atexit.register(self.close)
            self._hooked = True
        self._thread = threading.Thread(target=self._run, name="paycollect-publisher", daemon=True)
        self._thread.start()

    def waiting(self) -> int:
        return len(self._waiting)

    def close(self, timeout: float = EXIT_WAIT) -> int:
        """Publish what waits, for at most ``timeout`` seconds; returns how many were left (queued, for the
        sweep). Called at exit."""
        with self._lock:
            self._closing = True
            self._wakeup.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        left = len(self._waiting) + self._in_flight
        if left:
            logger.warning(
                "%d callback(s) not handed to the worker before this process exits: they stay queued, and "
                "the sweep queues them again after CALLBACK_REQUEUE_AFTER",
                left,
            )
        return left

    def flush(self, timeout: float = EXIT_WAIT) -> bool:
        """Wait until every id submitted so far is published (or recorded not queued); False after
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self._waiting or self._in_flight:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    # --- the thread ------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                if not self._publish_next():
                    return
            except Exception:  # a bug of ours must not stop the publishing: what waits stays in the buffer
                logger.exception("the callback publisher failed; going on in a moment")
                time.sleep(1)

    def _publish_next(self) -> bool:
        """Wait for callbacks, and for the linger since the last publish, then publish what waits. False
        once the process exits and nothing is left."""
        with self._lock:
            while not self._waiting and not self._closing:
                self._wakeup.wait()
            # At most one publish per linger: what arrives meanwhile goes in the same message. Closing (the
            # process exits) cuts the wait short, and so does a full message.
            while not self._closing and len(self._waiting) < MAX_IDS_PER_MESSAGE:
                pause = self._last_flush + self._linger() - time.monotonic()
                if pause <= 0:
                    break
                self._wakeup.wait(pause)
            if not self._waiting:
                return False
            batch = [self._waiting.popleft() for _ in range(min(len(self._waiting), MAX_IDS_PER_MESSAGE))]
            self._in_flight = len(batch)
        try:
            self._flush(batch)
        finally:
            self._in_flight = 0
            self._last_flush = time.monotonic()
        return True

    def _flush(self, batch: list[int]) -> None:
        try:
            self._publish(batch)
        except Exception as exc:
            logger.exception("%d callback(s) could not be queued for verification", len(batch))
            self._record_not_queued(batch, exc)
            return
        self.stats.published += len(batch)
        self.stats.messages += 1

    def _record_not_queued(self, ids: list[int], exc: BaseException) -> None:
        self.stats.not_queued += len(ids)
        try:
            self._not_queued(ids, exc)
        except Exception:
            # The database too: the rows stay queued, and the sweep finds them once overdue.
            logger.exception("callbacks %s: their failed queueing could not be recorded either", ids)
        finally:
            # This thread answers no request: nothing else closes its connection.
            db.connections.close_all()


@functools.cache
def threads_run() -> bool:
    """Whether a thread this process starts runs between requests: not under uWSGI started without Python
    threads (neither ``enable-threads`` nor ``threads`` above 1), which holds the interpreter while it waits
    for the next request. There callbacks are published in their request, as a warning says once. Read at
    the first callback, never at import."""
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
    try:
        return int(value)  # bytes too; None is a TypeError
    except (TypeError, ValueError):
        return 0
