"""The operations of a community's account (create a community, its dashboard statistics, a direct order):
the exact request (method, URL, headers, body) and the parsed answer. The payment operations are in
``test_operations.py``; failures of every operation in ``test_errors.py`` (the error table, per operation).
"""

from __future__ import annotations

import io
from decimal import Decimal

import pytest

from django_paycollect.client import (
    CommunityCreated,
    CustomFieldDefinition,
    DashboardStatistics,
    DirectOrderCreated,
    Logo,
    Tag,
    ValidationError,
)

from .support import (
    BASE_URL,
    COMMUNITY,
    JPEG,
    PAYER_EMAIL,
    PAYER_NAME,
    PHONE,
    PNG,
    assert_headers,
    assert_money_written,
    assert_success_envelope,
    envelope,
    make_client,
    only_call,
    parse_multipart,
    sent_json,
    sent_text,
)

# --- 8. create community ------------------------------------------------------------------

COMMUNITY_URL = BASE_URL + "/api/communities/create_community"


def test_create_community_sends_multipart_with_the_logo(client, rsps):
    rsps.post(COMMUNITY_URL, json=envelope({}))

    got = client.create_community(
        name="Cairo Runners",
        logo=Logo("brand/logo.png", PNG),
        app_modules=["Service", "Event"],
        registered_name="Cairo Runners LLC",
        address="12 Nile St, Cairo",
        email="club@example.com",
        phone="0020 100 123 4567",
        payment_methods=["Card", "Kiosk"],
        kiosk_processor="kiosk-net",
        wallet_processor="bank-a",
        redirect_successful_only="https://club.example.com/thanks",
        extra_fields={"order_description": "Membership", "api_password": "bank-secret"},
    )

    request = only_call(rsps).request
    assert request.method == "POST"
    assert request.url == "https://pay.example.test/api/communities/create_community"  # no slash
    assert_headers(request, api_key=True, content_type="multipart/form-data")
    parts = parse_multipart(request)
    assert parts["logo"].filename == "logo.png"
    assert parts["logo"].content_type == "image/png"
    assert parts["logo"].content == PNG
    fields = {name: part.content.decode() for name, part in parts.items() if name != "logo"}
    assert fields == {
        "name": "Cairo Runners",
        "app_modules": "Service,Event",
        "registered_name": "Cairo Runners LLC",
        "address": "12 Nile St, Cairo",
        "email": "club@example.com",
        "phone": PHONE,
        "payment_methods": "Card,Kiosk",
        "kiosk_processor": "kiosk-net",
        "wallet_processor": "bank-a",
        "redirect_successful_only": "https://club.example.com/thanks",
        "order_description": "Membership",
        "api_password": "bank-secret",
    }
    assert all(part.filename is None for name, part in parts.items() if name != "logo")
    assert_success_envelope(got, {})
    assert got.result == CommunityCreated()
    # The secret bank password is sent but never recorded.
    assert got.call is not None
    assert got.call.request_body["api_password"] == "[redacted]"
    assert got.call.request_body["logo"] == f"<logo.png, {len(PNG)} bytes>"
    assert "bank-secret" not in repr(got.call)


@pytest.mark.parametrize(
    ("logo", "filename", "content_type", "content"),
    [
        (("photo.jpg", JPEG), "photo.jpg", "image/jpeg", JPEG),
        (("no-extension", PNG), "no-extension", "image/png", PNG),  # judged by content
        (Logo("l.jpeg", JPEG, "image/pjpeg"), "l.jpeg", "image/pjpeg", JPEG),
        (("l.png", PNG, None), "l.png", "image/png", PNG),
    ],
)
def test_create_community_accepts_png_and_jpg_by_content(client, rsps, logo, filename, content_type, content):
    rsps.post(COMMUNITY_URL, json=envelope({}))

    client.create_community(name="Cairo Runners", logo=logo)

    parts = parse_multipart(only_call(rsps).request)
    assert set(parts) == {"name", "logo"}
    assert parts["logo"].filename == filename
    assert parts["logo"].content_type == content_type
    assert parts["logo"].content == content


def test_create_community_reads_a_binary_file_object(client, rsps, tmp_path):
    path = tmp_path / "club-logo.jpg"
    path.write_bytes(JPEG)
    rsps.post(COMMUNITY_URL, json=envelope({"community_id": "new-1"}))

    with path.open("rb") as handle:
        got = client.create_community(name="Cairo Runners", logo=handle, app_modules="Service, Bill")

    parts = parse_multipart(only_call(rsps).request)
    assert parts["logo"].filename == "club-logo.jpg"
    assert parts["logo"].content == JPEG
    assert parts["app_modules"].content == b"Service,Bill"
    assert got.result.extra == {"community_id": "new-1"}


def test_create_community_names_an_in_memory_file_without_a_name_after_its_content(client, rsps):
    rsps.post(COMMUNITY_URL, json=envelope({}))
    client.create_community(name="Cairo Runners", logo=io.BytesIO(PNG))
    parts = parse_multipart(only_call(rsps).request)
    assert parts["logo"].filename == "logo.png"  # named after its content
    assert parts["logo"].content == PNG


def test_create_community_refuses_a_text_file_locally(client, rsps, tmp_path):
    path = tmp_path / "logo.png"
    path.write_text("this is not an image\n")

    with pytest.raises(ValidationError) as caught, path.open("rb") as handle:
        client.create_community(name="Cairo Runners", logo=handle)

    assert caught.value.field_errors == {"logo": ["Must be a png or jpg image."]}
    assert caught.value.sent is False
    assert len(rsps.calls) == 0


# --- 9. dashboard statistics --------------------------------------------------------------


def test_dashboard_statistics_sends_key_and_literal_basic_credentials(client, rsps):
    data = {
        "balance_details": {"balance": 1520.75, "total_settled": 9000},
        "total_number_of_transactions": 42,
        "total_collected_transactions": 10520.75,
        "weekly_collected_transactions": 300.5,
    }
    url = f"https://pay.example.test/api/core/dashboard/statistics?community_id={COMMUNITY}"
    rsps.get(url, json=envelope(data))

    got = client.dashboard_statistics(community_id=COMMUNITY)

    request = only_call(rsps).request
    assert request.method == "GET"
    assert request.url == url
    assert request.body is None
    assert_headers(request, api_key=True, basic=True, content_type=None)
    assert request.headers["Authorization"] == "Basic merchant-user:S3cr3t-Pa55word"
    assert_success_envelope(got, data)
    assert got.result == DashboardStatistics(
        balance=Decimal("1520.75"),
        total_settled=Decimal(9000),
        total_number_of_transactions=42,
        total_collected_transactions=Decimal("10520.75"),
        weekly_collected_transactions=Decimal("300.5"),
    )


def test_dashboard_statistics_takes_basic_credentials_as_text(rsps):
    textual, _ = make_client(basic_credentials="someone:pw")
    rsps.get(f"{BASE_URL}/api/core/dashboard/statistics?community_id={COMMUNITY}", json=envelope({}))

    got = textual.dashboard_statistics(community_id=COMMUNITY)

    assert only_call(rsps).request.headers["Authorization"] == "Basic someone:pw"
    assert got.result.balance is None
    assert got.result.total_number_of_transactions is None


def test_dashboard_statistics_quotes_the_query(client, rsps):
    rsps.get(BASE_URL + "/api/core/dashboard/statistics?community_id=a%26b%3Dc", json=envelope({}))
    client.dashboard_statistics(community_id="a&b=c")
    assert only_call(rsps).request.url == BASE_URL + "/api/core/dashboard/statistics?community_id=a%26b%3Dc"


# --- 10. direct order ---------------------------------------------------------------------

ORDER_URL = BASE_URL + "/api/orders/create-direct-order/"
ORDER_DATA = {
    "success": True,
    "merchant_id": COMMUNITY,
    "payment_id": "ord-991",
    "payment_link": "https://pay.example.test/p/ord-991",
    "message": "Order created",
}


def test_create_direct_order_sends_amount_objects_tags_and_custom_field_definitions(client, rsps):
    rsps.post(ORDER_URL, json=envelope(ORDER_DATA, code=201), status=201)

    got = client.create_direct_order(
        name="Gym membership",
        community_id=COMMUNITY,
        amount=Decimal("250"),
        payment_methods=["card", "Kiosk"],
        customer_name=PAYER_NAME,
        customer_email=PAYER_EMAIL,
        customer_mobile="+20 100 123-4567",
        currency="EGP",
        discount_amount=Decimal("25.5"),
        allow_recurring_payments=True,
        expiry_date="2026-12-31",
        minimum_days_between_payments=30,
        custom_fields=[
            CustomFieldDefinition("Shirt size", "DROPDOWNLIST", required=True, field_choices=["S", "M", "L"]),
            {"field_label": "Colour", "field_type": "DROPDOWNLIST", "field_choices": "red, green ,blue"},
            CustomFieldDefinition("Notes", "TEXT"),
            CustomFieldDefinition("Age", "NUMBER", required=False),
            CustomFieldDefinition("Agree", "CHECKBOX"),
        ],
        order_description="Monthly gym membership",
        address="12 Nile St, Cairo",
        customer_title="Ms",
        vat_percentage=Decimal("14"),
        send_by_email=True,
        cc_email="accounts@example.com",
        send_by_sms=False,
        redirect_url="https://club.example.com/done",
        callback_url="https://club.example.com/hook",
        paid=False,
        tags=[Tag(1, "vip"), {"id": 2, "name": "gym"}],
    )

    request = only_call(rsps).request
    assert request.method == "POST"
    assert request.url == "https://pay.example.test/api/orders/create-direct-order/"
    assert_headers(request, api_key=True)
    assert sent_json(request) == {
        "name": "Gym membership",
        "community_id": COMMUNITY,
        "amount": {"amount": Decimal("250.00"), "currency": "EGP"},
        "payment_methods": [
            "card",
            "kiosk",
        ],  # case-insensitive at the service; sent as pay_using spells them
        "customer_name": PAYER_NAME,
        "customer_email": PAYER_EMAIL,
        "customer_mobile": PHONE,
        "discount_amount": {"amount": Decimal("25.50"), "currency": "EGP"},
        "allow_recurring_payments": True,
        "expiry_date": "2026-12-31",
        "minimum_days_between_payments": 30,
        "custom_fields": [
            {
                "field_label": "Shirt size",
                "field_type": "DROPDOWNLIST",
                "required": True,
                "field_choices": "S,M,L",
            },
            {"field_label": "Colour", "field_type": "DROPDOWNLIST", "field_choices": "red,green,blue"},
            {"field_label": "Notes", "field_type": "TEXT"},
            {"field_label": "Age", "field_type": "NUMBER", "required": False},
            {"field_label": "Agree", "field_type": "CHECKBOX"},
        ],
        "order_description": "Monthly gym membership",
        "address": "12 Nile St, Cairo",
        "customer_title": "Ms",
        "vat_percentage": Decimal("14.00"),
        "send_by_email": True,
        "cc_email": "accounts@example.com",
        "send_by_sms": False,
        "redirect_url": "https://club.example.com/done",
        "callback_url": "https://club.example.com/hook",
        "paid": False,
        "tags": [{"id": 1, "name": "vip"}, {"id": 2, "name": "gym"}],
    }
    raw = sent_text(request)
    assert '"amount": {"amount": 250.00, "currency": "EGP"}' in raw
    assert '"discount_amount": {"amount": 25.50, "currency": "EGP"}' in raw
    assert_money_written(raw, "vat_percentage", "14.00")
    assert_success_envelope(got, ORDER_DATA, code=201)
    assert got.result == DirectOrderCreated(
        success=True,
        merchant_id=COMMUNITY,
        payment_id="ord-991",
        payment_link="https://pay.example.test/p/ord-991",
        message="Order created",
    )


def test_create_direct_order_minimal_body_and_discount_in_its_own_currency(client, rsps):
    rsps.post(ORDER_URL, json=envelope({**ORDER_DATA, "order_number": 17}, code=201), status=201)

    got = client.create_direct_order(
        name="Tickets",
        community_id=COMMUNITY,
        amount="99.9",
        payment_methods=["card"],
        customer_name=PAYER_NAME,
        customer_email=PAYER_EMAIL,
        customer_mobile=PHONE,
        currency="USD",
        discount_amount=5,
        discount_currency="EGP",
    )

    body = sent_json(only_call(rsps).request)
    assert body == {
        "name": "Tickets",
        "community_id": COMMUNITY,
        "amount": {"amount": Decimal("99.90"), "currency": "USD"},
        "payment_methods": ["card"],
        "customer_name": PAYER_NAME,
        "customer_email": PAYER_EMAIL,
        "customer_mobile": PHONE,
        "discount_amount": {"amount": Decimal("5.00"), "currency": "EGP"},
    }
    assert got.result.extra == {"order_number": 17}
    assert got.data["order_number"] == 17
