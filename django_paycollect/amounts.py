"""Amounts as people and callers give them, and as the app shows them: one grammar for every surface.

Every amount that comes in is read by :func:`parse_amount`, which the DRF and form fields only wrap, and shown
by :func:`amount_text`. The grammar, and why each rule is what it is: docs/money.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import get_language_bidi
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.utils import html

from .client.money import CENT, MoneyError, exact_decimal
from .conf import paycollect_settings
from .exceptions import PayCollectConfigurationError, PaymentRefused, lazy_text

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

__all__ = [
    "EMPTY",
    "MONEY_COLUMN_MAX",
    "REQUIRED",
    "ZERO",
    "AmountField",
    "AmountFormField",
    "amount_text",
    "max_amount",
    "parse_amount",
]

ZERO = Decimal("0.00")
#: What the amount columns hold (14 digits, 2 of them decimals): the bound of what MAX_AMOUNT does not cap.
MONEY_COLUMN_MAX = Decimal("999999999999.99")

# The words of every refusal, worded when read (lazy_text): in the language of the page or answer showing it.
REQUIRED = _("This field is required.")
#: An optional amount sent empty (a JSON null, ""): optional amounts are optional by being left out.
EMPTY = _("An empty amount is refused: leave the field out, or give an amount (e.g. 12.50).")
NOT_AN_AMOUNT = _(
    "%(value)s is not an amount: write digits, with at most two decimals after a point (e.g. 12.50)."
)
TOO_PRECISE = _("%(value)s has more than two decimals; amounts are exact to 0.01, never rounded.")
AT_LEAST = _("Enter at least %(limit)s.")
AT_MOST = _("Enter at most %(limit)s.")
A_FLOAT = _(
    "Pass amounts as Decimal (e.g. Decimal('12.50')) or decimal text, not the float %(value)s: "
    "a float cannot hold most amounts exactly."
)
NOT_TEXT = _("Pass amounts as Decimal (e.g. Decimal('12.50')), not %(type)s.")

# Digits 0-9 as ASCII, Arabic-Indic (U+0660-0669) or Eastern Arabic-Indic (U+06F0-06F9): one set per amount.
_DIGIT_SETS = tuple("".join(chr(zero + i) for i in range(10)) for zero in (0x30, 0x660, 0x6F0))
_TO_ASCII = str.maketrans({**{c: str(i) for s in _DIGIT_SETS[1:] for i, c in enumerate(s)}, "\u066b": "."})
# After the above: an optional minus (read only to say "at least"), digits, at most one point.
_SPELLING = re.compile(r"(-?)(\d*)(?:\.(\d*))?", re.ASCII)


def max_amount() -> Decimal:
    """``PAYCOLLECT["MAX_AMOUNT"]`` as a Decimal (system check ``paycollect.E011`` guards its value)."""
    value = paycollect_settings.MAX_AMOUNT
    try:
        return exact_decimal(value)
    except MoneyError as exc:
        raise PayCollectConfigurationError(f"PAYCOLLECT['MAX_AMOUNT'] {exc} (see paycollect.E011)") from None


def amount_text(value: Decimal) -> str:
    """How the app shows an amount: plain fixed notation with two decimals (``100.00``, never ``1E+2`` nor a
    localized ``100,00``), a spelling :func:`parse_amount` reads back; a third decimal is shown, unrounded."""
    try:
        cents = value.quantize(CENT)
    except InvalidOperation:  # more digits than the context holds: shown whole
        cents = value
    return format(cents if cents == value else value, "f")


#: Before a number's sign in a right-to-left language, CLDR's left-to-right mark: the sign then stays left of
#: the digits (``-2000``) instead of moving after them (``2000-``).
LTR_MARK = "\u200e"


def signed_for_language(text: str) -> str:
    """``text`` (a number as shown) with :data:`LTR_MARK` before its sign when the active language is written
    right to left; for pages and charts, never for files or records."""
    return LTR_MARK + text if text[:1] in "+-" and get_language_bidi() else text


def amount_label(value: Decimal) -> str:
    """An amount as a page shows it: :func:`amount_text`, its sign kept in place right to left."""
    return signed_for_language(amount_text(value))


def parse_amount(
    value: Any,
    field: str,
    *,
    minimum: Decimal = CENT,
    maximum: Decimal | None = None,
    blank: StrOrPromise = REQUIRED,
) -> Decimal:
    """The one reading of an amount given to the app (docs/money.md), as a two-decimal Decimal: text of digits
    with at most one point and two decimals (Arabic-Indic digits read as 0-9), or a ``Decimal`` or an ``int``
    by its value; None and blank text refused with ``blank``; at least ``minimum``, at most ``maximum``
    (``MAX_AMOUNT`` by default). Raises :class:`PaymentRefused` naming ``field``."""
    problem: StrOrPromise
    if value is None or (isinstance(value, str) and not value.strip()):
        raise PaymentRefused({field: [blank]})
    if isinstance(value, str):
        amount = _spelled(value.strip(), field)
    elif isinstance(value, float):
        raise PaymentRefused({field: [lazy_text(A_FLOAT, value=repr(value))]})
    elif isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        raise PaymentRefused({field: [lazy_text(NOT_TEXT, type=type(value).__name__)]})
    elif isinstance(value, int) or value.is_finite():
        amount = Decimal(value)
    else:
        raise PaymentRefused({field: [lazy_text(NOT_AN_AMOUNT, value=str(value))]})
    limit = max_amount() if maximum is None else maximum
    try:
        cents: Decimal | None = amount.quantize(CENT)
    except InvalidOperation:  # more digits than the context holds: far above any maximum
        cents = None
    if cents is not None and cents != amount:
        problem = lazy_text(TOO_PRECISE, value=amount_text(amount))
    elif amount < minimum or amount.is_signed():
        problem = lazy_text(AT_LEAST, limit=amount_text(minimum))
    elif cents is None or cents > limit:
        problem = lazy_text(AT_MOST, limit=amount_text(limit))
    else:
        return cents
    raise PaymentRefused({field: [problem]})


def _spelled(text: str, field: str) -> Decimal:
    """The value of amount text, or PaymentRefused naming ``field``."""
    used = {index for index, digits in enumerate(_DIGIT_SETS) for char in text if char in digits}
    match = _SPELLING.fullmatch(text.translate(_TO_ASCII)) if len(used) == 1 else None
    if match is None or not (match[2] or match[3]):
        raise PaymentRefused({field: [lazy_text(NOT_AN_AMOUNT, value=repr(text[:40]))]})
    if len(match[3] or "") > 2:
        raise PaymentRefused({field: [lazy_text(TOO_PRECISE, value=text[:40])]})
    # A minus is read only to be refused as "at least" (even -0): a negative amount is below every minimum.
    return Decimal(f"{match[1]}{match[2] or 0}.{match[3] or 0}")


class AmountField(serializers.DecimalField):
    """An amount of a DRF serializer, read by :func:`parse_amount` with its ``minimum`` and ``maximum`` (or by
    ``read``: a refund's by ``services.refund_amount``) and shown by :func:`amount_text`. Only a left-out
    amount is empty; null and blanks reach the reading, which refuses them. A DecimalField for the schema."""

    def __init__(self, *, read: Callable[[Any], Any] | None = None, **kwargs: Any) -> None:
        bounds = {name: kwargs.pop(name) for name in ("minimum", "maximum") if name in kwargs}
        super().__init__(max_digits=14, decimal_places=2, coerce_to_string=True, **kwargs)
        blank = REQUIRED if self.required else EMPTY
        self.read: Callable[[Any], Any] = read or partial(parse_amount, field="amount", blank=blank, **bounds)

    def get_value(self, dictionary: Any) -> Any:
        # DRF takes an optional field's "" in a form or multipart body (an HTML form's empty box) for left
        # out: a refund's blank amount would refund everything. Sent, it reaches the reading, as JSON's "".
        if html.is_html_input(dictionary) and self.field_name in dictionary:
            return dictionary[self.field_name]
        return super().get_value(dictionary)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is empty or self.read_only:
            return super().validate_empty_values(data)
        return False, data

    def to_internal_value(self, data: Any) -> Decimal:
        try:
            return cast(Decimal, self.read(data))
        except PaymentRefused as refused:
            raise serializers.ValidationError(refused.messages) from None

    def to_representation(self, value: Any) -> str:
        return amount_text(Decimal(value))


class AmountFormField(forms.Field):
    """An amount of a Django form, read as :class:`AmountField` reads one; a blank box of an optional field
    leaves the amount out (None). A text box asking for a decimal keyboard: a browser's number box has a
    grammar of its own (it takes ``1e2``, and sends nothing at all for what it cannot read)."""

    widget = forms.TextInput(attrs={"inputmode": "decimal"})

    def __init__(self, *, read: Callable[[Any], Any] | None = None, **kwargs: Any) -> None:
        bounds = {name: kwargs.pop(name) for name in ("minimum", "maximum") if name in kwargs}
        super().__init__(**kwargs)
        self.read: Callable[[Any], Any] = read or partial(parse_amount, field="amount", **bounds)

    def to_python(self, value: Any) -> Decimal | None:
        if not self.required and (
            value in self.empty_values or (isinstance(value, str) and not value.strip())
        ):
            return None
        try:
            return cast(Decimal, self.read(value))
        except PaymentRefused as refused:
            raise ValidationError(refused.messages) from None
