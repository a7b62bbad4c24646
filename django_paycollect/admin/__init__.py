"""The admin: a merchant's view of payments, and its actions.

Actions are thin callers of :mod:`django_paycollect.services`: they never call the client, write
ApiCall rows or set a status themselves. The state-changing services refuse to run inside
``transaction.atomic`` (a rollback after the call would forget what the service did), so every
view that calls one is marked ``transaction.non_atomic_requests`` (it then stays outside atomic
even under ``ATOMIC_REQUESTS``), and the direct order add form does not go through
``changeform_view``, which always runs in atomic.

Money records are read-only here: they change only through the service layer.
"""

from __future__ import annotations

from django.contrib import admin as _admin

# Each module registers its ModelAdmins; the names people import from here stay importable.
from .callbacks import (
    CallbackValidityFilter as CallbackValidityFilter,
)
from .callbacks import (
    CallbackWaitingFilter as CallbackWaitingFilter,
)
from .callbacks import (
    MalformedHintsFilter as MalformedHintsFilter,
)
from .callbacks import (
    ReceivedCallbackAdmin as ReceivedCallbackAdmin,
)
from .common import (
    DeferringChangeList as DeferringChangeList,
)
from .common import (
    Outcomes as Outcomes,
)
from .common import (
    PayCollectAdmin as PayCollectAdmin,
)
from .common import (
    ReadOnlyInline as ReadOnlyInline,
)
from .common import (
    displayable as displayable,
)
from .common import (
    holding_of as holding_of,
)
from .common import (
    json_display as json_display,
)
from .common import (
    refund_refusal as refund_refusal,
)
from .communities import CommunityAdmin as CommunityAdmin
from .direct_orders import DirectOrderAdmin as DirectOrderAdmin
from .direct_orders import OrderTransactionInline as OrderTransactionInline
from .records import ApiCallAdmin as ApiCallAdmin
from .records import RefundAdmin as RefundAdmin
from .records import StatisticsSnapshotAdmin as StatisticsSnapshotAdmin
from .recurring import ChargeInline as ChargeInline
from .recurring import RecurringSeriesAdmin as RecurringSeriesAdmin
from .recurring import cancel_refusal as cancel_refusal
from .recurring import cancel_series as cancel_series
from .recurring import confirm_cancel_recurring as confirm_cancel_recurring
from .transactions import RefundInline as RefundInline
from .transactions import TransactionAdmin as TransactionAdmin
from .transactions import TransactionStatusChangeInline as TransactionStatusChangeInline

# The admin index warns when the sweep or reconciliation is late (a stopped beat is otherwise silent), unless
# the project set an index template of its own (which can add {% paycollect_late_jobs %}).
if _admin.site.index_template is None:
    _admin.site.index_template = "admin/paycollect/index.html"
