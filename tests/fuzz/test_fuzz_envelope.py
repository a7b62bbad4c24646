"""Fuzz of the envelope parser: whatever the service (or anything in front of it) answers, an Envelope or a
PayCollectError, nothing else; and the error class and ``outcome_unknown`` follow the status.

tests/client/test_envelope.py already runs 60 examples each of arbitrary bytes, shallow JSON, envelopes
with odd codes and known fields of any type through the client. This file goes further:

* :func:`test_any_answer_is_an_envelope_or_a_paycollect_error`: 2,000 answers straight into
  ``envelope.interpret``, for each operation's result type, with HTTP statuses from 0 to 999, any content
  type, and bodies of arbitrary bytes, HTML, JSON of any shape (Decimals, integers of thousands of
  digits, NaN, duplicate keys, other encodings), envelopes whose ``status`` holds wrong types, and
  nesting from 10 to 3,000 levels at every place of the envelope. Each error is checked for its class
  (by status, then by ``status.code``), its ``outcome_unknown`` (writes: true for 5xx and anything that
  is not an envelope; reads: never), its excerpt, and the API key scrubbed from all it shows.
* :func:`test_well_formed_success_envelopes_always_return`: 600 2xx envelopes with a code below 400 and
  anything in ``message``, ``errors``, ``data``, ``count``, ``next``, ``previous`` and extra keys:
  each returns its typed result.
* :func:`test_answers_through_the_client_are_an_envelope_or_a_paycollect_error`: 400 answers through
  the real client (``responses``), with Retry-After and Location headers of any form: same outcome rules,
  retries only for reads, never a negative wait nor one above ``max_retry_after``.

Found, fixed, kept as a regression test at the end: a 4xx envelope whose ``status.errors`` was nested a
few hundred levels deep made ``interpret`` raise RecursionError (JSON deeper than MAX_JSON_DEPTH is now
an UnexpectedResponseError).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
import responses
from hypothesis import example, given
from hypothesis import strategies as st

from django_paycollect.client import (
    OPERATIONS,
    AuthenticationError,
    CallInfo,
    CommunityCreated,
    DashboardStatistics,
    DirectOrderCreated,
    Envelope,
    NotFoundError,
    OperationMessage,
    PayCollectError,
    PaymentStarted,
    PreparedAmount,
    PromocodeValidated,
    RateLimitError,
    ServerError,
    Transaction,
    UnexpectedResponseError,
    ValidationError,
)
from django_paycollect.client.envelope import EXCERPT_CHARS, interpret
from tests.client.support import API_KEY, BASIC_PASSWORD, CASES_BY_NAME, make_client
from tests.hypothesis_profiles import FULL, examples

from .support import (
    Deep,
    Obj,
    Raw,
    content_types,
    deep_values,
    encode,
    fuzz_settings,
    json_trees,
    keys,
    production_recursion_limit,
    raw_literals,
    render,
    scalars,
    texts,
    valid_json_trees,
)

#: The result type each operation's ``data`` is read into.
RESULT_TYPES: dict[str, type[Any]] = {
    "prepare_amount": PreparedAmount,
    "pay": PaymentStarted,
    "create_direct_order": DirectOrderCreated,
    "get_transaction": Transaction,
    "capture": OperationMessage,
    "refund": OperationMessage,
    "cancel_recurring": OperationMessage,
    "validate_promocode": PromocodeValidated,
    "create_community": CommunityCreated,
    "dashboard_statistics": DashboardStatistics,
}
assert set(RESULT_TYPES) == set(OPERATIONS)

SECRET = API_KEY
#: Nesting the fuzz puts anywhere, including the depths that once overflowed the stack (about 450-970).
SAFE_DEPTHS = [10, 100, 300, 600, 1000, 3000]


def _ok(key: str) -> bool:
    return not any("\ud800" <= char <= "\udfff" for char in key)


def scrub(text: str) -> str:
    return text.replace(SECRET, "***")


def call_info(operation: str) -> CallInfo:
    op = OPERATIONS[operation]
    return CallInfo(operation, op.method, op.path, None, 1, 0.01)


# --- what an answer may be ---------------------------------------------------------------------------

HTML_PAGES = [
    "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>Checking...</body></html>",
    "<html><body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>",
    "<html><body>Request blocked. Your key " + SECRET + " was logged.</body></html>",
    "  \n\t<p>maintenance</p>",
]

codes = st.one_of(
    st.integers(-1000, 1000),
    st.sampled_from([200, 201, 204, 400, 401, 403, 404, 422, 429, 500, 503]),
    st.integers(),
    st.sampled_from([Raw("200.0"), Raw("2E+2"), Raw("4.0E2"), Raw("200.5"), Raw("1e1000000"), Raw("-0")]),
    st.sampled_from(["200", True, False, None, [200], {"value": 200}]),
    raw_literals,
)
anything = st.one_of(json_trees, deep_values(SAFE_DEPTHS), st.just(SECRET), st.just({"detail": SECRET}))


@st.composite
def envelopes(draw: st.DrawFn, code: st.SearchStrategy[Any] = codes) -> Obj:
    """An envelope whose parts are each present or not, of any type, keys possibly repeated."""
    status: list[tuple[Any, Any]] = []
    if draw(st.integers(0, 9)):
        status.append(("code", draw(code)))
    for key in ("message", "errors"):
        if draw(st.booleans()):
            status.append((key, draw(anything)))
    status += draw(st.lists(st.tuples(st.sampled_from(["code", "detail", ""]), scalars), max_size=2))
    status_value: Any = Obj(tuple(draw(st.permutations(status))))
    if not draw(st.integers(0, 14)):
        status_value = draw(anything)  # "status" itself of a wrong type
    pairs: list[tuple[Any, Any]] = [("status", status_value)]
    for key in ("data", "count", "next", "previous"):
        if draw(st.booleans()):
            pairs.append((key, draw(anything)))
    pairs += draw(st.lists(st.tuples(texts, scalars), max_size=2))
    return Obj(tuple(draw(st.permutations(pairs))))


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "html", "json", "envelope", "envelope", "envelope", "deep"]))
    if kind == "bytes":
        return draw(st.binary(max_size=400))
    if kind == "html":
        return draw(st.sampled_from(HTML_PAGES)).encode()
    if kind == "deep":
        return render(draw(deep_values(SAFE_DEPTHS))).encode()
    tree = draw(json_trees) if kind == "json" else draw(envelopes())
    encoding = draw(st.sampled_from(["utf-8"] * 6 + ["utf-8-sig", "utf-16", "utf-32"]))
    return encode(render(tree, ascii_only=draw(st.booleans())), encoding)


statuses = st.one_of(
    st.sampled_from([200, 201, 204, 301, 302, 400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504]),
    st.integers(100, 599),
    st.integers(0, 999),
)


@dataclass(frozen=True)
class Answer:
    operation: str
    http_status: int
    body: bytes
    content_type: str
    retry_after: float | None
    location: str

    def __repr__(self) -> str:
        body = f"{self.body[:3000]!r} ({len(self.body)} bytes)"
        return (
            f"Answer({self.operation!r}, {self.http_status}, body={body}, content_type={self.content_type!r},"
            f" retry_after={self.retry_after!r}, location={self.location!r})"
        )


answers = st.builds(
    Answer,
    st.sampled_from(sorted(OPERATIONS)),
    statuses,
    bodies(),
    content_types,
    st.one_of(st.none(), st.floats(min_value=0, max_value=1e6)),
    st.one_of(st.just(""), texts, st.just(f"https://evil.example/?key={SECRET}")),
)


# --- the rules -----------------------------------------------------------------------------------------


def expected_class(basis: int) -> type[PayCollectError]:
    """The spec's mapping of a failure's status (HTTP when 4xx/5xx, else ``status.code``) to a class."""
    if basis in (401, 403):
        return AuthenticationError
    if basis == 404:
        return NotFoundError
    if basis == 429:
        return RateLimitError
    if basis >= 500:
        return ServerError
    return ValidationError


def check_outcome(outcome: object, answer: Answer, *, changes_state: bool, result_type: type[Any]) -> str:
    """Every rule for one answer; returns the outcome's class name (for the tally)."""
    status = answer.http_status
    if isinstance(outcome, Envelope):
        assert status < 300, "only a 1xx or 2xx answer may return"
        assert outcome.code < 400
        assert outcome.http_status == status
        assert isinstance(outcome.result, result_type)
        assert isinstance(outcome.data, dict)
        assert isinstance(outcome.errors, list)
        assert isinstance(outcome.message, str)
        return "Envelope"

    assert isinstance(outcome, PayCollectError), type(outcome)
    error = outcome
    assert error.http_status == status
    assert len(error.body_excerpt) <= EXCERPT_CHARS
    shown = [str(error), error.message, error.body_excerpt]
    if isinstance(error, ValidationError):
        shown += [json.dumps(error.field_errors), json.dumps(error.errors, default=str)]
    for text in shown:
        assert SECRET not in text
    if 300 <= status < 400:
        assert error.envelope is None, "a redirect is never read as an answer"
    if error.envelope is None:
        assert type(error) is (RateLimitError if status == 429 else UnexpectedResponseError)
    else:
        envelope = error.envelope
        assert status >= 400 or envelope.code >= 400
        assert type(error) is expected_class(status if status >= 400 else envelope.code)
    if isinstance(error, RateLimitError):
        assert error.retry_after == answer.retry_after
    if not changes_state:
        assert error.outcome_unknown is False, "a read never has an unknown outcome"
    else:
        # A write answered by a 5xx, or by anything that is not the service's envelope, may have
        # happened: reconciled, never resent. A refusal in an envelope (4xx) did not happen.
        unknown = isinstance(error, (ServerError, UnexpectedResponseError))
        assert error.outcome_unknown is unknown
        if status >= 500:
            assert error.outcome_unknown is True
    return type(error).__name__


def interpret_answer(answer: Answer) -> object:
    op = OPERATIONS[answer.operation]
    try:
        with production_recursion_limit():
            return interpret(
                http_status=answer.http_status,
                body=answer.body,
                content_type=answer.content_type,
                result_from=RESULT_TYPES[answer.operation].from_data,
                scrub=scrub,
                changes_state=op.changes_state,
                retry_after=answer.retry_after,
                call=call_info(answer.operation),
                location=answer.location,
            )
    except PayCollectError as error:
        return error


# --- the tests -------------------------------------------------------------------------------------------


def test_any_answer_is_an_envelope_or_a_paycollect_error():
    tally: Counter[str] = Counter()

    @fuzz_settings(2000)
    @given(answers)
    @example(Answer("pay", 200, b'{"status": {"code": 1e1000000}}', "application/json", None, ""))
    @example(Answer("pay", 302, b'{"status": {"code": 200}}', "", None, f"https://x/?k={SECRET}"))
    @example(Answer("refund", 429, b"<html>slow down</html>", "text/html", 12.5, ""))
    @example(Answer("capture", 200, b'{"status": {"code": 503, "message": "later"}}', "", None, ""))
    @example(Answer("get_transaction", 200, render(Deep(3000, "list", 1)).encode(), "", None, ""))
    def run(answer: Answer) -> None:
        outcome = interpret_answer(answer)
        op = OPERATIONS[answer.operation]
        tally[
            check_outcome(
                outcome, answer, changes_state=op.changes_state, result_type=RESULT_TYPES[answer.operation]
            )
        ] += 1

    run()
    print(f"\nenvelope fuzz, interpret: {dict(tally)}")
    assert tally.total() >= examples(2000)
    if FULL:
        common = ("Envelope", "ValidationError", "ServerError", "UnexpectedResponseError", "RateLimitError")
        for name in common:
            assert tally[name] >= 20, tally
        # Rarer by construction (an envelope with 401, 403 or 404), and how rare depends on what the process
        # imported before (strategies resolved from types): a floor, not a share.
        assert tally["AuthenticationError"] + tally["NotFoundError"] >= 5, tally


@st.composite
def success_envelopes(draw: st.DrawFn) -> tuple[Answer, Any]:
    code = draw(
        st.one_of(
            st.integers(max_value=399),
            st.sampled_from([200, 201, 0, 100, 302, 399, Raw("200.0"), Raw("2E+2"), Raw("-0")]),
        )
    )
    status: list[tuple[Any, Any]] = [("code", code)]
    for key in ("message", "errors"):
        if draw(st.booleans()):
            status.append((key, draw(valid_json_trees)))
    data = draw(st.one_of(valid_json_trees, st.dictionaries(keys.filter(_ok), valid_json_trees, max_size=5)))
    pairs: list[tuple[Any, Any]] = [("status", Obj(tuple(status))), ("data", data)]
    for key in ("count", "next", "previous"):
        if draw(st.booleans()):
            pairs.append((key, draw(valid_json_trees)))
    extra_keys = keys.filter(lambda k: k not in ("status", "data") and _ok(k))
    pairs += draw(st.lists(st.tuples(extra_keys, valid_json_trees), max_size=2))
    text = render(Obj(tuple(draw(st.permutations(pairs)))), ascii_only=draw(st.booleans()))
    answer = Answer(
        draw(st.sampled_from(sorted(OPERATIONS))),
        draw(st.integers(200, 299)),
        encode(text, draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "utf-16"]))),
        draw(content_types),
        None,
        "",
    )
    return answer, data


def test_well_formed_success_envelopes_always_return():
    @fuzz_settings(600)
    @given(success_envelopes())
    def run(case: tuple[Answer, Any]) -> None:
        answer, data = case
        outcome = interpret_answer(answer)
        assert isinstance(outcome, Envelope), outcome
        check_outcome(
            outcome,
            answer,
            changes_state=OPERATIONS[answer.operation].changes_state,
            result_type=RESULT_TYPES[answer.operation],
        )
        if isinstance(data, dict):
            # Everything the service sent is kept, unknown fields and all (money as Decimal).
            expected = json.loads(render(data), parse_float=Decimal)
            assert outcome.data == expected
            assert set(outcome.result.extra) <= set(expected)

    run()


# --- through the client -----------------------------------------------------------------------------

header_text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
header_values = st.one_of(
    st.sampled_from(
        [
            "0",
            "1",
            "29",
            "30",
            "31",
            "120",
            "999999999",
            "-1",
            "1.5",
            "1e309",
            "nan",
            "  7  ",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "Mon, 01 Jan 0001 00:00:00 GMT",
            "Wed, 21 Oct 2015 07:28:00 -0000",
            "Sun, 06 Nov 1994 08:49:37",
            "tomorrow",
        ]
    ),
    header_text,
)


@dataclass(frozen=True)
class ClientAnswer:
    operation: str
    http_status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]

    def __repr__(self) -> str:
        body = f"{self.body[:2000]!r} ({len(self.body)} bytes)"
        return f"ClientAnswer({self.operation!r}, {self.http_status}, {body}, headers={self.headers!r})"


client_answers = st.builds(
    ClientAnswer,
    st.sampled_from(sorted(OPERATIONS)),
    # What urllib3 can deliver: 1xx, 204 and 304 carry no body (tests/client covers those).
    st.one_of(
        st.just(200),
        st.sampled_from([200, 201, 301, 302, 400, 401, 403, 404, 422, 429, 500, 502, 503, 504]),
        st.integers(200, 599).filter(lambda s: s not in (204, 205, 304)),
    ),
    bodies(),
    st.lists(
        st.tuples(st.sampled_from(["Retry-After", "Location", "Content-Type", "X-Other"]), header_values),
        max_size=3,
        unique_by=lambda header: header[0],
    ).map(tuple),
)


def through_client(answer: ClientAnswer) -> tuple[object, list[float], int]:
    case = CASES_BY_NAME[answer.operation]
    client, sleeps = make_client(max_network_retries=2)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add(
            case.method,
            case.url,
            body=answer.body,
            status=answer.http_status,
            headers={k: v for k, v in answer.headers if k != "Content-Type"},
            content_type=dict(answer.headers).get("Content-Type"),
        )
        try:
            with production_recursion_limit():
                outcome: object = case.invoke(client)
        except PayCollectError as error:
            outcome = error
        return outcome, sleeps, len(mock.calls)


def test_answers_through_the_client_are_an_envelope_or_a_paycollect_error():
    tally: Counter[str] = Counter()

    @fuzz_settings(400)
    @given(client_answers)
    @example(ClientAnswer("get_transaction", 503, b"", (("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),)))
    @example(ClientAnswer("get_transaction", 429, b"{}", (("Retry-After", "999999999"),)))
    @example(ClientAnswer("pay", 502, b"<html>502</html>", (("Retry-After", "1"),)))
    def run(answer: ClientAnswer) -> None:
        outcome, sleeps, calls = through_client(answer)
        case = CASES_BY_NAME[answer.operation]
        headers = dict(answer.headers)
        as_interpreted = Answer(
            answer.operation,
            answer.http_status,
            answer.body,
            headers.get("Content-Type", ""),
            outcome.retry_after if isinstance(outcome, RateLimitError) else None,
            headers.get("Location", ""),
        )
        tally[
            check_outcome(
                outcome,
                as_interpreted,
                changes_state=case.changes_state,
                result_type=RESULT_TYPES[answer.operation],
            )
        ] += 1
        assert all(0 <= wait <= 30.0 for wait in sleeps), sleeps  # max_retry_after
        if case.changes_state:
            assert calls == 1, "a write is never sent twice"
        else:
            assert calls <= 3
        for text in (str(outcome), getattr(outcome, "body_excerpt", "")):
            assert BASIC_PASSWORD not in text

    run()
    print(f"\nenvelope fuzz, through the client: {dict(tally)}")
    assert tally.total() >= examples(400)


# --- found by the fuzz, fixed: regression test ---------------------------------------------------------


@pytest.mark.parametrize("via", ["interpret", "client"])
@pytest.mark.parametrize("kind", ["list", "dict"])
def test_a_failure_envelope_with_deeply_nested_errors_is_a_validation_error(via: str, kind: str):
    status = Obj((("code", 400), ("message", "bad"), ("errors", Deep(600, kind, "x"))))
    body = render(Obj((("status", status),)))
    if via == "interpret":
        answer = Answer("pay", 400, body.encode(), "application/json", None, "")
        outcome = interpret_answer(answer)
    else:
        outcome, _, _ = through_client(ClientAnswer("pay", 400, body.encode(), ()))
    assert isinstance(outcome, ValidationError)
