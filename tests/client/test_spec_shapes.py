"""Conformance: every operation called with the spec's own argument names and shapes, and the answers the
service really gives read into their typed results.

Each request test calls an operation the way the spec's field tables write it (nested objects as plain
mappings, lists as the spec's comma-separated text, names in any case) and checks the exact body that
goes out, field for field; where the client also has a typed or convenience form, both forms must send
the same bytes. Each answer test feeds a hand-made body of one variant (the spec's own form and the
forms seen in the service's documentation and SDK fixtures) and checks the typed result, with the raw
value kept.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import responses
from hypothesis import given, settings
from hypothesis import strategies as st

from django_paycollect.client import (
    Amount,
    BillingData,
    CommunityCreated,
    CustomFieldDefinition,
    CustomFieldValue,
    DashboardStatistics,
    DirectOrderCreated,
    Logo,
    OperationMessage,
    PayCollectClient,
    PaymentStarted,
    PreparedAmount,
    PromocodeValidated,
    RecurringInfo,
    Tag,
    Transaction,
    ValidationError,
)
from tests.hypothesis_profiles import examples

from .support import (
    BASE_URL,
    COMMUNITY,
    JPEG,
    PAYER_EMAIL,
    PAYER_NAME,
    PHONE,
    PNG,
    TX_UUID,
    envelope,
    parse_multipart,
    sent_json,
    sent_text,
)

PAY_URL = BASE_URL + "/api/v1/payments/pay/variable-amount"
ORDER_URL = BASE_URL + "/api/orders/create-direct-order/"
COMMUNITY_URL = BASE_URL + "/api/communities/create_community"
PREPARE_URL = BASE_URL + "/api/v1/payments/prepare-amount/"
PROMOCODE_URL = BASE_URL + "/api/promocodes/validate/"
TRANSACTION_URL = f"{BASE_URL}/api/v1/communities/{COMMUNITY}/transactions/{TX_UUID}/"


def body_sent(rsps: responses.RequestsMock, url: str, call: Callable[[], Any]) -> tuple[Any, str]:
    """Call, and return the one JSON body sent to ``url`` (parsed, and as text)."""
    rsps.post(url, json=envelope({}))
    call()
    (sent,) = rsps.calls
    rsps.calls.reset()
    return sent_json(sent.request), sent_text(sent.request)


# --- 2. Pay: billing_data, custom_fields, the recurring fields, the kiosk example -----------------------

#: Pay's body with every field of the spec's two tables, in the spec's shapes.
PAY_SPEC_BODY = {
    "community_id": COMMUNITY,
    "amount": Decimal("102.85"),
    "original_amount": Decimal("100.00"),
    "currency": "EGP",
    "variable_amount_id": 12,
    "pay_using": "card",
    "billing_data": {"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": PHONE},
    "membership_id": "M-7",
    "is_recurring": True,
    "expiry_date": "2026-12-31",
    "minimum_days_between_payments": 30,
    "promocode_id": 77,
    "custom_fields": [
        {"field_label": "Shirt size", "field_value": "XL"},
        {"field_label": "Tickets", "field_value": 2},
        {"field_label": "Newsletter", "field_value": True},
    ],
    "language": "en",
}

PAY_ARGUMENTS = {
    "spec": {
        **PAY_SPEC_BODY,
        "amount": "102.85",  # the spec's float, as exact decimal text
        "original_amount": "100",
    },
    "typed": {
        **PAY_SPEC_BODY,
        "billing_data": BillingData(PAYER_NAME, PAYER_EMAIL, PHONE),
        "expiry_date": dt.date(2026, 12, 31),
        "custom_fields": [
            CustomFieldValue("Shirt size", "XL"),
            CustomFieldValue("Tickets", 2),
            CustomFieldValue("Newsletter", True),
        ],
    },
    "any case and spaces": {
        **PAY_SPEC_BODY,
        "currency": " egp ",
        "pay_using": "Card",
    },
}


@pytest.mark.parametrize("form", PAY_ARGUMENTS, ids=str)
def test_pay_takes_the_spec_fields_in_the_spec_shapes(client, rsps, form):
    body, raw = body_sent(rsps, PAY_URL, lambda: client.pay(**PAY_ARGUMENTS[form]))
    assert body == PAY_SPEC_BODY
    assert '"amount": 102.85' in raw
    assert (
        '"billing_data": {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}'
        in raw
    )


def test_pay_with_amount_piasters_in_place_of_amount_as_the_kiosk_example(client, rsps):
    body, raw = body_sent(
        rsps,
        PAY_URL,
        lambda: client.pay(
            community_id=COMMUNITY,
            amount_piasters=15050,
            original_amount=Decimal("150.00"),
            variable_amount_id=12,
            pay_using="KIOSK",
            billing_data={"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": PHONE},
        ),
    )
    assert body["pay_using"] == "kiosk"
    assert body["amount"] == Decimal("150.50")
    assert body["amount_piasters"] == 15050
    assert '"amount": 150.50' in raw
    assert '"amount_piasters": 15050' in raw


def test_pay_with_both_amount_forms_sends_both_when_they_agree(client, rsps):
    body, _ = body_sent(
        rsps,
        PAY_URL,
        lambda: client.pay(
            community_id=COMMUNITY,
            amount="12.50",
            amount_piasters=1250,
            original_amount="12.50",
            variable_amount_id=1,
            billing_data={"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": PHONE},
        ),
    )
    assert (body["amount"], body["amount_piasters"]) == (Decimal("12.50"), 1250)


@pytest.mark.parametrize(
    ("given", "errors"),
    [
        (
            {"amount": "12.50", "amount_piasters": 1251},
            {"amount_piasters": ["Does not match amount (1250 piasters)."]},
        ),
        (
            {"amount_piasters": 0},
            {"amount_piasters": ["Must be a whole number of piasters greater than zero."]},
        ),
        (
            {"amount_piasters": Decimal("1250")},
            {"amount_piasters": ["Must be a whole number of piasters greater than zero."]},
        ),
        ({}, {"amount": ["This field is required."]}),
    ],
    ids=["disagree", "zero", "decimal", "neither"],
)
def test_pay_amount_forms_are_checked(client, rsps, given, errors):
    with pytest.raises(ValidationError) as caught:
        client.pay(
            community_id=COMMUNITY,
            original_amount="12.50",
            variable_amount_id=1,
            billing_data={"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": PHONE},
            **given,
        )
    assert caught.value.field_errors == errors
    assert not rsps.calls


# --- 10. Direct order: amount, discount_amount, payment_methods, custom_fields, tags --------------------

ORDER_SPEC_BODY = {
    "name": "Gym membership",
    "community_id": COMMUNITY,
    "amount": {"amount": Decimal("250.00"), "currency": "USD"},
    "payment_methods": ["card", "kiosk"],
    "customer_name": PAYER_NAME,
    "customer_email": PAYER_EMAIL,
    "customer_mobile": PHONE,
    "discount_amount": {"amount": Decimal("25.50"), "currency": "USD"},
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

ORDER_ARGUMENTS = {
    "spec": {
        **ORDER_SPEC_BODY,
        "amount": {"amount": "250", "currency": "USD"},
        "discount_amount": {"amount": "25.5", "currency": "USD"},
    },
    "spec, lower-case names": {
        **ORDER_SPEC_BODY,
        "amount": {"amount": Decimal("250"), "currency": "usd"},
        "discount_amount": {"amount": Decimal("25.50"), "currency": " Usd"},
        "payment_methods": ["Card", " KIOSK ", "card"],
        "custom_fields": [
            {
                "field_label": "Shirt size",
                "field_type": "dropdownlist",
                "required": True,
                "field_choices": "S, M ,L",
            },
            {"field_label": "Notes", "field_type": "text"},
            {"field_label": "Age", "field_type": "Number", "required": False},
            {"field_label": "Agree", "field_type": "checkbox"},
        ],
    },
    "typed": {
        **ORDER_SPEC_BODY,
        "amount": Amount(Decimal("250"), "USD"),
        "discount_amount": Amount(Decimal("25.50")),  # the order's currency
        "expiry_date": dt.date(2026, 12, 31),
        "payment_methods": "card, kiosk",
        "custom_fields": [
            CustomFieldDefinition("Shirt size", "DROPDOWNLIST", required=True, field_choices=["S", "M", "L"]),
            CustomFieldDefinition("Notes", "TEXT"),
            CustomFieldDefinition("Age", "NUMBER", required=False),
            CustomFieldDefinition("Agree", "CHECKBOX"),
        ],
        "tags": [Tag(1, "vip"), Tag(2, "gym")],
    },
    "convenience": {
        **ORDER_SPEC_BODY,
        "amount": Decimal("250"),
        "currency": "USD",
        "discount_amount": "25.50",
    },
    "object without its currency": {
        **ORDER_SPEC_BODY,
        "amount": {"amount": 250},
        "currency": "USD",
        "discount_amount": {"amount": "25.50"},
    },
}


@pytest.mark.parametrize("form", ORDER_ARGUMENTS, ids=str)
def test_direct_order_takes_the_spec_fields_in_the_spec_shapes(client, rsps, form):
    body, raw = body_sent(rsps, ORDER_URL, lambda: client.create_direct_order(**ORDER_ARGUMENTS[form]))
    assert body == ORDER_SPEC_BODY
    assert '"amount": {"amount": 250.00, "currency": "USD"}' in raw
    assert '"discount_amount": {"amount": 25.50, "currency": "USD"}' in raw


def test_direct_order_without_any_currency_is_in_egp(client, rsps):
    body, _ = body_sent(
        rsps,
        ORDER_URL,
        lambda: client.create_direct_order(
            **{**ORDER_SPEC_BODY, "amount": {"amount": "250.00"}, "discount_amount": {"amount": 1}}
        ),
    )
    assert body["amount"] == {"amount": Decimal("250.00"), "currency": "EGP"}
    assert body["discount_amount"] == {"amount": Decimal("1.00"), "currency": "EGP"}


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        (
            {"amount": {"amount": 250, "currency": "USD"}, "currency": "EGP"},
            {"amount.currency": ["Given twice: USD in the object, EGP apart."]},
        ),
        (
            {"discount_amount": Amount(5, "EGP"), "discount_currency": "usd"},
            {"discount_amount.currency": ["Given twice: EGP in the object, USD apart."]},
        ),
        (
            {"amount": {"amount": 250, "currency": "USD", "curency": "EGP"}},
            {"amount": ["Unknown key(s): curency. An amount object has amount and currency."]},
        ),
        ({"amount": {"currency": "USD"}}, {"amount.amount": ["This field is required."]}),
        (
            {"amount": {"amount": 250.5}},
            {"amount.amount": ["Amounts must be Decimal, int or decimal text, not float."]},
        ),
        (
            {"amount": Amount("1", "JPY")},
            {"amount.currency": ["Must be one of EGP, USD, EUR, SAR, AED, GBP."]},
        ),
        (
            {"discount_amount": {"amount": "300", "currency": "USD"}},
            {"discount_amount.amount": ["Must be less than the amount."]},
        ),
        (
            {"custom_fields": [{"field_label": "X", "field_type": "date"}]},
            {"custom_fields.0.field_type": ["Must be one of TEXT, NUMBER, CHECKBOX, DROPDOWNLIST."]},
        ),
    ],
    ids=[
        "currency-twice",
        "discount-currency-twice",
        "typo",
        "no-amount",
        "float",
        "jpy",
        "discount-too-big",
        "field-type",
    ],
)
def test_direct_order_shapes_are_checked_with_the_field_named(client, rsps, changes, errors):
    with pytest.raises(ValidationError) as caught:
        client.create_direct_order(**{**ORDER_SPEC_BODY, **changes})
    assert caught.value.field_errors == errors
    assert caught.value.sent is False
    assert not rsps.calls


# --- 8. Create community: logo, app_modules, payment_methods, the example's other fields ----------------


def community_form(rsps: responses.RequestsMock, call: Callable[[], Any]) -> tuple[dict[str, str], Any, Any]:
    rsps.post(COMMUNITY_URL, json=envelope({}))
    got = call()
    (sent,) = rsps.calls
    rsps.calls.reset()
    parts = parse_multipart(sent.request)
    logo = parts.pop("logo")
    return {name: part.content.decode() for name, part in parts.items()}, logo, got


def test_create_community_takes_the_spec_lists_as_comma_separated_text_in_any_case(client, rsps):
    form, logo, _ = community_form(
        rsps,
        lambda: client.create_community(
            name="Cairo Runners",
            logo=PNG,
            app_modules="event, service ,TRAINING",  # as the service's documentation writes it
            payment_methods="card,  KIOSK, bill-network-name",
            kiosk_processor="kiosk-network-name",
        ),
    )
    assert form == {
        "name": "Cairo Runners",
        "app_modules": "Event,Service,Training",
        "payment_methods": "Card,Kiosk,bill-network-name",  # network names: configuration, as given
        "kiosk_processor": "kiosk-network-name",
    }
    assert (logo.filename, logo.content_type, logo.content) == ("logo.png", "image/png", PNG)


def test_create_community_sends_the_examples_other_fields_and_bank_settings_as_json_text(client, rsps):
    bank = {"integration_method": "hosted", "merchant_id": "M-1", "api_password": "bank-secret"}
    form, _, got = community_form(
        rsps,
        lambda: client.create_community(
            name="Cairo Runners",
            logo=("logo.jpg", JPEG),
            order_description="Membership",
            allowed_cards=["card-scheme-a", "card-scheme-b"],
            extra_fields={"first_bank": bank, "settle_daily": True, "max_items": 3},
        ),
    )
    assert form == {
        "name": "Cairo Runners",
        "order_description": "Membership",
        "allowed_cards": '["card-scheme-a", "card-scheme-b"]',
        "first_bank": json.dumps(bank),
        "settle_daily": "true",
        "max_items": "3",
    }
    # Sent to the service, never recorded: the bank's password inside the object is masked.
    assert got.call.request_body["first_bank"] == {**bank, "api_password": "[redacted]"}
    assert "bank-secret" not in repr(got.call)


def _logo_forms(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "club-logo.jpg"
    path.write_bytes(JPEG)
    return {
        "Logo": Logo("club-logo.jpg", JPEG),
        "bytes": JPEG,
        "bytearray": bytearray(JPEG),
        "path": path,
        "path as text": str(path),
        "file object": path.open("rb"),
        "(name, bytes)": ("club-logo.jpg", JPEG),
        "(name, file object)": ("club-logo.jpg", io.BytesIO(JPEG)),
        "(name, file object, type)": ("club-logo.jpg", io.BytesIO(JPEG), "image/jpeg"),
        "(name, file object, type, headers)": ("club-logo.jpg", io.BytesIO(JPEG), "image/jpeg", {}),
        "(None, file object)": (None, path.open("rb")),
    }


LOGO_FORMS = [
    "Logo",
    "bytes",
    "bytearray",
    "path",
    "path as text",
    "file object",
    "(name, bytes)",
    "(name, file object)",
    "(name, file object, type)",
    "(name, file object, type, headers)",
    "(None, file object)",
]


@pytest.mark.parametrize("form", LOGO_FORMS)
def test_create_community_takes_the_logo_in_every_form_requests_takes(client, rsps, tmp_path, form):
    logo = _logo_forms(tmp_path)[form]
    try:
        _, sent, got = community_form(rsps, lambda: client.create_community(name="Club", logo=logo))
    finally:
        for item in (logo, *(logo if isinstance(logo, tuple) else ())):
            if hasattr(item, "close"):
                item.close()
    assert sent.content == JPEG
    assert sent.content_type == "image/jpeg"
    expected = "logo.jpg" if form in ("bytes", "bytearray") else "club-logo.jpg"
    assert sent.filename == expected
    assert got.call.request_body["logo"] == f"<{expected}, {len(JPEG)} bytes>"


# --- 1, 5, 7: prepare amount, refund and promocode in the spec's spellings -------------------------------


def test_prepare_amount_matches_currency_and_method_case_insensitively(client, rsps):
    body, _ = body_sent(
        rsps,
        PREPARE_URL,
        lambda: client.prepare_amount(
            community_id=COMMUNITY, amount="100", currency="usd ", selected_payment_method=" Kiosk"
        ),
    )
    assert body == {
        "community_id": COMMUNITY,
        "amount": Decimal("100.00"),
        "currency": "USD",
        "selected_payment_method": "kiosk",
    }


def test_refund_amount_as_text_as_the_spec_example_sends_it(client, rsps):
    body, raw = body_sent(
        rsps,
        BASE_URL + "/api/payments/refund-transaction/",
        lambda: client.refund(transaction_uuid=TX_UUID, refund_amount="40.5"),
    )
    assert body == {"transaction_uuid": TX_UUID, "refund_amount": Decimal("40.50")}
    assert '"refund_amount": 40.50' in raw


def test_validate_promocode_in_the_spec_spellings(client, rsps):
    body, _ = body_sent(
        rsps,
        PROMOCODE_URL,
        lambda: client.validate_promocode(
            name="SUMMER10",
            community_id=COMMUNITY,
            phone_number=PHONE,
            amount="100",
            currency="egp",
            payment_for="api_payment",
            variable_amount_id="12",
        ),
    )
    assert body == {
        "name": "SUMMER10",
        "community_id": COMMUNITY,
        "phone_number": PHONE,
        "amount": Decimal("100.00"),
        "currency": "EGP",
        "payment_for": "API_PAYMENT",
        "variable_amount_id": "12",
    }


# --- answers: the variants the service really sends ------------------------------------------------------


def answered(
    rsps: responses.RequestsMock, method: str, url: str, body: dict[str, Any], call: Callable[[], Any]
) -> Any:
    rsps.add(method, url, body=json.dumps(body), content_type="application/json")
    return call()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"message": "Recurring payment cancelled successfully"}, "Recurring payment cancelled successfully"),
        ({"details": "Recurring payment cancelled successfully"}, "Recurring payment cancelled successfully"),
        ({"message": "From message", "details": "From details"}, "From message"),
        ({"details": ["not", "text"]}, None),
        ({}, None),
    ],
    ids=["spec", "documentation", "both", "details-list", "neither"],
)
def test_cancel_recurring_reads_its_message_from_message_or_details(client, rsps, data, message):
    body = {
        "status": {"code": 200, "message": "success", "errors": []},
        "data": data,
        "count": None,
        "next": None,
        "previous": None,
    }
    got = answered(
        rsps,
        "POST",
        BASE_URL + "/api/payments/cancel-recurring-payment/",
        body,
        lambda: client.cancel_recurring(transaction_uuid=TX_UUID),
    )
    assert got.result.message == message
    assert got.data == data  # raw kept
    assert got.result.extra == {k: v for k, v in data.items() if k != "message"}


def test_details_fills_the_message_of_the_other_results_too():
    assert OperationMessage.from_data({"details": "Captured"}).message == "Captured"
    assert PaymentStarted.from_data({"details": "Pay at a kiosk"}).message == "Pay at a kiosk"
    assert DirectOrderCreated.from_data({"details": "Order created"}).message == "Order created"


TRANSACTION_BODY = {
    "created": "2024-05-01T10:20:30.123456+00:00",
    "id": 5501,
    "uuid": TX_UUID,
    "member_id": None,
    "total_amount": "150.00",
    "total_amount_currency": "EGP",
    "payment_for": "API_PAYMENT",
    "quantity": None,
    "status": "SUCCESSFUL",
    "total_amount_piasters": 15000,
}


@pytest.mark.parametrize(
    ("custom_fields_json", "normalised"),
    [
        ({"Shirt size": "XL", "Tickets": 2}, {"Shirt size": "XL", "Tickets": 2}),  # the spec: an object
        (
            [
                {"field_label": "Shirt size", "field_value": "XL"},
                {"field_label": "Tickets", "field_value": 2},
            ],
            {"Shirt size": "XL", "Tickets": 2},
        ),  # the SDK fixtures: what Pay sent
        ('{"Shirt size": "XL"}', {"Shirt size": "XL"}),  # JSON text of the object
        ('[{"field_label": "Newsletter", "field_value": true}]', {"Newsletter": True}),
        ([], {}),
        ({}, {}),
        (None, None),
        (
            [{"field_label": "A", "field_value": 1}, {"field_label": "A", "field_value": 2}],
            None,
        ),  # a label twice
        ([{"label": "A", "value": 1}], None),
        (["XL"], None),
        ("not json", None),
        ('"text"', None),
        (42, None),
    ],
    ids=[
        "object",
        "list",
        "object-text",
        "list-text",
        "empty-list",
        "empty-object",
        "null",
        "label-twice",
        "other-keys",
        "list-of-text",
        "not-json",
        "json-string",
        "number",
    ],
)
def test_custom_fields_json_is_read_from_an_object_or_a_list_raw_kept(
    client, rsps, custom_fields_json, normalised
):
    data = {**TRANSACTION_BODY, "custom_fields_json": custom_fields_json}
    body = {
        "status": {"code": 200, "message": "success", "errors": []},
        "data": data,
        "count": None,
        "next": None,
        "previous": None,
    }
    got = answered(
        rsps,
        "GET",
        TRANSACTION_URL,
        body,
        lambda: client.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID),
    )
    assert got.result.custom_fields_json == normalised
    assert got.result.custom_fields_json_raw == custom_fields_json
    assert got.data["custom_fields_json"] == custom_fields_json
    assert got.result.status == "SUCCESSFUL"
    assert got.result.member_id is None


@pytest.mark.parametrize(
    ("data", "total", "piasters"),
    [
        ({"total_amount": Decimal("104.50"), "total_amount_currency": "EGP"}, Decimal("104.50"), None),
        ({"total_amount_piasters": 10450, "total_amount_currency": "EGP"}, Decimal("104.50"), 10450),
        ({"total_amount_piasters": Decimal("10450.0")}, Decimal("104.50"), 10450),
        ({"total_amount": "104.50", "total_amount_piasters": 10450}, Decimal("104.50"), 10450),
        ({"total_amount_piasters": "lots"}, None, None),
        ({"total_amount_piasters": True}, None, None),
        ({"total_amount_piasters": 10**40}, None, 10**40),  # beyond any amount: kept, not made one
    ],
    ids=["spec", "piasters-only", "piasters-as-number", "both", "piasters-text", "piasters-boolean", "huge"],
)
def test_prepare_amount_derives_the_total_from_piasters_when_that_is_all_there_is(
    client, rsps, data, total, piasters
):
    body = {
        "status": {"code": 200, "message": "success", "errors": []},
        "data": data,
        "count": None,
        "next": None,
        "previous": None,
    }
    rsps.add(
        "POST",
        PREPARE_URL,
        body=json.dumps(body, default=str).replace('"10450.0"', "10450.0"),
        content_type="application/json",
    )
    got = client.prepare_amount(community_id=COMMUNITY, amount="100")
    assert got.result.total_amount == total
    assert got.result.total_amount_piasters == piasters
    assert "total_amount_piasters" not in got.result.extra


# --- unknown shapes never raise: they are kept raw --------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.decimals(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
RESULT_KEYS = sorted(
    {
        *TRANSACTION_BODY,
        "custom_fields_json",
        "recurring",
        "parent_transaction",
        "iframe_url",
        "transaction_id",
        "transaction_uuid",
        "transaction_status",
        "bill_refrence",
        "bill_reference",
        "message",
        "details",
        "value",
        "currency",
        "promocode_id",
        "balance_details",
        "total_number_of_transactions",
        "success",
        "payment_link",
    }
)
RESULTS = (
    PreparedAmount,
    PaymentStarted,
    Transaction,
    RecurringInfo,
    OperationMessage,
    PromocodeValidated,
    CommunityCreated,
    DashboardStatistics,
    DirectOrderCreated,
)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from(RESULT_KEYS) | st.text(max_size=6), JSON, max_size=8))
def test_no_shape_of_data_makes_a_typed_result_raise(data):
    for result in RESULTS:
        typed = result.from_data(data)
        # Every field the result does not read stays in extra: nothing is dropped.
        for key, value in typed.extra.items():
            assert data[key] == value


def test_a_client_reads_every_variant_without_a_django_setting():
    # The client stays plain Python: the parsing above needs no settings module.
    assert PayCollectClient.__module__ == "django_paycollect.client.client"
