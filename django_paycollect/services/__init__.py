"""The service layer: the only code that calls the client, records envelopes, changes state and sends signals.

Its guarantees and its error contract are docs/services.md's. This module names the operations the surfaces
call (``services.refund(...)``); what only the app's own rooms use is imported from its module.
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
