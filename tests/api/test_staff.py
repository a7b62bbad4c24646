"""Staff endpoints of the REST API, each behind the model permission the admin asks for the same act, and
every endpoint's answer to anonymous callers, customers, staff without the permission and staff with it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import translation

from django_paycollect.amounts import amount_text
from django_paycollect.models import DirectOrder, RecurringSeries, Refund, Transaction

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = {
    "name": "Hall rental",
    "amount": "750.00",
    "payment_methods": ["card"],
    "customer_name": "Mona Ali",
    "customer_email": "mona@example.com",
    "customer_mobile": "+201001234567",
}


def _endpoints(paid: Transaction, series_pk: int, order_pk: int) -> list[tuple[str, str, dict, str]]:
    """(method, url, body, the user allowed) of every endpoint."""
    return [
        ("post", "/api/quotes/", {"reference": "book"}, "owner"),
        ("post", "/api/promocodes/validate/", {"reference": "book", "promocode": "FLAT25"}, "owner"),
        ("get", "/api/payments/", {}, "owner"),
        ("post", "/api/payments/", {"reference": "pen"}, "owner"),
        ("get", f"/api/payments/{paid.uuid}/", {}, "owner"),
        ("post", f"/api/payments/{paid.uuid}/refunds/", {"amount": "1.00"}, "refunder"),
        ("post", f"/api/payments/{paid.uuid}/capture/", {}, "capturer"),
        ("post", f"/api/series/{series_pk}/cancel/", {}, "canceller"),
        ("post", "/api/direct-orders/", ORDER, "orderer"),
        ("get", f"/api/direct-orders/{order_pk}/", {}, "orderer"),
    ]


@pytest.fixture
def owned_recurring(recurring_transaction, users):
    """A paid recurring payment of the owner, its series, and a direct order."""
    Transaction.objects.filter(pk=recurring_transaction.pk).update(owner=users["owner"])
    recurring_transaction.refresh_from_db()
    series = RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    order = DirectOrder.objects.create(
        community_id=recurring_transaction.community_id,
        name="Existing",
        amount=Decimal("10.00"),
        customer_name="Mona Ali",
        customer_mobile="+201001234567",
    )
    return recurring_transaction, series, order


def test_every_endpoint_answers_only_whom_it_should(api_in_process, owned_recurring, as_user):
    paid, series, order = owned_recurring
    everyone = ("owner", "other", "staff", "refunder", "capturer", "canceller", "orderer", "not_staff")
    for method, url, body, allowed in _endpoints(paid, series.pk, order.pk):
        anonymous = getattr(as_user(None), method)(url, body, format="json")
        assert anonymous.status_code == 403, (url, anonymous.content)
        for name in everyone:
            answer = getattr(as_user(name), method)(url, body, format="json")
            customer_endpoint = allowed == "owner"
            if name == allowed:
                assert answer.status_code in (200, 201), (url, name, answer.content)
            elif customer_endpoint and "/payments/" in url and method == "get" and url != "/api/payments/":
                assert answer.status_code == 404, (url, name, answer.content)  # not theirs
            elif customer_endpoint:
                assert answer.status_code in (200, 201), (url, name, answer.content)  # their own view of it
            else:
                assert answer.status_code == 403, (url, name, answer.content)
    # The refund, the capture and the cancellation happened once each, by those allowed.
    assert Refund.objects.get().requested_by.username == "refunder"
    paid.refresh_from_db()
    assert paid.capture_state == Transaction.CAPTURE_DONE
    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_DONE
    assert DirectOrder.objects.filter(created_by__username="orderer").count() == 1


def test_a_refund_over_what_is_left_is_a_409_and_a_good_one_a_201(api_in_process, paid_transaction, as_user):
    api = as_user("refunder")
    url = f"/api/payments/{paid_transaction.uuid}/refunds/"
    done = api.post(url, {"amount": "60.00"}, format="json")
    assert done.status_code == 201, done.content
    assert (done.json()["state"], done.json()["amount"], done.json()["payment"]) == (
        "succeeded",
        "60.00",
        paid_transaction.uuid,
    )
    # Each kind of refusal once: the state's (the service layer's rule, tests/app/test_state_conflict.py) is a
    # 409, bad input a 400.
    over = api.post(url, {"amount": "50.00"}, format="json")
    assert over.status_code == 409
    assert over.json()["code"] == "conflict"
    assert list(over.json()["field_errors"]) == ["amount"]
    assert "40.00" in over.json()["detail"]
    bad = api.post(url, {"amount": "-3"}, format="json")
    assert bad.status_code == 400
    assert list(bad.json()) == ["amount"]
    assert len(api_in_process.control.journal("refund")) == 1


def test_a_refund_of_unknown_outcome_is_a_202(api_in_process, paid_transaction, as_user):
    api_in_process.control.fault("refund", "drop_after")
    answer = as_user("refunder").post(f"/api/payments/{paid_transaction.uuid}/refunds/", {}, format="json")
    assert answer.status_code == 202
    assert answer.json()["state"] == "unknown"
    # Never resent: the unknown refund still holds the money, so nothing is left to ask for.
    again = as_user("refunder").post(f"/api/payments/{paid_transaction.uuid}/refunds/", {}, format="json")
    assert again.status_code == 409
    assert len(api_in_process.control.journal("refund")) == 1


def test_a_capture_of_an_unpaid_payment_is_a_409(api_in_process, pay, as_user):
    unpaid = pay("30.00", merchant_reference="unpaid")
    answer = as_user("capturer").post(f"/api/payments/{unpaid.uuid}/capture/", format="json")
    assert answer.status_code == 409
    assert answer.json()["code"] == "conflict"
    assert (
        as_user("capturer").post("/api/payments/0b0b0b0b-1111-4222-8333-444455556666/capture/").status_code
        == 404
    )


def test_a_capture_of_unknown_outcome_is_a_202(api_in_process, paid_transaction, as_user):
    api_in_process.control.fault("capture", "drop_after")
    answer = as_user("capturer").post(f"/api/payments/{paid_transaction.uuid}/capture/")
    assert answer.status_code == 202
    assert answer.json()["capture_state"] == "unknown"


def test_a_cancelled_series_cannot_be_cancelled_again(api_in_process, recurring_transaction, as_user):
    series = RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    api = as_user("canceller")
    first = api.post(f"/api/series/{series.pk}/cancel/")
    assert first.status_code == 200
    assert (first.json()["cancel_state"], first.json()["active"]) == ("cancelled", False)
    assert api.post(f"/api/series/{series.pk}/cancel/").status_code == 409
    assert api.post("/api/series/999999/cancel/").status_code == 404


def test_a_direct_order_is_created_and_read_with_field_errors_by_path(api_in_process, as_user):
    api = as_user("orderer")
    created = api.post("/api/direct-orders/", ORDER, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["state"] == DirectOrder.CREATED
    assert body["payment_link"].startswith("http")
    assert api.get(f"/api/direct-orders/{body['id']}/").json()["payment_link"] == body["payment_link"]
    assert api.get("/api/direct-orders/999999/").status_code == 404
    bad = api.post(
        "/api/direct-orders/",
        {**ORDER, "customer_mobile": "123", "recurring": {"expiry_date": "soon"}},
        format="json",
    )
    assert bad.status_code == 400
    assert {"customer_mobile", "recurring.expiry_date", "recurring.minimum_days_between_payments"} <= set(
        bad.json()
    )
    over = api.post("/api/direct-orders/", {**ORDER, "amount": "99999999.00"}, format="json")
    assert over.status_code == 400
    assert list(over.json()) == ["amount"]
    assert len(api_in_process.control.journal("direct_order")) == 1


def test_an_unreachable_service_refuses_a_refund_with_a_503(
    api_in_process, paid_transaction, as_user, settings
):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASE_URL": "http://127.0.0.1:9"}
    answer = as_user("refunder").post(f"/api/payments/{paid_transaction.uuid}/refunds/", {}, format="json")
    assert answer.status_code == 503
    assert answer.json()["code"] == "service_unavailable"
    assert Refund.objects.get().state == Refund.FAILED  # it never left: it may be asked again
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASE_URL": api_in_process.base_url}
    assert as_user("refunder").post(f"/api/payments/{paid_transaction.uuid}/refunds/").status_code == 201


@pytest.fixture
def languages_by_request(settings):
    """LocaleMiddleware on: each request in the language it asks for. It activates that language in the
    thread and leaves it active, so it is deactivated after the test, for the tests that follow."""
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.middleware.locale.LocaleMiddleware"]
    yield
    translation.deactivate()


@pytest.mark.usefixtures("languages_by_request")
def test_an_arabic_request_reads_the_service_layer_s_refusals_in_arabic(
    api_in_process, paid_transaction, as_user, settings
):
    api = as_user("refunder")
    url = f"/api/payments/{paid_transaction.uuid}/refunds/"
    # One refusal: the wording of each is the service layer's (tests/app/test_refusal_wording.py); the API's
    # own is that the request's language reaches it, in the detail and the field's errors.
    over = api.post(url, {"amount": "500.00"}, format="json", HTTP_ACCEPT_LANGUAGE="ar")
    assert over.status_code == 409
    assert over.json()["detail"] == "لا يمكن استرداد أكثر من 100.00 EGP بعد الآن."
    assert over.json()["field_errors"] == {"amount": ["لا يمكن استرداد أكثر من 100.00 EGP بعد الآن."]}
    # The same refusal to an English request, in English.
    assert api.post(url, {"amount": "500.00"}, format="json", HTTP_ACCEPT_LANGUAGE="en").json()["detail"] == (
        "At most 100.00 EGP can still be refunded."
    )
    # The service out of reach: nothing was done, in Arabic.
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASE_URL": "http://127.0.0.1:9", "MAX_NETWORK_RETRIES": 0}
    away = api.post(url, {"amount": "1.00"}, format="json", HTTP_ACCEPT_LANGUAGE="ar")
    assert away.status_code == 503
    assert away.json()["detail"] == "يتعذّر الوصول إلى خدمة الدفع؛ لم يُنفَّذ شيء. حاول مرة أخرى بعد قليل."


def test_a_direct_order_left_without_urls_comes_back_to_this_site(api_in_process, as_user):
    api = as_user("orderer")
    created = api.post(
        "/api/direct-orders/",
        {
            "name": "Hall rental",
            "amount": "750.00",
            "payment_methods": ["card"],
            "customer_name": "Mona Ali",
            "customer_email": "mona@example.com",
            "customer_mobile": "+201001234567",
        },
        format="json",
        headers={"host": "shop.example"},
    )
    assert created.status_code == 201, created.content
    [request] = api_in_process.control.journal("direct_order")
    assert request["body"]["redirect_url"] == "http://shop.example/paycollect/return/"
    assert request["body"]["callback_url"].startswith("http://shop.example/paycollect/callback/")


def test_every_amount_the_api_writes_is_text_whatever_drf_s_decimal_setting(
    api_in_process, paid_transaction, as_user, settings
):
    """A project with COERCE_DECIMAL_TO_STRING off gets JSON numbers from DRF's decimal fields: floats, for
    money. Every amount the API writes is the app's own text, so that setting changes none of them."""
    settings.REST_FRAMEWORK = {**getattr(settings, "REST_FRAMEWORK", {}), "COERCE_DECIMAL_TO_STRING": False}
    captured = as_user("capturer").post(f"/api/payments/{paid_transaction.uuid}/capture/", format="json")
    assert captured.status_code == 200, captured.content
    amounts = {
        key: captured.json()[key]
        for key in ("amount", "captured_amount", "refunded_amount", "refundable_amount")
    }
    assert all(isinstance(value, str) for value in amounts.values()), amounts
    assert amounts["amount"] == amounts["refundable_amount"] == amount_text(paid_transaction.total_amount)
    assert amounts["refunded_amount"] == "0.00"
    refund = as_user("refunder").post(
        f"/api/payments/{paid_transaction.uuid}/refunds/", {"amount": "60.00"}, format="json"
    )
    assert refund.status_code == 201, refund.content
    assert refund.json()["amount"] == "60.00"
    orderer = as_user("orderer")
    order = orderer.post("/api/direct-orders/", ORDER, format="json")
    assert order.status_code == 201, order.content
    assert order.json()["amount"] == ORDER["amount"]
    assert orderer.get(f"/api/direct-orders/{order.json()['id']}/").json()["amount"] == order.json()["amount"]
