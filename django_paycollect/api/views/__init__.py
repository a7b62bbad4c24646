"""The API's views: thin callers of the service layer (``from django_paycollect import services``).

Each view validates what the device sent (400 with field paths), asks the payable hook or looks up the row
the caller may see (404 otherwise), calls one service and answers its row; the service layer's errors become
answers in :mod:`django_paycollect.api.errors`. Every view runs outside a database transaction, as the
service layer requires (the URLs mark them non-atomic for projects with ``ATOMIC_REQUESTS``).
"""

from .base import ContractView
from .customers import PaymentDetailView, PaymentListView, PromocodeView, QuoteView
from .staff import CaptureView, DirectOrderCreateView, DirectOrderDetailView, RefundView, SeriesCancelView

__all__ = [
    "CaptureView",
    "ContractView",
    "DirectOrderCreateView",
    "DirectOrderDetailView",
    "PaymentDetailView",
    "PaymentListView",
    "PromocodeView",
    "QuoteView",
    "RefundView",
    "SeriesCancelView",
]
