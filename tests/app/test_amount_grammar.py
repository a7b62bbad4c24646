"""The money grammar itself (django_paycollect.amounts): the one reading, its two field wrappers and how an
amount is shown, against the table of spellings in tests/support/amounts.py. The surfaces that call it are
tested with the same table in test_amount_spellings.py (and tests/api/test_amount_spellings.py)."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from typing import Any

import pytest
from django import forms
from django.utils import translation
from rest_framework import serializers
from rest_framework.exceptions import ParseError

from django_paycollect.amounts import AmountField, AmountFormField, amount_text, parse_amount
from django_paycollect.api.views.base import ExactJSONParser
from django_paycollect.exceptions import PayCollectConfigurationError, PaymentRefused
from tests.support.amounts import (
    EMPTY,
    MAX,
    REQUIRED,
    SPELLINGS,
    JsonNumber,
    disagreements,
)


@pytest.fixture(autouse=True)
def with_max(settings: Any) -> None:
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": MAX}


def read(given: Any) -> Decimal | str | dict[str, list[str]]:
    """What parse_amount reads, or the one message of its refusal naming ``amount`` (else all it says)."""
    try:
        return parse_amount(given, "amount")
    except PaymentRefused as refusal:
        messages = refusal.message_dict
    return (
        messages["amount"][0] if list(messages) == ["amount"] and len(messages["amount"]) == 1 else messages
    )


def test_parse_amount_reads_every_spelling_as_the_table_says():
    assert disagreements(SPELLINGS, read) == []


def test_the_form_field_reads_what_a_form_sends_as_the_table_says():
    class Form(forms.Form):
        amount = AmountFormField()

    def outcome(given: Any) -> Decimal | str:
        form = Form({} if given is None else {"amount": given})
        return form.cleaned_data["amount"] if form.is_valid() else form.errors["amount"][0]

    assert disagreements([row for row in SPELLINGS if row.text], outcome) == []


def test_the_drf_field_reads_what_a_json_body_holds_as_the_table_says():
    class Body(serializers.Serializer[Any]):
        amount = AmountField()

    def outcome(given: Any) -> Decimal | str:
        body = Body(data={"amount": given})
        return body.validated_data["amount"] if body.is_valid() else str(body.errors["amount"][0])

    rows = [row for row in SPELLINGS if row.json or isinstance(row.given, JsonNumber)]
    assert disagreements(rows, outcome) == []


def test_an_optional_amount_is_optional_only_by_being_left_out():
    class Body(serializers.Serializer[Any]):
        discount = AmountField(required=False, default=None)

    left_out = Body(data={})
    assert left_out.is_valid()
    assert left_out.validated_data == {"discount": None}
    for empty in (None, "", "  "):
        body = Body(data={"discount": empty})
        assert not body.is_valid()
        assert body.errors["discount"] == [EMPTY]

    class Form(forms.Form):
        discount = AmountFormField(required=False)

    # A form cannot leave a box out: an empty box of an optional amount is the amount left out.
    form = Form({"discount": "  "})
    assert form.is_valid()
    assert form.cleaned_data["discount"] is None


def test_bounds_are_the_fields_own_and_the_words_say_them():
    assert read(Decimal("100.01")) == "Enter at most 100.00."
    assert parse_amount("0", "vat", minimum=Decimal(0), maximum=Decimal(100)) == Decimal("0.00")
    with pytest.raises(PaymentRefused) as caught:
        parse_amount("100.5", "vat", minimum=Decimal(0), maximum=Decimal(100))
    assert caught.value.message_dict == {"vat": ["Enter at most 100.00."]}
    with pytest.raises(PaymentRefused) as caught:
        parse_amount("-0", "vat", minimum=Decimal(0), maximum=Decimal(100))
    assert caught.value.message_dict == {"vat": ["Enter at least 0.00."]}


def test_a_refusal_reads_in_the_language_it_is_read_in():
    with pytest.raises(PaymentRefused) as caught:
        parse_amount("1E+1", "amount")
    with translation.override("ar"):
        [arabic] = caught.value.message_dict["amount"]
    assert arabic.startswith("القيمة '1E+1' ليست مبلغًا")
    assert "12.50" in arabic
    with translation.override("ar"):
        assert read("") == "هذا الحقل مطلوب."
    assert read("") == REQUIRED


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (Decimal("1E+2"), "100.00"),
        (Decimal("12.5"), "12.50"),
        (Decimal("0"), "0.00"),
        (Decimal("-3.10"), "-3.10"),
        (Decimal("999999999999.99"), "999999999999.99"),
        (Decimal("10.505"), "10.505"),  # a service's answer with a third decimal is shown, never rounded
        (Decimal("1E+30"), "1000000000000000000000000000000"),
    ],
)
def test_amounts_are_shown_in_plain_fixed_notation_with_two_decimals(value: Decimal, shown: str):
    assert amount_text(value) == shown
    with translation.override("ar"):
        assert amount_text(value) == shown


def test_every_amount_shown_reads_back_as_itself():
    for row in SPELLINGS:
        if row.reads is not None:
            assert parse_amount(amount_text(row.reads), "amount") == row.reads


def test_the_api_reads_json_numbers_as_their_text_never_as_floats():
    def parse(body: str) -> Any:
        return ExactJSONParser().parse(io.BytesIO(body.encode()))

    assert parse('{"amount": 10.10, "count": 3, "big": 1e400}') == {
        "amount": "10.10",
        "count": 3,
        "big": "1e400",
    }
    arabic = "\u0661\u0662\u066b\u0665\u0660"
    assert parse(json.dumps({"amount": arabic})) == {"amount": arabic}
    for broken in ('{"amount": NaN}', '{"amount": Infinity}', '{"amount": '):
        with pytest.raises(ParseError):
            parse(broken)


def test_the_table_covers_each_kind_of_spelling_the_docs_name():
    ids = {row.id for row in SPELLINGS}
    assert {
        "exponent",
        "underscore",
        "plus",
        "inner-space",
        "arabic-indic",
        "mixed-digits",
        "json-number",
    } <= ids
    assert {
        "empty",
        "none",
        "float",
        "bool",
        "three-decimals",
        "third-zero",
        "maximum",
        "above-maximum",
    } <= ids


def test_a_broken_max_amount_is_a_configuration_error_not_a_refusal(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": 1000.5}  # a float, as paycollect.E011 says
    with pytest.raises(PayCollectConfigurationError, match=r"MAX_AMOUNT.*paycollect\.E011"):
        parse_amount("10", "amount")
