"""Validators for Django forms: the service's rules for names and phones (amounts: :mod:`.amounts`).

The rules are the ones the client checks every call with (:mod:`django_paycollect.client.validation`) and the
service layer applies: a form that uses these refuses exactly what ``services.start_payment`` would refuse,
before anything is created, with messages written for the person filling the form (translatable).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from .client.validation import name_problem, normalise_phone, phone_problem
from .problem_messages import MESSAGES

__all__ = ["PHONE_ERRORS", "validate_person_name", "validate_phone_number"]

#: For each of the client's phone problems, what the person filling the form is told (words that suit a
#: customer typing their own number and a staff member typing a customer's), in the active language.
PHONE_ERRORS = {
    problem: MESSAGES[f"phone_{problem}"]
    for problem in ("no_plus", "not_digits", "country_code", "too_short", "too_long")
}


def validate_person_name(value: Any) -> None:
    """A first and a last name, as the service demands of the payer's name."""
    if not isinstance(value, str) or name_problem(value):
        raise ValidationError(MESSAGES["name_one_word"], code="one_word")


def validate_phone_number(value: Any) -> None:
    """A mobile number with its country code (spaces, dashes, dots and brackets allowed; 00 counts as +)."""
    problem = phone_problem(normalise_phone(value)) if isinstance(value, str) else "no_plus"
    if problem:
        raise ValidationError(PHONE_ERRORS[problem], code=f"phone_{problem}")
