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

A package by concern. This module names the operations the surfaces call (``services.refund(...)``);
what only the app's own rooms use (the callback ledger, the calls' record, the configuration) is imported
from its module:

* ``config``: the community's credentials and a pooled client;
* ``calls``: calling the client, recording the ApiCall, the error contract, the guarded write;
* ``common``: validated arguments, row locks, autocommit, signals after the commit;
* ``status``: the status machine;
* ``payments``, ``sync``, ``refunds``, ``recurring``, ``direct_orders``, ``communities``: the operations;
* ``callback_ledger``: the one owner of a stored callback's state;
* ``housekeeping``: when the sweep and reconciliation last ran.
"""

from __future__ import annotations

from .callback_ledger import reprocess_callback
from .communities import create_community, fetch_statistics
from .direct_orders import create_direct_order
from .payments import abandon_unknown_start, capture, prepare_amount, start_payment, validate_promocode
from .recurring import cancel_recurring, missed_charges, settle_unknown_cancel
from .refunds import (
    ALL_REFUNDABLE,
    Remainder,
    expected_refundable_amount,
    refund,
    refund_amount,
    resolve_refund,
)
from .sync import sync_transaction

__all__ = [
    "ALL_REFUNDABLE",
    "Remainder",
    "abandon_unknown_start",
    "cancel_recurring",
    "capture",
    "create_community",
    "create_direct_order",
    "expected_refundable_amount",
    "fetch_statistics",
    "missed_charges",
    "prepare_amount",
    "refund",
    "refund_amount",
    "reprocess_callback",
    "resolve_refund",
    "settle_unknown_cancel",
    "start_payment",
    "sync_transaction",
    "validate_promocode",
]
