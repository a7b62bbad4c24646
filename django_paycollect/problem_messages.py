"""The client's problems, and the service's refusals of fields we know, in the words of the active language.

The client knows nothing of Django: its checks report each problem with a stable code and parameters
(:class:`~django_paycollect.client.errors.Problem`), worded here, lazily translated; the spec's field names
stay as they are. The service answers in its own language: its refusal of a field we know is told in our words
(:data:`SERVICE_REFUSALS`), its own words stay in the call's record (docs/services.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django.utils.text import get_text_list
from django.utils.translation import gettext_lazy as _

from .client.errors import Problem

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise

__all__ = [
    "MESSAGES",
    "PROMOCODE_UNKNOWN",
    "SERVICE_REFUSALS",
    "field_errors",
    "message",
    "messages",
    "service_field_errors",
]

#: For each of the client's codes, its message in the active language (``%(name)s`` takes the parameter).
MESSAGES: dict[str, _StrPromise] = {
    "required": _("This field is required."),
    "not_text": _("Enter some text."),
    "not_positive": _("Must be greater than zero."),
    "amount_type": _("Give the amount as a Decimal, a whole number or decimal text, not %(type)s."),
    "amount_invalid": _("%(value)s is not a decimal amount."),
    "amount_not_finite": _("%(value)s is not a finite amount."),
    "amount_too_large": _("%(value)s is too large to be an amount."),
    "amount_decimals": _("%(value)s has more than two decimals."),
    "percentage_invalid": _("Enter a percentage with at most two decimals."),
    "percentage_range": _("Must be between %(min)s and %(max)s."),
    "one_of": _("Must be one of %(choices)s."),
    "amount_object_keys": _("Unknown key(s): %(keys)s. An amount object has amount and currency."),
    "currency_twice": _("The currency is given twice: %(inside)s in the amount object, %(apart)s apart."),
    "discount_not_less": _("Must be less than the amount."),
    "piasters_invalid": _("Must be a whole number of piasters greater than zero."),
    "piasters_mismatch": _("Does not match the amount (%(piasters)s piasters)."),
    "name_one_word": _("Enter a first and a last name, separated by a space."),
    "email_invalid": _("Enter a valid e-mail address."),
    "phone_no_plus": _("Start with + and the country code, for example +201001234567."),
    "phone_not_digits": _("Use only digits after the +, for example +201001234567."),
    "phone_country_code": _(
        "After the + comes the country code, which never starts with 0 (for example +20…)."
    ),
    "phone_too_short": _("This number is too short: + and the country code, then the number."),
    "phone_too_long": _("This number is too long: at most 15 digits after the +, country code included."),
    "identifier_invalid": _("Must be a positive whole number or a non-empty text."),
    "not_positive_int": _("Must be a whole number greater than zero."),
    "not_boolean": _("Must be true or false."),
    "date_with_time": _("Enter a date without a time."),
    "date_invalid": _("Enter a date as YYYY-MM-DD."),
    "only_when_recurring": _("Only allowed when %(flag)s is true."),
    "billing_data_type": _("Must be BillingData(name, email, phone_number)."),
    "not_list": _("Must be a list."),
    "custom_field_value_type": _("Must be CustomFieldValue(field_label, field_value)."),
    "custom_field_value_invalid": _("Must be text, a whole number, a Decimal or true or false."),
    "custom_field_decimal": _("A Decimal value must be finite with at most two decimals."),
    "custom_field_definition_type": _("Must be CustomFieldDefinition(field_label, field_type, ...)."),
    "choices_missing": _("A DROPDOWNLIST needs at least one choice."),
    "choice_with_comma": _("Choices are sent comma-separated, so none may hold a comma."),
    "choices_not_allowed": _("Only a DROPDOWNLIST has choices."),
    "tag_type": _("Must be Tag(id, name)."),
    "names_invalid": _("Must be a list of names or comma-separated text."),
    "name_blank": _("Each name must be a non-empty text."),
    "names_empty": _("Name at least one."),
    "names_unknown": _("Unknown: %(unknown)s. Allowed: %(allowed)s."),
    "form_value_invalid": _(
        "Must be text, a whole number, a Decimal, true or false, or a JSON object or list of those."
    ),
    "logo_unreadable": _("Cannot read the file %(file)s: %(reason)s."),
    "logo_text_mode": _("Open the file in binary mode ('rb')."),
    "logo_type": _(
        "Must be Logo(filename, content), bytes, a binary file, a path, "
        "or a (filename, bytes or file[, content_type]) tuple."
    ),
    "logo_format": _("Must be a png or jpg image."),
}

_REFUSED_NAME = _("The payment service did not accept this name: enter a first and a last name.")
_REFUSED_EMAIL = _("The payment service did not accept this e-mail address: check it.")
_REFUSED_PHONE = _(
    "The payment service did not accept this mobile number: check it, with + and the country code "
    "(for example +201001234567)."
)
#: Also what to say when the service answers that it does not know a promocode at all (:class:`NotFound`).
PROMOCODE_UNKNOWN = _("This promocode is unknown or no longer valid.")
_PROMOCODE_ELSEWHERE = _("This promocode does not apply to this payment.")

#: For each operation, the fields (the spec's paths) whose refusal by the service we word ourselves: one
#: message per field, whatever the service said and however many times. Other fields, and refusals of no
#: field, keep the service's words.
SERVICE_REFUSALS: dict[str, dict[str, _StrPromise]] = {
    "pay": {
        "billing_data.name": _REFUSED_NAME,
        "billing_data.email": _REFUSED_EMAIL,
        "billing_data.phone_number": _REFUSED_PHONE,
        "promocode_id": PROMOCODE_UNKNOWN,
    },
    "validate_promocode": {
        "name": PROMOCODE_UNKNOWN,  # the promocode's name
        "phone_number": _REFUSED_PHONE,
        "amount": _PROMOCODE_ELSEWHERE,
        "currency": _PROMOCODE_ELSEWHERE,
        "payment_for": _PROMOCODE_ELSEWHERE,
    },
    "create_direct_order": {
        "customer_name": _REFUSED_NAME,
        "customer_email": _REFUSED_EMAIL,
        "customer_mobile": _REFUSED_PHONE,
    },
}


def _param(value: Any) -> Any:
    # Several values (the currencies of the spec, unknown keys) are listed the active language's way.
    if isinstance(value, tuple):
        return get_text_list([str(item) for item in value])
    return value


def message(problem: Problem) -> str:
    """The problem's message in the active language (its English words for a code this app does not
    know, from a newer client)."""
    template = MESSAGES.get(problem.code)
    if template is None:
        return problem.message
    return str(template) % {name: _param(value) for name, value in problem.params.items()}


def messages(problems: Iterable[Problem]) -> list[str]:
    return [message(problem) for problem in problems]


def field_errors(problems: Mapping[str, Iterable[Problem]]) -> dict[str, list[str]]:
    """``{"billing_data.phone_number": [Problem, ...]}`` -> the same paths with translated messages."""
    return {path: messages(items) for path, items in problems.items()}


def service_field_errors(operation: str, errors: Mapping[str, Iterable[str]]) -> dict[str, list[Any]]:
    """The service's field errors of ``operation`` (``{"billing_data.phone_number": ["..."]}``) with our own
    words, lazily translated, for each field :data:`SERVICE_REFUSALS` knows; the others as they came."""
    known = SERVICE_REFUSALS.get(operation, {})
    return {path: [known[path]] if path in known else list(texts) for path, texts in errors.items()}
