"""Strategies and helpers shared by the fuzz tests, and a JSON writer that can write what json.dumps won't.

Generated documents are trees of plain values plus three markers: :class:`Raw` (a literal written as
is: numbers with a thousand digits or exponents, ``NaN``, broken tokens), :class:`Obj` (an object as
a list of pairs, so a key may appear twice) and :class:`Deep` (nesting hundreds of levels deep,
written without recursion). :func:`render` writes the text; a document with lone surrogates is
encoded with ``surrogatepass`` (bytes that are not UTF-8, as a broken sender would send).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples


def fuzz_settings(max_examples: int) -> settings:
    """``max_examples`` under the full profile (a tenth under ``quick``, see tests/hypothesis_profiles.py);
    deterministic (CI must not turn red by chance), no deadline, no example database."""
    return settings(
        max_examples=examples(max_examples),
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.function_scoped_fixture,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


#: Frames a WSGI server (gunicorn's worker loop) or a Celery worker has below the code it calls.
SERVER_FRAMES = 20


@contextmanager
def production_recursion_limit() -> Iterator[None]:
    """Run the block with the stack room it has in production: Python's default limit of 1000 frames,
    less a server's own frames, counted from here.

    Hypothesis raises the recursion limit while it runs a test, which would move (or hide) every
    "too deep" behaviour: what the JSON parser refuses and where a recursive walk overflows.
    """
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 1000 - SERVER_FRAMES)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


class Raw(str):
    """A JSON literal written as is."""


@dataclass(frozen=True)
class Obj:
    """A JSON object as pairs: keys may repeat (a parser keeps the last)."""

    pairs: tuple[tuple[Any, Any], ...]


@dataclass(frozen=True)
class Deep:
    """``depth`` arrays (or one-key objects) around ``leaf``."""

    depth: int
    kind: str  # "list" or "dict"
    leaf: Any


def render(value: Any, *, ascii_only: bool = True) -> str:
    """The JSON text of a generated tree (see the module docstring)."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Deep):
        opener, closer = ("[", "]") if value.kind == "list" else ('{"d": ', "}")
        return opener * value.depth + render(value.leaf, ascii_only=ascii_only) + closer * value.depth
    if isinstance(value, Obj):
        pairs = value.pairs
    elif isinstance(value, dict):
        pairs = tuple(value.items())
    elif isinstance(value, (list, tuple)):
        return "[" + ", ".join(render(item, ascii_only=ascii_only) for item in value) + "]"
    elif isinstance(value, Decimal):
        return str(value)  # 1E+1000, NaN, sNaN, -Infinity: some are JSON, some are not
    else:
        return json.dumps(value, ensure_ascii=ascii_only)  # str, int, float (NaN too), bool, None
    items = (
        (key if isinstance(key, Raw) else json.dumps(str(key), ensure_ascii=ascii_only))
        + ": "
        + render(item, ascii_only=ascii_only)
        for key, item in pairs
    )
    return "{" + ", ".join(items) + "}"


def encode(text: str, encoding: str = "utf-8") -> bytes:
    """Text to bytes; lone surrogates pass through as the invalid bytes a broken encoder writes."""
    return text.encode(encoding, errors="surrogatepass")


# --- values -----------------------------------------------------------------------------------------

#: Literals json.dumps never writes, that a JSON parser reads: huge and tiny exponents, long integers.
VALID_LITERALS = [
    "1e400",
    "-1e400",
    "1E+1000000",
    "1e-1000000",
    "-0",
    "-0.0",
    "0.000",
    "1.0",
    "100.005",
    "99999999999999.99",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1" * 5000 + ".0",
    "0." + "0" * 3000 + "1",
    '"\\u00e9\\u0000"',
]
#: ... and literals no JSON parser (nor ours) accepts.
INVALID_LITERALS = [
    "1" * 5000,  # an int beyond Python's 4300-digit conversion limit
    "NaN",
    "Infinity",
    "-Infinity",
    "01",
    "1.",
    ".5",
    "+1",
    "0x10",
    "true1",
    "nul",
    '"\\x41"',  # not a JSON escape
    '"tab\there"',  # a raw control character inside a string
]
#: Lone surrogate escapes: JSON as Python reads it, text no database column holds.
SURROGATE_LITERALS = ['"\\ud800"', '"\\udfff\\ud800"']

raw_literals = st.sampled_from(VALID_LITERALS + INVALID_LITERALS + SURROGATE_LITERALS).map(Raw)


def _surrogate_free(text: str) -> bool:
    return not any("\ud800" <= char <= "\udfff" for char in text)


#: Text with what breaks naive code: NUL, controls, RTL and combining marks, astral planes, long runs.
texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\u202e\u0634\u0643\u0631\u0627",
            "e\u0301\u0301\u0301",
            "\U0001f4b8\U0001f600",
            "\ufeff",
            "\u2028\u2029",
            "SUCCESSFUL\x00",
            "\ud800",  # a lone surrogate: escaped by an ASCII writer, invalid UTF-8 bytes otherwise
            "a\udc00b",
            "${jndi:ldap://x}",
            "'; DROP TABLE paycollect_receivedcallback; --",
            "<script>alert(1)</script>",
        ]
    ),
)

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=2**63 - 3, max_value=2**80),
    st.integers(max_value=-(2**63) + 3, min_value=-(2**80)),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.decimals(min_value=Decimal("-1e20"), max_value=Decimal("1e20"), places=3),
    st.floats(),
)

scalars = st.one_of(st.none(), st.booleans(), numbers, texts, raw_literals)

#: Scalars any JSON parser reads back (still odd: exponents, long digits, NUL, unicode).
valid_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False, allow_infinity=False),
    texts.filter(_surrogate_free),
    st.sampled_from(VALID_LITERALS).map(Raw),
)

keys = st.one_of(
    texts,
    st.sampled_from(
        [
            "transaction_uuid",
            "transaction_id",
            "transaction_status",
            "total_amount",
            "total_amount_piasters",
            "member_id",
            "payment_id",
            "merchant_id",
            "message",
            "recurring",
            "Seat number",
            "  Seats  ",
            "\u0627\u0644\u0645\u0642\u0639\u062f",
            "",
            "__proto__",
            "status",
        ]
    ),
)


def _containers(children: st.SearchStrategy[Any], keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(st.tuples(keys, children), max_size=4).map(lambda pairs: Obj(tuple(pairs))),
    )


#: Any JSON-ish tree (shallow: at most a few levels; see :func:`deep_values` for depth).
json_trees = st.recursive(scalars, lambda children: _containers(children, keys), max_leaves=12)
#: Trees every JSON parser reads (duplicate keys included: the last one counts).
valid_json_trees = st.recursive(
    valid_scalars, lambda children: _containers(children, keys.filter(_surrogate_free)), max_leaves=12
)


def deep_values(depths: list[int]) -> st.SearchStrategy[Deep]:
    return st.builds(Deep, st.sampled_from(depths), st.sampled_from(["list", "dict"]), scalars)


#: Content types as senders, proxies and firewalls write them.
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "application/json; charset=latin-1",
    "APPLICATION/JSON",
    "text/html; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=xyz",
    "application/octet-stream",
    "application/problem+json",
    "",
    ";;;",
    "application/json; charset=no-such-codec",
    'application/json; charset="utf-8"; q=0.5',
]

#: A WSGI server hands headers over as latin-1 text. No NUL: Django itself fails on a charset holding
#: one (``WSGIRequest.__init__`` calls ``codecs.lookup``, which raises ValueError) before any view runs.
content_types = st.one_of(
    st.sampled_from(CONTENT_TYPES),
    st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=255), max_size=40),
)
