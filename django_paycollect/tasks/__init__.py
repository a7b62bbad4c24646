"""The app's jobs: thin callers of the service layer, one per operation, plus callbacks and housekeeping.

Each job is written once and runs on the project's runner (:mod:`.runners`, ``PAYCOLLECT["TASK_RUNNER"]``):
Celery, whose tasks these names are (``paycollect.<job>``), or Django's task framework, whose tasks of the
same names are in :mod:`.on_django` (imported only by that runner). The project's Celery app discovers these
tasks (``app.autodiscover_tasks()``); with ``CELERY_TASK_ALWAYS_EAGER`` they run inline, which is what the
demo and the tests use. Every task
stores its id on the ApiCall rows it causes (``services.calls.current_task_id``), so the admin shows which
task made which call.

Arguments are JSON-serialisable: primary keys, amounts as strings (``"100.00"``, never floats),
dates as ISO text, users as ids. Results are small dicts of the same kind.

Delivery rules, and why:

* Reads (``sync_transaction``, ``fetch_statistics``, ``prepare_amount``, ``validate_promocode``),
  ``process_callbacks``, ``reconcile`` and ``prune`` are idempotent: running them
  twice gives the same state (verification applies what the service says, under a row lock, through a status
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
  (``services.calls.sent_by_task``).

Keep the broker's ``visibility_timeout`` (Redis, SQS) longer than the longest retry countdown and
queue wait: a message held longer is handed to a second worker.

A worker keeps its database sessions from task to task when the project sets ``CONN_MAX_AGE`` and
``CELERY_DB_REUSE_MAX`` (:mod:`.connections`, whose handlers are connected here).
"""

from __future__ import annotations

from .callbacks import hand_on, handing_on, process_callbacks, sweep_callbacks
from .housekeeping import prune, reconcile, reconcile_chunk
from .operations import (
    cancel_recurring,
    capture,
    create_community,
    create_direct_order,
    fetch_statistics,
    prepare_amount,
    refund,
    start_payment,
    sync_transaction,
    validate_promocode,
)

__all__ = [
    "cancel_recurring",
    "capture",
    "create_community",
    "create_direct_order",
    "fetch_statistics",
    "hand_on",
    "handing_on",
    "prepare_amount",
    "process_callbacks",
    "prune",
    "reconcile",
    "reconcile_chunk",
    "refund",
    "start_payment",
    "sweep_callbacks",
    "sync_transaction",
    "validate_promocode",
]
