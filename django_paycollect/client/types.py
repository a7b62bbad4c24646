"""Typed inputs and results of the client.

Results are read leniently: a field the spec names but the service left out or sent in another
type is ``None`` on the typed object, and every field we do not know is kept in ``extra``. The
envelope's ``data`` always holds the answer exactly as it came, so nothing is ever lost.
Status values stay the service's own text: an unknown status is kept, not dropped or guessed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar, Self, TypeVar

from .money import MoneyError, exact_decimal, from_piasters, loads_json

__all__ = [
    "APP_MODULES",
    "COMMUNITY_PAYMENT_METHODS",
    "CURRENCIES",
    "CUSTOM_FIELD_TYPES",
    "DEFAULT_CURRENCY",
    "DEFAULT_PAY_USING",
    "KNOWN_PAYMENT_FOR",
    "KNOWN_PAY_USING",
    "KNOWN_TRANSACTION_STATUSES",
    "Amount",
    "BillingData",
    "CommunityCreated",
    "CustomFieldDefinition",
    "CustomFieldValue",
    "DashboardStatistics",
    "DirectOrderCreated",
    "Logo",
    "OperationMessage",
    "PaymentStarted",
    "PreparedAmount",
    "PromocodeValidated",
    "RecurringInfo",
    "Tag",
    "Transaction",
    "TransactionStatus",
    "custom_fields_from",
]

#: Currencies the spec lists; EGP is the default and the currency fees are computed in.
CURRENCIES = ("EGP", "USD", "EUR", "SAR", "AED", "GBP")
DEFAULT_CURRENCY = "EGP"
#: Payment method the spec names as the default (fees are computed on it).
DEFAULT_PAY_USING = "card"
CUSTOM_FIELD_TYPES = ("TEXT", "NUMBER", "CHECKBOX", "DROPDOWNLIST")
#: App modules a community may enable (create community).
APP_MODULES = ("Service", "Bill", "Event", "Product", "Training", "Sport", "Course")
#: ``pay_using`` values the spec spells out; the others are network names, which are placeholders in
#: the spec (your configuration), so they are sent as given.
KNOWN_PAY_USING = ("card", "kiosk")
#: ``payment_for`` values the spec shows (others are sent as given).
KNOWN_PAYMENT_FOR = ("API_PAYMENT", "EVENT", "BILL")
#: Payment methods of create community the spec spells out (the others are network placeholders).
COMMUNITY_PAYMENT_METHODS = ("Card", "Kiosk")


class TransactionStatus:
    """Status values the spec shows. The complete set is not shown, so others are kept as text."""

    PENDING = "PENDING"
    SUCCESSFUL = "SUCCESSFUL"
    FAILED = "FAILED"


KNOWN_TRANSACTION_STATUSES = (
    TransactionStatus.PENDING,
    TransactionStatus.SUCCESSFUL,
    TransactionStatus.FAILED,
)


# --- inputs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Amount:
    """An amount with its currency, as Direct order sends ``amount`` and ``discount_amount``:
    ``{"amount": ..., "currency": ...}``. A plain mapping of the same two keys works as well.

    Without a currency, ``amount`` is in the ``currency`` given beside it (else EGP) and
    ``discount_amount`` in the order's currency.
    """

    amount: Decimal | int | str
    currency: str | None = None


@dataclass(frozen=True)
class BillingData:
    """The payer of a Pay call. ``name`` needs a first and a last name; ``phone_number`` a country code."""

    name: str
    email: str
    phone_number: str


@dataclass(frozen=True)
class CustomFieldValue:
    """A custom field value sent with Pay and saved with the invoice data."""

    field_label: str
    field_value: str | int | Decimal | bool


@dataclass(frozen=True)
class CustomFieldDefinition:
    """A custom field a direct order asks the customer for.

    ``field_choices`` is only for DROPDOWNLIST: a list of choices or the spec's comma-separated text.
    """

    field_label: str
    field_type: str
    required: bool | None = None
    field_choices: str | Sequence[str] | None = None


@dataclass(frozen=True)
class Tag:
    """A direct order tag, sent as ``{"id": ..., "name": ...}``."""

    id: int
    name: str


@dataclass(frozen=True)
class Logo:
    """A community logo for create community: png or jpg content (judged by the content, not the name).

    ``create_community(logo=...)`` also takes a binary file object, bytes, a path, or a
    requests-style tuple ``(filename, bytes or file object[, content_type])``.
    """

    filename: str
    content: bytes = field(repr=False)
    content_type: str | None = None


# --- lenient readers ----------------------------------------------------------------------


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return str(value)
    return None


_INTEGER_TEXT = re.compile(r"-?[0-9]{1,18}")
_T = TypeVar("_T")


def whole_number(value: Any) -> int | None:
    """An int from an int, a whole Decimal or ASCII digits; ids and counts have at most 18 digits.

    The bound matters: converting a Decimal like 1E+1000000 to int would take seconds of CPU.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value.adjusted() < 18:
        return int(value) if value == value.to_integral_value() else None
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        return int(value)
    return None


def _amount(value: Any) -> Decimal | None:
    try:
        return exact_decimal(value)
    except MoneyError:
        return None


def _boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _iso(parse: Callable[[str], _T]) -> Callable[[Any], _T | None]:
    """A reader of ISO text with ``parse`` (``dt.date.fromisoformat``): None for anything else."""

    def read(value: Any) -> _T | None:
        try:
            return parse(value) if isinstance(value, str) else None
        except ValueError:
            return None

    return read


def _message(data: Mapping[str, Any]) -> str | None:
    """``message`` as the spec names it, else ``details`` (what some of the service's answers carry)."""
    message = _text(data.get("message"))
    return message if message is not None else _text(data.get("details"))


def custom_fields_from(value: Any) -> dict[str, Any] | None:
    """``{label: value}`` from a transaction's ``custom_fields_json``, whichever shape it came in.

    The spec says an object (``{"Seats": 2}``); the service's SDK fixtures show the list Pay sends
    (``[{"field_label": "Seats", "field_value": 2}]``); JSON text of either is read too. Anything else
    (an item without a text label, a label given twice, another type) is None: the raw value is
    kept beside it, never guessed at.
    """
    if isinstance(value, str):
        try:
            value = loads_json(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping):
        return {str(label): item for label, item in value.items()}
    if not isinstance(value, list):
        return None
    fields: dict[str, Any] = {}
    for item in value:
        label = item.get("field_label") if isinstance(item, Mapping) else None
        if not isinstance(label, str) or label in fields:
            return None
        fields[label] = item.get("field_value")
    return fields


@dataclass(frozen=True)
class _Result:
    """Base of typed results: ``extra`` holds every field of ``data`` the spec does not name."""

    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True)

    #: The fields read each from the key of its name, with its lenient reader.
    READERS: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    @classmethod
    def _read(cls, data: Mapping[str, Any], *known: str, **given: Any) -> Self:
        """The result: ``READERS``' fields, then ``given``; keys neither read nor ``known`` are ``extra``."""
        read = {name: reader(data.get(name)) for name, reader in cls.READERS.items()}
        known_keys = set(cls.READERS) | set(known)
        return cls(**read, **given, extra={k: v for k, v in data.items() if k not in known_keys})

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        return cls._read(data)


@dataclass(frozen=True)
class PreparedAmount(_Result):
    """Prepare amount: the total with service fees, to be used as ``amount`` in Pay.

    ``total_amount`` is derived from ``total_amount_piasters`` when that is all the answer carries
    (an older form of this answer).
    """

    total_amount: Decimal | None
    total_amount_currency: str | None
    total_amount_piasters: int | None = None

    READERS = {"total_amount_currency": _text, "total_amount_piasters": whole_number}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        total = _amount(data.get("total_amount"))
        piasters = whole_number(data.get("total_amount_piasters"))
        if total is None and piasters is not None:
            try:
                total = from_piasters(piasters)
            except MoneyError:
                total = None
        return cls._read(data, "total_amount", total_amount=total)


@dataclass(frozen=True)
class PaymentStarted(_Result):
    """Pay: where the customer completes the payment, and the transaction it created.

    For kiosk payments ``message`` and ``bill_reference`` are set (the service spells the key
    ``bill_refrence``; the correctly spelled ``bill_reference`` is accepted too). ``message`` is read
    from ``details`` when the answer has no ``message``.
    """

    iframe_url: str | None
    transaction_id: int | None
    transaction_uuid: str | None
    transaction_status: str | None
    message: str | None = None
    bill_reference: str | None = None

    READERS = {
        "iframe_url": _text,
        "transaction_id": whole_number,
        "transaction_uuid": _text,
        "transaction_status": _text,
    }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        reference = _text(data.get("bill_refrence", data.get("bill_reference")))
        return cls._read(
            data,
            "message",
            "bill_refrence",
            "bill_reference",
            message=_message(data),
            bill_reference=reference,
        )


@dataclass(frozen=True)
class RecurringInfo(_Result):
    """The ``recurring`` block of a transaction of a recurring series."""

    parent_transaction: str | None
    recurring_count: int | None
    transaction_order: int | None
    type: str | None
    expiry_date: dt.date | None
    minimum_days_between_payments: int | None
    active: bool | None

    READERS = {
        "parent_transaction": _text,
        "recurring_count": whole_number,
        "transaction_order": whole_number,
        "type": _text,
        "expiry_date": _iso(dt.date.fromisoformat),
        "minimum_days_between_payments": whole_number,
        "active": _boolean,
    }


@dataclass(frozen=True)
class Transaction(_Result):
    """Fetch transaction. ``status`` is the service's text, whatever it is.

    ``custom_fields_json`` is ``{label: value}`` whether the service sent the spec's object or a list
    of ``{field_label, field_value}`` (see :func:`custom_fields_from`); ``custom_fields_json_raw`` is
    the value exactly as received.
    """

    id: int | None
    uuid: str | None
    status: str | None
    total_amount: Decimal | None
    total_amount_currency: str | None
    total_amount_piasters: int | None
    created: dt.datetime | None = None
    member_id: str | None = None
    payment_for: str | None = None
    #: Type not shown by the spec: kept exactly as received.
    quantity: Any = None
    custom_fields_json: Mapping[str, Any] | None = None
    recurring: RecurringInfo | None = None
    custom_fields_json_raw: Any = None

    READERS = {
        "id": whole_number,
        "uuid": _text,
        "status": _text,
        "total_amount": _amount,
        "total_amount_currency": _text,
        "total_amount_piasters": whole_number,
        "created": _iso(dt.datetime.fromisoformat),
        "member_id": _text,
        "payment_for": _text,
        "quantity": lambda value: value,
        "custom_fields_json": custom_fields_from,
        "recurring": lambda value: RecurringInfo.from_data(value) if isinstance(value, Mapping) else None,
    }

    @property
    def status_is_known(self) -> bool:
        return self.status in KNOWN_TRANSACTION_STATUSES

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        return cls._read(data, custom_fields_json_raw=data.get("custom_fields_json"))


@dataclass(frozen=True)
class OperationMessage(_Result):
    """Capture, refund and cancel recurring: the service's confirmation text.

    The spec names it ``data.message``; cancel recurring answers ``data.details`` in the service's
    documentation, so ``message`` is read from ``details`` when there is no ``message`` (``details``
    stays in ``extra`` as well).
    """

    message: str | None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        return cls._read(data, "message", message=_message(data))


@dataclass(frozen=True)
class PromocodeValidated(_Result):
    """Validate promocode: its value, and the id to pass to Pay as ``promocode_id``."""

    value: Decimal | None
    currency: str | None
    promocode_id: int | None

    READERS = {"value": _amount, "currency": _text, "promocode_id": whole_number}


@dataclass(frozen=True)
class CommunityCreated(_Result):
    """Create community: the spec's answer has an empty ``data``; anything sent anyway is in ``extra``."""


@dataclass(frozen=True)
class DashboardStatistics(_Result):
    """Dashboard statistics of a community."""

    balance: Decimal | None
    total_settled: Decimal | None
    total_number_of_transactions: int | None
    total_collected_transactions: Decimal | None
    weekly_collected_transactions: Decimal | None

    READERS = {
        "total_number_of_transactions": whole_number,
        "total_collected_transactions": _amount,
        "weekly_collected_transactions": _amount,
    }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        balance = data.get("balance_details")
        balance = balance if isinstance(balance, Mapping) else {}
        return cls._read(
            data,
            "balance_details",
            balance=_amount(balance.get("balance")),
            total_settled=_amount(balance.get("total_settled")),
        )


@dataclass(frozen=True)
class DirectOrderCreated(_Result):
    """Direct order: the order id (``payment_id``) and the link the customer pays through."""

    success: bool | None
    merchant_id: str | None
    payment_id: str | None
    payment_link: str | None
    message: str | None

    READERS = {"success": _boolean, "merchant_id": _text, "payment_id": _text, "payment_link": _text}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Self:
        return cls._read(data, "message", message=_message(data))
