"""Celery tasks: thin callers of the service layer, one per operation, plus callbacks and housekeeping.

The project's Celery app discovers these tasks (``app.autodiscover_tasks()``); with
``CELERY_TASK_ALWAYS_EAGER`` they run inline, which is what the demo and the tests use. Every task
stores its id on the ApiCall rows it causes (``services.current_task_id``), so the admin shows which
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
  (``services.sent_by_task``).

Keep the broker's ``visibility_timeout`` (Redis, SQS) longer than the longest retry countdown and
queue wait: a message held longer is handed to a second worker.
"""

from __future__ import annotations

# Re-exported for older imports: the schedule lives where settings can import it (no models there).
from ..schedules import BEAT_SCHEDULE as BEAT_SCHEDULE
from .callbacks import (
    CALLBACK_DATABASE_RETRY_DELAYS as CALLBACK_DATABASE_RETRY_DELAYS,
)
from .callbacks import (
    hand_on as hand_on,
)
from .callbacks import (
    process_callbacks as process_callbacks,
)
from .callbacks import (
    publisher as publisher,
)
from .callbacks import (
    sweep as sweep,
)
from .callbacks import (
    sweep_callbacks as sweep_callbacks,
)
from .delivery import (
    NOT_SENT_RETRY_DELAYS as NOT_SENT_RETRY_DELAYS,
)
from .delivery import (
    READ_BACKOFF as READ_BACKOFF,
)
from .delivery import (
    READ_BACKOFF_CAP as READ_BACKOFF_CAP,
)
from .delivery import (
    READ_MAX_RETRIES as READ_MAX_RETRIES,
)
from .delivery import (
    _retry_read as _retry_read,
)
from .housekeeping import (
    prune as prune,
)
from .housekeeping import (
    reconcile as reconcile,
)
from .housekeeping import (
    reconcile_chunk as reconcile_chunk,
)
from .operations import (
    cancel_recurring as cancel_recurring,
)
from .operations import (
    capture as capture,
)
from .operations import (
    create_community as create_community,
)
from .operations import (
    create_direct_order as create_direct_order,
)
from .operations import (
    fetch_statistics as fetch_statistics,
)
from .operations import (
    prepare_amount as prepare_amount,
)
from .operations import (
    refund as refund,
)
from .operations import (
    start_payment as start_payment,
)
from .operations import (
    sync_transaction as sync_transaction,
)
from .operations import (
    validate_promocode as validate_promocode,
)
