"""The one table of amount spellings every surface is tested with (docs/money.md): the service layer, the
tasks, the REST API, the admin's forms and a site's own form read an amount through
``django_paycollect.amounts.parse_amount`` and must agree on each row.

Each row is accepted, with the amount it reads, or refused with the words given. The table assumes
``PAYCOLLECT["MAX_AMOUNT"]`` is :data:`MAX` (:func:`with_max`) and an amount of at least 0.01. A surface runs
the rows it can carry: a form carries text only, a task's JSON no ``Decimal``, and only the REST API carries a
JSON number (:class:`JsonNumber`).

A refund's amount is the same grammar with one difference: a blank is refused with words of its own (an
empty amount never means "all"), and "all that is still refundable" is asked only by leaving the amount out
(:data:`OMITTED`); see :func:`as_refund`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

#: ``PAYCOLLECT["MAX_AMOUNT"]`` while the table runs.
MAX = Decimal("100.00")

REQUIRED = "This field is required."
NOT_AN_AMOUNT = "is not an amount: write digits, with at most two decimals after a point (e.g. 12.50)."
DECIMALS = "has more than two decimals; amounts are exact to 0.01, never rounded."
AT_LEAST = "Enter at least 0.01."
AT_MOST = "Enter at most 100.00."
NOT_A_FLOAT = "or decimal text, not the float"
NOT_TEXT = "Pass amounts as Decimal (e.g. Decimal('12.50')), not"
#: A refund's blank amount.
EMPTY_REFUND = (
    "An amount is required (e.g. 12.50); an empty amount does not mean all that is still refundable."
)
#: An optional amount (a discount, ``expected_refundable``) sent empty.
EMPTY = "An empty amount is refused: leave the field out, or give an amount (e.g. 12.50)."


class JsonNumber(str):
    """The text of a JSON number, sent unquoted: ``JsonNumber("10.10")`` is the body ``{"amount": 10.10}``."""


class _Omitted:
    def __repr__(self) -> str:
        return "OMITTED"


#: The amount left out: no argument, no key in the body, no box in the form.
OMITTED: Any = _Omitted()


@dataclass(frozen=True)
class Spelling:
    id: str
    #: What the caller gives: text, a Python value, a JsonNumber, or OMITTED.
    given: Any
    #: The amount it reads; None when refused.
    reads: Decimal | None = None
    #: Words of the refusal (a part of the message), naming the amount's field.
    says: str = ""

    @property
    def text(self) -> bool:
        """What a form can send: text (a missing box is None)."""
        return (isinstance(self.given, str) and not isinstance(self.given, JsonNumber)) or self.given is None

    @property
    def json(self) -> bool:
        """What a task's JSON arguments hold (a Decimal becomes text on the way: no row of its own)."""
        return not isinstance(self.given, (Decimal, JsonNumber, _Omitted))

    @property
    def grammar(self) -> bool:
        """Refused whatever the field's bounds and whether it is required: its spelling or its type."""
        return any(words in self.says for words in (NOT_AN_AMOUNT, DECIMALS, NOT_A_FLOAT, NOT_TEXT))


def accepted(id: str, given: Any, reads: str) -> Spelling:
    return Spelling(id, given, Decimal(reads))


def refused(id: str, given: Any, says: str) -> Spelling:
    return Spelling(id, given, None, says)


SPELLINGS = [
    # Plain decimal text: digits, at most one point, at most two decimals.
    accepted("whole", "7", "7.00"),
    accepted("one-decimal", "1.5", "1.50"),
    accepted("two-decimals", "1.25", "1.25"),
    accepted("leading-point", ".5", "0.50"),
    accepted("trailing-point", "2.", "2.00"),
    accepted("leading-zero", "01.25", "1.25"),
    accepted("minimum", "0.01", "0.01"),
    accepted("maximum", "100.00", "100.00"),
    # Surrounding whitespace is stripped (a pasted amount, a box's newline).
    accepted("padded", " 1.25 ", "1.25"),
    accepted("tab-newline", "\t1.25\n", "1.25"),
    accepted("no-break-space", "\u00a01.25\u00a0", "1.25"),
    # Arabic-Indic digits, what an Arabic keyboard types, read as 0-9 (one set per amount), with either point.
    accepted("arabic-indic", "\u0661\u066b\u0662\u0665", "1.25"),
    accepted("arabic-indic-ascii-point", "\u0661.\u0665", "1.50"),
    accepted("eastern-arabic-indic", "\u06f1\u066b\u06f2\u06f5", "1.25"),
    accepted("arabic-separator", "1\u066b5", "1.50"),
    # Python values: read by their value.
    accepted("decimal", Decimal("1.5"), "1.50"),
    accepted("decimal-trailing-zeros", Decimal("1.500"), "1.50"),
    accepted("decimal-exponent", Decimal("1E+1"), "10.00"),
    accepted("int", 3, "3.00"),
    # JSON numbers (the REST API): read as their text, never as a float.
    accepted("json-number", JsonNumber("1.10"), "1.10"),
    accepted("json-whole-number", JsonNumber("4"), "4.00"),
    # Blank: required (a refund's says its own words, see as_refund).
    refused("empty", "", REQUIRED),
    refused("spaces", "   ", REQUIRED),
    refused("tab-newline-only", "\t\n", REQUIRED),
    refused("none", None, REQUIRED),
    # No exponent, underscore, sign, inner space, thousands separator, or words.
    refused("exponent", "1E+1", NOT_AN_AMOUNT),
    refused("exponent-lower", "1e1", NOT_AN_AMOUNT),
    refused("underscore", "1_0.00", NOT_AN_AMOUNT),
    refused("plus", "+10.00", NOT_AN_AMOUNT),
    refused("inner-space", "1 000", NOT_AN_AMOUNT),
    refused("space-before-point", "10 .50", NOT_AN_AMOUNT),
    refused("comma", "1,000.00", NOT_AN_AMOUNT),
    refused("decimal-comma", "12,50", NOT_AN_AMOUNT),
    refused("two-points", "1.2.3", NOT_AN_AMOUNT),
    refused("point-only", ".", NOT_AN_AMOUNT),
    refused("word", "abc", NOT_AN_AMOUNT),
    refused("nan-text", "NaN", NOT_AN_AMOUNT),
    refused("infinity-text", "Infinity", NOT_AN_AMOUNT),
    refused("hex", "0x10", NOT_AN_AMOUNT),
    refused("currency", "10 EGP", NOT_AN_AMOUNT),
    # Digits of one set only; other scripts' digits are not read.
    refused("mixed-digits", "1\u0662", NOT_AN_AMOUNT),
    refused("arabic-thousands", "\u0661\u066c\u0660\u0660\u0660", NOT_AN_AMOUNT),
    refused("devanagari", "\u0967\u0968", NOT_AN_AMOUNT),
    refused("fullwidth", "\uff11\uff12", NOT_AN_AMOUNT),
    # A third decimal is refused, never rounded, even a zero (12.500 is 12500 where a point groups thousands).
    refused("three-decimals", "1.001", DECIMALS),
    refused("third-zero", "1.500", DECIMALS),
    refused("arabic-three-decimals", "\u0661\u066b\u0660\u0660\u0665", DECIMALS),
    # Bounds: at least 0.01, at most MAX_AMOUNT; a minus is below every minimum.
    refused("zero", "0", AT_LEAST),
    refused("zero-cents", "0.00", AT_LEAST),
    refused("negative", "-1", AT_LEAST),
    refused("negative-zero", "-0", AT_LEAST),
    refused("above-maximum", "100.01", AT_MOST),
    refused("huge", "9" * 40, AT_MOST),
    # Python values the service layer refuses.
    refused("float", 1.5, NOT_A_FLOAT),
    refused("bool", True, NOT_TEXT),
    refused("list", [10], NOT_TEXT),
    refused("decimal-nan", Decimal("NaN"), NOT_AN_AMOUNT),
    refused("decimal-infinity", Decimal("-Infinity"), NOT_AN_AMOUNT),
    refused("decimal-three-decimals", Decimal("1.005"), DECIMALS),
    refused("decimal-negative", Decimal("-1"), AT_LEAST),
    refused("decimal-huge", Decimal("1E+999999"), AT_MOST),
    # JSON numbers: the same grammar on their text.
    refused("json-exponent", JsonNumber("1e1"), NOT_AN_AMOUNT),
    refused("json-three-decimals", JsonNumber("1.100"), DECIMALS),
    refused("json-float-noise", JsonNumber("0.30000000000000004"), DECIMALS),
    refused("json-negative", JsonNumber("-1.5"), AT_LEAST),
]


def as_refund(spelling: Spelling) -> Spelling:
    """The row as a refund's amount reads it: a blank is refused with the refund's own words."""
    return replace(spelling, says=EMPTY_REFUND) if spelling.says == REQUIRED else spelling


def as_optional(spelling: Spelling) -> Spelling:
    """The row as an optional amount sent empty reads (the REST API's discount, ``expected_refundable``)."""
    return replace(spelling, says=EMPTY) if spelling.says == REQUIRED else spelling


def spelling_id(spelling: Spelling) -> str:
    return spelling.id


def disagreements(rows: list[Spelling], outcome: Any) -> list[tuple[str, Any, Any]]:
    """Each row whose ``outcome(given)`` (the Decimal read, or the message of the refusal) differs from the
    table, as (id, expected, got): empty when the surface agrees on every row."""
    found = []
    for row in rows:
        got = outcome(row.given)
        expected = row.reads if row.reads is not None else row.says
        agrees = got == row.reads if row.reads is not None else isinstance(got, str) and row.says in got
        if not agrees:
            found.append((row.id, expected, got))
    return found
