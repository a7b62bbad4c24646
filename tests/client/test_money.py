"""Money is Decimal in and out, two decimals on the wire, integer piasters; floats are refused."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from django_paycollect.client import (
    BillingData,
    CustomFieldValue,
    MoneyError,
    ValidationError,
    exact_decimal,
    format_amount,
    from_piasters,
    to_piasters,
)
from django_paycollect.client.money import dumps_json, loads_json
from tests.hypothesis_profiles import examples

from .support import COMMUNITY, PHONE, TX_UUID

FAST = settings(max_examples=examples(150), deadline=None)

#: Amounts with at most two decimals, as large as any ledger will see and then some.
amounts = st.decimals(
    min_value=Decimal("-1e15"), max_value=Decimal("1e15"), places=2, allow_nan=False, allow_infinity=False
)
#: The same kind of amounts written with odd exponents: 1E+2, 12.5, 1.500 (normalised or padded).
rescaled = st.builds(
    lambda cents, pad: (
        Decimal(cents).scaleb(-2).normalize()
        if pad < 0
        else Decimal(cents).scaleb(-2).quantize(Decimal(1).scaleb(-2 - pad))
    ),
    st.integers(min_value=-(10**17), max_value=10**17),
    st.integers(min_value=-1, max_value=3),
)
WIRE = re.compile(r"^-?\d+\.\d{2}$")


@FAST
@given(amounts)
@example(Decimal("0.1"))
@example(Decimal("0.10"))
@example(Decimal("1E+2"))
@example(Decimal("-0"))
@example(Decimal("1e15"))
def test_piasters_round_trip(amount: Decimal):
    piasters = to_piasters(amount)
    assert type(piasters) is int
    assert piasters == amount * 100
    back = from_piasters(piasters)
    assert back == amount
    assert back.as_tuple().exponent == -2


@FAST
@given(st.integers(min_value=-(10**20), max_value=10**20))
def test_piasters_from_and_back(piasters: int):
    amount = from_piasters(piasters)
    assert to_piasters(amount) == piasters
    assert format_amount(amount) == format_amount(Decimal(piasters).scaleb(-2))


@FAST
@given(st.one_of(amounts, rescaled))
@example(Decimal("1E+2"))
@example(Decimal("1.5"))
@example(Decimal("100.0"))
@example(Decimal("-0.00"))
@example(Decimal("12.500"))
@example(Decimal("9" * 20 + ".99"))
def test_format_amount_has_two_decimals_and_no_exponent(amount: Decimal):
    text = format_amount(amount)
    assert WIRE.match(text), text
    assert "e" not in text.lower()
    assert Decimal(text) == amount


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("100"), "100.00"),
        (Decimal("1E+2"), "100.00"),
        (Decimal("0.1"), "0.10"),
        ("7", "7.00"),
        (7, "7.00"),
        (" 12.5 ", "12.50"),
        (Decimal("12.500"), "12.50"),  # trailing zeros are not a third decimal
    ],
)
def test_format_amount_examples(value: Any, text: str):
    assert format_amount(value) == text


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.text(max_size=20),
    amounts,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


def decimals_in(value: Any) -> list[Decimal]:
    if isinstance(value, Decimal):
        return [value]
    if isinstance(value, dict):
        return [d for item in value.values() for d in decimals_in(item)]
    if isinstance(value, list):
        return [d for item in value for d in decimals_in(item)]
    return []


@FAST
@given(json_values)
def test_dumps_json_parses_back_to_the_input(value: Any):
    text = dumps_json(value)
    back = json.loads(text, parse_float=Decimal)
    assert back == value
    assert loads_json(text) == value
    for decimal in decimals_in(back):
        assert decimal.as_tuple().exponent == -2  # every amount written with two decimals


def test_dumps_json_writes_decimals_as_plain_two_decimal_numbers():
    body = {
        "amount": Decimal("1E+2"),
        "nested": [{"x": Decimal("0.1")}],
        "n": 3,
        "ok": True,
        "s": "1.5",
        "z": None,
    }
    assert dumps_json(body) == (
        '{"amount": 100.00, "nested": [{"x": 0.10}], "n": 3, "ok": true, "s": "1.5", "z": null}'
    )
    assert dumps_json(("a", Decimal(1))) == '["a", 1.00]'
    assert dumps_json({1: "int key"}) == '{"1": "int key"}'


@pytest.mark.parametrize(
    "body",
    [
        {"amount": 0.1},
        [1, 2.5],
        {"nested": {"deep": [float("inf")]}},
        {"amount": Decimal("1.001")},
        {"amount": Decimal("NaN")},
        {"amount": Decimal("Infinity")},
    ],
)
def test_dumps_json_refuses_floats_and_inexact_amounts(body: Any):
    with pytest.raises(MoneyError):
        dumps_json(body)


def test_loads_json_reads_fractions_as_decimal_and_refuses_nan():
    assert loads_json(b'{"a": 0.1, "b": 2, "c": 1e2}') == {"a": Decimal("0.1"), "b": 2, "c": Decimal("1E+2")}
    assert type(loads_json("0.1")) is Decimal
    for constant in ("NaN", "Infinity", "-Infinity", '{"a": NaN}'):
        with pytest.raises(ValueError, match="not a JSON value"):
            loads_json(constant)


@pytest.mark.parametrize(
    "value",
    [
        0.1,
        1.0,
        float("nan"),
        True,
        False,
        None,
        "abc",
        "",
        "1,5",
        Decimal("NaN"),
        Decimal("-Infinity"),
        "inf",
        [1],
    ],
)
def test_exact_decimal_refuses_what_is_not_an_exact_amount(value: Any):
    with pytest.raises(MoneyError):
        exact_decimal(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(Decimal("1.234"), Decimal("1.234")), (5, Decimal(5)), ("  -3.5 ", Decimal("-3.5"))],
)
def test_exact_decimal_is_exact(value: Any, expected: Decimal):
    parsed = exact_decimal(value)
    assert parsed == expected
    assert isinstance(parsed, Decimal)


@pytest.mark.parametrize("value", [Decimal("1.001"), "0.005", Decimal("1e-3")])
def test_a_third_decimal_is_refused_never_rounded(value: Any):
    with pytest.raises(MoneyError, match="more than two decimals"):
        to_piasters(value)
    with pytest.raises(MoneyError, match="more than two decimals"):
        format_amount(value)


def test_amounts_beyond_decimal_precision_are_refused():
    with pytest.raises(MoneyError, match="too large"):
        to_piasters(Decimal("1e40"))


@pytest.mark.parametrize(
    ("piasters", "amount"), [(1250, "12.50"), ("1250", "12.50"), (Decimal("1250.0"), "12.50")]
)
def test_from_piasters_accepts_whole_numbers_in_any_form(piasters: Any, amount: str):
    assert from_piasters(piasters) == Decimal(amount)
    assert str(from_piasters(piasters)) == amount


@pytest.mark.parametrize("piasters", [True, 12.5, Decimal("1250.5"), "12.5", None])
def test_from_piasters_refuses_fractions_booleans_and_floats(piasters: Any):
    with pytest.raises(MoneyError):
        from_piasters(piasters)


def test_from_piasters_refuses_huge_counts_with_money_error():
    with pytest.raises(MoneyError):
        from_piasters(10**28)


# --- floats in client arguments -----------------------------------------------------------


def call_with(client: Any, operation: str, value: Any) -> None:
    billing = BillingData("Mona Ali", "mona@example.com", PHONE)
    order = {
        "name": "Order",
        "community_id": COMMUNITY,
        "amount": Decimal("100"),
        "payment_methods": ["card"],
        "customer_name": "Mona Ali",
        "customer_email": "mona@example.com",
        "customer_mobile": PHONE,
    }
    pay = {
        "community_id": COMMUNITY,
        "amount": Decimal("100"),
        "original_amount": Decimal("100"),
        "variable_amount_id": 1,
        "billing_data": billing,
    }
    calls = {
        "prepare_amount.amount": lambda: client.prepare_amount(community_id=COMMUNITY, amount=value),
        "pay.amount": lambda: client.pay(**{**pay, "amount": value}),
        "pay.original_amount": lambda: client.pay(**{**pay, "original_amount": value}),
        "refund.refund_amount": lambda: client.refund(transaction_uuid=TX_UUID, refund_amount=value),
        "validate_promocode.amount": lambda: client.validate_promocode(
            name="P",
            community_id=COMMUNITY,
            phone_number=PHONE,
            amount=value,
            currency="EGP",
            payment_for="API_PAYMENT",
            variable_amount_id=1,
        ),
        "create_direct_order.amount": lambda: client.create_direct_order(**{**order, "amount": value}),
        "create_direct_order.discount_amount": lambda: client.create_direct_order(
            **{**order, "discount_amount": value}
        ),
        "create_direct_order.vat_percentage": lambda: client.create_direct_order(
            **{**order, "vat_percentage": value}
        ),
    }
    calls[operation]()


FLOAT_FIELDS = {
    "prepare_amount.amount": "amount",
    "pay.amount": "amount",
    "pay.original_amount": "original_amount",
    "refund.refund_amount": "refund_amount",
    "validate_promocode.amount": "amount",
    "create_direct_order.amount": "amount.amount",
    "create_direct_order.discount_amount": "discount_amount.amount",
    "create_direct_order.vat_percentage": "vat_percentage",
}


@pytest.mark.parametrize("value", [10.5, 100.0, 0.1])
@pytest.mark.parametrize(("operation", "field"), sorted(FLOAT_FIELDS.items()))
def test_client_refuses_float_amounts_and_sends_nothing(client, rsps, operation, field, value):
    with pytest.raises(ValidationError) as caught:
        call_with(client, operation, value)

    assert field in caught.value.field_errors
    assert caught.value.sent is False
    assert caught.value.http_status is None
    assert len(rsps.calls) == 0


def test_pay_custom_field_decimal_with_three_decimals_is_a_validation_error(client, rsps):
    with pytest.raises(ValidationError) as caught:
        client.pay(
            community_id=COMMUNITY,
            amount=Decimal("1"),
            original_amount=Decimal("1"),
            variable_amount_id=1,
            billing_data=BillingData("Mona Ali", "mona@example.com", PHONE),
            custom_fields=[CustomFieldValue("Weight (kg)", Decimal("72.125"))],
        )

    assert "custom_fields.0.field_value" in caught.value.field_errors
    assert len(rsps.calls) == 0
