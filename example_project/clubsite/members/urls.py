from django.contrib.auth.views import LoginView
from django.urls import path

from . import views

app_name = "members"

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("join/", views.join, name="join"),
    # The single-page checkout on the REST API, for signed-in members.
    path("checkout/", views.checkout, name="checkout"),
    path("accounts/login/", LoginView.as_view(template_name="members/login.html"), name="login"),
    path("memberships/<uuid:public_id>/", views.membership_page, name="membership"),
    path("memberships/<uuid:public_id>/pay/", views.pay, name="pay"),
    path("memberships/<uuid:public_id>/details/", views.details, name="details"),
    path("memberships/<uuid:public_id>/status/", views.membership_status, name="membership_status"),
    path(
        "memberships/<uuid:public_id>/simulate-kiosk-payment/",
        views.simulate_kiosk_payment,
        name="simulate_kiosk_payment",
    ),
    path(
        "memberships/<uuid:public_id>/move-sandbox-clock/",
        views.move_sandbox_clock,
        name="move_sandbox_clock",
    ),
    # PAYCOLLECT["SUCCESS_URL"] and ["FAILURE_URL"]: the payment app's return view redirects here.
    path("payment/thanks/", views.payment_success, name="payment_success"),
    path("payment/failed/", views.payment_failure, name="payment_failure"),
    path("invoices/", views.invoice_list, name="invoices"),
    path("invoices/new/", views.invoice_new, name="invoice_new"),
    path("invoices/<int:pk>/", views.invoice_page, name="invoice"),
    path("invoices/<int:pk>/status/", views.invoice_status, name="invoice_status"),
]
