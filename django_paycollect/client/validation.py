"""Checks made before anything is sent, so a bad call fails fast with an error naming the field.

The rules are the spec's: currencies from its list, amounts above zero with at most two
decimals, a first and a last name, phone numbers with a country code, whole positive day
counts, dates, recurring fields given together, png or jpg logos. Every problem of a call is
collected and raised together as one :class:`~django_paycollect.client.errors.ValidationError`
with ``sent=False``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from .errors import ValidationError
from .money import MoneyError, parse_amount, to_piasters
from .types import (
    APP_MODULES,
    CURRENCIES,
    CUSTOM_FIELD_TYPES,
    BillingData,
    CustomFieldDefinition,
    CustomFieldValue,
    Logo,
    Tag,
)

__all__ = ["Checker", "normalise_phone"]

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PHONE_FORMATTING = re.compile(r"[\s\-().]")
_E164 = re.compile(r"^\+[1-9]\d{6,14}$")
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"


def normalise_phone(value: str) -> str:
    """``"+20 100 123-4567"`` -> ``"+201001234567"``; a leading ``00`` becomes ``+``."""
    phone = _PHONE_FORMATTING.sub("", value.strip())
    if phone.startswith("00"):
        phone = "+" + phone[2:]
    return phone


class Checker:
    """Collects field errors while a request body is built; :meth:`done` raises them all."""

    def __init__(self) -> None:
        self.field_errors: dict[str, list[str]] = {}

    def fail(self, path: str, message: str) -> None:
        self.field_errors.setdefault(path, []).append(message)

    def done(self) -> None:
        if self.field_errors:
            raise ValidationError(
                "invalid request, nothing was sent", field_errors=self.field_errors, sent=False
            )

    # --- scalars ----------------------------------------------------------------------

    def text(self, path: str, value: Any, *, required: bool = True) -> str | None:
        if value is None:
            if required:
                self.fail(path, "This field is required.")
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(path, "Must be a non-empty string.")
            return None
        return value.strip()

    def amount(self, path: str, value: Any, *, required: bool = True) -> Decimal | None:
        if value is None:
            if required:
                self.fail(path, "This field is required.")
            return None
        try:
            amount = parse_amount(value)
            to_piasters(amount)
        except MoneyError as exc:
            message = str(exc)
            self.fail(path, f"{message[:1].upper()}{message[1:]}.")
            return None
        if amount <= 0:
            self.fail(path, "Must be greater than zero.")
            return None
        return amount

    def percentage(self, path: str, value: Any) -> Decimal | None:
        if value is None:
            return None
        try:
            pct = parse_amount(value)
            to_piasters(pct)
        except MoneyError:
            self.fail(path, "Must be a Decimal percentage with at most two decimals.")
            return None
        if not Decimal(0) <= pct <= Decimal(100):
            self.fail(path, "Must be between 0 and 100.")
            return None
        return pct

    def currency(self, path: str, value: Any) -> str | None:
        if value is None:
            return None
        if value not in CURRENCIES:
            self.fail(path, f"Must be one of {', '.join(CURRENCIES)}.")
            return None
        return str(value)

    def person_name(self, path: str, value: Any) -> str | None:
        name = self.text(path, value)
        if name is not None and len(name.split()) < 2:
            self.fail(path, "Must contain a first and a last name separated by a space.")
            return None
        return name

    def email(self, path: str, value: Any, *, required: bool = True) -> str | None:
        email = self.text(path, value, required=required)
        if email is not None and not _EMAIL.match(email):
            self.fail(path, "Must be a valid e-mail address.")
            return None
        return email

    def phone(self, path: str, value: Any, *, required: bool = True) -> str | None:
        phone = self.text(path, value, required=required)
        if phone is None:
            return None
        phone = normalise_phone(phone)
        if not _E164.match(phone):
            self.fail(path, "Must start with + and the country code, then the number (e.g. +201001234567).")
            return None
        return phone

    def identifier(self, path: str, value: Any) -> str | None:
        """An id the spec types as a string: a positive int or non-empty text, sent as text."""
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return str(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
        self.fail(path, "Must be a positive whole number or a non-empty string.")
        return None

    def positive_int(self, path: str, value: Any, *, required: bool = True) -> int | None:
        if value is None:
            if required:
                self.fail(path, "This field is required.")
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            self.fail(path, "Must be a whole number greater than zero.")
            return None
        return value

    def boolean(self, path: str, value: Any) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            self.fail(path, "Must be true or false.")
            return None
        return value

    def day(self, path: str, value: Any, *, required: bool = True) -> str | None:
        """A date as the spec writes it: ``YYYY-MM-DD``."""
        if value is None:
            if required:
                self.fail(path, "This field is required.")
            return None
        if isinstance(value, dt.datetime):
            self.fail(path, "Must be a date, not a date and time.")
            return None
        if isinstance(value, dt.date):
            return value.isoformat()
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value.strip()).isoformat()
            except ValueError:
                pass
        self.fail(path, "Must be a date (datetime.date or YYYY-MM-DD).")
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
                    self.fail(path, f"Only allowed when {flag_path} is true.")
            return {} if enabled is None else {flag_path: False}
        return {
            flag_path: True,
            "expiry_date": self.day("expiry_date", expiry_date),
            "minimum_days_between_payments": self.positive_int("minimum_days_between_payments", minimum_days),
        }

    # --- structures -------------------------------------------------------------------

    def billing_data(self, value: Any) -> dict[str, Any] | None:
        if isinstance(value, Mapping):
            name, email, phone = value.get("name"), value.get("email"), value.get("phone_number")
        elif isinstance(value, BillingData):
            name, email, phone = value.name, value.email, value.phone_number
        else:
            self.fail("billing_data", "Must be BillingData(name, email, phone_number).")
            return None
        return {
            "name": self.person_name("billing_data.name", name),
            "email": self.email("billing_data.email", email),
            "phone_number": self.phone("billing_data.phone_number", phone),
        }

    def _items(self, path: str, value: Any) -> Sequence[Any]:
        if value is None:
            return []
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            self.fail(path, "Must be a list.")
            return []
        return value

    def custom_field_values(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        out = []
        label: Any
        field_value: Any
        for i, item in enumerate(self._items("custom_fields", value)):
            path = f"custom_fields.{i}"
            if isinstance(item, CustomFieldValue):
                label, field_value = item.field_label, item.field_value
            elif isinstance(item, Mapping):
                label, field_value = item.get("field_label"), item.get("field_value")
            else:
                self.fail(path, "Must be CustomFieldValue(field_label, field_value).")
                continue
            label = self.text(f"{path}.field_label", label)
            if isinstance(field_value, float) or not isinstance(field_value, (str, int, Decimal)):
                self.fail(f"{path}.field_value", "Must be a string, an int, a Decimal or a boolean.")
            elif isinstance(field_value, Decimal):
                # In a request body a Decimal is money: at most two decimals. Other numbers go as text.
                try:
                    to_piasters(field_value)
                except MoneyError:
                    self.fail(
                        f"{path}.field_value", "A Decimal value must be finite with at most two decimals."
                    )
            out.append({"field_label": label, "field_value": field_value})
        return out

    def custom_field_definitions(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        out = []
        for i, item in enumerate(self._items("custom_fields", value)):
            path = f"custom_fields.{i}"
            if isinstance(item, Mapping):
                item = CustomFieldDefinition(
                    field_label=item.get("field_label"),  # type: ignore[arg-type]
                    field_type=item.get("field_type"),  # type: ignore[arg-type]
                    required=item.get("required"),
                    field_choices=item.get("field_choices"),
                )
            if not isinstance(item, CustomFieldDefinition):
                self.fail(path, "Must be CustomFieldDefinition(field_label, field_type, ...).")
                continue
            definition: dict[str, Any] = {"field_label": self.text(f"{path}.field_label", item.field_label)}
            if item.field_type not in CUSTOM_FIELD_TYPES:
                self.fail(f"{path}.field_type", f"Must be one of {', '.join(CUSTOM_FIELD_TYPES)}.")
            definition["field_type"] = item.field_type
            required = self.boolean(f"{path}.required", item.required)
            if required is not None:
                definition["required"] = required
            choices = item.field_choices
            if item.field_type == "DROPDOWNLIST":
                if isinstance(choices, str):
                    choices = [c.strip() for c in choices.split(",")]
                if not isinstance(choices, Sequence) or not [c for c in choices if str(c).strip()]:
                    self.fail(f"{path}.field_choices", "A DROPDOWNLIST needs at least one choice.")
                elif any("," in str(c) for c in choices):
                    self.fail(
                        f"{path}.field_choices", "Choices are sent comma-separated, so none may hold a comma."
                    )
                else:
                    definition["field_choices"] = ",".join(str(c).strip() for c in choices if str(c).strip())
            elif choices is not None:
                self.fail(f"{path}.field_choices", "Only a DROPDOWNLIST has choices.")
            out.append(definition)
        return out

    def tags(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        out = []
        tag_id: Any
        name: Any
        for i, item in enumerate(self._items("tags", value)):
            if isinstance(item, Tag):
                tag_id, name = item.id, item.name
            elif isinstance(item, Mapping):
                tag_id, name = item.get("id"), item.get("name")
            else:
                self.fail(f"tags.{i}", "Must be Tag(id, name).")
                continue
            out.append(
                {"id": self.positive_int(f"tags.{i}.id", tag_id), "name": self.text(f"tags.{i}.name", name)}
            )
        return out

    def names_from(self, path: str, value: Any, allowed: Sequence[str] | None) -> str | None:
        """A list (or the spec's comma-separated text) of names, sent comma-separated."""
        if value is None:
            return None
        items = value.split(",") if isinstance(value, str) else value
        if isinstance(items, (bytes, Mapping)) or not isinstance(items, Sequence):
            self.fail(path, "Must be a list of names.")
            return None
        names = [str(item).strip() for item in items if str(item).strip()]
        if not names:
            self.fail(path, "Must name at least one.")
            return None
        if allowed is not None:
            unknown = [n for n in names if n not in allowed]
            if unknown:
                self.fail(path, f"Unknown: {', '.join(unknown)}. Allowed: {', '.join(allowed)}.")
                return None
        return ",".join(names)

    def app_modules(self, value: Any) -> str | None:
        return self.names_from("app_modules", value, APP_MODULES)

    def payment_methods(self, path: str, value: Any) -> list[str] | None:
        items = self._items(path, value)
        methods = [m.strip() for m in items if isinstance(m, str) and m.strip()]
        if value is not None and (not methods or len(methods) != len(items)):
            self.fail(path, "Must be a non-empty list of payment method names.")
            return None
        return methods or None

    def logo(self, value: Any) -> Logo | None:
        if value is None:
            self.fail("logo", "This field is required.")
            return None
        if isinstance(value, tuple) and len(value) in (2, 3):
            value = Logo(*value)
        elif hasattr(value, "read"):
            content = value.read()
            value = Logo(getattr(value, "name", "logo") or "logo", content)
        if not isinstance(value, Logo) or not isinstance(value.content, bytes):
            self.fail("logo", "Must be Logo(filename, content), a (filename, bytes) tuple or a binary file.")
            return None
        if value.content.startswith(_PNG):
            kind = "image/png"
        elif value.content.startswith(_JPEG):
            kind = "image/jpeg"
        else:
            self.fail("logo", "Must be a png or jpg image.")
            return None
        return Logo(value.filename.rsplit("/", 1)[-1] or "logo", value.content, value.content_type or kind)
