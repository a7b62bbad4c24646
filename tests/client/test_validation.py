"""Local validation: every bad argument is reported with its field, together, and nothing is sent."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from django_paycollect.client import (
    BillingData,
    CustomFieldDefinition,
    CustomFieldValue,
    Logo,
    Tag,
    ValidationError,
)
from django_paycollect.client.validation import MESSAGES, PHONE_MESSAGES, normalise_phone

from .support import (
    BASE_URL,
    BILLING,
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
)


def pay_kwargs(**changes: Any) -> dict[str, Any]:
    return {
        "community_id": COMMUNITY,
        "amount": Decimal("100"),
        "original_amount": Decimal("100"),
        "variable_amount_id": 12,
        "billing_data": BILLING,
        **changes,
    }


def order_kwargs(**changes: Any) -> dict[str, Any]:
    return {
        "name": "Gym membership",
        "community_id": COMMUNITY,
        "amount": Decimal("250"),
        "payment_methods": ["card"],
        "customer_name": PAYER_NAME,
        "customer_email": PAYER_EMAIL,
        "customer_mobile": PHONE,
        **changes,
    }


def promocode_kwargs(**changes: Any) -> dict[str, Any]:
    return {
        "name": "SUMMER10",
        "community_id": COMMUNITY,
        "phone_number": PHONE,
        "amount": Decimal("100"),
        "currency": "EGP",
        "payment_for": "API_PAYMENT",
        "variable_amount_id": 12,
        **changes,
    }


def refused(rsps: Any, call: Any) -> dict[str, list[str]]:
    """Run ``call``; it must raise a local ValidationError and send nothing. Returns field_errors."""
    with pytest.raises(ValidationError) as caught:
        call()
    error = caught.value
    assert error.sent is False
    assert error.http_status is None
    assert error.envelope is None
    assert error.field_errors
    assert len(rsps.calls) == 0, "nothing may be sent after a local validation error"
    for path, messages in error.field_errors.items():
        assert f"{path}: " in str(error)
        assert all(isinstance(m, str) and m for m in messages)
    # Each message comes with its problem: a code of MESSAGES and the parameters its words were made of.
    assert {path: [p.message for p in items] for path, items in error.problems.items()} == error.field_errors
    for problem in (p for items in error.problems.values() for p in items):
        assert problem.code in MESSAGES
        assert str(problem) == problem.message
    return error.field_errors


def test_problems_carry_stable_codes_and_the_parameters_of_their_words(client, rsps):
    with pytest.raises(ValidationError) as caught:
        client.pay(
            **pay_kwargs(
                currency="XYZ",
                amount=Decimal("10.001"),
                billing_data={"name": "Mona", "email": PAYER_EMAIL, "phone_number": "0100"},
                is_recurring=False,
                expiry_date=dt.date(2030, 1, 1),
            )
        )
    problems = {
        path: [(p.code, dict(p.params)) for p in items] for path, items in caught.value.problems.items()
    }
    assert problems == {
        "currency": [("one_of", {"choices": ("EGP", "USD", "EUR", "SAR", "AED", "GBP")})],
        "amount": [("amount_decimals", {"value": "10.001"})],
        "billing_data.name": [("name_one_word", {})],
        "billing_data.phone_number": [("phone_no_plus", {})],
        "expiry_date": [("only_when_recurring", {"flag": "is_recurring"})],
    }
    assert len(rsps.calls) == 0


# --- currencies ---------------------------------------------------------------------------


@pytest.mark.parametrize("currency", ["XYZ", "", " ", "E GP", 1, b"EGP"])
def test_pay_currency_must_be_in_the_list(client, rsps, currency):
    errors = refused(rsps, lambda: client.pay(**pay_kwargs(currency=currency)))
    assert errors == {"currency": ["Must be one of EGP, USD, EUR, SAR, AED, GBP."]}


def test_currency_is_checked_in_every_operation(client, rsps):
    assert "currency" in refused(
        rsps, lambda: client.prepare_amount(community_id="c", amount=1, currency="JPY")
    )
    assert "currency" in refused(rsps, lambda: client.validate_promocode(**promocode_kwargs(currency="JPY")))
    assert "currency" in refused(rsps, lambda: client.validate_promocode(**promocode_kwargs(currency="")))
    assert "amount.currency" in refused(
        rsps, lambda: client.create_direct_order(**order_kwargs(currency="JPY"))
    )
    errors = refused(
        rsps,
        lambda: client.create_direct_order(
            **order_kwargs(discount_amount=Decimal(1), discount_currency="BTC")
        ),
    )
    assert set(errors) == {"discount_amount.currency"}


@pytest.mark.parametrize("currency", ["EGP", "USD", "EUR", "SAR", "AED", "GBP"])
def test_every_listed_currency_is_accepted(client, rsps, currency):
    rsps.post(BASE_URL + "/api/v1/payments/pay/variable-amount", json=envelope({}))
    client.pay(**pay_kwargs(currency=currency))
    assert sent_json(rsps.calls[0].request)["currency"] == currency


# --- amounts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        (Decimal("0"), "Must be greater than zero."),
        (Decimal("-5"), "Must be greater than zero."),
        (0, "Must be greater than zero."),
        ("-0.01", "Must be greater than zero."),
        (Decimal("10.001"), "10.001 has more than two decimals."),
        ("1.999", "1.999 has more than two decimals."),
        ("ten", "'ten' is not a decimal amount."),
        (Decimal("NaN"), "Decimal('NaN') is not a finite amount."),
        (True, "Amounts must be Decimal, int or decimal text, not bool."),
        (None, "This field is required."),
    ],
)
def test_amount_must_be_positive_with_at_most_two_decimals(client, rsps, amount, message):
    errors = refused(rsps, lambda: client.prepare_amount(community_id=COMMUNITY, amount=amount))
    assert errors == {"amount": [message]}


def test_each_amount_argument_is_named(client, rsps):
    assert set(refused(rsps, lambda: client.pay(**pay_kwargs(original_amount=Decimal("0.001"))))) == {
        "original_amount"
    }
    assert set(refused(rsps, lambda: client.refund(transaction_uuid=TX_UUID, refund_amount=0))) == {
        "refund_amount"
    }
    assert set(refused(rsps, lambda: client.create_direct_order(**order_kwargs(amount=-1)))) == {
        "amount.amount"
    }
    assert set(refused(rsps, lambda: client.validate_promocode(**promocode_kwargs(amount="0")))) == {"amount"}


@pytest.mark.parametrize("discount", [Decimal("250"), Decimal("250.01"), Decimal("1000")])
def test_discount_must_be_less_than_the_amount(client, rsps, discount):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(discount_amount=discount)))
    assert errors == {"discount_amount.amount": ["Must be less than the amount."]}


def test_discount_itself_must_be_an_amount(client, rsps):
    errors = refused(
        rsps, lambda: client.create_direct_order(**order_kwargs(discount_amount=Decimal("1.005")))
    )
    assert set(errors) == {"discount_amount.amount"}


@pytest.mark.parametrize(
    ("vat", "message"),
    [
        (Decimal("101"), "Must be between 0 and 100."),
        (Decimal("-1"), "Must be between 0 and 100."),
        ("abc", "Must be a Decimal percentage with at most two decimals."),
        (Decimal("14.005"), "Must be a Decimal percentage with at most two decimals."),
    ],
)
def test_vat_percentage_is_a_percentage(client, rsps, vat, message):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(vat_percentage=vat)))
    assert errors == {"vat_percentage": [message]}


# --- names, e-mails, phones ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["Mona", "  Mona  ", "", 42, "<b> </b>", "\U0001f600 \U0001f600", "Mona 123"]
)
def test_billing_name_needs_first_and_last_name(client, rsps, name):
    billing = BillingData(name, PAYER_EMAIL, PHONE)
    errors = refused(rsps, lambda: client.pay(**pay_kwargs(billing_data=billing)))
    assert set(errors) == {"billing_data.name"}


def test_customer_name_needs_first_and_last_name(client, rsps):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(customer_name="Mona")))
    assert errors == {"customer_name": ["Must contain a first and a last name separated by a space."]}


@pytest.mark.parametrize("email", ["mona", "mona@example", "mona @example.com", ""])
def test_emails_are_checked(client, rsps, email):
    errors = refused(
        rsps, lambda: client.pay(**pay_kwargs(billing_data=BillingData(PAYER_NAME, email, PHONE)))
    )
    assert set(errors) == {"billing_data.email"}
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(cc_email=email or "x")))
    assert set(errors) == {"cc_email"}


@pytest.mark.parametrize(
    ("phone", "problem"),
    [
        ("01001234567", "no_plus"),
        ("1001234567", "no_plus"),
        ("phone", "no_plus"),
        ("+0 100 123 4567", "country_code"),
        ("+20", "too_short"),
        ("+", "too_short"),
        ("+20abc1234567", "not_digits"),
        ("+٢٠١٠٠١٢٣٤٥٦٧", "not_digits"),  # digits, but not the ASCII ones the service reads
        ("+2010012345678901", "too_long"),
    ],
)
def test_phone_needs_a_country_code(client, rsps, phone, problem):
    errors = refused(
        rsps, lambda: client.pay(**pay_kwargs(billing_data=BillingData(PAYER_NAME, PAYER_EMAIL, phone)))
    )
    assert errors == {"billing_data.phone_number": [PHONE_MESSAGES[problem]]}
    assert set(refused(rsps, lambda: client.create_direct_order(**order_kwargs(customer_mobile=phone)))) == {
        "customer_mobile"
    }
    assert set(refused(rsps, lambda: client.validate_promocode(**promocode_kwargs(phone_number=phone)))) == {
        "phone_number"
    }
    assert set(
        refused(rsps, lambda: client.create_community(name="Club", logo=("l.png", PNG), phone=phone))
    ) == {"phone"}


@pytest.mark.parametrize(
    "phone",
    ["+20 100 123-4567", "0020 100 123 4567", "00201001234567", "+20 (100) 123.4567", " +201001234567 "],
)
def test_phone_is_normalised_and_sent_normalised(client, rsps, phone):
    assert normalise_phone(phone) == PHONE
    rsps.post(BASE_URL + "/api/v1/payments/pay/variable-amount", json=envelope({}))
    rsps.post(BASE_URL + "/api/orders/create-direct-order/", json=envelope({}))
    rsps.post(BASE_URL + "/api/promocodes/validate/", json=envelope({}))

    client.pay(**pay_kwargs(billing_data={"name": PAYER_NAME, "email": PAYER_EMAIL, "phone_number": phone}))
    client.create_direct_order(**order_kwargs(customer_mobile=phone))
    client.validate_promocode(**promocode_kwargs(phone_number=phone))

    bodies = [sent_json(call.request) for call in rsps.calls]
    assert bodies[0]["billing_data"]["phone_number"] == PHONE
    assert bodies[1]["customer_mobile"] == PHONE
    assert bodies[2]["phone_number"] == PHONE


def test_billing_data_of_the_wrong_type_is_named(client, rsps):
    errors = refused(rsps, lambda: client.pay(**pay_kwargs(billing_data=(PAYER_NAME, PAYER_EMAIL, PHONE))))
    assert errors == {"billing_data": ["Must be BillingData(name, email, phone_number)."]}


def test_billing_data_mapping_with_missing_keys_names_each(client, rsps):
    errors = refused(rsps, lambda: client.pay(**pay_kwargs(billing_data={"name": PAYER_NAME})))
    assert errors == {
        "billing_data.email": ["This field is required."],
        "billing_data.phone_number": ["This field is required."],
    }


# --- ids and text -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -3, True, "12", 1.0, None])
def test_variable_amount_id_is_a_positive_integer(client, rsps, value):
    assert set(refused(rsps, lambda: client.pay(**pay_kwargs(variable_amount_id=value)))) == {
        "variable_amount_id"
    }


def test_promocode_id_is_a_positive_integer(client, rsps):
    assert set(refused(rsps, lambda: client.pay(**pay_kwargs(promocode_id=0)))) == {"promocode_id"}


@pytest.mark.parametrize("value", ["", "   ", None, 5])
def test_ids_must_be_non_empty_text(client, rsps, value):
    assert set(refused(rsps, lambda: client.capture(transaction_uuid=value))) == {"transaction_uuid"}
    assert set(refused(rsps, lambda: client.cancel_recurring(transaction_uuid=value))) == {"transaction_uuid"}
    assert set(refused(rsps, lambda: client.dashboard_statistics(community_id=value))) == {"community_id"}
    assert set(refused(rsps, lambda: client.get_transaction(community_id=value, transaction_uuid=value))) == {
        "community_id",
        "transaction_uuid",
    }


def test_text_fields_are_stripped_before_sending(client, rsps):
    rsps.post(BASE_URL + "/api/payments/capture-payment/", json=envelope({}))
    client.capture(transaction_uuid=f"  {TX_UUID}\n")
    assert sent_json(rsps.calls[0].request) == {"transaction_uuid": TX_UUID}


@pytest.mark.parametrize("value", [None, True])
def test_promocode_variable_amount_id_none_is_refused(client, rsps, value):
    rsps.post(BASE_URL + "/api/promocodes/validate/", json=envelope({}))
    refused(rsps, lambda: client.validate_promocode(**promocode_kwargs(variable_amount_id=value)))


# --- recurring ----------------------------------------------------------------------------


@pytest.mark.parametrize("days", [0, -1, True, False, "30", 7.0])
def test_minimum_days_between_payments_is_a_positive_integer(client, rsps, days):
    errors = refused(
        rsps,
        lambda: client.pay(
            **pay_kwargs(is_recurring=True, expiry_date="2026-12-31", minimum_days_between_payments=days)
        ),
    )
    assert errors == {"minimum_days_between_payments": ["Must be a whole number greater than zero."]}


@pytest.mark.parametrize(
    ("expiry", "message"),
    [
        ("31/12/2026", "Must be a date (datetime.date or YYYY-MM-DD)."),
        ("2026-13-01", "Must be a date (datetime.date or YYYY-MM-DD)."),
        (20261231, "Must be a date (datetime.date or YYYY-MM-DD)."),
        (dt.datetime(2026, 12, 31, 10, 0), "Must be a date, not a date and time."),
    ],
)
def test_expiry_date_must_be_a_date(client, rsps, expiry, message):
    errors = refused(
        rsps,
        lambda: client.create_direct_order(
            **order_kwargs(
                allow_recurring_payments=True, expiry_date=expiry, minimum_days_between_payments=30
            )
        ),
    )
    assert errors == {"expiry_date": [message]}


@pytest.mark.parametrize("flag", [None, False])
def test_recurring_fields_without_the_flag_are_refused(client, rsps, flag):
    errors = refused(
        rsps,
        lambda: client.pay(
            **pay_kwargs(
                is_recurring=flag, expiry_date=dt.date(2026, 12, 31), minimum_days_between_payments=30
            )
        ),
    )
    assert errors == {
        "expiry_date": ["Only allowed when is_recurring is true."],
        "minimum_days_between_payments": ["Only allowed when is_recurring is true."],
    }


def test_the_flag_without_recurring_fields_is_refused(client, rsps):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(allow_recurring_payments=True)))
    assert errors == {
        "expiry_date": ["This field is required."],
        "minimum_days_between_payments": ["This field is required."],
    }


def test_the_flag_must_be_a_boolean(client, rsps):
    errors = refused(rsps, lambda: client.pay(**pay_kwargs(is_recurring="yes")))
    assert errors == {"is_recurring": ["Must be true or false."]}


@pytest.mark.parametrize("name", ["send_by_email", "send_by_sms", "paid"])
def test_order_booleans_must_be_booleans(client, rsps, name):
    assert refused(rsps, lambda: client.create_direct_order(**order_kwargs(**{name: 1}))) == {
        name: ["Must be true or false."]
    }


# --- direct order structures --------------------------------------------------------------


@pytest.mark.parametrize("choices", [None, "", " , ", [], ["", "  "]])
def test_dropdownlist_needs_choices(client, rsps, choices):
    field = CustomFieldDefinition("Size", "DROPDOWNLIST", field_choices=choices)
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(custom_fields=[field])))
    assert errors == {"custom_fields.0.field_choices": ["A DROPDOWNLIST needs at least one choice."]}


def test_dropdownlist_choices_may_not_hold_commas(client, rsps):
    field = CustomFieldDefinition("Size", "DROPDOWNLIST", field_choices=["S", "M, L"])
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(custom_fields=[field])))
    assert errors == {
        "custom_fields.0.field_choices": ["Choices are sent comma-separated, so none may hold a comma."]
    }


def test_custom_field_definitions_are_checked_per_item(client, rsps):
    fields = [
        CustomFieldDefinition("Ok", "TEXT"),
        CustomFieldDefinition("Bad type", "DATE"),
        CustomFieldDefinition("Choices on text", "TEXT", field_choices="a,b"),
        {"field_label": "", "field_type": "NUMBER", "required": "yes"},
        "not a definition",
    ]
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(custom_fields=fields)))
    assert errors == {
        "custom_fields.1.field_type": ["Must be one of TEXT, NUMBER, CHECKBOX, DROPDOWNLIST."],
        "custom_fields.2.field_choices": ["Only a DROPDOWNLIST has choices."],
        "custom_fields.3.field_label": ["Must be a non-empty string."],
        "custom_fields.3.required": ["Must be true or false."],
        "custom_fields.4": ["Must be CustomFieldDefinition(field_label, field_type, ...)."],
    }


def test_custom_fields_must_be_a_list(client, rsps):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(custom_fields="Size")))
    assert errors == {"custom_fields": ["Must be a list."]}


@pytest.mark.parametrize(
    ("tag", "path"),
    [
        (Tag(0, "vip"), "tags.0.id"),
        (Tag(True, "vip"), "tags.0.id"),  # type: ignore[arg-type]
        ({"id": "1", "name": "vip"}, "tags.0.id"),
        ({"id": 1, "name": ""}, "tags.0.name"),
        ({"id": 1}, "tags.0.name"),
        ("vip", "tags.0"),
        (1, "tags.0"),
    ],
)
def test_bad_tags_are_named(client, rsps, tag, path):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(tags=[tag])))
    assert set(errors) == {path}


def test_tags_must_be_a_list(client, rsps):
    assert refused(rsps, lambda: client.create_direct_order(**order_kwargs(tags=Tag(1, "vip")))) == {
        "tags": ["Must be a list."]
    }


@pytest.mark.parametrize("methods", [[], ["card", ""], ["card", 3], " , ", b"card", {"card": True}])
def test_payment_methods_must_be_a_non_empty_list_of_names(client, rsps, methods):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(payment_methods=methods)))
    assert "payment_methods" in errors


def test_payment_methods_are_required(client, rsps):
    errors = refused(rsps, lambda: client.create_direct_order(**order_kwargs(payment_methods=None)))
    assert errors == {"payment_methods": ["This field is required."]}


# --- pay custom field values --------------------------------------------------------------


def test_pay_custom_field_values_are_checked(client, rsps):
    values = [
        CustomFieldValue("Ok", "x"),
        CustomFieldValue("Float", 1.5),
        {"field_label": "", "field_value": "x"},
        {"field_label": "List", "field_value": ["a"]},
        ("Tuple", "x"),
    ]
    errors = refused(rsps, lambda: client.pay(**pay_kwargs(custom_fields=values)))
    assert errors == {
        "custom_fields.1.field_value": ["Must be a string, an int, a Decimal or a boolean."],
        "custom_fields.2.field_label": ["Must be a non-empty string."],
        "custom_fields.3.field_value": ["Must be a string, an int, a Decimal or a boolean."],
        "custom_fields.4": ["Must be CustomFieldValue(field_label, field_value)."],
    }


def test_pay_custom_fields_must_be_a_list(client, rsps):
    errors = refused(rsps, lambda: client.pay(**pay_kwargs(custom_fields={"field_label": "x"})))
    assert errors == {"custom_fields": ["Must be a list."]}


# --- community ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "logo",
    [
        ("logo.png", b"GIF89a" + bytes(10)),
        ("logo.png", b"plain text"),
        ("logo.png", b""),
        Logo("logo.jpg", b"<svg/>"),
    ],
)
def test_logo_must_be_png_or_jpg_content(client, rsps, logo):
    errors = refused(rsps, lambda: client.create_community(name="Club", logo=logo))
    assert errors == {"logo": ["Must be a png or jpg image."]}


@pytest.mark.parametrize(
    "logo",
    [("logo.png", "text not bytes"), 42, ("a",), (7, PNG), ("l.png", PNG, "image/png", {}, "x"), [PNG]],
)
def test_logo_must_be_a_logo_bytes_a_file_a_path_or_a_tuple(client, rsps, logo):
    errors = refused(rsps, lambda: client.create_community(name="Club", logo=logo))
    assert errors == {
        "logo": [
            "Must be Logo(filename, content), bytes, a binary file, a path, "
            "or a (filename, bytes or file[, content_type]) tuple."
        ]
    }


def test_a_logo_path_that_cannot_be_read_is_named(client, rsps, tmp_path):
    missing = tmp_path / "logo.png"
    errors = refused(rsps, lambda: client.create_community(name="Club", logo=str(missing)))
    assert errors == {"logo": [f"Cannot read the file {str(missing)!r}: No such file or directory."]}


def test_a_logo_opened_in_text_mode_is_refused(client, rsps, tmp_path):
    path = tmp_path / "logo.png"
    path.write_bytes(PNG)
    with path.open(encoding="latin-1") as handle:
        errors = refused(rsps, lambda: client.create_community(name="Club", logo=handle))
    assert errors == {"logo": ["Open the file in binary mode ('rb')."]}


def test_logo_is_required(client, rsps):
    assert refused(rsps, lambda: client.create_community(name="Club", logo=None)) == {
        "logo": ["This field is required."]
    }


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        (
            ["Service", "Gym"],
            "Unknown: Gym. Allowed: Service, Bill, Event, Product, Training, Sport, Course.",
        ),
        ("service, gym", "Unknown: gym. Allowed: Service, Bill, Event, Product, Training, Sport, Course."),
        ([], "Must name at least one."),
        (" , ", "Must name at least one."),
        (["Service", ""], "Each name must be a non-empty string."),
        (["Service", 3], "Each name must be a non-empty string."),
        ({"Service": True}, "Must be a list of names or comma-separated text."),
        (7, "Must be a list of names or comma-separated text."),
    ],
)
def test_app_modules_come_from_the_spec_list(client, rsps, modules, message):
    errors = refused(
        rsps, lambda: client.create_community(name="Club", logo=("l.png", PNG), app_modules=modules)
    )
    assert errors == {"app_modules": [message]}


def test_community_extra_fields_must_be_text_numbers_booleans_or_json(client, rsps):
    errors = refused(
        rsps,
        lambda: client.create_community(
            name="Club",
            logo=("l.jpg", JPEG),
            extra_fields={"allowed_cards": {"card-scheme-a"}, "settings": {"fee": 1.5}, "rate": 0.5},
        ),
    )
    message = ["Must be text, a whole number, a Decimal, a boolean, or a JSON object or list of those."]
    assert errors == {"allowed_cards": message, "settings": message, "rate": message}


def test_community_extra_fields_never_override_checked_fields(client, rsps):
    rsps.post(BASE_URL + "/api/communities/create_community", json=envelope({}))
    client.create_community(
        name="Club", logo=("l.png", PNG), extra_fields={"name": "Other", "allowed_cards": "card-scheme-a"}
    )
    parts = parse_multipart(rsps.calls[0].request)
    assert parts["name"].content == b"Club"
    assert parts["allowed_cards"].content == b"card-scheme-a"


# --- several errors at once ---------------------------------------------------------------


def test_pay_reports_every_problem_at_once(client, rsps):
    errors = refused(
        rsps,
        lambda: client.pay(
            community_id="",
            amount=Decimal("0"),
            original_amount=Decimal("1.001"),
            variable_amount_id=0,
            billing_data=BillingData("Mona", "not-an-email", "01001234567"),
            currency="XYZ",
            pay_using="",
            expiry_date="someday",
            minimum_days_between_payments=0,
        ),
    )
    assert set(errors) == {
        "community_id",
        "amount",
        "original_amount",
        "variable_amount_id",
        "billing_data.name",
        "billing_data.email",
        "billing_data.phone_number",
        "currency",
        "pay_using",
        "expiry_date",
        "minimum_days_between_payments",
    }


def test_direct_order_reports_every_problem_at_once(client, rsps):
    errors = refused(
        rsps,
        lambda: client.create_direct_order(
            name="",
            community_id=COMMUNITY,
            amount=Decimal("10"),
            payment_methods=[],
            customer_name="Mona",
            customer_email="x",
            customer_mobile="123",
            discount_amount=Decimal("20"),
            allow_recurring_payments=True,
            minimum_days_between_payments=-1,
            custom_fields=[CustomFieldDefinition("Size", "DROPDOWNLIST")],
            tags=[Tag(0, "")],
        ),
    )
    assert set(errors) == {
        "name",
        "payment_methods",
        "customer_name",
        "customer_email",
        "customer_mobile",
        "discount_amount.amount",
        "expiry_date",
        "minimum_days_between_payments",
        "custom_fields.0.field_choices",
        "tags.0.id",
        "tags.0.name",
    }


def test_community_reports_every_problem_at_once(client, rsps):
    errors = refused(
        rsps,
        lambda: client.create_community(
            name=" ", logo=("l.txt", b"text"), email="nope", phone="123", app_modules=["Gym"]
        ),
    )
    assert set(errors) == {"name", "logo", "email", "phone", "app_modules"}


def test_refund_reports_a_bad_uuid_and_a_bad_amount_together(client, rsps):
    errors = refused(rsps, lambda: client.refund(transaction_uuid="", refund_amount=Decimal("0")))
    assert set(errors) == {"transaction_uuid", "refund_amount"}


# --- what is valid is sent as given -------------------------------------------------------


def test_a_valid_recurring_direct_order_accepts_a_date_object(client, rsps):
    rsps.post(BASE_URL + "/api/orders/create-direct-order/", json=envelope({}))
    client.create_direct_order(
        **order_kwargs(
            allow_recurring_payments=True, expiry_date=dt.date(2027, 1, 31), minimum_days_between_payments=1
        )
    )
    body = sent_json(rsps.calls[0].request)
    assert body["allow_recurring_payments"] is True
    assert body["expiry_date"] == "2027-01-31"
    assert body["minimum_days_between_payments"] == 1
