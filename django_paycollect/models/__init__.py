"""What the app stores: communities, transactions, direct orders, recurring series, refunds, every call
of the client (ApiCall) and statistics snapshots (the records are in :mod:`.records`).

Each model keeps the service's own words for its fields and, where the service sent an object,
that object as received (``raw``) beside the typed columns: nothing the service says is dropped.
Money is ``DecimalField`` (two places); piasters are integers.
"""

from __future__ import annotations

from .communities import Community
from .fields import CanonicalUuidField
from .orders import DirectOrder, RecurringSeries
from .payments import Refund, Transaction, TransactionStatusChange
from .records import ApiCall, Dashboard, FetchMark, HousekeepingRun, ReceivedCallback, StatisticsSnapshot

__all__ = [
    "ApiCall",
    "CanonicalUuidField",
    "Community",
    "Dashboard",
    "DirectOrder",
    "FetchMark",
    "HousekeepingRun",
    "ReceivedCallback",
    "RecurringSeries",
    "Refund",
    "StatisticsSnapshot",
    "Transaction",
    "TransactionStatusChange",
]
