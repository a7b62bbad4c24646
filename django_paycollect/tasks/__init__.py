"""The app's jobs: thin callers of the service layer, one per operation, plus callbacks and housekeeping.

Each job is written once and runs on the project's runner (:mod:`.runners`, ``PAYCOLLECT["TASK_RUNNER"]``):
Celery, whose tasks these names are (``paycollect.<job>``, found by ``app.autodiscover_tasks()``, inline with
``CELERY_TASK_ALWAYS_EAGER`` as in the demo and the tests), or Django's task framework, whose tasks of the
same names are in :mod:`.on_django` (imported only by that runner). Every task stores its id on the ApiCall
rows it causes (``services.calls.current_task_id``), so the admin shows which task made which call.

Arguments and results are JSON: primary keys, amounts as strings (``"100.00"``, never floats), dates as ISO
text, users as ids. How each kind is acknowledged and retried, and why, is in docs/celery.md: reads,
callbacks and housekeeping are idempotent (acked late, redelivered when their worker dies); state-changing
operations ack early, since a redelivered message would send a second refund, and retry only what did nothing
at the service (:mod:`.delivery`). A worker keeps its database sessions from task to task when the project
sets ``CONN_MAX_AGE`` and ``CELERY_DB_REUSE_MAX`` (:mod:`.connections`, connected by the app's config).
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
