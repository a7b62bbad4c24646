"""The retry policy: reads retry, writes are never resent once they may have reached the service.

Responses stands in for the network here; ``test_network.py`` does the same over real sockets.
"""

from __future__ import annotations

import email.utils
import time
from decimal import Decimal
from typing import Any

import pytest
import requests
import urllib3

from django_paycollect.client import (
    ConnectError,
    OutcomeUnknownError,
    PayCollectError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    transport,
)

from .support import (
    CASES_BY_NAME,
    READ_CASES,
    WRITE_CASES,
    envelope,
    failure,
    make_client,
)


def refused() -> requests.exceptions.ConnectionError:
    """What requests raises for connection refused: the request never left this machine."""
    reason = urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: refused")  # type: ignore[arg-type]
    return requests.exceptions.ConnectionError(urllib3.exceptions.MaxRetryError(None, "/", reason))  # type: ignore[arg-type]


def reset_after_send() -> requests.exceptions.ConnectionError:
    return requests.exceptions.ConnectionError(
        urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset by peer"))
    )


#: Failures after which the request provably never reached the service.
NEVER_SENT: dict[str, Any] = {
    "refused": refused,
    "dns": lambda: requests.exceptions.ConnectionError(
        urllib3.exceptions.MaxRetryError(
            None,  # type: ignore[arg-type]
            "/",
            urllib3.exceptions.NameResolutionError("pay.example.test", None, OSError("no such host")),  # type: ignore[arg-type]
        )
    ),
    "connect-timeout": lambda: requests.exceptions.ConnectTimeout("connect timed out"),
    "connect-timeout-in-connection-error": lambda: requests.exceptions.ConnectionError(
        urllib3.exceptions.ConnectTimeoutError("connect timed out")
    ),
    "tls-handshake": lambda: requests.exceptions.SSLError("certificate verify failed"),
    "proxy": lambda: requests.exceptions.ProxyError("proxy refused"),
    "invalid-url": lambda: requests.exceptions.InvalidURL("bad url"),
}

#: Failures after which the request may have reached the service.
MAYBE_SENT: dict[str, Any] = {
    "read-timeout": lambda: requests.exceptions.ReadTimeout("read timed out"),
    "reset-after-send": reset_after_send,
    "remote-disconnected": lambda: requests.exceptions.ConnectionError(
        urllib3.exceptions.ProtocolError("Connection aborted.", OSError("Remote end closed connection"))
    ),
    "connection-error-without-reason": lambda: requests.exceptions.ConnectionError(),
    "chunked-encoding": lambda: requests.exceptions.ChunkedEncodingError("broken chunk"),
}


# --- the two acceptance scenarios ---------------------------------------------------------


def test_refund_whose_read_timed_out_was_sent_once_and_its_outcome_is_unknown(client, rsps, sleeps):
    case = CASES_BY_NAME["refund"]
    rsps.add(case.method, case.url, body=requests.exceptions.ReadTimeout("read timed out (read timeout=30)"))
    rsps.add(case.method, case.url, json=envelope({"message": "refunded"}))  # would be a second refund

    with pytest.raises(OutcomeUnknownError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 1
    assert caught.value.outcome_unknown is True
    assert caught.value.http_status is None
    assert caught.value.call is not None
    assert caught.value.call.attempts == 1
    assert caught.value.call.request_body["refund_amount"] == Decimal("40.25")
    assert "sent, no answer" in str(caught.value)
    assert sleeps == []


def test_fetch_after_two_503s_returns_the_success(client, rsps, sleeps):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, json=failure([], code=503, message="busy"), status=503)
    rsps.add(case.method, case.url, body="<html>503</html>", status=503, content_type="text/html")
    rsps.add(case.method, case.url, json=envelope({"id": 5501, "status": "SUCCESSFUL"}))

    got = case.invoke(client)

    assert len(rsps.calls) == 3
    assert got.result.status == "SUCCESSFUL"
    assert got.call is not None
    assert got.call.attempts == 3
    assert len(sleeps) == 2


# --- reads --------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 502, 503, 504])
@pytest.mark.parametrize("case", READ_CASES, ids=str)
def test_reads_retry_busy_statuses(client, rsps, sleeps, case, status):
    rsps.add(case.method, case.url, json=failure([], code=status), status=status)
    rsps.add(case.method, case.url, json=envelope({}))

    got = case.invoke(client)

    assert got.http_status == 200
    assert len(rsps.calls) == 2
    assert len(sleeps) == 1


@pytest.mark.parametrize("failure_kind", sorted(NEVER_SENT) + sorted(MAYBE_SENT))
@pytest.mark.parametrize("case", READ_CASES, ids=str)
def test_reads_retry_network_failures(client, rsps, sleeps, case, failure_kind):
    make = NEVER_SENT.get(failure_kind) or MAYBE_SENT[failure_kind]
    rsps.add(case.method, case.url, body=make())
    rsps.add(case.method, case.url, json=envelope({}))

    got = case.invoke(client)

    assert got.code == 200
    assert len(rsps.calls) == 2
    assert len(sleeps) == 1


@pytest.mark.parametrize("status", [500, 501, 400, 401, 404])
def test_reads_do_not_retry_other_statuses(client, rsps, sleeps, status):
    case = CASES_BY_NAME["dashboard_statistics"]
    rsps.add(case.method, case.url, json=failure([], code=status), status=status)
    rsps.add(case.method, case.url, json=envelope({}))

    with pytest.raises(PayCollectError) as caught:
        case.invoke(client)

    assert caught.value.http_status == status
    assert len(rsps.calls) == 1
    assert sleeps == []


def test_a_read_gives_up_after_one_plus_max_network_retries_attempts(client, rsps, sleeps):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, json=failure([], code=503), status=503)

    with pytest.raises(ServerError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 1 + client.max_network_retries == 3
    assert len(sleeps) == 2
    assert caught.value.outcome_unknown is False
    assert caught.value.call is not None
    assert caught.value.call.attempts == 3


def test_a_read_timing_out_every_time_is_outcome_unknown_but_not_marked_so(client, rsps):
    case = CASES_BY_NAME["validate_promocode"]
    rsps.add(case.method, case.url, body=requests.exceptions.ReadTimeout("read timed out"))

    with pytest.raises(OutcomeUnknownError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 3
    assert caught.value.outcome_unknown is False  # a read changes nothing


def test_a_read_refused_every_time_is_a_connect_error(client, rsps, sleeps):
    case = CASES_BY_NAME["prepare_amount"]
    rsps.add(case.method, case.url, body=refused())

    with pytest.raises(ConnectError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 3
    assert len(sleeps) == 2
    assert caught.value.outcome_unknown is False
    assert "not sent" in str(caught.value)


def test_a_read_rate_limited_every_time_raises_rate_limit_error(client, rsps):
    case = CASES_BY_NAME["dashboard_statistics"]
    rsps.add(case.method, case.url, json=failure([], code=429), status=429, headers={"Retry-After": "2"})

    with pytest.raises(RateLimitError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 3
    assert caught.value.retry_after == 2.0


def test_no_retries_when_max_network_retries_is_zero(rsps):
    once, sleeps = make_client(max_network_retries=0)
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, body=requests.exceptions.ReadTimeout("read timed out"))

    with pytest.raises(OutcomeUnknownError):
        case.invoke(once)

    assert len(rsps.calls) == 1
    assert sleeps == []


# --- Retry-After --------------------------------------------------------------------------


def test_retry_after_seconds_is_honoured(client, rsps, sleeps):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, json=failure([], code=429), status=429, headers={"Retry-After": "7"})
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(client)

    assert sleeps == [7.0]


def test_retry_after_http_date_is_honoured(client, rsps, sleeps):
    case = CASES_BY_NAME["dashboard_statistics"]
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    rsps.add(case.method, case.url, body="busy", status=503, headers={"Retry-After": when})
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(client)

    assert len(sleeps) == 1
    assert 17.0 <= sleeps[0] <= 20.5


def test_retry_after_in_the_past_means_now(client, rsps, sleeps):
    case = CASES_BY_NAME["dashboard_statistics"]
    when = email.utils.formatdate(time.time() - 3600, usegmt=True)
    rsps.add(case.method, case.url, body="busy", status=503, headers={"Retry-After": when})
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(client)

    assert sleeps == [0.0]


@pytest.mark.parametrize("header", ["120", "31"])
def test_retry_after_over_the_maximum_is_not_waited_for(client, rsps, sleeps, header):
    assert client.max_retry_after == 30.0
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, json=failure([], code=429), status=429, headers={"Retry-After": header})
    rsps.add(case.method, case.url, json=envelope({}))

    with pytest.raises(RateLimitError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 1
    assert sleeps == []
    assert caught.value.retry_after == float(header)


def test_retry_after_over_the_maximum_on_503_raises_the_503(client, rsps, sleeps):
    case = CASES_BY_NAME["get_transaction"]
    when = email.utils.formatdate(time.time() + 3600, usegmt=True)
    rsps.add(case.method, case.url, body="<html>down</html>", status=503, headers={"Retry-After": when})

    with pytest.raises(UnexpectedResponseError):
        case.invoke(client)

    assert len(rsps.calls) == 1
    assert sleeps == []


def test_retry_after_equal_to_the_maximum_is_waited_for(rsps):
    patient, sleeps = make_client(max_retry_after=10)
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, body="", status=429, headers={"Retry-After": "10"})
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(patient)

    assert sleeps == [10.0]


@pytest.mark.parametrize("header", ["soon", "", "-5", "1.5", "Wed, 32 Foo 2015 07:28:00 GMT"])
def test_unreadable_retry_after_falls_back_to_backoff(client, rsps, sleeps, header):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, body="", status=503, headers={"Retry-After": header})
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(client)

    assert len(sleeps) == 1
    assert 0.0 <= sleeps[0] <= client.backoff_base


def test_retry_after_with_a_superscript_digit_does_not_crash(client, rsps, sleeps):
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, body="", status=503, headers={"Retry-After": "\u00b2"})
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(client)

    assert len(sleeps) == 1


# --- writes -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", WRITE_CASES, ids=str)
def test_a_refused_write_is_attempted_one_plus_max_network_retries_times(client, rsps, sleeps, case):
    rsps.add(case.method, case.url, body=refused())

    with pytest.raises(ConnectError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 1 + client.max_network_retries == 3
    assert len(sleeps) == 2
    assert caught.value.outcome_unknown is False
    assert caught.value.call is not None
    assert caught.value.call.attempts == 3


@pytest.mark.parametrize("failure_kind", sorted(NEVER_SENT))
@pytest.mark.parametrize("case", WRITE_CASES, ids=str)
def test_a_write_that_was_never_sent_is_retried(client, rsps, sleeps, case, failure_kind):
    rsps.add(case.method, case.url, body=NEVER_SENT[failure_kind]())
    rsps.add(case.method, case.url, json=envelope({}))

    got = case.invoke(client)

    assert got.code == 200
    assert len(rsps.calls) == 2
    assert len(sleeps) == 1


@pytest.mark.parametrize("failure_kind", sorted(MAYBE_SENT))
@pytest.mark.parametrize("case", WRITE_CASES, ids=str)
def test_a_write_that_may_have_been_sent_is_never_resent(client, rsps, sleeps, case, failure_kind):
    rsps.add(case.method, case.url, body=MAYBE_SENT[failure_kind]())
    rsps.add(case.method, case.url, json=envelope({}))

    with pytest.raises(OutcomeUnknownError) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 1
    assert sleeps == []
    assert caught.value.outcome_unknown is True


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
@pytest.mark.parametrize("case", WRITE_CASES, ids=str)
def test_writes_are_never_retried_on_answers(client, rsps, sleeps, case, status):
    rsps.add(
        case.method, case.url, json=failure([], code=status), status=status, headers={"Retry-After": "1"}
    )
    rsps.add(case.method, case.url, json=envelope({}))

    with pytest.raises((RateLimitError, ServerError)) as caught:
        case.invoke(client)

    assert len(rsps.calls) == 1
    assert sleeps == []
    assert caught.value.outcome_unknown is (status != 429)


# --- backoff ------------------------------------------------------------------------------


def test_backoff_is_exponential_and_capped(rsps, monkeypatch):
    patient, sleeps = make_client(max_network_retries=7, backoff_base=0.5, backoff_cap=3.0)
    bounds: list[tuple[float, float]] = []

    def upper_bound(low: float, high: float) -> float:
        bounds.append((low, high))
        return high

    monkeypatch.setattr(transport.random, "uniform", upper_bound)
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, body="", status=503)

    with pytest.raises(UnexpectedResponseError):
        case.invoke(patient)

    assert bounds == [(0, 0.5), (0, 1.0), (0, 2.0), (0, 3.0), (0, 3.0), (0, 3.0), (0, 3.0)]
    assert sleeps == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0]
    assert len(rsps.calls) == 8


def test_backoff_has_jitter_within_the_cap(rsps):
    patient, sleeps = make_client(max_network_retries=10, backoff_base=1.0, backoff_cap=4.0)
    case = CASES_BY_NAME["prepare_amount"]
    rsps.add(case.method, case.url, body=requests.exceptions.ReadTimeout("slow"))

    with pytest.raises(OutcomeUnknownError):
        case.invoke(patient)

    assert len(sleeps) == 10
    for attempt, slept in enumerate(sleeps, start=1):
        assert 0.0 <= slept <= min(4.0, 2 ** (attempt - 1))
    assert len(set(sleeps)) > 1  # full jitter: not the same wait every time
    assert max(sleeps) <= 4.0
