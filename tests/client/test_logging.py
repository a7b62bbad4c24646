"""Logging on ``django_paycollect.client``: operation, path, status, duration; never secrets or payer data."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
import requests

from django_paycollect.client import BillingData, PayCollectError

from .support import (
    API_KEY,
    BASE_URL,
    BASIC_LITERAL,
    BASIC_PASSWORD,
    CASES_BY_NAME,
    COMMUNITY,
    OPERATION_CASES,
    envelope,
    failure,
)

LOGGER = "django_paycollect.client"
PAYER = BillingData("Zeinab Farouk", "zeinab.farouk@example.org", "+20 122 555-0199")
PAYER_TEXTS = ("Zeinab", "Farouk", "zeinab.farouk@example.org", "+201225550199", "122 555-0199", "1225550199")
FORBIDDEN = (API_KEY, BASIC_LITERAL, BASIC_PASSWORD, *PAYER_TEXTS)


def client_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every record of every logger: message, arguments and extra attributes."""
    parts = [caplog.text]
    for record in caplog.records:
        parts.append(record.getMessage())
        parts.append(repr(record.args))
        parts.append(repr(vars(record)))
    return "\n".join(parts)


def pay(client):
    return client.pay(
        community_id=COMMUNITY,
        amount=Decimal("102.85"),
        original_amount=Decimal("100"),
        variable_amount_id=12,
        billing_data=PAYER,
    )


def test_a_call_is_logged_with_operation_path_status_and_duration(client, rsps, caplog):
    caplog.set_level(logging.DEBUG)
    rsps.post(BASE_URL + "/api/v1/payments/pay/variable-amount", json=envelope({"transaction_id": 1}))

    pay(client)

    [record] = client_records(caplog)
    assert record.levelno == logging.INFO
    message = record.getMessage()
    assert message.startswith("pay POST /api/v1/payments/pay/variable-amount -> 200 in ")
    assert message.endswith(" ms, 1 attempt(s)")
    assert record.paycollect_operation == "pay"
    assert record.paycollect_status == 200
    assert isinstance(record.paycollect_duration_ms, int)
    assert record.paycollect_duration_ms >= 0


@pytest.mark.parametrize("case", OPERATION_CASES, ids=str)
def test_every_operation_logs_its_path(client, rsps, caplog, case):
    caplog.set_level(logging.INFO, logger=LOGGER)
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(client)

    [record] = client_records(caplog)
    path = case.url.removeprefix(BASE_URL).split("?")[0]
    assert record.getMessage().startswith(f"{case.name} {case.method} {path} -> 200 in ")
    assert record.paycollect_operation == case.name


def test_a_failure_is_logged_as_a_warning_with_its_kind(client, rsps, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    case = CASES_BY_NAME["refund"]
    rsps.add(case.method, case.url, json=failure([], code=500), status=500)

    with pytest.raises(PayCollectError):
        case.invoke(client)

    [record] = client_records(caplog)
    assert record.levelno == logging.WARNING
    assert record.paycollect_status == 500
    assert record.getMessage().endswith(": ServerError")


def test_retries_and_network_failures_are_logged(client, rsps, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    case = CASES_BY_NAME["get_transaction"]
    rsps.add(case.method, case.url, status=503, body="")
    rsps.add(case.method, case.url, body=requests.exceptions.ReadTimeout("read timed out"))
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(client)

    messages = [r.getMessage() for r in client_records(caplog)]
    assert len(messages) == 3
    assert messages[0].endswith("attempt 1 failed (HTTP 503), trying again")
    assert messages[1].endswith("attempt 2 failed (ReadTimeout: read timed out), trying again")
    assert " -> 200 in " in messages[2]
    assert messages[2].endswith("3 attempt(s)")


def test_no_answer_is_logged_as_such(client, rsps, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    case = CASES_BY_NAME["capture"]
    rsps.add(case.method, case.url, body=requests.exceptions.ReadTimeout("read timed out"))

    with pytest.raises(PayCollectError):
        case.invoke(client)

    [record] = client_records(caplog)
    assert "-> no answer in" in record.getMessage()
    assert record.paycollect_status is None


def test_logs_never_hold_credentials_or_billing_data(client, rsps, caplog):
    caplog.set_level(logging.DEBUG)
    echo = f"{API_KEY} Basic {BASIC_LITERAL} {PAYER.name} {PAYER.email} +201225550199"
    pay_url = BASE_URL + "/api/v1/payments/pay/variable-amount"
    stats = CASES_BY_NAME["dashboard_statistics"]

    rsps.post(pay_url, json=envelope({"echo": echo}))
    pay(client)
    rsps.replace(
        "POST", pay_url, json=failure([{"billing_data": {"name": [echo]}}], message=echo), status=400
    )
    with pytest.raises(PayCollectError):
        pay(client)
    rsps.replace("POST", pay_url, body=f"<html>{echo}</html>", status=502, content_type="text/html")
    with pytest.raises(PayCollectError):
        pay(client)
    # Network errors are logged with their text (scrubbed); requests never puts the body in it.
    secrets_only = f"{API_KEY} Basic {BASIC_LITERAL}"
    rsps.replace("POST", pay_url, body=requests.exceptions.ConnectionError(f"reset {secrets_only}"))
    with pytest.raises(PayCollectError):
        pay(client)
    rsps.add(stats.method, stats.url, body=requests.exceptions.ReadTimeout(f"timeout {secrets_only}"))
    rsps.add(stats.method, stats.url, json=failure([], code=401, message=echo), status=401)
    with pytest.raises(PayCollectError):
        stats.invoke(client)

    assert len(client_records(caplog)) >= 6
    logged = everything_logged(caplog)
    for forbidden in FORBIDDEN:
        assert forbidden not in logged, f"{forbidden!r} was logged"
