"""Recurring series beyond the happy path: failed renewals, expiry, recurring direct orders, and the runner
under a URL prefix."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from urllib.parse import urljoin

import requests

from django_paycollect.client import PayCollectClient
from django_paycollect.sandbox.testing import CallbackReceiver, Sandbox, start_sandbox

from .support import BILLING, future_date


def _recurring(sandbox: Sandbox, expiry_days: int, every: int) -> str:
    started = sandbox.client.pay(
        community_id=sandbox.community_id,
        amount=Decimal("25.00"),
        original_amount=Decimal("25.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
        is_recurring=True,
        expiry_date=future_date(expiry_days),
        minimum_days_between_payments=every,
    )
    assert sandbox.submit_payment_page(started.result.iframe_url or "", "pay").status_code == 302
    return started.result.transaction_uuid or ""


def _recurring_block(client: PayCollectClient, sandbox: Sandbox, tx: str) -> dict[str, object]:
    block: dict[str, object] = client.get_transaction(
        community_id=sandbox.community_id, transaction_uuid=tx
    ).data["recurring"]
    return block


def test_a_failed_renewal_has_order_zero_and_the_series_goes_on(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    sandbox.control.configure_api_payment(sandbox.variable_amount_id, callback_url=receiver.url)
    parent = _recurring(sandbox, expiry_days=100, every=10)
    sandbox.control.fail_next_renewals(parent, times=1)
    (failed,) = sandbox.control.advance_clock(10)
    (succeeded,) = sandbox.control.advance_clock(10)
    client = sandbox.client
    assert (
        client.get_transaction(community_id=sandbox.community_id, transaction_uuid=failed).result.status
        == "FAILED"
    )
    assert _recurring_block(client, sandbox, failed)["transaction_order"] == 0
    second = _recurring_block(client, sandbox, succeeded)
    assert (second["transaction_order"], second["recurring_count"]) == (2, 2)  # the failure is not counted
    bodies = [c.body for c in receiver.wait_for(3)]
    assert [b["transaction_status"] for b in bodies] == ["SUCCESSFUL", "FAILED", "SUCCESSFUL"]
    assert all(b["recurring"]["parent_transaction"] == parent for b in bodies)
    assert [b["recurring"]["is_sub_payment"] for b in bodies] == [False, True, True]


def test_the_series_stops_at_its_expiry_date(sandbox: Sandbox) -> None:
    parent = _recurring(sandbox, expiry_days=25, every=10)
    # Renewals on days 10 and 20; day 30 is past the expiry date.
    assert len(sandbox.control.advance_clock(45)) == 2
    assert _recurring_block(sandbox.client, sandbox, parent)["active"] is False
    assert sandbox.control.advance_clock(30) == []


def test_a_recurring_direct_order_renews_with_its_message_and_custom_fields(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    order = sandbox.client.create_direct_order(
        name="Monthly coaching",
        community_id=sandbox.community_id,
        amount=Decimal("300.00"),
        payment_methods=["card"],
        customer_name="Omar Hassan",
        customer_email="omar@example.com",
        customer_mobile="+201112223334",
        allow_recurring_payments=True,
        expiry_date=future_date(100),
        minimum_days_between_payments=30,
        custom_fields=[
            {"field_label": "Level", "field_type": "DROPDOWNLIST", "field_choices": "Beginner,Pro"}
        ],
        callback_url=receiver.url,
    ).result
    answer = sandbox.submit_payment_page(order.payment_link or "", "pay", fields={"Level": "Pro"})
    assert answer.status_code == 200  # no redirect URL: the sandbox's own result page
    assert "Payment successful" in answer.text
    (renewal,) = sandbox.control.advance_clock(30)
    first, second = receiver.wait_for(2)
    assert second.body["transaction_uuid"] == renewal
    assert second.body["recurring"] == {
        "is_sub_payment": True,
        "parent_transaction": first.body["transaction_uuid"],
    }
    assert second.body["message"] == first.body["message"]
    assert second.body["payment_id"] == order.payment_id
    assert second.body["Level"] == "Pro"


def test_the_runner_serves_under_a_prefix(tmp_path: Path) -> None:
    process = start_sandbox(tmp_path, prefix="sandbox")
    try:
        base = process.base_url
        assert base.endswith("/sandbox")
        sandbox = Sandbox.from_identity(process.info)
        started = sandbox.client.pay(
            community_id=sandbox.community_id,
            amount=Decimal("10.00"),
            original_amount=Decimal("10.00"),
            variable_amount_id=sandbox.variable_amount_id,
            billing_data=BILLING,
        )
        assert (started.result.iframe_url or "").startswith(f"{base}/pay/")
        root = base.removesuffix("/sandbox")
        assert requests.get(f"{root}/_health", timeout=10).json() == {"ok": True}
        # Outside the prefix the spec's paths do not exist.
        assert requests.post(f"{root}/api/v1/payments/prepare-amount/", timeout=10).status_code == 404
        sandbox.close()
    finally:
        process.stop()


def test_a_direct_order_paid_at_a_kiosk(
    sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver
) -> None:
    receiver = paycollect_callback_receiver
    order = sandbox.client.create_direct_order(
        name="Court booking",
        community_id=sandbox.community_id,
        amount=Decimal("80.00"),
        payment_methods=["card", "kiosk"],
        customer_name="Omar Hassan",
        customer_email="omar@example.com",
        customer_mobile="+201112223334",
        callback_url=receiver.url,
    ).result
    link = order.payment_link or ""
    to_kiosk = sandbox.submit_payment_page(link, "pay", pay_using="kiosk")
    assert to_kiosk.status_code == 302
    kiosk_page = requests.get(urljoin(link, to_kiosk.headers["Location"]), timeout=10)
    assert "Bill reference" in kiosk_page.text
    assert "80.00 EGP" in kiosk_page.text
    tx = kiosk_page.text.split('id="transaction-uuid">', 1)[1].split("<", 1)[0]
    # Not paid yet: the link still offers the order.
    assert "This order has been paid." not in requests.get(link, timeout=10).text
    sandbox.control.complete(tx)
    (callback,) = receiver.wait_for(1)
    assert callback.body["transaction_uuid"] == tx
    assert callback.body["payment_id"] == order.payment_id
    assert "Court booking" in callback.body["message"]
    assert "This order has been paid." in requests.get(link, timeout=10).text
