"""The spec's rules for names and phone numbers, and every problem the client's checks report by its stable
code with its English words: written once, called by the client's checks
(:mod:`~django_paycollect.client.validation`), the service layer's serializers and the Django form
validators."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_PHONE_FORMATTING = re.compile(r"[\s\-().]")
_DIGITS = re.compile(r"[0-9]+")
# Markup that a name may carry but that is no part of it: tags and character references.
_MARKUP = re.compile(r"<[^<>]*>|&#?\w+;")


def spelled(name: str, known: Sequence[str]) -> str | None:
    """``name`` in the spelling of ``known`` when it matches one case-insensitively, else None."""
    folded = name.strip().casefold()
    return next((candidate for candidate in known if candidate.casefold() == folded), None)


def normalise_phone(value: str) -> str:
    """``"+20 100 123-4567"`` -> ``"+201001234567"``; a leading ``00`` becomes ``+``."""
    phone = _PHONE_FORMATTING.sub("", value.strip())
    if phone.startswith("00"):
        phone = "+" + phone[2:]
    return phone


# The rules themselves, once: the client's checks below, the service layer's serializers and the Django form
# validators (django_paycollect.validators, in words for the person filling a form) all call these.


def name_problem(name: str) -> str | None:
    """``"one_word"`` when ``name`` lacks a first and a last name (the spec's rule), else None.

    The first and the last name must each hold a letter, of any script: words made only of markup (tags,
    character references), digits, punctuation, symbols or emoji (``"<b> </b>"``, ``"- -"``) are no names,
    and get the same answer as a single word.
    """
    words = _MARKUP.sub(" ", name).split()
    named = [word for word in words if any(character.isalpha() for character in word)]
    return "one_word" if len(named) < 2 else None


def phone_problem(phone: str) -> str | None:
    """Why a normalised phone number breaks the spec's rule (a country code first), or None.

    ``"no_plus"``, ``"not_digits"``, ``"country_code"`` (a 0 after the +), ``"too_short"`` (under 7 digits
    after the +) or ``"too_long"`` (over 15, the most an international number has).
    """
    if not phone.startswith("+"):
        return "no_plus"
    digits = phone[1:]
    if not _DIGITS.fullmatch(digits):
        return "not_digits" if digits else "too_short"
    if digits.startswith("0"):
        return "country_code"
    if len(digits) < 7:
        return "too_short"
    if len(digits) > 15:
        return "too_long"
    return None


#: Every problem the checks report, by its stable code: the message in English, with ``%(name)s`` for each
#: parameter. A parameter holding several values (``choices``, ``keys``) is a tuple, written here
#: comma-separated. Codes and parameters never change meaning; new ones may be added.
MESSAGES: dict[str, str] = {
    "required": "This field is required.",
    "not_text": "Must be a non-empty string.",
    "not_positive": "Must be greater than zero.",
    # Amounts (the codes of MoneyError): value is the offending value as Python writes it.
    "amount_type": "Amounts must be Decimal, int or decimal text, not %(type)s.",
    "amount_invalid": "%(value)s is not a decimal amount.",
    "amount_not_finite": "%(value)s is not a finite amount.",
    "amount_too_large": "%(value)s is too large.",
    "amount_decimals": "%(value)s has more than two decimals.",
    "percentage_invalid": "Must be a Decimal percentage with at most two decimals.",
    "percentage_range": "Must be between %(min)s and %(max)s.",
    "one_of": "Must be one of %(choices)s.",
    "amount_object_keys": "Unknown key(s): %(keys)s. An amount object has amount and currency.",
    "currency_twice": "Given twice: %(inside)s in the object, %(apart)s apart.",
    "discount_not_less": "Must be less than the amount.",
    "piasters_invalid": "Must be a whole number of piasters greater than zero.",
    "piasters_mismatch": "Does not match amount (%(piasters)s piasters).",
    "name_one_word": "Must contain a first and a last name separated by a space.",
    "email_invalid": "Must be a valid e-mail address.",
    "phone_no_plus": "Must start with + and the country code, then the number (e.g. +201001234567).",
    "phone_not_digits": "Must hold only digits after the + (e.g. +201001234567).",
    "phone_country_code": "Must start with the country code after the +, and no country code begins with 0.",
    "phone_too_short": "Too short: + and the country code, then the number (at least 7 digits after the +).",
    "phone_too_long": "Too long: at most 15 digits after the +, the country code included.",
    "identifier_invalid": "Must be a positive whole number or a non-empty string.",
    "not_positive_int": "Must be a whole number greater than zero.",
    "not_boolean": "Must be true or false.",
    "date_with_time": "Must be a date, not a date and time.",
    "date_invalid": "Must be a date (datetime.date or YYYY-MM-DD).",
    "only_when_recurring": "Only allowed when %(flag)s is true.",
    "billing_data_type": "Must be BillingData(name, email, phone_number).",
    "not_list": "Must be a list.",
    "custom_field_value_type": "Must be CustomFieldValue(field_label, field_value).",
    "custom_field_value_invalid": "Must be a string, an int, a Decimal or a boolean.",
    "custom_field_decimal": "A Decimal value must be finite with at most two decimals.",
    "custom_field_definition_type": "Must be CustomFieldDefinition(field_label, field_type, ...).",
    "choices_missing": "A DROPDOWNLIST needs at least one choice.",
    "choice_with_comma": "Choices are sent comma-separated, so none may hold a comma.",
    "choices_not_allowed": "Only a DROPDOWNLIST has choices.",
    "tag_type": "Must be Tag(id, name).",
    "names_invalid": "Must be a list of names or comma-separated text.",
    "name_blank": "Each name must be a non-empty string.",
    "names_empty": "Must name at least one.",
    "names_unknown": "Unknown: %(unknown)s. Allowed: %(allowed)s.",
    "form_value_invalid": (
        "Must be text, a whole number, a Decimal, a boolean, or a JSON object or list of those."
    ),
    "logo_unreadable": "Cannot read the file %(file)s: %(reason)s.",
    "logo_text_mode": "Open the file in binary mode ('rb').",
    "logo_type": (
        "Must be Logo(filename, content), bytes, a binary file, a path, "
        "or a (filename, bytes or file[, content_type]) tuple."
    ),
    "logo_format": "Must be a png or jpg image.",
}

#: The client's words for each :func:`phone_problem` (``MESSAGES["phone_<problem>"]``).
PHONE_MESSAGES = {
    problem: MESSAGES[f"phone_{problem}"]
    for problem in ("no_plus", "not_digits", "country_code", "too_short", "too_long")
}


def message(code: str, params: Mapping[str, Any]) -> str:
    """The English message of a problem: :data:`MESSAGES` with its parameters filled in."""
    return MESSAGES[code] % {
        name: ", ".join(str(item) for item in value) if isinstance(value, tuple) else value
        for name, value in params.items()
    }
