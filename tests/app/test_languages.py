"""Arabic: the catalogue, the client's problems in the active language, the plurals, right-to-left pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import ngettext

import django_paycollect
from django_paycollect import problem_messages
from django_paycollect.client import CURRENCIES, Problem
from django_paycollect.client import validation as client_validation
from django_paycollect.client.validation import Checker
from django_paycollect.forms import BillingDataForm
from django_paycollect.serializers import BillingDataSerializer

_PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")
CATALOGUE = Path(django_paycollect.__file__).parent / "locale" / "ar" / "LC_MESSAGES" / "django.mo"


@pytest.fixture(autouse=True)
def _compiled() -> None:
    assert CATALOGUE.exists(), f"{CATALOGUE} is missing: it is committed (make compile-messages makes it)"


def test_every_problem_code_of_the_client_has_words_in_the_app_with_the_same_parameters():
    assert set(problem_messages.MESSAGES) == set(client_validation.MESSAGES)
    for code, english in client_validation.MESSAGES.items():
        ours = str(problem_messages.MESSAGES[code])
        assert set(_PLACEHOLDER.findall(ours)) == set(_PLACEHOLDER.findall(english)), code
        with translation.override("ar"):
            arabic = str(problem_messages.MESSAGES[code])
        assert arabic != ours, f"{code} has no Arabic"
        assert set(_PLACEHOLDER.findall(arabic)) == set(_PLACEHOLDER.findall(english)), code


def test_the_client_s_problems_are_worded_in_arabic_with_their_parameters():
    check = Checker()
    check.currency("currency", "XYZ")
    check.person_name("billing_data.name", "Mona")
    check.phone("billing_data.phone_number", "0100 123 4567")
    assert check.problems["currency"] == [
        Problem("one_of", "Must be one of EGP, USD, EUR, SAR, AED, GBP.", {"choices": tuple(CURRENCIES)})
    ]
    with translation.override("ar"):
        errors = problem_messages.field_errors(check.problems)
    assert errors == {
        "currency": ["يجب أن تكون إحدى القيم: EGP، USD، EUR، SAR، AED أو GBP."],
        "billing_data.name": ["أدخل الاسم الأول واسم العائلة، بينهما مسافة."],
        "billing_data.phone_number": ["ابدأ بعلامة + ثم رمز الدولة، مثل \u2066+201001234567\u2069."],
    }
    # The field path stays the spec's identifier; English when no language is active.
    assert problem_messages.field_errors(check.problems)["billing_data.name"] == [
        "Enter a first and a last name, separated by a space."
    ]


def test_a_code_the_app_does_not_know_keeps_the_client_s_words():
    assert problem_messages.message(Problem("a_newer_code", "Some new rule.", {})) == "Some new rule."


def test_the_billing_data_form_and_the_service_layer_s_serializer_refuse_in_arabic():
    data = {"name": "منى", "email": "mona@example.com", "phone_number": "+2010012345678901"}
    too_long = "هذا الرقم أطول من اللازم: 15 رقمًا على الأكثر بعد علامة +، بما فيها رمز الدولة."
    one_word = "أدخل الاسم الأول واسم العائلة، بينهما مسافة."
    with translation.override("ar"):
        form = BillingDataForm(data)
        assert not form.is_valid()
        assert form.errors["name"] == [one_word]
        assert form.errors["phone_number"] == [too_long]
        serializer = BillingDataSerializer(data=data)
        assert not serializer.is_valid()
        assert [str(m) for m in serializer.errors["name"]] == [one_word]
        assert [str(m) for m in serializer.errors["phone_number"]] == [too_long]
    # Right to left pages keep a phone number, an e-mail left to right; a name follows what is typed.
    assert form.fields["phone_number"].widget.attrs["dir"] == "ltr"
    assert form.fields["email"].widget.attrs["dir"] == "ltr"
    assert form.fields["name"].widget.attrs["dir"] == "auto"


def test_arabic_has_six_plural_forms():
    with translation.override("ar"):
        forms = [
            ngettext("%(count)d call", "%(count)d calls", n) % {"count": n} for n in (0, 1, 2, 3, 11, 100)
        ]
    assert forms == [
        "0 استدعاء",
        "استدعاء واحد",
        "استدعاءان",
        "3 استدعاءات",
        "11 استدعاءً",
        "100 استدعاء",
    ]


@pytest.mark.parametrize(
    ("language", "direction", "title"),
    [("ar", "rtl", "جارٍ تأكيد دفعتك…"), ("en", "ltr", "Confirming your payment…")],
)
def test_the_waiting_page_follows_the_active_language_and_its_direction(language, direction, title):
    context = {"status_url": "/s/", "check_url": "/c/", "retry_url": "/r/", "refresh_seconds": 3}
    with translation.override(language):
        html = render_to_string("paycollect/return_waiting.html", context)
    assert f'<html lang="{language}" dir="{direction}">' in html
    assert f"<h1>{title}</h1>" in html
