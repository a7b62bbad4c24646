"""Callback delivery: the delivery log, retries when the receiver fails or is down, and the control API's
duplicate / drop / delay / redeliver."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import requests

from django_paycollect.sandbox.testing import CallbackReceiver, Sandbox, SandboxError

from .support import BILLING, closed_port_url, query_of


def _paid(sandbox: Sandbox, action: str = "pay") -> str:
    started = sandbox.client.pay(
        community_id=sandbox.community_id,
        amount=Decimal("30.00"),
        original_amount=Decimal("30.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
    )
    assert sandbox.submit_payment_page(started.result.iframe_url or "", action).status_code in (200, 302)
    return started.result.transaction_uuid or ""


def test_retries_until_the_receiver_accepts(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    sandbox.control.configure_api_payment(sandbox.variable_amount_id, callback_url=receiver.url)
    sandbox.control.set_config(callback_retry_delays=[0.05, 0.1, 0.1])
    receiver.fail_next(500, 503)
    tx = _paid(sandbox)
    (callback,) = receiver.wait_for(1)
    assert callback.body["transaction_uuid"] == tx
    (delivery,) = sandbox.control.wait_for_callbacks(transaction_uuid=tx)
    assert delivery["attempts"] == 3
    log = delivery["attempt_log"]
    assert [a["http_status"] for a in log] == [500, 503, 200]
    assert log[0]["response_excerpt"] == "receiver is failing on purpose"
    assert log[2]["response_excerpt"] == "ok"
    assert all(isinstance(a["duration_ms"], int) for a in log)
    starts = [dt.datetime.fromisoformat(a["started_at"]) for a in log]
    # Backoff: each retry waited at least its configured delay after the previous attempt started.
    assert starts[1] - starts[0] >= dt.timedelta(seconds=0.05)
    assert starts[2] - starts[1] >= dt.timedelta(seconds=0.1)


def test_gives_up_when_the_receiver_is_down(sandbox: Sandbox) -> None:
    sandbox.control.configure_api_payment(
        sandbox.variable_amount_id, callback_url=closed_port_url() + "?token=cb-s3cret"
    )
    sandbox.control.set_config(callback_retry_delays=[0.05, 0.05])
    tx = _paid(sandbox)
    (delivery,) = sandbox.control.wait_for_callbacks(transaction_uuid=tx, status="FAILED")
    assert delivery["attempts"] == 3
    for attempt in delivery["attempt_log"]:
        assert attempt["http_status"] is None
        assert attempt["error"].startswith("ConnectionError")
    # The merchant's callback token is not repeated by the delivery log.
    assert "cb-s3cret" not in requests.get(f"{sandbox.base_url}/_control/callbacks", timeout=10).text
    assert delivery["url"].endswith("/callback?token=[redacted]")


def test_the_callback_url_is_used_as_configured(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    sandbox.control.configure_api_payment(
        sandbox.variable_amount_id, callback_url=receiver.url + "?token=cb-s3cret"
    )
    _paid(sandbox)
    (callback,) = receiver.wait_for(1)
    assert callback.path == "/callback?token=cb-s3cret"


def test_failed_payment_sends_a_failed_callback_and_redirect(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    sandbox.control.configure_api_payment(
        sandbox.variable_amount_id, callback_url=receiver.url, redirect_url="https://merchant.example/back"
    )
    started = sandbox.client.pay(
        community_id=sandbox.community_id,
        amount=Decimal("30.00"),
        original_amount=Decimal("30.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
    )
    browser = requests.Session()
    answer = sandbox.submit_payment_page(started.result.iframe_url or "", "decline", session=browser)
    assert query_of(answer.headers["Location"])["transaction_status"] == "FAILED"
    (callback,) = receiver.wait_for(1)
    assert callback.body["transaction_status"] == "FAILED"
    tx = started.result.transaction_uuid or ""
    assert sandbox.client.get_transaction(
        community_id=sandbox.community_id, transaction_uuid=tx
    ).result.status == ("FAILED")
    # Completed transactions move forward only: the page has no form any more, and a late submit is refused.
    with pytest.raises(SandboxError):
        sandbox.submit_payment_page(started.result.iframe_url or "", "pay")
    late = browser.post(
        started.result.iframe_url or "",
        data={"csrfmiddlewaretoken": browser.cookies["csrftoken"], "action": "pay"},
        allow_redirects=False,
        timeout=10,
    )
    assert late.status_code == 409
    assert "already completed" in late.text
    assert sandbox.client.get_transaction(
        community_id=sandbox.community_id, transaction_uuid=tx
    ).result.status == ("FAILED")


def test_duplicate_drop_delay_and_redeliver(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    sandbox.control.configure_api_payment(sandbox.variable_amount_id, callback_url=receiver.url)
    plan = sandbox.control.next_callbacks("duplicate")
    assert plan == [{"action": "duplicate"}]
    sandbox.control.next_callbacks("drop")
    sandbox.control.next_callbacks("delay", delay_seconds=0.3)

    duplicated = _paid(sandbox)
    first, second = receiver.wait_for(2)
    assert first.raw == second.raw
    assert first.body["transaction_uuid"] == duplicated

    dropped = _paid(sandbox)
    (drop,) = sandbox.control.callbacks(dropped)
    assert drop["status"] == "DROPPED"
    assert drop["attempts"] == 0

    delayed = _paid(sandbox)
    (delay,) = sandbox.control.wait_for_callbacks(transaction_uuid=delayed)
    created = dt.datetime.fromisoformat(delay["created"])
    assert dt.datetime.fromisoformat(delay["attempt_log"][0]["started_at"]) - created >= dt.timedelta(
        seconds=0.3
    )
    received = receiver.wait_for(3)
    assert [r.body["transaction_uuid"] for r in received] == [duplicated, duplicated, delayed]

    # The dropped one can be sent on demand, byte for byte.
    redelivered = sandbox.control.redeliver(drop["id"])
    assert redelivered["redelivery_of"] == drop["id"]
    fourth = receiver.wait_for(4)[3]
    assert fourth.body["transaction_uuid"] == dropped
    assert fourth.body == drop["body"]
    # And a delivered one again: the receiver sees an exact duplicate.
    sandbox.control.redeliver(delay["id"])
    assert receiver.wait_for(5)[4].raw == received[2].raw


def test_callback_uuid_key_is_configurable(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    sandbox.control.configure_api_payment(sandbox.variable_amount_id, callback_url=receiver.url)
    sandbox.control.set_config(callback_uuid_key="transaction_id")
    as_example = _paid(sandbox)
    sandbox.control.set_config(callback_uuid_key="both")
    as_both = _paid(sandbox)
    first, second = receiver.wait_for(2)
    assert first.body["transaction_id"] == as_example
    assert "transaction_uuid" not in first.body
    assert second.body["transaction_id"] == second.body["transaction_uuid"] == as_both


def test_no_callback_url_is_logged_as_skipped(sandbox: Sandbox) -> None:
    sandbox.control.configure_api_payment(sandbox.variable_amount_id, callback_url="")
    tx = _paid(sandbox)
    (delivery,) = sandbox.control.callbacks(tx)
    assert delivery["status"] == "SKIPPED"
    assert delivery["body"]["transaction_uuid"] == tx
