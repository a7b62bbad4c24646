"""The error table, for every operation (reads and writes), and secrets never shown by an error."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
import requests
import responses

from django_paycollect.client import (
    REDACTED,
    ApiError,
    AuthenticationError,
    ConnectError,
    NotFoundError,
    OutcomeUnknownError,
    PayCollectClient,
    PayCollectError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
)
from django_paycollect.client.envelope import EXCERPT_CHARS

from .support import (
    API_KEY,
    BASE_URL,
    BASIC_LITERAL,
    BASIC_PASSWORD,
    CASES_BY_NAME,
    OPERATION_CASES,
    PAY_ERRORS,
    SECRETS,
    TX_UUID,
    OperationCase,
    envelope,
    failure,
    make_client,
)

HTML_CHALLENGE = (
    "<!DOCTYPE html><html><head><title>Attention Required! | Firewall</title></head>"
    "<body><h1>Sorry, you have been blocked</h1><p>Ray ID: 7d1f</p>"
    + "<div>checking</div>" * 200
    + "</body></html>"
)
HTML_502 = "<html><head><title>502 Bad Gateway</title></head><body><center>nginx</center></body></html>"


@dataclass(frozen=True)
class Answer:
    """One HTTP answer of the error table and what the client must make of it."""

    id: str
    status: int
    body: str | bytes
    error: type[PayCollectError]
    has_envelope: bool
    #: Whether a state-changing call must be reported as outcome unknown (reads never are).
    unknown_for_writes: bool
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.id


def dumps(body: Any) -> str:
    return json.dumps(body)


ANSWERS = (
    Answer("400-envelope", 400, dumps(failure()), ValidationError, True, False),
    Answer("200-with-code-400", 200, dumps(failure()), ValidationError, True, False),
    Answer(
        "401-envelope",
        401,
        dumps(failure([], code=401, message="Invalid API key")),
        AuthenticationError,
        True,
        False,
    ),
    Answer(
        "403-envelope",
        403,
        dumps(failure([], code=403, message="Forbidden")),
        AuthenticationError,
        True,
        False,
    ),
    Answer(
        "404-envelope", 404, dumps(failure([], code=404, message="Not found")), NotFoundError, True, False
    ),
    Answer(
        "429-envelope",
        429,
        dumps(failure([], code=429, message="Slow down")),
        RateLimitError,
        True,
        False,
        headers={"Retry-After": "120"},
    ),
    Answer("429-plain", 429, "Too Many Requests", RateLimitError, False, False, "text/plain"),
    Answer(
        "500-envelope", 500, dumps(failure([], code=500, message="Server error")), ServerError, True, True
    ),
    Answer("503-envelope", 503, dumps(failure([], code=503, message="Maintenance")), ServerError, True, True),
    Answer("403-html-challenge", 403, HTML_CHALLENGE, UnexpectedResponseError, False, True, "text/html"),
    Answer("502-html", 502, HTML_502, UnexpectedResponseError, False, True, "text/html"),
    Answer(
        "200-malformed-json",
        200,
        '{"status": {"code": 200, "message": "succ',
        UnexpectedResponseError,
        False,
        True,
    ),
    Answer("200-empty-body", 200, "", UnexpectedResponseError, False, True),
    Answer("200-whitespace-body", 200, " \r\n ", UnexpectedResponseError, False, True),
    Answer(
        "200-not-an-envelope", 200, dumps({"detail": "ok", "id": 5}), UnexpectedResponseError, False, True
    ),
    Answer("200-json-list", 200, "[1, 2, 3]", UnexpectedResponseError, False, True),
    Answer(
        "200-status-code-text",
        200,
        dumps({"status": {"code": "200"}, "data": {}}),
        UnexpectedResponseError,
        False,
        True,
    ),
    Answer(
        "200-status-code-bool", 200, dumps({"status": {"code": True}}), UnexpectedResponseError, False, True
    ),
    Answer(
        "400-not-an-envelope", 400, dumps({"detail": "Bad request"}), UnexpectedResponseError, False, True
    ),
    Answer(
        "200-nan",
        200,
        '{"status": {"code": 200, "message": "success", "errors": []}, "data": {"total_amount": NaN}}',
        UnexpectedResponseError,
        False,
        True,
    ),
    Answer(
        "200-infinity",
        200,
        '{"status": {"code": 200, "message": "success", "errors": []}, "data": {"value": -Infinity}}',
        UnexpectedResponseError,
        False,
        True,
    ),
    Answer(
        "200-binary",
        200,
        b"\xff\xfe\x00garbage\x80",
        UnexpectedResponseError,
        False,
        True,
        "application/octet-stream",
    ),
)


@pytest.fixture
def single_try() -> PayCollectClient:
    """No retries, so each answer of the table is met exactly once (retries: test_retries.py)."""
    made, _ = make_client(max_network_retries=0)
    return made


@pytest.mark.parametrize("answer", ANSWERS, ids=str)
@pytest.mark.parametrize("case", OPERATION_CASES, ids=str)
def test_error_table(single_try, rsps, case: OperationCase, answer: Answer):
    rsps.add(
        case.method,
        case.url,
        body=answer.body,
        status=answer.status,
        content_type=answer.content_type,
        headers=answer.headers,
    )

    with pytest.raises(PayCollectError) as caught:
        case.invoke(single_try)

    error = caught.value
    assert type(error) is answer.error
    assert isinstance(error, ApiError)
    assert error.http_status == answer.status
    assert error.outcome_unknown is (case.changes_state and answer.unknown_for_writes)
    if answer.has_envelope:
        assert error.envelope is not None
        assert error.envelope.http_status == answer.status
        assert error.envelope.code == json.loads(answer.body)["status"]["code"]
        assert error.envelope.data == {}
    else:
        assert error.envelope is None
    assert len(error.body_excerpt) <= EXCERPT_CHARS
    if isinstance(answer.body, str) and answer.body.strip():
        assert error.body_excerpt
        assert error.body_excerpt == " ".join(answer.body.split())[:EXCERPT_CHARS]
    assert error.call is not None
    assert error.call.operation == case.name
    assert error.call.http_status == answer.status
    assert error.call.attempts == 1
    assert len(rsps.calls) == 1
    assert str(answer.status) in str(error)


@pytest.mark.parametrize("case", OPERATION_CASES, ids=str)
def test_validation_error_normalises_nested_billing_data_errors(single_try, rsps, case):
    rsps.add(case.method, case.url, json=failure(message="Validation failed"), status=400)

    with pytest.raises(ValidationError) as caught:
        case.invoke(single_try)

    error = caught.value
    assert error.field_errors == {
        "amount": ["Ensure this value is greater than or equal to 1."],
        "billing_data.phone_number": ["Enter a valid phone number."],
        "billing_data.name": ["Enter first and last name."],
    }
    assert error.errors == PAY_ERRORS
    assert error.envelope is not None
    assert error.envelope.errors == PAY_ERRORS
    assert error.sent is True
    assert error.outcome_unknown is False
    assert "billing_data.phone_number: Enter a valid phone number." in str(error)
    assert str(error).startswith("Validation failed")


def test_envelope_failure_under_http_200_is_a_validation_error_with_the_status_kept(single_try, rsps):
    case = CASES_BY_NAME["pay"]
    rsps.add(
        case.method, case.url, json=failure([{"promocode_id": ["Expired."]}], message="Invalid"), status=200
    )

    with pytest.raises(ValidationError) as caught:
        case.invoke(single_try)

    assert caught.value.http_status == 200
    assert caught.value.envelope is not None
    assert caught.value.envelope.code == 400
    assert caught.value.field_errors == {"promocode_id": ["Expired."]}
    assert caught.value.outcome_unknown is False


@pytest.mark.parametrize(
    ("code", "error"), [(401, AuthenticationError), (404, NotFoundError), (503, ServerError)]
)
def test_envelope_code_decides_the_error_under_http_200(single_try, rsps, code, error):
    case = CASES_BY_NAME["capture"]
    rsps.add(case.method, case.url, json=failure([], code=code, message="nope"), status=200)

    with pytest.raises(error) as caught:
        case.invoke(single_try)

    assert caught.value.http_status == 200
    assert caught.value.outcome_unknown is (error is ServerError)


def test_http_500_with_a_success_envelope_is_still_a_server_error(single_try, rsps):
    case = CASES_BY_NAME["refund"]
    rsps.add(case.method, case.url, json=envelope({"message": "refunded"}), status=500)

    with pytest.raises(ServerError) as caught:
        case.invoke(single_try)

    assert caught.value.outcome_unknown is True
    assert caught.value.envelope is not None
    assert caught.value.envelope.data == {"message": "refunded"}


@pytest.mark.parametrize("status", [418, 409, 422])
def test_other_4xx_envelopes_are_validation_errors(single_try, rsps, status):
    case = CASES_BY_NAME["refund"]
    rsps.add(
        case.method, case.url, json=failure([{"refund_amount": ["Too much."]}], code=status), status=status
    )

    with pytest.raises(ValidationError) as caught:
        case.invoke(single_try)

    assert caught.value.field_errors == {"refund_amount": ["Too much."]}
    assert caught.value.outcome_unknown is False


def test_rate_limit_error_carries_retry_after(single_try, rsps):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, json=failure([], code=429), status=429, headers={"Retry-After": "120"})

    with pytest.raises(RateLimitError) as caught:
        case.invoke(single_try)

    assert caught.value.retry_after == 120.0


def test_rate_limit_without_retry_after_has_none(single_try, rsps):
    case = CASES_BY_NAME["pay"]
    rsps.add(case.method, case.url, body="slow down", status=429, content_type="text/plain")

    with pytest.raises(RateLimitError) as caught:
        case.invoke(single_try)

    assert caught.value.retry_after is None
    assert caught.value.body_excerpt == "slow down"
    assert caught.value.outcome_unknown is False


def test_html_403_challenge_is_never_reported_as_a_bad_api_key(single_try, rsps):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, body=HTML_CHALLENGE, status=403, content_type="text/html; charset=UTF-8")

    with pytest.raises(PayCollectError) as caught:
        case.invoke(single_try)

    assert not isinstance(caught.value, AuthenticationError)
    assert isinstance(caught.value, UnexpectedResponseError)
    assert "HTML instead of JSON" in str(caught.value)
    assert caught.value.body_excerpt.startswith("<!DOCTYPE html><html><head><title>Attention Required!")
    assert len(caught.value.body_excerpt) == EXCERPT_CHARS


def test_html_without_an_html_content_type_is_still_recognised(single_try, rsps):
    case = CASES_BY_NAME["capture"]
    rsps.add(case.method, case.url, body=HTML_502, status=502, content_type="text/plain")

    with pytest.raises(UnexpectedResponseError, match="HTML instead of JSON"):
        case.invoke(single_try)


def test_text_that_is_not_json_is_described_as_text(single_try, rsps):
    case = CASES_BY_NAME["capture"]
    rsps.add(case.method, case.url, body="upstream connect error", status=503, content_type="text/plain")

    with pytest.raises(UnexpectedResponseError, match="text instead of JSON") as caught:
        case.invoke(single_try)

    assert caught.value.outcome_unknown is True


def test_empty_body_is_described(single_try, rsps):
    case = CASES_BY_NAME["dashboard_statistics"]
    rsps.add(case.method, case.url, body="", status=200)

    with pytest.raises(UnexpectedResponseError, match="empty body") as caught:
        case.invoke(single_try)

    assert caught.value.body_excerpt == ""
    assert caught.value.outcome_unknown is False


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("case", [CASES_BY_NAME["refund"], CASES_BY_NAME["get_transaction"]], ids=str)
def test_redirect_is_not_followed(single_try, rsps, case, status):
    target = "https://elsewhere.example.test/moved"
    rsps.add(case.method, case.url, status=status, headers={"Location": target}, body="")
    rsps.add(responses.GET, target, json=envelope({}))
    rsps.add(responses.POST, target, json=envelope({}))

    with pytest.raises(UnexpectedResponseError) as caught:
        case.invoke(single_try)

    assert [call.request.url for call in rsps.calls] == [case.url]
    assert caught.value.http_status == status
    assert target in str(caught.value)
    assert "base_url" in str(caught.value)
    assert caught.value.outcome_unknown is case.changes_state


def test_redirect_with_an_envelope_body_is_still_unexpected(single_try, rsps):
    case = CASES_BY_NAME["pay"]
    rsps.add(case.method, case.url, status=301, json=envelope({}), headers={"Location": BASE_URL + "/x"})

    with pytest.raises(UnexpectedResponseError):
        case.invoke(single_try)


def test_excerpt_is_short_and_single_line(single_try, rsps):
    case = CASES_BY_NAME["capture"]
    rsps.add(case.method, case.url, body="line one\n\n\tline two " + "x" * 50_000, status=502)

    with pytest.raises(UnexpectedResponseError) as caught:
        case.invoke(single_try)

    assert caught.value.body_excerpt.startswith("line one line two xxx")
    assert len(caught.value.body_excerpt) == EXCERPT_CHARS
    assert len(str(caught.value)) < 500


def test_an_empty_failure_message_gets_a_default(single_try, rsps):
    case = CASES_BY_NAME["capture"]
    body = {"status": {"code": 404, "message": None, "errors": None}, "data": None}
    rsps.add(case.method, case.url, json=body, status=404)

    with pytest.raises(NotFoundError) as caught:
        case.invoke(single_try)

    assert caught.value.message == "request refused"
    assert caught.value.envelope is not None
    assert caught.value.envelope.errors == []
    assert caught.value.envelope.data == {}


# --- no credentials, no request -----------------------------------------------------------


@pytest.mark.parametrize("name", ["pay", "get_transaction", "capture", "refund", "create_direct_order"])
def test_operations_needing_the_key_refuse_to_send_without_it(rsps, name):
    keyless, _ = make_client(api_key=None)

    with pytest.raises(PayCollectError, match="needs an API key") as caught:
        CASES_BY_NAME[name].invoke(keyless)

    assert caught.value.http_status is None
    assert len(rsps.calls) == 0


def test_statistics_refuses_to_send_without_basic_credentials(rsps):
    no_basic, _ = make_client(basic_credentials=None)

    with pytest.raises(PayCollectError, match="basic_credentials"):
        no_basic.dashboard_statistics(community_id="c")

    assert len(rsps.calls) == 0


def test_promocode_and_community_work_without_any_credentials(rsps):
    bare, _ = make_client(api_key=None, basic_credentials=None)
    for name in ("validate_promocode", "create_community"):
        case = CASES_BY_NAME[name]
        rsps.add(case.method, case.url, json=envelope({}))
        case.invoke(bare)
    assert len(rsps.calls) == 2
    assert all("x-api-key" not in call.request.headers for call in rsps.calls)


# --- secrets ------------------------------------------------------------------------------

ECHO_TEXT = f"key={API_KEY} auth=Basic {BASIC_LITERAL} headers: x-api-key: {API_KEY}"


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"secret shown in {text!r}"


def error_texts(error: PayCollectError) -> list[str]:
    return [str(error), repr(error), error.message, error.body_excerpt, str(error.args)]


ECHOES = (
    pytest.param(
        401, "application/json", json.dumps(failure([], code=401, message=ECHO_TEXT)), id="401-message"
    ),
    pytest.param(
        500, "application/json", json.dumps(failure([], code=500, message=ECHO_TEXT)), id="500-message"
    ),
    pytest.param(400, "application/json", json.dumps(failure([], message=ECHO_TEXT)), id="400-message"),
    pytest.param(
        404,
        "application/json",
        json.dumps({**failure([], code=404), "echo": {"headers": {"x-api-key": API_KEY}}}),
        id="404-raw-body",
    ),
    pytest.param(403, "text/html", f"<html><body>{ECHO_TEXT}</body></html>", id="403-html"),
    pytest.param(502, "text/html", f"<html>{ECHO_TEXT}" + " " * 2000 + "</html>", id="502-html"),
    pytest.param(200, "application/json", '{"headers": "' + ECHO_TEXT + '"', id="200-broken-json"),
    pytest.param(429, "text/plain", ECHO_TEXT, id="429-text"),
)


@pytest.mark.parametrize(("status", "content_type", "body"), ECHOES)
@pytest.mark.parametrize("case", OPERATION_CASES, ids=str)
def test_errors_never_show_credentials_the_server_echoes(single_try, rsps, case, status, content_type, body):
    rsps.add(case.method, case.url, body=body, status=status, content_type=content_type)

    with pytest.raises(PayCollectError) as caught:
        case.invoke(single_try)

    assert_no_secret(*error_texts(caught.value))
    assert REDACTED in caught.value.body_excerpt or REDACTED in str(caught.value)


def test_redirect_location_echoing_the_key_is_scrubbed(single_try, rsps):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, status=302, headers={"Location": f"https://x.test/?key={API_KEY}"})

    with pytest.raises(UnexpectedResponseError) as caught:
        case.invoke(single_try)

    assert_no_secret(*error_texts(caught.value))
    assert f"https://x.test/?key={REDACTED}" in str(caught.value)


def test_network_error_text_never_shows_credentials(rsps):
    made, _ = make_client(max_network_retries=0)
    case = CASES_BY_NAME["dashboard_statistics"]
    rsps.add(case.method, case.url, body=requests.exceptions.ReadTimeout(f"timed out, sent {BASIC_LITERAL}"))

    with pytest.raises(OutcomeUnknownError) as caught:
        case.invoke(made)

    assert_no_secret(*error_texts(caught.value))


def test_client_repr_hides_credentials():
    made, _ = make_client()
    assert_no_secret(repr(made), repr(made.__dict__), str(vars(made)))
    assert "<secret>" in repr(made)


def test_field_errors_echoing_the_key_are_scrubbed_from_the_message(single_try, rsps):
    case = CASES_BY_NAME["capture"]
    body = failure([{"x-api-key": [f"Unknown key {API_KEY}"]}, {"authorization": [f"Basic {BASIC_LITERAL}"]}])
    rsps.add(case.method, case.url, json=body, status=400)

    with pytest.raises(ValidationError) as caught:
        case.invoke(single_try)

    assert_no_secret(*error_texts(caught.value))


def test_basic_password_echoed_alone_is_scrubbed(single_try, rsps):
    case = CASES_BY_NAME["dashboard_statistics"]
    body = failure([], code=401, message=f"password {BASIC_PASSWORD} is wrong")
    rsps.add(case.method, case.url, json=body, status=401)

    with pytest.raises(AuthenticationError) as caught:
        case.invoke(single_try)

    assert_no_secret(*error_texts(caught.value))


def test_a_key_cut_by_the_excerpt_limit_is_not_shown(single_try, rsps):
    case = CASES_BY_NAME["capture"]
    body = b" " * (EXCERPT_CHARS * 4 - len(API_KEY) + 1) + API_KEY.encode()
    rsps.add(case.method, case.url, body=body, status=502, content_type="text/html")

    with pytest.raises(UnexpectedResponseError) as caught:
        case.invoke(single_try)

    assert API_KEY[:-1] not in caught.value.body_excerpt


# --- errors raised before sending ---------------------------------------------------------


def test_local_validation_error_has_no_http_status_and_was_not_sent(client, rsps):
    with pytest.raises(ValidationError) as caught:
        client.refund(transaction_uuid=TX_UUID, refund_amount=Decimal("-1"))

    error = caught.value
    assert error.sent is False
    assert error.http_status is None
    assert error.envelope is None
    assert error.call is None
    assert error.outcome_unknown is False
    assert str(error) == "invalid request, nothing was sent: refund_amount: Must be greater than zero."
    assert len(rsps.calls) == 0


def test_connect_error_is_not_an_api_error():
    assert not issubclass(ConnectError, ApiError)
    assert not issubclass(OutcomeUnknownError, ApiError)
    assert OutcomeUnknownError("x").outcome_unknown is True
    assert ConnectError("x").outcome_unknown is False
    assert str(ServerError("boom", http_status=503)) == "boom (HTTP 503)"
    assert str(ConnectError("refused")) == "refused"
