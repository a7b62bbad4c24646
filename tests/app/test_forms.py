"""The form validators, the amount field and BillingDataForm: the app's rules, in words for whoever fills the
form."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from django_paycollect.amounts import AmountFormField
from django_paycollect.client.validation import phone_problem
from django_paycollect.exceptions import PaymentRefused
from django_paycollect.forms import BillingDataForm
from django_paycollect.serializers import BillingDataSerializer
from django_paycollect.validators import (
    PHONE_ERRORS,
    validate_person_name,
    validate_phone_number,
)

GOOD = {"name": "Mona  Ali", "email": "mona@example.com", "phone_number": "+20 100 123-4567"}


@pytest.mark.parametrize(
    ("phone", "problem"),
    [
        ("01001234567", "no_plus"),
        ("+20 abc", "not_digits"),
        ("+0201001234567", "country_code"),
        ("+20", "too_short"),
        ("+2010012345678901", "too_long"),  # a too-long number is told it is too long, not "start with +"
    ],
)
def test_each_phone_problem_has_its_own_message_and_code(phone, problem):
    with pytest.raises(ValidationError) as caught:
        validate_phone_number(phone)
    assert caught.value.messages == [str(PHONE_ERRORS[problem])]
    assert caught.value.code == f"phone_{problem}"


@pytest.mark.parametrize(
    "phone", ["+201001234567", "0020 100 123 4567", "+20 (100) 123.4567", "+1 415 555 0100", "+2010012"]
)
def test_the_form_accepts_exactly_what_the_service_layer_accepts(phone):
    validate_phone_number(phone)
    serializer = BillingDataSerializer(data={**GOOD, "phone_number": phone})
    assert serializer.is_valid(), serializer.errors


@pytest.mark.parametrize("phone", ["01001234567", "+20", "+2010012345678901", "+20abc1234567", "+0123456789"])
def test_the_form_refuses_exactly_what_the_service_layer_refuses(phone):
    with pytest.raises(ValidationError):
        validate_phone_number(phone)
    assert phone_problem(phone.replace(" ", "")) is not None
    assert not BillingDataSerializer(data={**GOOD, "phone_number": phone}).is_valid()


@pytest.mark.parametrize("name", ["Mona", "  Mona ", ""])
def test_a_name_needs_a_first_and_a_last_name(name):
    with pytest.raises(ValidationError, match=r"Enter a first and a last name, separated by a space\."):
        validate_person_name(name)


def test_billing_data_form_gives_the_service_layers_billing_data_normalised():
    form = BillingDataForm(GOOD)
    assert form.is_valid(), form.errors
    assert form.billing_data() == {
        "name": "Mona Ali",
        "email": "mona@example.com",
        "phone_number": "+201001234567",
    }


def test_billing_data_form_shows_every_problem_on_its_field_at_once():
    form = BillingDataForm({"name": "Mona", "email": "mona@", "phone_number": "+2010012345678901"})
    assert not form.is_valid()
    assert form.errors == {
        "name": ["Enter a first and a last name, separated by a space."],
        "email": ["Enter a valid email address."],
        "phone_number": [str(PHONE_ERRORS["too_long"])],
    }


def test_a_later_refusal_goes_back_on_the_fields_it_names():
    form = BillingDataForm(GOOD)
    assert form.is_valid()
    form.add_service_errors(
        PaymentRefused(
            {
                "billing_data.phone_number": ["Enter a phone number prefixed with its country code."],
                "amount": ["Must be at most 1000000.00."],
            }
        )
    )
    assert form.errors == {
        "phone_number": ["Enter a phone number prefixed with its country code."],
        "__all__": ["Must be at most 1000000.00."],
    }


def test_the_maximum_amount_is_read_when_validating(settings):
    field = AmountFormField()
    assert field.clean("1000000.00") == Decimal("1000000.00")
    with pytest.raises(ValidationError, match=r"Enter at most 1000000\.00\."):
        field.clean("1000000.01")
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": "20.00"}
    with pytest.raises(ValidationError, match=r"Enter at most 20\.00\."):
        field.clean("20.01")


@pytest.mark.parametrize(
    "name",
    [
        "<b> </b>",
        "<script></script> <i></i>",
        "&amp; &lt;b&gt;",
        "- .",
        "123 456",
        "\U0001f600 \U0001f600",
        "Mona \U0001f600",
        "<b>Mona</b>",
    ],
)
def test_a_name_of_markup_or_symbols_is_refused_like_a_one_word_name_everywhere(name):
    # The one rule (client.rules.name_problem), as the form, the service layer and the client apply it.
    with pytest.raises(
        ValidationError, match=r"Enter a first and a last name, separated by a space\."
    ) as caught:
        validate_person_name(name)
    assert caught.value.code == "one_word"
    serializer = BillingDataSerializer(data={**GOOD, "name": name})
    assert not serializer.is_valid()
    assert [str(m) for m in serializer.errors["name"]] == [
        "Enter a first and a last name, separated by a space."
    ]
    assert not BillingDataForm({**GOOD, "name": name}).is_valid()


@pytest.mark.parametrize("name", ["Mona Ali", "منى علي", "Mona \U0001f600 Ali", "O'Brien Jr.", "Ли Вэй"])
def test_a_first_and_a_last_name_in_any_script_is_accepted(name):
    validate_person_name(name)
    assert BillingDataSerializer(data={**GOOD, "name": name}).is_valid()
