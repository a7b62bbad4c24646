"""The envelope parser and the typed results, including a fuzz of whatever may come back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import responses
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from django_paycollect.client import (
    DashboardStatistics,
    Envelope,
    OutcomeUnknownError,
    PayCollectError,
    PaymentStarted,
    PreparedAmount,
    PromocodeValidated,
    Transaction,
    ValidationError,
    field_errors_from,
)
from tests.hypothesis_profiles import examples

from .support import CASES_BY_NAME, OPERATION_CASES, TX_UUID, OperationCase, envelope, make_client

FUZZ = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fetch(
    rsps: responses.RequestsMock, client: Any, body: Any, *, status: int = 200, name: str = "get_transaction"
):
    case = CASES_BY_NAME[name]
    if isinstance(body, (dict, list)):
        rsps.add(case.method, case.url, json=body, status=status)
    else:
        rsps.add(case.method, case.url, body=body, status=status)
    return case.invoke(client)


# --- the envelope -------------------------------------------------------------------------


def test_envelope_fields_are_read_as_the_spec_names_them(client, rsps):
    got = fetch(rsps, client, envelope({"id": 1}, count=10, next="https://n", previous="https://p"))
    assert (got.code, got.message, got.errors) == (200, "success", [])
    assert (got.count, got.next, got.previous) == (10, "https://n", "https://p")
    assert got.raw == envelope({"id": 1}, count=10, next="https://n", previous="https://p")


def test_lenient_envelope_fields(client, rsps):
    body = {
        "status": {"code": 200.0, "message": 17, "errors": None},
        "data": [1, 2],
        "count": True,
        "next": 5,
        "previous": None,
    }
    got = fetch(rsps, client, json.dumps(body))
    assert got.code == 200
    assert type(got.code) is int
    assert got.message == "17"
    assert got.errors == []
    assert got.data == {}  # not an object: read as empty, kept in raw
    assert got.raw["data"] == [1, 2]
    assert got.count is None
    assert got.next is None


def test_envelope_without_message_or_data(client, rsps):
    got = fetch(rsps, client, {"status": {"code": 201}})
    assert got.code == 201
    assert got.message == ""
    assert got.data == {}
    assert got.result == Transaction(
        id=None,
        uuid=None,
        status=None,
        total_amount=None,
        total_amount_currency=None,
        total_amount_piasters=None,
    )


def test_status_code_as_a_fraction_is_not_an_envelope(client, rsps):
    with pytest.raises(PayCollectError, match="not the service's envelope"):
        fetch(rsps, client, '{"status": {"code": 200.5}}')


def test_errors_given_as_an_object_are_wrapped_in_a_list(client, rsps):
    body = {"status": {"code": 400, "message": "bad", "errors": {"amount": ["Too small."]}}, "data": {}}
    with pytest.raises(ValidationError) as caught:
        fetch(rsps, client, body, status=400)
    assert caught.value.errors == [{"amount": ["Too small."]}]
    assert caught.value.field_errors == {"amount": ["Too small."]}


def test_errors_given_as_text_go_to_all(client, rsps):
    body = {"status": {"code": 400, "message": "bad", "errors": "Something is wrong"}, "data": {}}
    with pytest.raises(ValidationError) as caught:
        fetch(rsps, client, body, status=400)
    assert caught.value.field_errors == {"__all__": ["Something is wrong"]}


def test_envelope_equality_ignores_raw_and_call():
    first = Envelope(200, 200, "success", [], {}, None, None, None, result=None, raw={"a": 1})
    second = Envelope(200, 200, "success", [], {}, None, None, None, result=None, raw={"b": 2})
    assert first == second
    assert "raw" not in repr(first)


# --- field errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        ([], {}),
        ([{"amount": ["Too small."]}], {"amount": ["Too small."]}),
        (
            [{"amount": ["a"]}, {"amount": ["b"]}, {"billing_data": {"phone_number": ["p"], "email": ["e"]}}],
            {"amount": ["a", "b"], "billing_data.phone_number": ["p"], "billing_data.email": ["e"]},
        ),
        ([{"billing_data": {"address": {"city": ["c"]}}}], {"billing_data.address.city": ["c"]}),
        (
            [{"custom_fields": [{}, {"field_label": ["Required."]}]}],
            {"custom_fields.1.field_label": ["Required."]},
        ),
        ([{"tags": ["Bad tags.", {"id": ["Unknown."]}]}], {"tags.1.id": ["Unknown."], "tags": ["Bad tags."]}),
        (["Plain message", ["nested list"]], {"__all__": ["Plain message", "nested list"]}),
        ([{"amount": "Not a list"}], {"amount": ["Not a list"]}),
        ([{"amount": None}, {"count": 3}], {"count": ["3"]}),
        ([{"amount": [["deep"]]}], {"amount.0": ["deep"]}),
        ([None, 5], {"__all__": ["5"]}),
    ],
)
def test_field_errors_from(errors: list[Any], expected: dict[str, list[str]]):
    assert field_errors_from(errors) == expected


# --- typed results are lenient, unknown fields kept ---------------------------------------


def test_transaction_fields_in_other_types_are_none_and_nothing_is_lost():
    data = {
        "id": "5501",
        "uuid": 42,
        "status": None,
        "total_amount": "not money",
        "total_amount_piasters": Decimal("15000"),
        "created": "yesterday",
        "recurring": "not an object",
        "custom_fields_json": ["x"],
        "new_field": {"nested": True},
    }
    tx = Transaction.from_data(data)
    assert tx.id == 5501
    assert tx.uuid == "42"
    assert tx.status is None
    assert tx.status_is_known is False
    assert tx.total_amount is None
    assert tx.total_amount_piasters == 15000
    assert tx.created is None
    assert tx.recurring is None
    assert tx.custom_fields_json is None
    assert tx.extra == {"new_field": {"nested": True}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, None), (Decimal("1.5"), None), ("-3", -3), (" 7 ", 7), ("7a", None), ([], None), (12, 12)],
)
def test_integers_are_read_leniently(value: Any, expected: int | None):
    assert Transaction.from_data({"id": value}).id == expected


def test_other_results_are_lenient():
    assert PreparedAmount.from_data({"total_amount": True}).total_amount is None
    assert PromocodeValidated.from_data({"value": "10.50", "promocode_id": "x"}) == PromocodeValidated(
        value=Decimal("10.50"), currency=None, promocode_id=None
    )
    stats = DashboardStatistics.from_data({"balance_details": [1], "weekly_collected_transactions": "3.5"})
    assert stats.balance is None
    assert stats.weekly_collected_transactions == Decimal("3.5")
    recurring = Transaction.from_data({"recurring": {"expiry_date": "31/12/2026", "active": "yes"}}).recurring
    assert recurring is not None
    assert recurring.expiry_date is None
    assert recurring.active is None
    started = PaymentStarted.from_data({"bill_refrence": None, "bill_reference": 12, "transaction_id": False})
    assert started.bill_reference is None  # the service's own spelling wins when present
    assert started.transaction_id is None
    assert started.extra == {}


@pytest.mark.parametrize("text", ["--1", "\u00b2", "1" * 5000])
def test_integer_looking_text_never_crashes_the_parser(client, rsps, text):
    got = fetch(rsps, client, envelope({"id": text, "uuid": TX_UUID}))
    assert got.result.id is None or isinstance(got.result.id, int)


def test_a_huge_exponent_is_parsed_quickly():
    code = textwrap.dedent(
        """
        from django_paycollect.client.envelope import CallInfo, interpret
        from django_paycollect.client.types import Transaction
        call = CallInfo("get_transaction", "GET", "/", None, 1, 0.0)
        try:
            interpret(http_status=200, body=b'{"status": {"code": 1e1000000}, "data": {}}',
                      content_type="application/json", result_from=Transaction.from_data,
                      scrub=str, changes_state=False, retry_after=None, call=call)
        except Exception:
            pass
        """
    )
    root = Path(__file__).resolve().parents[2]
    try:
        subprocess.run(  # noqa: S603  (our own interpreter, fixed arguments)
            [sys.executable, "-c", code],
            timeout=4,
            check=True,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
    except subprocess.TimeoutExpired:
        pytest.fail("parsing a 40-byte body took more than 4 s")


# --- fuzz: whatever comes back, an Envelope or a PayCollectError --------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=30,
)
statuses = st.integers(min_value=100, max_value=599)
content_types = st.sampled_from(["application/json", "text/html; charset=utf-8", "text/plain", ""])
operations = st.sampled_from(OPERATION_CASES)


def through_client(case: OperationCase, status: int, body: bytes, content_type: str) -> object:
    """The call's Envelope, or the PayCollectError it raised; anything else propagates and fails."""
    fuzz_client, _ = make_client()
    with responses.RequestsMock() as mock:
        mock.add(case.method, case.url, body=body, status=status, content_type=content_type)
        try:
            return case.invoke(fuzz_client)
        except PayCollectError as error:
            return error


def assert_envelope_or_error(outcome: object, status: int) -> None:
    if isinstance(outcome, PayCollectError):
        # An answer is reported with its status; a body urllib3 cannot read after a 1xx, 204 or
        # 304 status is a broken answer: sent, nothing usable came back.
        assert outcome.http_status == status or isinstance(outcome, OutcomeUnknownError)
        assert len(outcome.body_excerpt) <= 300
        return
    assert isinstance(outcome, Envelope)
    assert status < 300
    assert outcome.code < 400


@FUZZ
@given(operations, statuses, st.binary(max_size=300), content_types)
@example(CASES_BY_NAME["pay"], 200, b"\xef\xbb\xbf{}", "application/json")
@example(CASES_BY_NAME["pay"], 200, b"\x00\x00\x00{", "application/json")
@example(CASES_BY_NAME["refund"], 204, b"", "")
def test_arbitrary_bytes_give_an_envelope_or_a_paycollect_error(case, status, body, content_type):
    assert_envelope_or_error(through_client(case, status, body, content_type), status)


@FUZZ
@given(operations, statuses, json_values, content_types)
@example(CASES_BY_NAME["get_transaction"], 200, [[[[[]]]]], "application/json")
def test_arbitrary_json_gives_an_envelope_or_a_paycollect_error(case, status, value, content_type):
    assert_envelope_or_error(through_client(case, status, json.dumps(value).encode(), content_type), status)


@FUZZ
@given(
    operations,
    statuses,
    st.one_of(
        st.integers(min_value=-(10**6), max_value=10**6), st.floats(allow_nan=False), st.text(max_size=5)
    ),
    json_values,
    json_values,
)
def test_arbitrary_envelopes_give_an_envelope_or_a_paycollect_error(case, status, code, errors, data):
    body = {"status": {"code": code, "message": data, "errors": errors}, "data": data, "count": errors}
    assert_envelope_or_error(
        through_client(case, status, json.dumps(body).encode(), "application/json"), status
    )


#: Keys the typed results read, so arbitrary values reach every lenient reader.
KNOWN_KEYS = [
    "id",
    "uuid",
    "status",
    "total_amount",
    "total_amount_currency",
    "total_amount_piasters",
    "created",
    "member_id",
    "payment_for",
    "quantity",
    "custom_fields_json",
    "recurring",
    "iframe_url",
    "transaction_id",
    "transaction_uuid",
    "transaction_status",
    "message",
    "bill_refrence",
    "bill_reference",
    "value",
    "currency",
    "promocode_id",
    "balance_details",
    "total_number_of_transactions",
    "total_collected_transactions",
    "weekly_collected_transactions",
    "success",
    "merchant_id",
    "payment_id",
    "payment_link",
]


def trips_the_integer_bug(text: str) -> bool:
    """Text that test_integer_looking_text_never_crashes_the_parser is about."""
    if not text.strip().lstrip("-").isdigit():
        return False
    try:
        int(text)
    except ValueError:
        return True
    return False


field_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12).filter(lambda text: not trips_the_integer_bug(text))
    | st.sampled_from(["2024-05-01T10:20:30.123456+03:00", "2026-12-31", "12.50", "-3", "SUCCESSFUL"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from([*KNOWN_KEYS, "parent_transaction", "expiry_date", "active"]), children
        )
    ),
    max_leaves=15,
)


@FUZZ
@given(operations, st.dictionaries(st.sampled_from(KNOWN_KEYS), field_values))
def test_known_fields_of_any_type_are_read_without_crashing(case, data):
    fuzz_client, _ = make_client()
    with responses.RequestsMock() as mock:
        mock.add(case.method, case.url, json=envelope(data))
        got = case.invoke(fuzz_client)
    assert got.data == json.loads(json.dumps(data), parse_float=Decimal)
    assert isinstance(got.result.extra, dict)
