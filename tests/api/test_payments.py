"""The customer's side of the REST API against the sandbox: starting a payment (the amount resolved on
the server, idempotent per reference), reading one's own payments only, and the error contract as HTTP."""

from __future__ import annotations

import socket
from decimal import Decimal

import pytest

from django_paycollect.models import Transaction
from tests.support.payments import complete

pytestmark = pytest.mark.django_db(transaction=True)

PAYMENTS = "/api/payments/"


def start(api, reference="book", **body):
    return api.post(PAYMENTS, {"reference": reference, **body}, format="json")


def test_a_payment_starts_for_the_amount_the_site_resolves_whatever_the_device_sends(
    api_in_process, as_user, users
):
    answer = start(as_user("owner"), amount="1.00", currency="USD", total_amount="1.00")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["amount"] == "100.00"
    assert body["currency"] == "EGP"
    assert (body["status"], body["state"]) == ("PENDING", "open")
    assert body["iframe_url"].startswith("http")
    assert body["reference"] == f"book-user-{users['owner'].pk}"
    txn = Transaction.objects.get(uuid=body["uuid"])
    assert txn.owner == users["owner"]
    assert txn.total_amount == Decimal("100.00")
    # The customer's details: the user's name and e-mail, the hook's phone number.
    assert (txn.customer_name, txn.customer_email, txn.customer_phone) == (
        "Owner Tester",
        "owner@example.com",
        "+201001234567",
    )
    [sent] = api_in_process.control.journal("pay")
    assert Decimal(str(sent["body"]["amount"])) == Decimal("100.00")
    # Nothing secret or internal in the public view.
    assert set(body) == {
        "uuid",
        "reference",
        "status",
        "state",
        "amount",
        "currency",
        "pay_using",
        "iframe_url",
        "bill_reference",
        "kiosk_message",
        "created_at",
        "paid_at",
    }
    assert api_in_process.api_key not in answer.content.decode()


def test_starting_again_returns_the_same_open_payment_and_sends_nothing(api_in_process, as_user):
    api = as_user("owner")
    first = start(api)
    again = start(api)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["uuid"] == first.json()["uuid"]
    assert len(api_in_process.control.journal("pay")) == 1
    assert Transaction.objects.count() == 1


def test_a_paid_reference_is_not_started_again(api_in_process, as_user):
    api = as_user("owner")
    txn = Transaction.objects.get(uuid=start(api).json()["uuid"])
    complete(api_in_process, txn)
    answer = start(api)
    assert answer.status_code == 409
    assert answer.json()["code"] == "conflict"
    assert list(answer.json()["field_errors"]) == ["reference"]
    assert len(api_in_process.control.journal("pay")) == 1


def test_anothers_open_payment_of_a_shared_reference_is_never_shown(api_in_process, as_user):
    mine = start(as_user("owner"), "shared")
    assert mine.status_code == 201
    theirs = start(as_user("other"), "shared")
    assert theirs.status_code == 409
    assert mine.json()["uuid"] not in theirs.content.decode()
    assert mine.json()["iframe_url"] not in theirs.content.decode()


def test_a_customer_reads_only_their_own_payments(api_in_process, as_user):
    owner, other = as_user("owner"), as_user("other")
    uuid = start(owner).json()["uuid"]
    assert owner.get(f"{PAYMENTS}{uuid}/").json()["uuid"] == uuid
    assert owner.get(f"{PAYMENTS}{uuid.upper().replace('-', '')}/").status_code == 200  # any spelling
    assert other.get(f"{PAYMENTS}{uuid}/").status_code == 404
    assert as_user("staff").get(f"{PAYMENTS}{uuid}/").status_code == 404  # staff act through their endpoints
    assert other.get(PAYMENTS).json()["count"] == 0
    assert owner.get(f"{PAYMENTS}not-a-uuid/").status_code == 404


def test_the_list_is_paginated_and_filtered_by_status(api_in_process, as_user):
    api = as_user("owner")
    for reference in ("book", "ticket", "pen"):
        assert start(api, reference).status_code == 201
    paid = Transaction.objects.get(merchant_reference__startswith="ticket")
    complete(api_in_process, paid)
    page = api.get(PAYMENTS, {"page_size": 2}).json()
    assert page["count"] == 3
    assert len(page["results"]) == 2
    assert page["next"]
    assert len(api.get(page["next"]).json()["results"]) == 1
    successful = api.get(PAYMENTS, {"status": "SUCCESSFUL"}).json()
    assert [p["uuid"] for p in successful["results"]] == [paid.uuid]
    assert successful["results"][0]["state"] == "paid"
    assert api.get(PAYMENTS, {"status": "pending"}).json()["count"] == 2
    assert api.get(PAYMENTS, {"reference": paid.merchant_reference}).json()["count"] == 1
    bad = api.get(PAYMENTS, {"status": "PAID-ISH"})
    assert bad.status_code == 400
    assert list(bad.json()) == ["status"]


def test_the_page_size_is_a_setting(api_in_process, as_user, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_PAGE_SIZE": 1}
    api = as_user("owner")
    start(api, "book")
    start(api, "pen")
    assert len(api.get(PAYMENTS).json()["results"]) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "reference"),
        ({"reference": ""}, "reference"),
        ({"reference": "x" * 201}, "reference"),
        ({"reference": "nothing-of-that-name"}, "reference"),
        ({"reference": "sold-out"}, "reference"),
        ({"reference": "book", "billing_data": {"phone_number": "01001234567"}}, "billing_data.phone_number"),
        ({"reference": "book", "billing_data": {"email": "not-an-address"}}, "billing_data.email"),
        ({"reference": "book", "billing_data": "a string"}, "billing_data"),
        ({"reference": "book", "billing_data": {"name": ["a", "list"]}}, "billing_data.name"),
        ({"reference": "book", "promocode": "NO-SUCH-CODE"}, "promocode"),
        ({"reference": "book", "promocode": "EXPIRED20"}, "promocode"),
    ],
)
def test_bad_bodies_are_field_errors_by_path(api_in_process, as_user, body, field):
    answer = as_user("owner").post(PAYMENTS, body, format="json")
    assert answer.status_code == 400, answer.content
    assert field in answer.json(), answer.json()
    assert all(isinstance(m, str) for messages in answer.json().values() for m in messages)
    assert api_in_process.control.journal("pay") == []


def test_a_body_that_is_not_an_object_is_a_400(api_in_process, as_user):
    api = as_user("owner")
    assert api.post(PAYMENTS, [1, 2], format="json").status_code == 400
    broken = api.generic("POST", PAYMENTS, "{not json", content_type="application/json")
    assert broken.status_code == 400


def test_a_promocode_is_checked_by_the_service_and_applied(api_in_process, as_user):
    answer = start(as_user("owner"), promocode="SAVE10")
    assert answer.status_code == 201, answer.content
    txn = Transaction.objects.get(uuid=answer.json()["uuid"])
    assert txn.promocode_id is not None
    [sent] = api_in_process.control.journal("pay")
    assert sent["body"]["promocode_id"] == txn.promocode_id


def test_an_unknown_outcome_is_a_202_and_never_sent_again(api_in_process, as_user):
    api_in_process.control.fault("pay", "drop_after")  # the service did the work; the answer is lost
    api = as_user("owner")
    first = start(api)
    assert first.status_code == 202
    assert (first.json()["state"], first.json()["uuid"]) == ("unknown", None)
    again = start(api)
    assert again.status_code == 202
    assert len(api_in_process.control.journal("pay")) == 1
    assert api.get(PAYMENTS).json()["results"][0]["state"] == "unknown"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_service_is_a_503_with_a_stable_code(api_in_process, as_user, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASE_URL": f"http://127.0.0.1:{_closed_port()}"}
    answer = start(as_user("owner"))
    assert answer.status_code == 503
    assert answer.json()["code"] == "service_unavailable"
    assert "127.0.0.1" not in answer.content.decode()  # the service's address is not the device's business
    assert as_user("owner").post(
        "/api/promocodes/validate/", {"reference": "book", "promocode": "SAVE10"}, format="json"
    ).json() == {"code": "service_unavailable", "detail": answer.json()["detail"]}
    # Nothing happened at the service: asking again, once it is back, starts it.
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASE_URL": api_in_process.base_url}
    assert start(as_user("owner")).status_code == 201


def test_a_busy_service_passes_its_wait_on(api_in_process, as_user, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "FEES_IN_BILL": True}
    api_in_process.control.fault("prepare_amount", "status", status=429, times=None)
    answer = as_user("owner").post("/api/quotes/", {"reference": "book"}, format="json")
    assert answer.status_code == 503
    assert answer.json()["code"] == "service_unavailable"


def test_a_broken_payable_hook_is_a_503_told_to_the_logs_not_the_device(
    api_in_process, as_user, settings, caplog
):
    answer = start(as_user("owner"), "float-priced")
    assert answer.status_code == 503
    assert answer.json()["code"] == "configuration"
    assert "PAYABLE_RESOLVER" not in answer.content.decode()
    assert "PAYABLE_RESOLVER" in caplog.text
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "PAYABLE_RESOLVER": "tests.api.payables.nothing_here"}
    assert start(as_user("owner")).status_code == 503
    assert api_in_process.control.journal("pay") == []


def test_a_misconfigured_service_layer_is_the_same_503_told_to_the_logs(
    api_in_process, as_user, settings, caplog
):
    # Outside the error contract (an ImproperlyConfigured), and still answered, never a 500.
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": ""}
    answer = start(as_user("owner"))
    assert answer.status_code == 503
    assert answer.json() == {
        "code": "configuration",
        "detail": "Payments are not available right now; the site's staff have been told.",
    }
    assert "settings.PAYCOLLECT['API_KEY'] is required" in caplog.text
    assert api_in_process.control.journal("pay") == []


def test_a_quote_adds_the_services_fees_to_the_resolved_amount(api_in_process, as_user, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "FEES_IN_BILL": True}
    answer = as_user("owner").post(
        "/api/quotes/", {"reference": "ticket", "pay_using": "card"}, format="json"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["amount"] == "250.00"
    assert Decimal(body["total_amount"]) == Decimal(body["amount"]) + Decimal(body["fees"])
    assert Decimal(body["fees"]) > 0
    assert as_user("owner").post("/api/quotes/", {"reference": "sold-out"}, format="json").status_code == 400
    # And the payment charges that total.
    paid = as_user("owner").post(
        "/api/payments/", {"reference": "ticket", "pay_using": "card"}, format="json"
    )
    assert paid.json()["amount"] == body["total_amount"]


def test_without_fees_in_the_bill_a_quote_is_the_amount_and_asks_nothing(api_in_process, as_user):
    answer = as_user("owner").post("/api/quotes/", {"reference": "ticket"}, format="json")
    assert answer.status_code == 200
    assert (answer.json()["total_amount"], answer.json()["fees"]) == ("250.00", "0.00")
    assert api_in_process.control.journal("prepare_amount") == []


def test_a_promocode_is_validated_for_the_resolved_amount(api_in_process, as_user):
    api = as_user("owner")
    good = api.post("/api/promocodes/validate/", {"reference": "book", "promocode": "FLAT25"}, format="json")
    assert good.status_code == 200, good.content
    assert (good.json()["valid"], good.json()["value"]) == (True, "25.00")
    # FLAT25 needs at least 100.00: a pen (12.50) is refused, naming the field.
    small = api.post("/api/promocodes/validate/", {"reference": "pen", "promocode": "FLAT25"}, format="json")
    assert small.status_code == 400
    assert list(small.json()) == ["promocode"]


def test_session_authentication_needs_the_csrf_token(api_in_process, users):
    from rest_framework.test import APIClient

    api = APIClient(enforce_csrf_checks=True)
    api.force_login(users["owner"])
    refused = start(api)
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert api_in_process.control.journal("pay") == []


def test_a_project_with_atomic_requests_starts_payments_too(api_in_process, as_user, monkeypatch):
    from django.db import connection

    # The service layer refuses to run inside a transaction; the API's views are non-atomic.
    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)
    assert start(as_user("owner")).status_code == 201


def test_a_promocode_check_without_any_phone_names_the_phone_not_the_promocode(api_in_process, as_user):
    # The member has no phone, the payable knows none, and none is sent: the service needs one.
    api = as_user("owner")
    check = api.post("/api/promocodes/validate/", {"reference": "gift", "promocode": "SAVE10"}, format="json")
    assert check.status_code == 400, check.content
    assert list(check.json()) == ["phone_number"]
    started = api.post(PAYMENTS, {"reference": "gift", "promocode": "SAVE10"}, format="json")
    assert started.status_code == 400, started.content
    assert list(started.json()) == ["billing_data.phone_number"]
    assert api_in_process.control.journal("validate_promocode") == []  # refused before anything was sent
    assert api_in_process.control.journal("pay") == []
    # The same code, with a phone, is valid: it was the phone that was missing.
    given = {"reference": "gift", "promocode": "SAVE10", "phone_number": "+201001234567"}
    valid = api.post("/api/promocodes/validate/", given, format="json")
    assert valid.status_code == 200, valid.content
    assert (valid.json()["valid"], valid.json()["value"]) == (True, "10.00")
    assert len(api_in_process.control.journal("validate_promocode")) == 1


def test_a_promocode_the_service_refuses_or_does_not_know_reads_in_the_app_s_words(api_in_process, as_user):
    api = as_user("owner")
    refused = api.post(PAYMENTS, {"reference": "book", "promocode": "NO-SUCH-CODE"}, format="json")
    assert refused.json()["promocode"] == ["This promocode is unknown or no longer valid."]
    # A 404 for it (the spec does not say what the service answers): the same words, not the client's.
    api_in_process.control.fault("validate_promocode", "status", status=404, times=1)
    unknown = api.post(PAYMENTS, {"reference": "book", "promocode": "SAVE10"}, format="json")
    assert unknown.status_code == 400, unknown.content
    assert unknown.json()["promocode"] == ["This promocode is unknown or no longer valid."]
