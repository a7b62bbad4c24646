"""Checks made before anything is sent, so a bad call fails fast with an error naming the field.

The rules are the spec's: currencies from its list, amounts above zero with at most two
decimals, a first and a last name, phone numbers with a country code, whole positive day
counts, dates, recurring fields given together, png or jpg logos. Every problem of a call is
collected and raised together as one :class:`~django_paycollect.client.errors.ValidationError`
with ``sent=False``; each message comes with a :class:`~django_paycollect.client.errors.Problem`,
a stable code and its parameters (:data:`MESSAGES` lists the codes), so that programs and
translations never parse the English words.

Arguments are read in the spec's own shapes (nested objects as mappings) as well as our typed
values, and the spec's lists and names are matched as the service matches them: case-insensitively,
spaces trimmed. What is sent is always the spec's shape and spelling.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from .errors import Problem, ValidationError
from .money import MoneyError, dumps_json, exact_decimal, from_piasters, to_piasters
from .rules import MESSAGES, PHONE_MESSAGES, message, name_problem, normalise_phone, phone_problem, spelled
from .types import (
    APP_MODULES,
    COMMUNITY_PAYMENT_METHODS,
    CURRENCIES,
    CUSTOM_FIELD_TYPES,
    KNOWN_PAY_USING,
    Amount,
    BillingData,
    CustomFieldDefinition,
    CustomFieldValue,
    Logo,
    Tag,
)

__all__ = [
    "MESSAGES",
    "PHONE_MESSAGES",
    "Checker",
    "message",
    "name_problem",
    "normalise_phone",
    "phone_problem",
]


def _fields(value: Any, typed: type) -> tuple[Any, ...] | None:
    """The fields of a ``typed`` dataclass, from one or from the spec's mapping of them, else None."""
    names = [item.name for item in dataclasses.fields(typed)]
    if isinstance(value, typed):
        return tuple(getattr(value, name) for name in names)
    if isinstance(value, Mapping):
        return tuple(value.get(name) for name in names)
    return None


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
#: The images a logo may be, by their first bytes: their content type and file extension.
_IMAGES = ((b"\x89PNG\r\n\x1a\n", "image/png", "png"), (b"\xff\xd8\xff", "image/jpeg", "jpg"))


class Checker:
    """Collects field errors while a request body is built; :meth:`done` raises them all."""

    def __init__(self) -> None:
        self.problems: dict[str, list[Problem]] = {}

    def fail(self, path: str, code: str, **params: Any) -> None:
        """Record a problem of the field at ``path``: a code of :data:`MESSAGES` and its parameters."""
        self.problems.setdefault(path, []).append(Problem(code, message(code, params), params))

    def done(self) -> None:
        if self.problems:
            raise ValidationError("invalid request, nothing was sent", problems=self.problems, sent=False)

    def _missing(self, path: str, value: Any, required: bool) -> bool:
        """Whether ``value`` is left out (None): a problem when it is ``required``."""
        if value is None and required:
            self.fail(path, "required")
        return value is None

    # --- scalars ----------------------------------------------------------------------

    def text(self, path: str, value: Any, *, required: bool = True) -> str | None:
        if self._missing(path, value, required):
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(path, "not_text")
            return None
        return value.strip()

    def amount(self, path: str, value: Any, *, required: bool = True) -> Decimal | None:
        if self._missing(path, value, required):
            return None
        try:
            amount = exact_decimal(value)
            to_piasters(amount)
        except MoneyError as exc:
            self.fail(path, exc.code, **exc.params)
            return None
        if amount <= 0:
            self.fail(path, "not_positive")
            return None
        return amount

    def percentage(self, path: str, value: Any) -> Decimal | None:
        if value is None:
            return None
        try:
            pct = exact_decimal(value)
            to_piasters(pct)
        except MoneyError:
            self.fail(path, "percentage_invalid")
            return None
        if not Decimal(0) <= pct <= Decimal(100):
            self.fail(path, "percentage_range", min=0, max=100)
            return None
        return pct

    def currency(self, path: str, value: Any) -> str | None:
        """A currency of the spec's list, in any case and with spaces around: sent as ``EGP``."""
        if value is None:
            return None
        code = spelled(value, CURRENCIES) if isinstance(value, str) else None
        if code is None:
            self.fail(path, "one_of", choices=tuple(CURRENCIES))
        return code

    def name_of(self, path: str, value: Any, known: Sequence[str], *, required: bool = True) -> str | None:
        """A name the spec spells out in ``known`` (matched case-insensitively, sent in its spelling) or
        another one, sent as given, trimmed: the spec's lists of such names are open or hold
        placeholders (network names are your configuration)."""
        name = self.text(path, value, required=required)
        if name is None:
            return None
        return spelled(name, known) or name

    def payment_method(self, path: str, value: Any, *, required: bool = True) -> str | None:
        """``pay_using`` or ``selected_payment_method``: ``card`` and ``kiosk`` in any case are sent as
        the spec spells them; other names (network names, placeholders in the spec) as given."""
        return self.name_of(path, value, KNOWN_PAY_USING, required=required)

    def amount_object(
        self, path: str, value: Any, currency: Any, *, default_currency: str | None, required: bool
    ) -> dict[str, Any] | None:
        """Direct order's ``amount`` or ``discount_amount``: ``{"amount": Decimal, "currency": "EGP"}``.

        ``value`` is the spec's object (a mapping of ``amount`` and ``currency``, or an
        :class:`~django_paycollect.client.Amount`) or, our convenience form, the bare amount with its
        currency given apart as ``currency``. Without a currency anywhere, ``default_currency``.
        """
        if self._missing(f"{path}.amount", value, required):
            return None
        given: Any = None
        raw: Any
        if isinstance(value, Amount):
            raw, given = value.amount, value.currency
        elif isinstance(value, Mapping):
            unknown = sorted(str(key) for key in value if key not in ("amount", "currency"))
            if unknown:
                self.fail(path, "amount_object_keys", keys=tuple(unknown))
            raw, given = value.get("amount"), value.get("currency")
            if raw is None:
                self.fail(f"{path}.amount", "required")
                return None
        else:
            raw = value
        amount = self.amount(f"{path}.amount", raw)
        inside = self.currency(f"{path}.currency", given) if given is not None else None
        apart = self.currency(f"{path}.currency", currency) if currency is not None else None
        if (given is not None and inside is None) or (currency is not None and apart is None):
            return None
        if inside is not None and apart is not None and inside != apart:
            self.fail(f"{path}.currency", "currency_twice", inside=inside, apart=apart)
            return None
        code = inside or apart or default_currency
        if amount is None or code is None:
            return None
        return {"amount": amount, "currency": code}

    def charged_amount(self, amount: Any, piasters: Any) -> tuple[Decimal | None, int | None]:
        """Pay's ``amount``, or the ``amount_piasters`` the spec's kiosk example carries in its place.

        Returns (amount, piasters given or None). Given both, they must agree to the piaster.
        """
        if piasters is None:
            return self.amount("amount", amount), None
        if isinstance(piasters, bool) or not isinstance(piasters, int) or piasters <= 0:
            self.fail("amount_piasters", "piasters_invalid")
            return (self.amount("amount", amount) if amount is not None else None), None
        if amount is None:
            return from_piasters(piasters), piasters
        charged = self.amount("amount", amount)
        if charged is not None and to_piasters(charged) != piasters:
            self.fail("amount_piasters", "piasters_mismatch", piasters=to_piasters(charged))
            return None, None
        return charged, piasters

    def person_name(self, path: str, value: Any) -> str | None:
        name = self.text(path, value)
        if name is not None and name_problem(name):
            self.fail(path, "name_one_word")
            return None
        return name

    def email(self, path: str, value: Any, *, required: bool = True) -> str | None:
        email = self.text(path, value, required=required)
        if email is not None and not _EMAIL.match(email):
            self.fail(path, "email_invalid")
            return None
        return email

    def phone(self, path: str, value: Any, *, required: bool = True) -> str | None:
        phone = self.text(path, value, required=required)
        if phone is None:
            return None
        phone = normalise_phone(phone)
        problem = phone_problem(phone)
        if problem:
            self.fail(path, f"phone_{problem}")
            return None
        return phone

    def identifier(self, path: str, value: Any) -> str | None:
        """An id the spec types as a string: a positive int or non-empty text, sent as text."""
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return str(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
        self.fail(path, "identifier_invalid")
        return None

    def positive_int(self, path: str, value: Any, *, required: bool = True) -> int | None:
        if self._missing(path, value, required):
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            self.fail(path, "not_positive_int")
            return None
        return value

    def boolean(self, path: str, value: Any) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            self.fail(path, "not_boolean")
            return None
        return value

    def day(self, path: str, value: Any, *, required: bool = True) -> str | None:
        """A date as the spec writes it: ``YYYY-MM-DD``."""
        if self._missing(path, value, required):
            return None
        if isinstance(value, dt.datetime):
            self.fail(path, "date_with_time")
            return None
        if isinstance(value, dt.date):
            return value.isoformat()
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value.strip()).isoformat()
            except ValueError:
                pass
        self.fail(path, "date_invalid")
        return None

    def recurring(self, flag_path: str, flag: Any, expiry_date: Any, minimum_days: Any) -> dict[str, Any]:
        """The recurring fields of Pay or Direct order, which only make sense together."""
        enabled = self.boolean(flag_path, flag)
        if not enabled:
            for path, value in (
                ("expiry_date", expiry_date),
                ("minimum_days_between_payments", minimum_days),
            ):
                if value is not None:
                    self.fail(path, "only_when_recurring", flag=flag_path)
            return {} if enabled is None else {flag_path: False}
        return {
            flag_path: True,
            "expiry_date": self.day("expiry_date", expiry_date),
            "minimum_days_between_payments": self.positive_int("minimum_days_between_payments", minimum_days),
        }

    # --- structures -------------------------------------------------------------------

    def billing_data(self, value: Any) -> dict[str, Any] | None:
        given = _fields(value, BillingData)
        if given is None:
            self.fail("billing_data", "billing_data_type")
            return None
        name, email, phone = given
        return {
            "name": self.person_name("billing_data.name", name),
            "email": self.email("billing_data.email", email),
            "phone_number": self.phone("billing_data.phone_number", phone),
        }

    def _each(self, path: str, value: Any, typed: type, code: str) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """Each item of the list ``value``, a ``typed`` or its mapping (else ``code``): path and fields."""
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            self.fail(path, "not_list")
            return
        for i, item in enumerate(value):
            given = _fields(item, typed)
            if given is None:
                self.fail(f"{path}.{i}", code)
            else:
                yield f"{path}.{i}", given

    def custom_field_values(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        out = []
        items = self._each("custom_fields", value, CustomFieldValue, "custom_field_value_type")
        for path, (label, field_value) in items:
            label = self.text(f"{path}.field_label", label)
            if isinstance(field_value, float) or not isinstance(field_value, (str, int, Decimal)):
                self.fail(f"{path}.field_value", "custom_field_value_invalid")
            elif isinstance(field_value, Decimal):
                # In a request body a Decimal is money: at most two decimals. Other numbers go as text.
                try:
                    to_piasters(field_value)
                except MoneyError:
                    self.fail(f"{path}.field_value", "custom_field_decimal")
            out.append({"field_label": label, "field_value": field_value})
        return out

    def custom_field_definitions(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        out = []
        items = self._each("custom_fields", value, CustomFieldDefinition, "custom_field_definition_type")
        for path, (label, given_type, given_required, choices) in items:
            definition: dict[str, Any] = {"field_label": self.text(f"{path}.field_label", label)}
            field_type = spelled(given_type, CUSTOM_FIELD_TYPES) if isinstance(given_type, str) else None
            if field_type is None:
                self.fail(f"{path}.field_type", "one_of", choices=tuple(CUSTOM_FIELD_TYPES))
            definition["field_type"] = field_type
            required = self.boolean(f"{path}.required", given_required)
            if required is not None:
                definition["required"] = required
            if field_type == "DROPDOWNLIST":
                if isinstance(choices, str):
                    choices = [c.strip() for c in choices.split(",")]
                if not isinstance(choices, Sequence) or not [c for c in choices if str(c).strip()]:
                    self.fail(f"{path}.field_choices", "choices_missing")
                elif any("," in str(c) for c in choices):
                    self.fail(f"{path}.field_choices", "choice_with_comma")
                else:
                    definition["field_choices"] = ",".join(str(c).strip() for c in choices if str(c).strip())
            elif choices is not None:
                self.fail(f"{path}.field_choices", "choices_not_allowed")
            out.append(definition)
        return out

    def tags(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        return [
            {"id": self.positive_int(f"{path}.id", tag_id), "name": self.text(f"{path}.name", name)}
            for path, (tag_id, name) in self._each("tags", value, Tag, "tag_type")
        ]

    def names(self, path: str, value: Any, known: Sequence[str], *, only_known: bool) -> list[str] | None:
        """A list of names, or the spec's comma-separated text of them.

        Names are trimmed and matched with ``known`` case-insensitively, then written as ``known``
        spells them; repeats are dropped. With ``only_known`` any other name is refused; without it,
        other names (network names: placeholders in the spec, your configuration) are kept as given.
        """
        if value is None:
            return None
        if isinstance(value, str):
            items: Sequence[Any] = [item for item in value.split(",") if item.strip()]
        elif isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Sequence):
            self.fail(path, "names_invalid")
            return None
        else:
            items = value
        if any(not isinstance(item, str) or not item.strip() for item in items):
            self.fail(path, "name_blank")
            return None
        names: list[str] = []
        unknown: list[str] = []
        for item in items:
            name = spelled(item, known)
            if name is None:
                unknown.append(item.strip())
                name = item.strip()
            if name not in names:
                names.append(name)
        if not names:
            self.fail(path, "names_empty")
            return None
        if only_known and unknown:
            self.fail(path, "names_unknown", unknown=tuple(unknown), allowed=tuple(known))
            return None
        return names

    def app_modules(self, value: Any) -> str | None:
        """Create community's ``app_modules``: sent as comma-separated text (``Service,Event``)."""
        modules = self.names("app_modules", value, APP_MODULES, only_known=True)
        return ",".join(modules) if modules is not None else None

    def community_payment_methods(self, value: Any) -> str | None:
        """Create community's ``payment_methods``: ``Card`` and ``Kiosk`` as the spec spells them, network
        names as given; sent as comma-separated text."""
        methods = self.names("payment_methods", value, COMMUNITY_PAYMENT_METHODS, only_known=False)
        return ",".join(methods) if methods is not None else None

    def payment_methods(self, path: str, value: Any) -> list[str] | None:
        """Direct order's ``payment_methods`` (case-insensitive at the service): sent as an array, ``card``
        and ``kiosk`` spelled as in ``pay_using``, other names as given."""
        if self._missing(path, value, True):
            return None
        return self.names(path, value, KNOWN_PAY_USING, only_known=False)

    def form_value(self, path: str, value: Any) -> str | None:
        """A create-community field whose rules the spec does not show, as multipart form text:
        text as given, booleans ``true``/``false``, numbers as digits, objects and lists as JSON."""
        if value is None:
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, Decimal) and value.is_finite():
            return format(value, "f")
        if isinstance(value, (Mapping, list, tuple)):
            try:
                return dumps_json(value)
            except (MoneyError, TypeError, ValueError, RecursionError):
                pass
        self.fail(path, "form_value_invalid")
        return None

    def logo(self, value: Any) -> Logo | None:
        """A png or jpg logo from a :class:`Logo`, bytes, a binary file object, a path, or a requests-style
        tuple ``(filename, bytes or file object[, content_type[, headers]])``. Judged by its content."""
        if self._missing("logo", value, True):
            return None
        name: Any = None
        content_type: Any = None
        content: Any
        if isinstance(value, Logo):
            name, content, content_type = value.filename, value.content, value.content_type
        elif isinstance(value, tuple) and len(value) in (2, 3, 4):
            name, content = value[0], value[1]
            content_type = value[2] if len(value) > 2 else None
        elif isinstance(value, (str, os.PathLike)):
            try:
                with open(value, "rb") as handle:
                    content = handle.read()
            except OSError as exc:
                self.fail(
                    "logo", "logo_unreadable", file=repr(os.fspath(value)), reason=str(exc.strerror or exc)
                )
                return None
            name = os.fspath(value)
        else:
            content = value
        if hasattr(content, "read"):
            if name is None:
                name = getattr(content, "name", None)  # an int for a file opened from a descriptor
                name = name if isinstance(name, (str, os.PathLike)) else None
            content = content.read()
            if isinstance(content, str):
                self.fail("logo", "logo_text_mode")
                return None
        if isinstance(content, (bytearray, memoryview)):
            content = bytes(content)
        if not isinstance(content, bytes) or not (name is None or isinstance(name, (str, os.PathLike))):
            self.fail("logo", "logo_type")
            return None
        image = next(((kind, ext) for magic, kind, ext in _IMAGES if content.startswith(magic)), None)
        if image is None:
            self.fail("logo", "logo_format")
            return None
        kind, extension = image
        filename = os.path.basename(os.fspath(name)) if name else ""
        if content_type is not None and not isinstance(content_type, str):
            content_type = None
        return Logo(filename or f"logo.{extension}", content, content_type or kind)
