"""Signals for every outcome. Each is sent once per real change, after the database commit.

Receivers get ``sender`` (the model class) and the keyword arguments listed beside each signal.
A receiver that raises does not undo the change (it is already committed); its error is logged.
"""

from __future__ import annotations

from django.dispatch import Signal

#: transaction: Transaction, from_status: str, to_status: str, source: str
transaction_status_changed = Signal()
#: transaction: Transaction
payment_succeeded = Signal()
#: transaction: Transaction
payment_failed = Signal()
#: transaction: Transaction (a renewal charge), series: RecurringSeries
recurring_charge_succeeded = Signal()
#: series: RecurringSeries, user: User | None
recurring_series_cancelled = Signal()
#: refund: Refund, transaction: Transaction
refund_succeeded = Signal()
#: refund: Refund, transaction: Transaction, error: str
refund_failed = Signal()
#: transaction: Transaction
capture_succeeded = Signal()
#: direct_order: DirectOrder
direct_order_created = Signal()
#: transaction: Transaction, differences: dict[str, tuple[stored, fetched]]
amount_mismatch_detected = Signal()

#: Every signal above by its name, in the order above.
ALL_SIGNALS = {name: value for name, value in list(globals().items()) if isinstance(value, Signal)}
