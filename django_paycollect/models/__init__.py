"""An index of what the app stores, one module per domain. Each model keeps the service's own words for its
fields and, where the service sent an object, that object as received (``raw``): nothing is dropped.
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
