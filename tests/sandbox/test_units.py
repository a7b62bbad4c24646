"""Small pieces that need neither a server nor a database."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from rest_framework.exceptions import ErrorDetail

from django_paycollect.sandbox import envelope, journal, money
from django_paycollect.sandbox.testing import parse_form


def test_dumps_writes_decimals_as_exact_numbers() -> None:
    text = envelope.dumps({"total_amount": Decimal("104.50"), "n": [Decimal("0.10"), 3, True, None, "x"]})
    assert text == '{"total_amount":104.50,"n":[0.10,3,true,null,"x"]}'
    assert json.loads(text, parse_float=Decimal)["total_amount"] == Decimal("104.50")
    with pytest.raises(ValueError, match="non-finite"):
        envelope.dumps({"x": Decimal("NaN")})


def test_loads_reads_numbers_exactly_and_refuses_nan() -> None:
    assert envelope.loads(b'{"a": 0.1, "b": 2}') == {"a": Decimal("0.1"), "b": 2}
    with pytest.raises(ValueError, match="NaN"):
        envelope.loads(b'{"a": NaN}')


def test_errors_list_has_the_spec_shape() -> None:
    errors = envelope.errors_list(
        {
            "amount": [ErrorDetail("Ensure that there are no more than 2 decimal places.")],
            "billing_data": {"phone_number": [ErrorDetail("Enter a phone number.")]},
            "custom_fields": {"1": {"field_value": [ErrorDetail("This field is required.")]}},
            "tags": [{}, {"id": [ErrorDetail("A valid integer is required.")]}],
        }
    )
    assert errors == [
        {"amount": ["Ensure that there are no more than 2 decimal places."]},
        {"billing_data": {"phone_number": ["Enter a phone number."]}},
        {"custom_fields": ["[1] field_value: This field is required."]},
        {"tags": ["[1] id: A valid integer is required."]},
    ]
    assert all(
        type(m) is str for item in errors for v in item.values() for m in (v if isinstance(v, list) else [])
    )


def test_money_helpers() -> None:
    assert money.to_piasters(Decimal("104.50")) == 10450
    with pytest.raises(ValueError, match="more than two decimals"):
        money.to_piasters(Decimal("1.005"))
    assert money.from_piasters(10450) == Decimal("104.50")
    assert money.text(Decimal("12.5")) == "12.50"
    # The redirects' types: Pay's amount an integer, Direct order's amounts floats (written from Decimals).
    assert money.integer_text(Decimal("100.00")) == "100"
    assert money.integer_text(Decimal("53.25")) == "53"
    assert money.integer_text(Decimal("0.99")) == "0"
    assert money.float_text(Decimal("53.25")) == "53.25"
    assert money.float_text(Decimal("53.20")) == "53.2"
    assert money.float_text(Decimal("100.00")) == "100.0"
    assert money.float_text(Decimal("5325")) == "5325.0"
    assert money.float_text(Decimal("0.05")) == "0.05"
    assert money.quantize(Decimal("0.125")) == Decimal("0.13")  # half up, as a bill rounds


def test_redaction_reaches_every_depth() -> None:
    body = {
        "x-api-key": "k",
        "bank": {"merchant_id": "m", "API_Password": "p"},
        "list": [{"token": "t"}, "plain"],
        "settings": '{"api_password": "p2", "merchant_id": "m2"}',
        "name": "Mona",
    }
    redacted = journal.redact(body)
    assert redacted == {
        "x-api-key": "[redacted]",
        "bank": {"merchant_id": "m", "API_Password": "[redacted]"},
        "list": [{"token": "[redacted]"}, "plain"],
        "settings": {"api_password": "[redacted]", "merchant_id": "m2"},
        "name": "Mona",
    }
    assert body["bank"] == {"merchant_id": "m", "API_Password": "p"}  # a copy, not in place
    text = journal.redact_text('api_password=abc&amount=1 {"secret": "xyz", "ok": 1}')
    assert "abc" not in text
    assert "xyz" not in text
    assert "amount=1" in text


def test_form_parser_reads_a_page_like_a_browser() -> None:
    html = """
    <form method="get"><input name="q" value="ignored"></form>
    <form method="post" action="/pay/">
      <input type="hidden" name="csrfmiddlewaretoken" value="tok">
      <label><input type="radio" name="pay_using" value="card" checked> card</label>
      <label><input type="radio" name="pay_using" value="kiosk"> kiosk</label>
      <label for="cf_0">Seats *</label><input type="number" id="cf_0" name="cf_0" value="">
      <label><input type="checkbox" name="cf_1"> Newsletter</label>
      <label for="cf_2">Size</label>
      <select id="cf_2" name="cf_2"><option value="">-</option><option value="M" selected>M</option></select>
      <button type="submit" name="action" value="pay">Pay</button>
    </form>"""
    form = parse_form(html)
    assert form is not None
    assert form.action == "/pay/"
    assert form.values == {"csrfmiddlewaretoken": "tok", "pay_using": "card", "cf_0": "", "cf_2": "M"}
    assert form.labels["Seats"] == "cf_0"
    assert form.labels["Newsletter"] == "cf_1"
    assert form.labels["Size"] == "cf_2"
