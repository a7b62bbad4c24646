"""The service layer: the only code that calls the client, records envelopes, changes state and sends signals.

Views, admin actions, Celery tasks and management commands call these functions and nothing
else. The rules they keep:

* every call of the client is recorded as an :class:`~django_paycollect.models.ApiCall`, whatever
  its outcome, secrets never stored and PII masked;
* state changes happen under a row lock (``select_for_update``), through a status machine that
  only moves forward, and signals are sent once per real change, after the commit;
* state-changing calls (pay, direct order, capture, refund, cancel recurring, create community)
  are never resent: an ambiguous failure is recorded as "outcome unknown" and reconciliation
  fetches the truth. They run through one helper (:func:`guarded_write`) and refuse to run inside
  ``transaction.atomic``, where a rollback after the call would forget what the service did;
* one error contract for every function (:mod:`django_paycollect.exceptions`): it returns, or
  raises ``PaymentRefused``, ``StateConflict``, ``NotFound`` or ``ServiceUnavailable`` (:func:`contract_error`
  maps the client's errors); a misconfiguration is an ``ImproperlyConfigured``, outside the contract.

A package by concern; every public name is importable from here (``services.refund(...)``):

* ``config``: the community's credentials and a pooled client;
* ``calls``: calling the client, recording the ApiCall, the error contract, the guarded write;
* ``common``: validated arguments, row locks, autocommit, signals after the commit;
* ``status``: the status machine;
* ``payments``, ``sync``, ``refunds``, ``recurring``, ``direct_orders``, ``communities``: the operations;
* ``callback_ledger``: the one owner of a stored callback's state;
* ``housekeeping``: when the sweep and reconciliation last ran.
"""

from __future__ import annotations

from .callback_ledger import (
    CALLBACK_RETRY_DELAYS as CALLBACK_RETRY_DELAYS,
)
from .callback_ledger import (
    DATABASE_UNAVAILABLE as DATABASE_UNAVAILABLE,
)
from .callback_ledger import (
    REPROCESSABLE_STATES as REPROCESSABLE_STATES,
)
from .callback_ledger import (
    SWEEP_BATCH as SWEEP_BATCH,
)
from .callback_ledger import (
    FetchDeferred as FetchDeferred,
)
from .callback_ledger import (
    StoredCallback as StoredCallback,
)
from .callback_ledger import (
    Sweep as Sweep,
)
from .callback_ledger import (
    Verification as Verification,
)
from .callback_ledger import (
    callback_failed as callback_failed,
)
from .callback_ledger import (
    callback_fetch_due as callback_fetch_due,
)
from .callback_ledger import (
    callback_fetch_interval as callback_fetch_interval,
)
from .callback_ledger import (
    callback_not_queued as callback_not_queued,
)
from .callback_ledger import (
    callback_waiting as callback_waiting,
)
from .callback_ledger import (
    claim_stuck_callbacks as claim_stuck_callbacks,
)
from .callback_ledger import (
    community_of as community_of,
)
from .callback_ledger import (
    dedupe_key as dedupe_key,
)
from .callback_ledger import (
    reprocess_callback as reprocess_callback,
)
from .callback_ledger import (
    requeue_after as requeue_after,
)
from .callback_ledger import (
    requeue_callback as requeue_callback,
)
from .callback_ledger import (
    run_verification as run_verification,
)
from .callback_ledger import (
    store_callback as store_callback,
)
from .callback_ledger import (
    store_invalid_callback as store_invalid_callback,
)
from .callback_ledger import (
    stuck_filter as stuck_filter,
)
from .callback_ledger import (
    verify_callback as verify_callback,
)
from .calls import (
    STATE_CHANGING as STATE_CHANGING,
)
from .calls import (
    Sent as Sent,
)
from .calls import (
    contract_error as contract_error,
)
from .calls import (
    current_task_id as current_task_id,
)
from .calls import (
    guarded_write as guarded_write,
)
from .calls import (
    sent_by_task as sent_by_task,
)
from .common import (
    STALE_IN_FLIGHT as STALE_IN_FLIGHT,
)
from .common import (
    locked as locked,
)
from .common import (
    savepoint_if_atomic as savepoint_if_atomic,
)
from .communities import (
    create_community as create_community,
)
from .communities import (
    fetch_statistics as fetch_statistics,
)
from .config import (
    CommunityConfig as CommunityConfig,
)
from .config import (
    cached_communities as cached_communities,
)
from .config import (
    community_config as community_config,
)
from .config import (
    get_client as get_client,
)
from .direct_orders import (
    create_direct_order as create_direct_order,
)
from .housekeeping import (
    record_run as record_run,
)
from .payments import (
    abandon_unknown_start as abandon_unknown_start,
)
from .payments import (
    capture as capture,
)
from .payments import (
    prepare_amount as prepare_amount,
)
from .payments import (
    start_payment as start_payment,
)
from .payments import (
    validate_promocode as validate_promocode,
)
from .recurring import (
    cancel_recurring as cancel_recurring,
)
from .recurring import (
    missed_charges as missed_charges,
)
from .recurring import (
    settle_unknown_cancel as settle_unknown_cancel,
)
from .refunds import (
    ALL_REFUNDABLE as ALL_REFUNDABLE,
)
from .refunds import (
    Remainder as Remainder,
)
from .refunds import (
    expected_refundable_amount as expected_refundable_amount,
)
from .refunds import (
    refund as refund,
)
from .refunds import (
    refund_amount as refund_amount,
)
from .refunds import (
    resolve_refund as resolve_refund,
)
from .status import (
    apply_status as apply_status,
)
from .sync import (
    sync_transaction as sync_transaction,
)
