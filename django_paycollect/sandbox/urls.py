"""Mount with ``path("sandbox/", include("django_paycollect.sandbox.urls"))``: then ``http://host/sandbox``
is a base URL under which every path of the spec answers, character for character (trailing slashes
included or not, exactly as the spec writes each path).

The last pattern catches everything else under the prefix and answers the 404 envelope, so mount the
sandbox under a prefix (or last) in a project with other URLs.
"""

from django.urls import path, re_path

from .views import api, control, pages
from .views.common import not_found

app_name = "paycollect_sandbox"

urlpatterns = [
    # The ten operations, at the spec's paths.
    path("api/v1/payments/prepare-amount/", api.prepare_amount, name="prepare_amount"),
    path("api/v1/payments/pay/variable-amount", api.pay, name="pay"),
    path(
        "api/v1/communities/<str:community_id>/transactions/<str:transaction_uuid>/",
        api.fetch_transaction,
        name="fetch_transaction",
    ),
    path("api/payments/capture-payment/", api.capture, name="capture"),
    path("api/payments/refund-transaction/", api.refund, name="refund"),
    path("api/payments/cancel-recurring-payment/", api.cancel_recurring, name="cancel_recurring"),
    path("api/promocodes/validate/", api.validate_promocode, name="validate_promocode"),
    path("api/communities/create_community", api.create_community, name="create_community"),
    path("api/core/dashboard/statistics", api.dashboard_statistics, name="dashboard_statistics"),
    path("api/orders/create-direct-order/", api.direct_order, name="direct_order"),
    # Hosted pages behind iframe_url and payment_link.
    path("pay/<uuid:transaction_uuid>/", pages.payment_page, name="payment_page"),
    path("orders/<str:payment_id>/", pages.order_page, name="order_page"),
    # Sandbox dashboard and demo merchant.
    path("_sandbox/", pages.dashboard, name="dashboard"),
    path("_sandbox/api-payments/<int:pk>/", pages.api_payment_settings, name="api_payment_settings"),
    path("_sandbox/outbox/", pages.outbox, name="outbox"),
    path("_sandbox/journal/", pages.journal_page, name="journal"),
    path("_sandbox/merchant/return/", pages.merchant_return, name="merchant_return"),
    path("_sandbox/merchant/callback/", pages.merchant_callback, name="merchant_callback"),
    # Control API (PAYCOLLECT_SANDBOX["CONTROL_API"]).
    path("_control/identity", control.identity, name="control_identity"),
    path("_control/reset", control.reset, name="control_reset"),
    path("_control/config", control.config, name="control_config"),
    path("_control/clock", control.clock, name="control_clock"),
    path("_control/clock/advance", control.clock_advance, name="control_clock_advance"),
    path(
        "_control/transactions/<str:transaction_uuid>", control.transaction_detail, name="control_transaction"
    ),
    path("_control/transactions/<str:transaction_uuid>/complete", control.complete, name="control_complete"),
    path(
        "_control/transactions/<str:transaction_uuid>/renewal-outcome",
        control.renewal_outcome,
        name="control_renewal_outcome",
    ),
    path("_control/callbacks", control.callback_list, name="control_callbacks"),
    path("_control/callbacks/next", control.callback_next, name="control_callbacks_next"),
    path("_control/callbacks/<int:pk>", control.callback_detail, name="control_callback"),
    path("_control/callbacks/<int:pk>/redeliver", control.callback_redeliver, name="control_redeliver"),
    path("_control/faults", control.fault_collection, name="control_faults"),
    path("_control/requests", control.requests_journal, name="control_requests"),
    path("_control/communities", control.community_list, name="control_communities"),
    path("_control/api-payments", control.api_payment_collection, name="control_api_payments"),
    path("_control/api-payments/<int:pk>", control.api_payment_detail, name="control_api_payment"),
    path("_control/promocodes", control.promocode_create, name="control_promocodes"),
    path("_control/fee-rules", control.fee_rules, name="control_fee_rules"),
    path("_control/outbox", control.outbox, name="control_outbox"),
    # Everything else under the prefix: the 404 envelope.
    re_path(r"^.*$", not_found),
]
