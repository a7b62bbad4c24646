"""``path("api/", include("django_paycollect.api.urls"))``. URL names are in the ``paycollect_api`` namespace.

Every view is non-atomic: the service layer must not be called inside a database transaction, so a
project with ``ATOMIC_REQUESTS`` does not wrap these.
"""

from collections.abc import Callable

from django.db import transaction
from django.http import HttpResponseBase
from django.urls import path

from . import views

app_name = "paycollect_api"


def _view(view_class: type[views.ContractView]) -> Callable[..., HttpResponseBase]:
    return transaction.non_atomic_requests(view_class.as_view())


urlpatterns = [
    path("quotes/", _view(views.QuoteView), name="quote"),
    path("promocodes/validate/", _view(views.PromocodeView), name="promocode-validate"),
    path("payments/", _view(views.PaymentListView), name="payment-list"),
    path("payments/<str:uuid>/", _view(views.PaymentDetailView), name="payment-detail"),
    path("payments/<str:uuid>/refunds/", _view(views.RefundView), name="payment-refund"),
    path("payments/<str:uuid>/capture/", _view(views.CaptureView), name="payment-capture"),
    path("series/<int:pk>/cancel/", _view(views.SeriesCancelView), name="series-cancel"),
    path("direct-orders/", _view(views.DirectOrderCreateView), name="direct-order-list"),
    path("direct-orders/<int:pk>/", _view(views.DirectOrderDetailView), name="direct-order-detail"),
]
