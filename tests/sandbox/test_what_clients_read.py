"""What clients written against the service read from the sandbox, and what they send it.

From the spec's field tables and from hand-made requests of clients that follow the service rather than
the spec: ``member_id`` is ``null`` when there is none (every real answer sends it); a kiosk payment answers
both ``bill_refrence`` (the spec's spelling) and ``bill_reference``; the redirects carry the spec's types
(Pay's ``amount`` an integer, a direct order's amounts floats); a Pay body without ``original_amount`` (the
service's own Node SDK never sends one) is refused with a 400 naming the field, unless the sandbox is told to
accept it. The sandbox runs as its own process (the ``paycollect_sandbox`` fixture) and, on PostgreSQL,
mounted in the test project (the ``sandbox`` fixture gives both), reached over HTTP; or mounted and driven by
Django's test client where its Django settings are what is tested.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest
import requests
from django.test import Client
from pytest_django.fixtures import Settings

from django_paycollect.sandbox import seed
from django_paycollect.sandbox.envelope import dumps

from .support import BILLING_JSON, assert_envelope, query_of

PAY = "/api/v1/payments/pay/variable-amount"
NUMBER = re.compile(r"^[0-9]+$")
FLOAT = re.compile(r"^[0-9]+\.[0-9]+$")


def pay_body(sb: Any, **changes: Any) -> dict[str, Any]:
    """A Pay body as a client that follows the spec writes it (amounts as JSON numbers)."""
    return {
        "community_id": sb.community_id,
        "amount": Decimal("53.25"),
        "original_amount": Decimal("50.00"),
        "currency": "EGP",
        "variable_amount_id": sb.variable_amount_id,
        "pay_using": "card",
        "billing_data": BILLING_JSON,
        **changes,
    }


def post(sb: Any, path: str, body: dict[str, Any]) -> requests.Response:
    text = dumps(body)  # Decimals as exact JSON numbers, no float involved
    return requests.post(
        sb.base_url + path,
        data=text,
        headers={"Content-Type": "application/json", "x-api-key": sb.api_key},
        timeout=15,
    )


def fetch(sb: Any, uuid: str) -> dict[str, Any]:
    response = requests.get(
        f"{sb.base_url}/api/v1/communities/{sb.community_id}/transactions/{uuid}/",
        headers={"x-api-key": sb.api_key},
        timeout=15,
    )
    data: dict[str, Any] = assert_envelope(response, 200)["data"]
    return data


# --- member_id, bill references -------------------------------------------------------------------------


def test_member_id_is_null_when_there_is_none_and_the_membership_id_otherwise(sandbox):
    sb = sandbox
    without = assert_envelope(post(sb, PAY, pay_body(sb)), 200)["data"]
    member = assert_envelope(post(sb, PAY, pay_body(sb, membership_id="M-7")), 200)["data"]

    fetched = fetch(sb, without["transaction_uuid"])
    assert "member_id" in fetched
    assert fetched["member_id"] is None
    assert fetch(sb, member["transaction_uuid"])["member_id"] == "M-7"
    # The typed client reads both the same way.
    assert (
        sb.client.get_transaction(
            community_id=sb.community_id, transaction_uuid=without["transaction_uuid"]
        ).result.member_id
        is None
    )


def test_a_kiosk_payment_answers_both_spellings_of_the_bill_reference(sandbox):
    sb = sandbox
    data = assert_envelope(post(sb, PAY, pay_body(sb, pay_using="kiosk")), 200)["data"]
    assert isinstance(data["bill_refrence"], int)  # the spec's spelling and type
    assert data["bill_reference"] == data["bill_refrence"]  # what a client written against the service reads
    assert str(data["bill_reference"]) in data["message"]


# --- the redirects' types -------------------------------------------------------------------------------


def test_the_pay_redirect_sends_amount_as_an_integer_and_piasters_exactly(sandbox):
    sb = sandbox
    sb.control.configure_api_payment(sb.variable_amount_id, redirect_url="https://shop.example/return")
    started = assert_envelope(post(sb, PAY, pay_body(sb)), 200)["data"]

    location = sb.submit_payment_page(started["iframe_url"], "pay").headers["Location"]

    params = query_of(location)
    assert params["amount"] == "53"  # integer, as the spec types it
    assert NUMBER.match(params["amount"])
    assert params["amount_piasters"] == "5325"  # the exact amount
    assert set(params) == {"amount_piasters", "amount", "transaction_uuid", "transaction_status"}


def test_the_direct_order_redirect_sends_its_amounts_as_floats(sandbox):
    sb = sandbox
    order = sb.client.create_direct_order(
        name="Summer camp",
        community_id=sb.community_id,
        amount=Decimal("53.25"),
        currency="EGP",
        payment_methods=["card"],
        customer_name="Mona Ali",
        customer_email="mona@example.com",
        customer_mobile="+201001234567",
        redirect_url="https://shop.example/orders/done",
    ).result

    location = sb.submit_payment_page(order.payment_link, "pay").headers["Location"]

    params = query_of(location)
    assert params["total_amount"] == "53.25"
    assert params["total_amount_piasters"] == "5325.0"
    assert FLOAT.match(params["total_amount"])
    assert FLOAT.match(params["total_amount_piasters"])


# --- original_amount ------------------------------------------------------------------------------------


def node_sdk_pay_body(sb: Any) -> dict[str, Any]:
    """What the service's Node SDK sends: the spec's fields less original_amount."""
    body = pay_body(sb)
    del body["original_amount"]
    return body


def test_a_pay_without_original_amount_is_refused_with_a_400_naming_the_field(sandbox):
    sb = sandbox
    body = assert_envelope(post(sb, PAY, node_sdk_pay_body(sb)), 400)

    assert body["status"]["message"] == "validation error: original_amount"  # for clients that show only this
    ((field, messages),) = body["status"]["errors"][0].items()
    assert field == "original_amount"
    assert messages[0].startswith("This field is required: the service cost without fees")
    assert "REQUIRE_ORIGINAL_AMOUNT" in messages[0]
    stats = sb.client.dashboard_statistics(community_id=sb.community_id).result
    assert stats.total_number_of_transactions == 0  # nothing was started


def test_every_field_of_a_refused_body_is_named_in_the_message(sandbox):
    sb = sandbox
    body = node_sdk_pay_body(sb)
    del body["variable_amount_id"]
    message = assert_envelope(post(sb, PAY, body), 400)["status"]["message"]
    assert message.startswith("validation error: ")
    assert set(message.removeprefix("validation error: ").split(", ")) == {
        "original_amount",
        "variable_amount_id",
    }


def test_the_control_api_relaxes_the_rule_for_clients_that_never_send_original_amount(sandbox):
    sb = sandbox
    assert sb.control.set_config(require_original_amount=False)["require_original_amount"] is False

    started = assert_envelope(post(sb, PAY, node_sdk_pay_body(sb)), 200)["data"]

    fetched = fetch(sb, started["transaction_uuid"])
    assert fetched["total_amount"] == "53.25"
    page = requests.get(started["iframe_url"], timeout=15).text
    assert "53.25 EGP" in page
    # A reset restores the settings' rule.
    sb.control.reset()
    assert sb.control.set_config()["require_original_amount"] is True
    assert_envelope(post(sb, PAY, node_sdk_pay_body(sb)), 400)


def test_the_relaxed_rule_still_checks_an_original_amount_that_is_sent(sandbox):
    sb = sandbox
    sb.control.set_config(require_original_amount=False)
    body = assert_envelope(post(sb, PAY, pay_body(sb, original_amount="1.005")), 400)
    assert "original_amount" in body["status"]["errors"][0]


@pytest.mark.django_db
@pytest.mark.urls("tests.sandbox.urls")
def test_the_setting_relaxes_the_rule_in_a_mounted_sandbox(client: Client, settings: Settings) -> None:
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "REQUIRE_ORIGINAL_AMOUNT": False}
    identity = seed.seed(None, "http://testserver/sandbox")
    body = {
        "community_id": identity["community_id"],
        "amount": "10.00",
        "variable_amount_id": identity["variable_amount_id"],
        "billing_data": BILLING_JSON,
    }
    answer = client.post(
        "/sandbox" + PAY,
        data=json.dumps(body),
        content_type="application/json",
        headers={"x-api-key": identity["api_key"]},
    )
    assert answer.status_code == 200, answer.content

    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False}
    refused = client.post(
        "/sandbox" + PAY,
        data=json.dumps(body),
        content_type="application/json",
        headers={"x-api-key": identity["api_key"]},
    )
    assert refused.status_code == 400
    assert refused.json()["status"]["message"] == "validation error: original_amount"
