"""The admin: a merchant's view of payments, and its actions.

Actions are thin callers of :mod:`django_paycollect.services`: they never call the client, write ApiCall rows
or set a status themselves. The state-changing services refuse to run inside ``transaction.atomic`` (a
rollback after the call would forget what the service did), so every view that calls one is marked
``transaction.non_atomic_requests`` (outside atomic even under ``ATOMIC_REQUESTS``), and the direct order add
form does not go through ``changeform_view``, which always runs in atomic. Money records are read-only here:
they change only through the service layer.

Importing this package registers the model admins of every page family (the modules are listed in
docs/architecture.md); its names are the model admins, for a project that subclasses one.
"""

from __future__ import annotations

from django.contrib import admin as _admin

from .callbacks import ReceivedCallbackAdmin
from .communities import CommunityAdmin
from .dashboard import DashboardAdmin
from .direct_orders import DirectOrderAdmin
from .records import ApiCallAdmin, RefundAdmin, StatisticsSnapshotAdmin
from .recurring import RecurringSeriesAdmin
from .transactions import TransactionAdmin

__all__ = [
    "ApiCallAdmin",
    "CommunityAdmin",
    "DashboardAdmin",
    "DirectOrderAdmin",
    "ReceivedCallbackAdmin",
    "RecurringSeriesAdmin",
    "RefundAdmin",
    "StatisticsSnapshotAdmin",
    "TransactionAdmin",
]

# The admin index warns when the sweep or reconciliation is late (a stopped beat is otherwise silent), unless
# the project set an index template of its own (which can add {% paycollect_late_jobs %}).
if _admin.site.index_template is None:
    _admin.site.index_template = "admin/paycollect/index.html"
