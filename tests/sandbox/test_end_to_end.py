"""The acceptance walk, over real HTTP: the typed client against the standalone sandbox, the hosted page
submitted like a browser, callbacks received by a loopback receiver."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
import requests

from django_paycollect.client import (
    CustomFieldDefinition,
    CustomFieldValue,
    PayCollectClient,
    Tag,
    ValidationError,
)
from django_paycollect.sandbox.testing import CallbackReceiver, Sandbox, SandboxError

from .support import BILLING, future_date, png_bytes, query_of

MERCHANT_RETURN = "https://merchant.example/return?order=7"
ISO_WITH_MICROSECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d$")


class Ledger:
    """What the test itself did, to compare with the dashboard statistics."""

    def __init__(self) -> None:
        self.transactions = 0
        self.collected = Decimal("0.00")
        self.settled = Decimal("0.00")
        self.collected_after_clock_moves = Decimal("0.00")


def test_end_to_end_walk(sandbox: Sandbox, paycollect_callback_receiver: CallbackReceiver) -> None:
    receiver = paycollect_callback_receiver
    client = sandbox.client
    ledger = Ledger()
    sandbox.control.configure_api_payment(
        sandbox.variable_amount_id, redirect_url=MERCHANT_RETURN, callback_url=receiver.url
    )

    # The recurring series first: it moves the sandbox clock 90 days; everything after happens "now".
    recurring_series(sandbox, client, receiver, ledger)
    week_at_start = sandbox.control.clock()

    card_uuid = card_payment_through_the_page(sandbox, client, receiver, ledger)
    refunds(client, card_uuid, ledger)
    capture(client, card_uuid, ledger)
    kiosk_payment(sandbox, client, receiver, ledger)
    direct_order(sandbox, client, receiver, ledger)
    promocodes(sandbox, client, ledger)
    create_community(sandbox, client)
    statistics(sandbox, client, ledger, week_at_start)


def card_payment_through_the_page(
    sandbox: Sandbox, client: PayCollectClient, receiver: CallbackReceiver, ledger: Ledger
) -> str:
    prepared = client.prepare_amount(community_id=sandbox.community_id, amount=Decimal("100.00"))
    # Seeded card fee: 2.5 % + 2.00.
    assert prepared.result.total_amount == Decimal("104.50")
    assert prepared.result.total_amount_currency == "EGP"

    started = client.pay(
        community_id=sandbox.community_id,
        amount=prepared.result.total_amount,
        original_amount=Decimal("100.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
        custom_fields=[CustomFieldValue("Seat", "A-12")],
    )
    tx_uuid = started.result.transaction_uuid
    assert tx_uuid
    assert started.result.transaction_status == "PENDING"
    assert started.result.iframe_url == f"{sandbox.base_url}/pay/{tx_uuid}/"

    page = requests.get(started.result.iframe_url, timeout=10)
    assert "104.50 EGP" in page.text
    assert "4.50 EGP" in page.text
    before = len(receiver.received)
    answer = sandbox.submit_payment_page(started.result.iframe_url, "pay")
    assert answer.status_code == 302
    location = answer.headers["Location"]
    assert location.startswith("https://merchant.example/return?")
    assert query_of(location) == {
        "order": "7",
        "amount_piasters": "10450",
        "amount": "104",  # an integer, as the spec types it; amount_piasters is exact
        "transaction_uuid": tx_uuid,
        "transaction_status": "SUCCESSFUL",
    }

    callback = receiver.wait_for(before + 1)[before]
    assert callback.headers["Content-Type"] == "application/json"
    assert b'"total_amount":104.50' in callback.raw  # a JSON number with its two decimals
    assert callback.body == {
        "total_amount_piasters": 10450,
        "total_amount": Decimal("104.50"),
        "transaction_uuid": tx_uuid,
        "transaction_status": "SUCCESSFUL",
        "member_id": None,
        "payment_id": str(sandbox.variable_amount_id),
        "merchant_id": sandbox.community_id,
        "Seat": "A-12",
    }

    fetched = client.get_transaction(community_id=sandbox.community_id, transaction_uuid=tx_uuid)
    assert fetched.result.status == "SUCCESSFUL"
    assert fetched.result.total_amount == Decimal("104.50")
    assert fetched.data["total_amount"] == "104.50"  # decimal text, as the spec's resource
    assert fetched.result.total_amount_piasters == 10450
    assert fetched.result.id == started.result.transaction_id
    assert fetched.result.payment_for == "API_PAYMENT"
    assert ISO_WITH_MICROSECONDS.match(fetched.data["created"]), fetched.data["created"]
    assert "recurring" not in fetched.data
    assert fetched.data["member_id"] is None  # null, never left out
    assert fetched.result.member_id is None
    assert fetched.data["custom_fields_json"] == {"Seat": "A-12"}
    ledger.transactions += 1
    ledger.collected += Decimal("104.50")
    ledger.collected_after_clock_moves += Decimal("104.50")
    return tx_uuid


def refunds(client: PayCollectClient, tx_uuid: str, ledger: Ledger) -> None:
    partial = client.refund(transaction_uuid=tx_uuid, refund_amount=Decimal("40.00"))
    assert partial.http_status == 201
    assert partial.result.message
    with pytest.raises(ValidationError) as above:
        client.refund(transaction_uuid=tx_uuid, refund_amount=Decimal("64.51"))
    assert above.value.http_status == 400
    assert "64.50" in " ".join(above.value.field_errors["refund_amount"])
    ledger.collected -= Decimal("40.00")
    ledger.collected_after_clock_moves -= Decimal("40.00")
    # The refused refund changed nothing: exactly the remainder can still be refunded, then nothing.
    client.refund(transaction_uuid=tx_uuid, refund_amount=Decimal("4.50"))
    ledger.collected -= Decimal("4.50")
    ledger.collected_after_clock_moves -= Decimal("4.50")


def capture(client: PayCollectClient, tx_uuid: str, ledger: Ledger) -> None:
    captured = client.capture(transaction_uuid=tx_uuid)
    assert captured.http_status == 201
    with pytest.raises(ValidationError) as twice:
        client.capture(transaction_uuid=tx_uuid)
    assert "already captured" in str(twice.value)
    ledger.settled += Decimal("60.00")  # 104.50 paid, 44.50 refunded


def recurring_series(
    sandbox: Sandbox, client: PayCollectClient, receiver: CallbackReceiver, ledger: Ledger
) -> None:
    started = client.pay(
        community_id=sandbox.community_id,
        amount=Decimal("50.00"),
        original_amount=Decimal("50.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
        is_recurring=True,
        expiry_date=future_date(200),
        minimum_days_between_payments=30,
    )
    parent = started.result.transaction_uuid
    assert parent
    assert sandbox.submit_payment_page(started.result.iframe_url or "", "pay").status_code == 302
    (first,) = receiver.wait_for(1)
    assert first.body["recurring"] == {"is_sub_payment": False, "parent_transaction": parent}
    initial = client.get_transaction(community_id=sandbox.community_id, transaction_uuid=parent).result
    assert initial.recurring is not None
    assert (initial.recurring.recurring_count, initial.recurring.transaction_order) == (1, 1)
    assert initial.recurring.active is True
    assert initial.recurring.type == "RECURRING"
    assert initial.recurring.minimum_days_between_payments == 30
    assert initial.recurring.expiry_date == future_date(200)

    renewals: list[str] = []
    for order in (2, 3):
        ran = sandbox.control.advance_clock(30)
        assert len(ran) == 1
        assert ran[0] not in (parent, *renewals)
        renewals.extend(ran)
        callback = receiver.wait_for(order)[-1]
        assert callback.body["transaction_uuid"] == ran[0]
        assert callback.body["recurring"] == {"is_sub_payment": True, "parent_transaction": parent}
        assert callback.body["total_amount"] == Decimal("50.00")
        renewal = client.get_transaction(community_id=sandbox.community_id, transaction_uuid=ran[0]).result
        assert renewal.status == "SUCCESSFUL"
        assert renewal.recurring is not None
        assert renewal.recurring.parent_transaction == parent
        assert (renewal.recurring.transaction_order, renewal.recurring.recurring_count) == (order, order)

    cancelled = client.cancel_recurring(transaction_uuid=parent)
    assert cancelled.http_status == 200
    assert cancelled.result.message
    assert sandbox.control.advance_clock(30) == []  # no renewal after the cancel
    after = client.get_transaction(community_id=sandbox.community_id, transaction_uuid=parent).result
    assert after.recurring is not None
    assert after.recurring.active is False
    for uuid in renewals:  # past charges are untouched
        assert client.get_transaction(
            community_id=sandbox.community_id, transaction_uuid=uuid
        ).result.status == ("SUCCESSFUL")
    assert len(receiver.received) == 3
    ledger.transactions += 3
    ledger.collected += Decimal("150.00")


def kiosk_payment(
    sandbox: Sandbox, client: PayCollectClient, receiver: CallbackReceiver, ledger: Ledger
) -> None:
    prepared = client.prepare_amount(
        community_id=sandbox.community_id, amount=Decimal("100.00"), selected_payment_method="kiosk"
    )
    assert prepared.result.total_amount == Decimal("107.00")  # kiosk: 2 % + 5.00
    started = client.pay(
        community_id=sandbox.community_id,
        amount=prepared.result.total_amount,
        original_amount=Decimal("100.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
        pay_using="kiosk",
    )
    reference = started.result.bill_reference
    assert reference
    assert reference in (started.result.message or "")
    assert isinstance(started.data["bill_refrence"], int)  # the spec's spelling and type
    page = requests.get(started.result.iframe_url or "", timeout=10)
    assert reference in page.text
    assert 'http-equiv="refresh"' in page.text
    with pytest.raises(SandboxError):  # no Pay button: a kiosk payment waits for the kiosk
        sandbox.submit_payment_page(started.result.iframe_url or "")
    tx_uuid = started.result.transaction_uuid or ""
    assert client.get_transaction(
        community_id=sandbox.community_id, transaction_uuid=tx_uuid
    ).result.status == ("PENDING")
    done = sandbox.control.complete(tx_uuid)
    assert done["transaction"]["status"] == "SUCCESSFUL"
    callback = receiver.wait_for(len(receiver.received) + 1)[-1]
    assert callback.body["transaction_uuid"] == tx_uuid
    assert callback.body["total_amount_piasters"] == 10700
    assert client.get_transaction(
        community_id=sandbox.community_id, transaction_uuid=tx_uuid
    ).result.status == ("SUCCESSFUL")
    ledger.transactions += 1
    ledger.collected += Decimal("107.00")
    ledger.collected_after_clock_moves += Decimal("107.00")


def direct_order(
    sandbox: Sandbox, client: PayCollectClient, receiver: CallbackReceiver, ledger: Ledger
) -> None:
    created = client.create_direct_order(
        name="Summer camp",
        community_id=sandbox.community_id,
        amount=Decimal("200.00"),
        discount_amount=Decimal("20.00"),
        vat_percentage=Decimal("14"),
        payment_methods=["Card", "kiosk"],
        customer_name="Omar Hassan",
        customer_email="omar@example.com",
        customer_mobile="+201112223334",
        customer_title="Mr.",
        custom_fields=[
            CustomFieldDefinition("Seats", "NUMBER", required=True),
            CustomFieldDefinition("Member number", "TEXT", required=True),
            CustomFieldDefinition("Newsletter", "CHECKBOX"),
            CustomFieldDefinition("Size", "DROPDOWNLIST", required=True, field_choices="S,M,L"),
        ],
        tags=[Tag(id=1, name="vip"), Tag(id=2, name="summer")],
        redirect_url="https://merchant.example/orders/55/done",
        callback_url=receiver.url,
        send_by_email=True,
        send_by_sms=True,
    )
    assert created.http_status == 201
    assert created.result.success is True
    assert created.result.merchant_id == sandbox.community_id
    link = created.result.payment_link or ""
    assert link == f"{sandbox.base_url}/orders/{created.result.payment_id}/"

    outbox = sandbox.control.outbox()
    assert sorted(m["channel"] for m in outbox) == ["EMAIL", "SMS"]
    assert all(link in m["body"] for m in outbox)
    assert {m["to"] for m in outbox} == {"omar@example.com", "+201112223334"}

    page = requests.get(link, timeout=10).text
    # 200.00 - 20.00 = 180.00; VAT 14 % of 180.00 = 25.20; total 205.20.
    for shown in ("200.00 EGP", "-20.00 EGP", "25.20 EGP", "205.20 EGP", "#vip", "#summer", "Member number"):
        assert shown in page, shown

    missing = sandbox.submit_payment_page(link, "pay", fields={"Seats": "2"})
    assert missing.status_code == 400
    assert "Member number: required." in missing.text

    before = len(receiver.received)
    answer = sandbox.submit_payment_page(
        link, "pay", fields={"Seats": "2", "Member number": "M-88", "Newsletter": True, "Size": "M"}
    )
    assert answer.status_code == 302
    params = query_of(answer.headers["Location"])
    tx_uuid = params["transaction_uuid"]
    assert answer.headers["Location"].startswith("https://merchant.example/orders/55/done?")
    assert params == {
        "total_amount_piasters": "20520.0",  # floats, as the spec types the direct order's redirect
        "total_amount": "205.2",
        "transaction_uuid": tx_uuid,
        "transaction_status": "SUCCESSFUL",
        "Seats": "2",
        "Member number": "M-88",
        "Newsletter": "true",
        "Size": "M",
    }
    callback = receiver.wait_for(before + 1)[-1]
    assert callback.body == {
        "total_amount_piasters": 20520,
        "total_amount": Decimal("205.20"),
        "transaction_uuid": tx_uuid,
        "transaction_status": "SUCCESSFUL",
        "member_id": None,
        "payment_id": created.result.payment_id,
        "merchant_id": sandbox.community_id,
        "message": callback.body["message"],
        "Seats": 2,
        "Member number": "M-88",
        "Newsletter": True,
        "Size": "M",
    }
    assert "Summer camp" in callback.body["message"]
    fetched = client.get_transaction(community_id=sandbox.community_id, transaction_uuid=tx_uuid)
    assert fetched.result.total_amount == Decimal("205.20")
    assert fetched.result.status == "SUCCESSFUL"
    assert "This order has been paid." in requests.get(link, timeout=10).text
    ledger.transactions += 1
    ledger.collected += Decimal("205.20")
    ledger.collected_after_clock_moves += Decimal("205.20")


def promocodes(sandbox: Sandbox, client: PayCollectClient, ledger: Ledger) -> None:
    common = {
        "community_id": sandbox.community_id,
        "phone_number": "+201001234567",
        "currency": "EGP",
        "payment_for": "API_PAYMENT",
        "variable_amount_id": sandbox.variable_amount_id,
    }
    valid = client.validate_promocode(name="SAVE10", amount=Decimal("120.00"), **common)
    assert valid.result.value == Decimal("12.00")
    assert valid.result.currency == "EGP"
    assert valid.result.promocode_id

    with pytest.raises(ValidationError) as expired:
        client.validate_promocode(name="EXPIRED20", amount=Decimal("120.00"), **common)
    assert "expired" in " ".join(expired.value.field_errors["name"])
    with pytest.raises(ValidationError) as unknown:
        client.validate_promocode(name="NO-SUCH-CODE", amount=Decimal("120.00"), **common)
    assert "not found" in " ".join(unknown.value.field_errors["name"])

    # The promocode id is accepted by Pay (the charged amount is the caller's: 120.00 - 12.00).
    paid = client.pay(
        community_id=sandbox.community_id,
        amount=Decimal("108.00"),
        original_amount=Decimal("120.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
        promocode_id=valid.result.promocode_id,
    )
    assert sandbox.submit_payment_page(paid.result.iframe_url or "", "decline").status_code == 302
    ledger.transactions += 1  # declined: counted, not collected


def create_community(sandbox: Sandbox, client: PayCollectClient) -> None:
    created = client.create_community(
        name="Chess Club",
        logo=("logo.png", png_bytes()),
        app_modules=["Event", "Course"],
        payment_methods=["Card"],
    )
    assert created.http_status == 200
    assert created.data == {}
    (chess,) = [c for c in sandbox.control.communities() if c["name"] == "Chess Club"]
    assert chess["app_modules"] == ["Event", "Course"]
    assert chess["payment_methods"] == ["card"]
    assert chess["logo_content_type"] == "image/png"

    # The client refuses a text logo before sending; the sandbox must refuse it on its own too.
    refused = requests.post(
        f"{sandbox.base_url}/api/communities/create_community",
        data={"name": "Text Club"},
        files={"logo": ("logo.png", b"just some text, not an image", "image/png")},
        timeout=10,
    )
    assert refused.status_code == 400
    assert refused.json()["status"]["errors"] == [{"logo": ["Upload a png or jpg image."]}]
    assert not [c for c in sandbox.control.communities() if c["name"] == "Text Club"]

    # The new community's own key works for its own transactions only.
    chess_client = sandbox.make_client(api_key=chess["api_key"])
    chess_payment = chess["api_payments"][0]["variable_amount_id"]
    started = chess_client.pay(
        community_id=chess["community_id"],
        amount=Decimal("10.00"),
        original_amount=Decimal("10.00"),
        variable_amount_id=chess_payment,
        billing_data=BILLING,
    )
    assert started.result.transaction_status == "PENDING"


def statistics(sandbox: Sandbox, client: PayCollectClient, ledger: Ledger, clock_at_start: str) -> None:
    stats = client.dashboard_statistics(community_id=sandbox.community_id).result
    assert stats.total_number_of_transactions == ledger.transactions
    assert stats.total_collected_transactions == ledger.collected
    assert stats.total_settled == ledger.settled
    assert stats.balance == ledger.collected - ledger.settled
    start = dt.datetime.fromisoformat(clock_at_start)
    end = dt.datetime.fromisoformat(sandbox.control.clock())
    if start.isocalendar()[:2] == end.isocalendar()[:2]:
        # Everything after the clock moves was paid this (sandbox) week; the renewals were not.
        assert stats.weekly_collected_transactions == ledger.collected_after_clock_moves
