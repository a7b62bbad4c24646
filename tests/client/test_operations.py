"""The payment operations (prepare amount, pay, fetch, capture, refund, cancel recurring, promocodes): the
exact request (method, URL, headers, body) and the parsed answer; then what every one of the ten shares.

The operations of a community's account are in ``test_operations_community.py``; failures of every operation
in ``test_errors.py`` (the error table, per operation).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from django_paycollect.client import (
    CustomFieldValue,
    Envelope,
    OperationMessage,
    PayCollectClient,
    PaymentStarted,
    PreparedAmount,
    PromocodeValidated,
    RecurringInfo,
    Transaction,
)

from .support import (
    API_KEY,
    BASE_URL,
    BILLING,
    COMMUNITY,
    OPERATION_CASES,
    PAYER_EMAIL,
    PAYER_NAME,
    PHONE,
    TX_UUID,
    OperationCase,
    assert_headers,
    assert_money_written,
    assert_success_envelope,
    envelope,
    make_client,
    only_call,
    sent_json,
    sent_text,
)

PAY_URL = BASE_URL + "/api/v1/payments/pay/variable-amount"
PAY_DATA = {
    "iframe_url": "https://pay.example.test/iframe/8b1e",
    "transaction_id": 5501,
    "transaction_uuid": TX_UUID,
    "transaction_status": "PENDING",
}
TRANSACTION_DATA = {
    "created": "2024-05-01T10:20:30.123456+03:00",
    "id": 5501,
    "uuid": TX_UUID,
    "member_id": "M-7",
    "total_amount": "150.00",
    "total_amount_currency": "EGP",
    "payment_for": "API_PAYMENT",
    "quantity": None,
    "status": "SUCCESSFUL",
    "custom_fields_json": None,
    "total_amount_piasters": 15000,
}
RECURRING_DATA = {
    "parent_transaction": "0d6f0f1e-1111-4222-8333-444455556666",
    "recurring_count": 3,
    "transaction_order": 2,
    "type": "RECURRING",
    "expiry_date": "2026-12-31",
    "minimum_days_between_payments": 30,
    "active": True,
}


# --- 1. prepare amount --------------------------------------------------------------------


def test_prepare_amount_sends_the_exact_request_and_parses_the_total(client, rsps):
    rsps.post(
        BASE_URL + "/api/v1/payments/prepare-amount/",
        json=envelope({"total_amount": 102.85, "total_amount_currency": "EGP"}),
    )

    got = client.prepare_amount(
        community_id=COMMUNITY, amount=Decimal("100"), currency="EGP", selected_payment_method="card"
    )

    request = only_call(rsps).request
    assert request.method == "POST"
    assert request.url == "https://pay.example.test/api/v1/payments/prepare-amount/"
    assert_headers(request, api_key=True)  # credentials not shown by the spec: sent when configured
    assert sent_json(request) == {
        "community_id": COMMUNITY,
        "amount": Decimal("100.00"),
        "currency": "EGP",
        "selected_payment_method": "card",
    }
    assert_money_written(sent_text(request), "amount", "100.00")
    assert_success_envelope(got, {"total_amount": Decimal("102.85"), "total_amount_currency": "EGP"})
    assert got.result == PreparedAmount(total_amount=Decimal("102.85"), total_amount_currency="EGP")
    assert isinstance(got.result.total_amount, Decimal)


def test_prepare_amount_leaves_out_optional_fields_and_works_without_an_api_key(rsps):
    keyless, _ = make_client(api_key=None, basic_credentials=None)
    rsps.post(BASE_URL + "/api/v1/payments/prepare-amount/", json=envelope({"total_amount": 50}))

    got = keyless.prepare_amount(community_id=COMMUNITY, amount="49.5")

    request = only_call(rsps).request
    assert_headers(request, api_key=False)
    assert sent_json(request) == {"community_id": COMMUNITY, "amount": Decimal("49.50")}
    assert_money_written(sent_text(request), "amount", "49.50")
    assert got.result.total_amount == Decimal(50)
    assert got.result.total_amount_currency is None


def test_prepare_amount_with_an_exponent_amount_is_written_as_plain_decimals(client, rsps):
    rsps.post(BASE_URL + "/api/v1/payments/prepare-amount/", json=envelope({}))

    client.prepare_amount(community_id=COMMUNITY, amount=Decimal("1E+2"))

    raw = sent_text(only_call(rsps).request)
    assert_money_written(raw, "amount", "100.00")
    assert "1E+2" not in raw
    assert "100.0," not in raw


# --- 2. pay -------------------------------------------------------------------------------


def test_pay_sends_billing_data_nested_and_parses_the_payment(client, rsps):
    rsps.post(PAY_URL, json=envelope(PAY_DATA))

    got = client.pay(
        community_id=COMMUNITY,
        amount=Decimal("102.85"),
        original_amount=Decimal("100"),
        variable_amount_id=12,
        billing_data=BILLING,
        membership_id="M-7",
        promocode_id=77,
        language="en",
    )

    request = only_call(rsps).request
    assert request.method == "POST"
    assert request.url == "https://pay.example.test/api/v1/payments/pay/variable-amount"  # no slash
    assert_headers(request, api_key=True)
    assert sent_json(request) == {
        "community_id": COMMUNITY,
        "amount": Decimal("102.85"),
        "original_amount": Decimal("100.00"),
        "currency": "EGP",
        "variable_amount_id": 12,
        "pay_using": "card",
        "billing_data": {"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": PHONE},
        "membership_id": "M-7",
        "promocode_id": 77,
        "language": "en",
    }
    raw = sent_text(request)
    assert_money_written(raw, "amount", "102.85")
    assert_money_written(raw, "original_amount", "100.00")
    assert_success_envelope(got, PAY_DATA)
    assert got.result == PaymentStarted(
        iframe_url=PAY_DATA["iframe_url"],
        transaction_id=5501,
        transaction_uuid=TX_UUID,
        transaction_status="PENDING",
    )
    assert got.result.extra == {}
    assert got.call is not None
    assert got.call.operation == "pay"
    assert got.call.attempts == 1
    assert got.call.http_status == 200


def test_pay_accepts_billing_data_as_a_mapping_and_sends_custom_field_values(client, rsps):
    rsps.post(PAY_URL, json=envelope(PAY_DATA))

    client.pay(
        community_id=COMMUNITY,
        amount=Decimal("10"),
        original_amount=Decimal("10"),
        variable_amount_id=3,
        billing_data={"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": PHONE},
        currency="USD",
        custom_fields=[
            CustomFieldValue("Shirt size", "XL"),
            {"field_label": "Tickets", "field_value": 2},
            CustomFieldValue("Newsletter", True),
            CustomFieldValue("Donation", Decimal("5.5")),
        ],
    )

    body = sent_json(only_call(rsps).request)
    assert body["currency"] == "USD"
    assert body["billing_data"] == {"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": PHONE}
    assert body["custom_fields"] == [
        {"field_label": "Shirt size", "field_value": "XL"},
        {"field_label": "Tickets", "field_value": 2},
        {"field_label": "Newsletter", "field_value": True},
        {"field_label": "Donation", "field_value": Decimal("5.50")},
    ]
    assert body["custom_fields"][2]["field_value"] is True


def test_pay_recurring_sends_the_three_recurring_fields(client, rsps):
    rsps.post(PAY_URL, json=envelope(PAY_DATA))

    client.pay(
        community_id=COMMUNITY,
        amount=Decimal("99.99"),
        original_amount=Decimal("99.99"),
        variable_amount_id=12,
        billing_data=BILLING,
        is_recurring=True,
        expiry_date=dt.date(2026, 12, 31),
        minimum_days_between_payments=30,
    )

    body = sent_json(only_call(rsps).request)
    assert body["is_recurring"] is True
    assert body["expiry_date"] == "2026-12-31"
    assert body["minimum_days_between_payments"] == 30
    assert_money_written(sent_text(only_call(rsps).request), "amount", "99.99")


def test_pay_with_is_recurring_false_says_so_and_sends_no_recurring_fields(client, rsps):
    rsps.post(PAY_URL, json=envelope(PAY_DATA))

    client.pay(
        community_id=COMMUNITY,
        amount=Decimal("5"),
        original_amount=Decimal("5"),
        variable_amount_id=12,
        billing_data=BILLING,
        is_recurring=False,
    )

    body = sent_json(only_call(rsps).request)
    assert body["is_recurring"] is False
    assert "expiry_date" not in body
    assert "minimum_days_between_payments" not in body


@pytest.mark.parametrize("reference_key", ["bill_refrence", "bill_reference"])
def test_pay_with_kiosk_sends_amount_and_piasters_and_parses_the_bill_reference(client, rsps, reference_key):
    data = {**PAY_DATA, "message": "Pay at any kiosk with this reference", reference_key: 88123456}
    rsps.post(PAY_URL, json=envelope(data))

    got = client.pay(
        community_id=COMMUNITY,
        amount=Decimal("150.5"),
        original_amount=Decimal("150"),
        variable_amount_id=12,
        billing_data=BILLING,
        pay_using="kiosk",
    )

    request = only_call(rsps).request
    body = sent_json(request)
    assert body["pay_using"] == "kiosk"
    assert body["amount"] == Decimal("150.50")
    assert body["amount_piasters"] == 15050
    assert type(body["amount_piasters"]) is int
    raw = sent_text(request)
    assert_money_written(raw, "amount", "150.50")
    assert '"amount_piasters": 15050' in raw
    assert got.result.message == "Pay at any kiosk with this reference"
    assert got.result.bill_reference == "88123456"
    assert got.result.extra == {}
    assert got.data[reference_key] == 88123456


def test_pay_without_kiosk_sends_no_piasters(client, rsps):
    rsps.post(PAY_URL, json=envelope(PAY_DATA))
    client.pay(
        community_id=COMMUNITY,
        amount=Decimal("1"),
        original_amount=Decimal("1"),
        variable_amount_id=1,
        billing_data=BILLING,
        pay_using="card",
    )
    assert "amount_piasters" not in sent_json(only_call(rsps).request)


def test_pay_keeps_unknown_fields_of_data(client, rsps):
    data = {**PAY_DATA, "gateway": {"name": "x", "fee": 1.5}, "expires_in": 900}
    rsps.post(PAY_URL, json=envelope(data))

    got = client.pay(
        community_id=COMMUNITY,
        amount=Decimal("1"),
        original_amount=Decimal("1"),
        variable_amount_id=1,
        billing_data=BILLING,
    )

    assert got.data["gateway"] == {"name": "x", "fee": Decimal("1.5")}
    assert got.data["expires_in"] == 900
    assert got.result.extra == {"gateway": {"name": "x", "fee": Decimal("1.5")}, "expires_in": 900}
    assert got.result.iframe_url == PAY_DATA["iframe_url"]


# --- 3. fetch transaction -----------------------------------------------------------------


def test_get_transaction_puts_the_ids_in_the_path_and_parses_the_transaction(client, rsps):
    url = f"https://pay.example.test/api/v1/communities/{COMMUNITY}/transactions/{TX_UUID}/"
    data = {**TRANSACTION_DATA, "recurring": RECURRING_DATA}
    rsps.get(url, json=envelope(data))

    got = client.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID)

    request = only_call(rsps).request
    assert request.method == "GET"
    assert request.url == url
    assert request.body is None
    assert_headers(request, api_key=True, content_type=None)
    assert_success_envelope(got, data)
    tx = got.result
    assert isinstance(tx, Transaction)
    assert tx.id == 5501
    assert tx.uuid == TX_UUID
    assert tx.status == "SUCCESSFUL"
    assert tx.status_is_known is True
    assert tx.total_amount == Decimal("150.00")
    assert isinstance(tx.total_amount, Decimal)
    assert tx.total_amount_currency == "EGP"
    assert tx.total_amount_piasters == 15000
    assert tx.created == dt.datetime(
        2024, 5, 1, 10, 20, 30, 123456, tzinfo=dt.timezone(dt.timedelta(hours=3))
    )
    assert tx.member_id == "M-7"
    assert tx.payment_for == "API_PAYMENT"
    assert tx.quantity is None
    assert tx.custom_fields_json is None
    assert tx.recurring == RecurringInfo(
        parent_transaction=RECURRING_DATA["parent_transaction"],
        recurring_count=3,
        transaction_order=2,
        type="RECURRING",
        expiry_date=dt.date(2026, 12, 31),
        minimum_days_between_payments=30,
        active=True,
    )
    assert tx.extra == {}


def test_get_transaction_quotes_path_parameters(client, rsps):
    url = BASE_URL + "/api/v1/communities/club%201%2Fx/transactions/u%3F1%23/"
    rsps.get(url, json=envelope(TRANSACTION_DATA))

    client.get_transaction(community_id="club 1/x", transaction_uuid="u?1#")

    assert only_call(rsps).request.url == url


def test_get_transaction_keeps_an_unknown_status_as_text(client, rsps):
    data = {**TRANSACTION_DATA, "status": "REFUNDED_PARTIALLY", "refunded_amount": "20.00"}
    rsps.get(
        f"{BASE_URL}/api/v1/communities/{COMMUNITY}/transactions/{TX_UUID}/",
        json=envelope(data),
    )

    tx = client.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID).result

    assert tx.status == "REFUNDED_PARTIALLY"
    assert tx.status_is_known is False
    assert tx.recurring is None
    assert tx.extra == {"refunded_amount": "20.00"}


def test_get_transaction_reads_a_cancelled_recurring_block_and_custom_fields(client, rsps):
    data = {
        **TRANSACTION_DATA,
        "status": "FAILED",
        "custom_fields_json": {"Shirt size": "XL"},
        "quantity": 2,
        "recurring": {**RECURRING_DATA, "active": False, "transaction_order": 0, "next_charge": None},
    }
    rsps.get(
        f"{BASE_URL}/api/v1/communities/{COMMUNITY}/transactions/{TX_UUID}/",
        json=envelope(data),
    )

    tx = client.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID).result

    assert tx.status_is_known is True
    assert tx.custom_fields_json == {"Shirt size": "XL"}
    assert tx.quantity == 2
    assert tx.recurring is not None
    assert tx.recurring.active is False
    assert tx.recurring.transaction_order == 0
    assert tx.recurring.extra == {"next_charge": None}


# --- 4-6. capture, refund, cancel recurring -----------------------------------------------


@pytest.mark.parametrize(
    ("operation", "path", "message", "code"),
    [
        ("capture", "/api/payments/capture-payment/", "Transaction captured successfully", 201),
        ("cancel_recurring", "/api/payments/cancel-recurring-payment/", "Recurring payment cancelled", 200),
    ],
)
def test_transaction_actions_send_the_uuid_and_parse_the_message(
    client, rsps, operation, path, message, code
):
    rsps.post(BASE_URL + path, json=envelope({"message": message}, code=code), status=code)

    got = getattr(client, operation)(transaction_uuid=TX_UUID)

    request = only_call(rsps).request
    assert request.method == "POST"
    assert request.url == "https://pay.example.test" + path
    assert_headers(request, api_key=True)
    assert sent_json(request) == {"transaction_uuid": TX_UUID}
    assert sent_text(request) == f'{{"transaction_uuid": "{TX_UUID}"}}'
    assert_success_envelope(got, {"message": message}, code=code)
    assert got.result == OperationMessage(message=message)


@pytest.mark.parametrize(("amount", "written"), [(Decimal("40.25"), "40.25"), ("100", "100.00"), (7, "7.00")])
def test_refund_sends_the_amount_with_two_decimals(client, rsps, amount, written):
    rsps.post(
        BASE_URL + "/api/payments/refund-transaction/",
        json=envelope({"message": "Transaction refunded successfully"}, code=201),
        status=201,
    )

    got = client.refund(transaction_uuid=TX_UUID, refund_amount=amount)

    request = only_call(rsps).request
    assert request.method == "POST"
    assert request.url == "https://pay.example.test/api/payments/refund-transaction/"
    assert_headers(request, api_key=True)
    assert sent_json(request) == {"transaction_uuid": TX_UUID, "refund_amount": Decimal(written)}
    assert_money_written(sent_text(request), "refund_amount", written)
    assert got.http_status == 201
    assert got.code == 201
    assert got.result.message == "Transaction refunded successfully"


# --- 7. validate promocode ----------------------------------------------------------------


PROMOCODE_URL = BASE_URL + "/api/promocodes/validate/"


def promocode_kwargs() -> dict[str, object]:
    return {
        "name": "SUMMER10",
        "community_id": COMMUNITY,
        "phone_number": "+20 100 123-4567",
        "amount": Decimal("100"),
        "currency": "EGP",
        "payment_for": "API_PAYMENT",
        "variable_amount_id": 12,
    }


PROMOCODE_BODY = {
    "name": "SUMMER10",
    "community_id": COMMUNITY,
    "phone_number": PHONE,
    "amount": Decimal("100.00"),
    "currency": "EGP",
    "payment_for": "API_PAYMENT",
    "variable_amount_id": "12",
}


def test_validate_promocode_posts_without_credentials_and_parses_the_value(client, rsps):
    rsps.post(PROMOCODE_URL, json=envelope({"value": 10.5, "currency": "EGP", "promocode_id": 77}))

    got = client.validate_promocode(**promocode_kwargs())

    request = only_call(rsps).request
    assert request.method == "POST"
    assert request.url == "https://pay.example.test/api/promocodes/validate/"
    assert_headers(request, api_key=False)  # no x-api-key, no Authorization
    assert sent_json(request) == PROMOCODE_BODY
    raw = sent_text(request)
    assert '"variable_amount_id": "12"' in raw  # a string here, unlike Pay
    assert_money_written(raw, "amount", "100.00")
    assert got.result == PromocodeValidated(value=Decimal("10.5"), currency="EGP", promocode_id=77)


def test_validate_promocode_uses_get_with_the_body_when_configured(rsps):
    getter, _ = make_client(promocode_method="GET")
    rsps.get(PROMOCODE_URL, json=envelope({"value": 5, "currency": "EGP", "promocode_id": 8}))

    got = getter.validate_promocode(**promocode_kwargs())

    request = only_call(rsps).request
    assert request.method == "GET"
    assert request.url == PROMOCODE_URL
    assert_headers(request, api_key=False)
    assert sent_json(request) == PROMOCODE_BODY
    assert got.result.promocode_id == 8


def test_validate_promocode_accepts_a_string_variable_amount_id(client, rsps):
    rsps.post(PROMOCODE_URL, json=envelope({}))
    client.validate_promocode(**{**promocode_kwargs(), "variable_amount_id": "A-12"})
    assert sent_json(only_call(rsps).request)["variable_amount_id"] == "A-12"


# --- every operation ----------------------------------------------------------------------


@pytest.mark.parametrize("case", OPERATION_CASES, ids=str)
def test_every_operation_returns_an_envelope_with_the_call_recorded(client, rsps, case: OperationCase):
    rsps.add(case.method, case.url, json=envelope({"surprise": [1, 2]}, count=3, next="n", previous="p"))

    got = case.invoke(client)

    assert isinstance(got, Envelope)
    assert got.data == {"surprise": [1, 2]}
    assert got.result.extra == {"surprise": [1, 2]}
    assert (got.count, got.next, got.previous) == (3, "n", "p")
    assert got.raw["status"]["code"] == 200
    assert got.call is not None
    assert got.call.operation == case.name
    assert got.call.method == case.method
    assert case.url.endswith(got.call.path)
    assert len(rsps.calls) == 1
    assert rsps.calls[0].request.url == case.url


def test_base_url_trailing_slash_is_not_doubled(rsps):
    slashed, _ = make_client(base_url=BASE_URL + "/")
    rsps.post(BASE_URL + "/api/payments/capture-payment/", json=envelope({}))
    slashed.capture(transaction_uuid=TX_UUID)
    assert only_call(rsps).request.url == "https://pay.example.test/api/payments/capture-payment/"


def test_base_url_with_a_path_prefix_is_kept(rsps):
    prefixed = PayCollectClient("https://gw.example.test/paycollect/", api_key=API_KEY)
    rsps.post("https://gw.example.test/paycollect/api/payments/capture-payment/", json=envelope({}))
    prefixed.capture(transaction_uuid=TX_UUID)
    assert only_call(rsps).request.url == "https://gw.example.test/paycollect/api/payments/capture-payment/"
