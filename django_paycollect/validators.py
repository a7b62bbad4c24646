"""Validators for Django forms: the service's rules, and the largest amount the site accepts.

The rules are the ones the client checks every call with (:mod:`django_paycollect.client.validation`) and the
service layer applies: a form that uses these refuses exactly what ``services.start_payment`` would refuse,
before anything is created, with messages written for the person filling the form (translatable).

``PAYCOLLECT["MAX_AMOUNT"]`` is read on every call (:func:`max_amount`), so a changed setting applies at once.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.deconstruct import deconstructible
from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _

from .client.money import MoneyError, parse_amount
from .client.validation import name_problem, normalise_phone, phone_problem
from .conf import paycollect_settings
from .exceptions import PayCollectConfigurationError
from .problem_messages import MESSAGES

__all__ = [
    "PHONE_ERRORS",
    "MaxAmountValidator",
    "max_amount",
    "validate_person_name",
    "validate_phone_number",
]

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


def max_amount() -> Decimal:
    """``PAYCOLLECT["MAX_AMOUNT"]`` as a Decimal (system check ``paycollect.E011`` guards its value)."""
    value = paycollect_settings.MAX_AMOUNT
    try:
        return parse_amount(value)
    except MoneyError as exc:
        raise PayCollectConfigurationError(f"PAYCOLLECT['MAX_AMOUNT'] {exc} (see paycollect.E011)") from None


@deconstructible
class MaxAmountValidator:
    """Refuses an amount above ``PAYCOLLECT["MAX_AMOUNT"]``, read when the form is validated."""

    message = _("Enter at most %(limit)s: larger amounts are not accepted here.")
    code = "max_amount"

    def __call__(self, value: Any) -> None:
        limit = max_amount()
        if isinstance(value, (Decimal, int)) and not isinstance(value, bool) and value > limit:
            raise ValidationError(
                self.message,
                code=self.code,
                params={"limit": number_format(limit, decimal_pos=2, force_grouping=True)},
            )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MaxAmountValidator)

    def __hash__(self) -> int:
        return hash(MaxAmountValidator)
