"""The callback endpoint: stored first, verified against the service, applied once, never trusted.

End-to-end tests point the sandbox's callback URL at pytest-django's ``live_server``, pay on the
sandbox's hosted page, and wait for the callback to arrive over real HTTP and be verified (Celery
runs eagerly, so verification runs inside the callback request). The other tests POST with the
Django test client; those that reach verification use the live sandbox too.
"""

from __future__ import annotations

import datetime as dt
import hmac
import ipaddress
import json
import logging
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError, connections
from django.urls import reverse
from django.utils import timezone

from django_paycollect import services, tasks
from django_paycollect.conf import DEFAULTS
from django_paycollect.intake import receive
from django_paycollect.models import DirectOrder, FetchMark, ReceivedCallback, RecurringSeries, Transaction
from django_paycollect.sandbox.envelope import dumps
from django_paycollect.services import callback_ledger
from tests.conftest import CALLBACK_TOKEN

live = pytest.mark.django_db(transaction=True)
#: Tests that need on_commit callbacks to run (the task is queued after the commit).
committed = pytest.mark.django_db(transaction=True)

URL = f"/paycollect/callback/{CALLBACK_TOKEN}/"
UUID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"


# --- helpers ----------------------------------------------------------------------------------------


def body_for(uuid: str = UUID, status: str = "SUCCESSFUL", **extra: Any) -> dict[str, Any]:
    """A callback body as the spec's field table shows it (amounts as JSON numbers)."""
    body: dict[str, Any] = {
        "total_amount_piasters": 10000,
        "total_amount": Decimal("100.00"),
        "transaction_uuid": uuid,
        "transaction_status": status,
        "member_id": None,
        "payment_id": "1",
        "merchant_id": "community-1",
    }
    body.update(extra)
    return body


def post(client: Any, body: Any, url: str = URL, **extra: Any) -> Any:
    data = body if isinstance(body, (str, bytes)) else dumps(body)
    return client.post(url, data=data, content_type="application/json", **extra)


def wait_until(condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll ``condition`` until it is truthy (the live server and the sandbox work in other threads)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def processed_callback(uuid: str, timeout: float = 10.0) -> ReceivedCallback:
    callback = wait_until(
        lambda: ReceivedCallback.objects.filter(
            transaction_uuid=uuid, state=ReceivedCallback.PROCESSED
        ).first(),
        timeout,
    )
    assert callback is not None, list(ReceivedCallback.objects.values("transaction_uuid", "state", "error"))
    return callback


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    cache.clear()  # the throttle of re-verifications lives in the cache


@pytest.fixture
def callbacks_to_us(paycollect_live: Any, live_server: Any) -> str:
    """The sandbox's API payment sends its callbacks to our callback view on the live server."""
    url = f"{live_server.url}{URL}"
    paycollect_live.control.configure_api_payment(paycollect_live.variable_amount_id, callback_url=url)
    return url


@pytest.fixture
def no_worker() -> Any:
    """Callbacks are stored and queued, but no task runs (what the ingest alone does)."""
    with mock.patch.object(tasks.process_callbacks, "apply_async") as publish:
        yield publish


@pytest.fixture
def secret_configured(settings: Any) -> str:
    secret = "echoed-secret-value-0123456789"
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "CALLBACK_SECRET_FIELD": "paycollect secret",
        "CALLBACK_SECRET": ["a-new-secret-not-yet-in-use-000", secret],
    }
    return secret


# --- end to end, from the sandbox ------------------------------------------------------------------


@live
def test_a_payment_on_the_hosted_page_is_verified_from_its_callback(
    paycollect_live, callbacks_to_us, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00", merchant_reference="order-e2e")
    assert sb.submit_payment_page(txn.iframe_url, "pay").status_code == 302

    callback = processed_callback(txn.uuid)
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert callback.transaction == txn
    assert callback.claimed_status == "SUCCESSFUL"
    assert callback.total_amount == Decimal("100.00")
    assert callback.total_amount_piasters == 10000
    assert callback.merchant_id == sb.community_id
    assert callback.token_index == 0
    assert callback.remote_addr == "127.0.0.1"
    assert callback.headers["user-agent"] == "paycollect-sandbox"
    assert callback.headers["content-type"] == "application/json"
    assert json.loads(callback.body)["transaction_uuid"] == txn.uuid
    assert "service says SUCCESSFUL" in callback.outcome
    assert signal_log.count("payment_succeeded") == 1
    assert txn.status_changes.get(to_status="SUCCESSFUL").source == "callback"
    # The sandbox got a 2xx: delivered at the first attempt.
    (delivery,) = sb.control.wait_for_callbacks(transaction_uuid=txn.uuid)
    assert delivery["attempts"] == 1
    assert delivery["attempt_log"][0]["http_status"] == 200
    assert json.loads(delivery["attempt_log"][0]["response_excerpt"]) == {"received": True}


@live
def test_a_declined_payment_is_failed_from_its_callback(paycollect_live, callbacks_to_us, pay, signal_log):
    txn = pay("100.00")
    paycollect_live.submit_payment_page(txn.iframe_url, "decline")
    processed_callback(txn.uuid)
    txn.refresh_from_db()
    assert txn.status == Transaction.FAILED
    assert signal_log.names().count("payment_failed") == 1


@live
def test_the_spec_examples_transaction_id_key_is_understood(paycollect_live, callbacks_to_us, pay):
    paycollect_live.control.set_config(callback_uuid_key="transaction_id")
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    callback = processed_callback(txn.uuid)
    assert "transaction_uuid" not in json.loads(callback.body)
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL


@live
def test_a_recurring_renewal_arrives_as_a_new_uuid_and_joins_its_series(
    paycollect_live, recurring_transaction, live_server, signal_log
):
    sb = paycollect_live
    sb.control.configure_api_payment(sb.variable_amount_id, callback_url=f"{live_server.url}{URL}")
    (renewal_uuid,) = sb.control.advance_clock(30)

    callback = processed_callback(renewal_uuid)
    assert callback.is_sub_payment is True
    assert callback.parent_transaction == recurring_transaction.uuid
    renewal = Transaction.objects.get(uuid=renewal_uuid)
    assert renewal.status == Transaction.SUCCESSFUL
    assert renewal.series == RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    assert renewal.parent_uuid == recurring_transaction.uuid
    assert renewal.total_amount == Decimal("50.00")
    assert signal_log.count("recurring_charge_succeeded") == 1


@live
def test_a_direct_orders_callback_links_its_payment_to_the_order(paycollect_live, live_server, signal_log):
    order = services.create_direct_order(
        name="Summer camp",
        amount=Decimal("200.00"),
        payment_methods=["card"],
        customer_name="Mona Ali",
        customer_email="mona@example.com",
        customer_mobile="+201001234567",
        callback_url=f"{live_server.url}{URL}",
        redirect_url="https://shop.example/paid",
        custom_fields=[
            {"field_label": "Member number", "field_type": "TEXT", "required": True},
            {"field_label": "Seats", "field_type": "NUMBER"},
            {"field_label": "Newsletter", "field_type": "CHECKBOX"},
        ],
    )
    answer = paycollect_live.submit_payment_page(
        order.payment_link, "pay", fields={"Member number": "M-88", "Seats": 2, "Newsletter": True}
    )
    assert answer.status_code == 302

    callback = wait_until(lambda: ReceivedCallback.objects.filter(state=ReceivedCallback.PROCESSED).first())
    assert callback is not None
    assert callback.payment_id == order.payment_id
    assert "Summer camp" in callback.message
    assert callback.custom_fields == {"Member number": "M-88", "Seats": 2, "Newsletter": True}
    txn = callback.transaction
    assert txn.direct_order == order
    assert txn.status == Transaction.SUCCESSFUL
    assert DirectOrder.objects.get(pk=order.pk).transactions.get() == txn
    assert signal_log.count("payment_succeeded") == 1


@live
def test_a_duplicated_delivery_from_the_sandbox_is_processed_once(
    paycollect_live, callbacks_to_us, pay, signal_log
):
    sb = paycollect_live
    sb.control.next_callbacks("duplicate")
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    sb.control.wait_for_callbacks(transaction_uuid=txn.uuid, count=2)
    first = processed_callback(txn.uuid)
    duplicate = ReceivedCallback.objects.get(state=ReceivedCallback.DUPLICATE)
    assert duplicate.duplicate_of == first

    (delivered, *_rest) = sb.control.callbacks(txn.uuid)
    sb.control.redeliver(delivered["id"])
    wait_until(lambda: ReceivedCallback.objects.filter(state=ReceivedCallback.DUPLICATE).count() == 2)

    assert ReceivedCallback.objects.filter(transaction_uuid=txn.uuid).count() == 3
    assert signal_log.count("payment_succeeded") == 1
    # Verified once: one fetch by the callback, none by the redeliveries.
    assert txn.api_calls.filter(operation="get_transaction").count() == 1


# --- forged callbacks never change a transaction ------------------------------------------------------


@live
def test_a_callback_claiming_success_for_a_pending_payment_changes_nothing(
    client, paycollect_live, pay, signal_log
):
    txn = pay("100.00")
    response = post(client, body_for(txn.uuid, "SUCCESSFUL", merchant_id=paycollect_live.community_id))
    assert response.status_code == 200
    assert response.json() == {"received": True}

    txn.refresh_from_db()
    assert txn.status == Transaction.PENDING
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.PROCESSED
    assert callback.transaction == txn
    assert "service says PENDING" in callback.outcome
    assert "claimed SUCCESSFUL" in callback.outcome
    assert signal_log.count("payment_succeeded") == 0


@live
def test_a_callback_for_a_uuid_the_service_does_not_know_fails_and_creates_nothing(
    client, paycollect_live, signal_log
):
    response = post(client, body_for(UUID, "SUCCESSFUL"))
    assert response.status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.FAILED
    assert callback.error.startswith("NotFoundError")
    assert not Transaction.objects.exists()
    assert signal_log.sent == []


@live
def test_an_amount_claim_is_never_applied(client, paycollect_live, pay, signal_log):
    """The body says 1.00 was paid for a 100.00 payment: the service's amount is what counts."""
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    post(client, body_for(txn.uuid, total_amount=Decimal("1.00"), total_amount_piasters=100))
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert txn.total_amount == Decimal("100.00")
    assert not txn.amount_mismatch
    assert ReceivedCallback.objects.get().total_amount == Decimal("1.00")


@pytest.mark.django_db
def test_an_unknown_token_answers_404_stores_nothing_and_logs_one_line_without_it(client, caplog):
    caplog.set_level(logging.DEBUG)
    forged = "guessed-token-abcdefghijklmnop"
    response = post(client, body_for(), url=f"/paycollect/callback/{forged}/", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 404
    assert not ReceivedCallback.objects.exists()
    lines = [r for r in caplog.records if r.name.startswith("django")]
    assert [r.getMessage() for r in lines] == ["callback refused: unknown token (from 203.0.113.9)"]
    assert forged not in caplog.text


@pytest.mark.django_db
def test_a_rotated_token_is_accepted_and_only_its_position_is_stored(client, settings, no_worker):
    old = "the-previous-token-still-configured"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": [CALLBACK_TOKEN, old]}
    assert post(client, body_for(), url=f"/paycollect/callback/{old}/").status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.token_index == 1
    stored = json.dumps(list(ReceivedCallback.objects.values()), default=str)
    assert old not in stored
    assert CALLBACK_TOKEN not in stored


@pytest.mark.django_db
def test_no_configured_token_accepts_nothing(client, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": []}
    assert post(client, body_for()).status_code == 404
    assert receive.match_token("") is None
    assert not ReceivedCallback.objects.exists()


def test_tokens_are_compared_in_constant_time_with_every_configured_one(settings, monkeypatch):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": ["first-token-0123456789", "second-tok"]}
    compared = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append(b)
        return real(a, b)

    monkeypatch.setattr(receive.hmac, "compare_digest", spy)
    assert receive.match_token("first-token-0123456789") == 0
    assert compared == [b"first-token-0123456789", b"second-tok"]  # no early exit
    assert receive.match_token("second-tok") == 1
    assert receive.match_token("second-to") is None
    assert receive.match_token("sécond-tok") is None  # non-ASCII compares as bytes, no TypeError


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "put", "delete", "head"])
def test_other_methods_answer_405_and_store_nothing(client, method):
    response = getattr(client, method)(URL)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert not ReceivedCallback.objects.exists()


@pytest.mark.django_db
def test_an_oversized_body_declared_so_is_refused_unread_and_recorded(client, no_worker):
    body = dumps(body_for(notes="x" * (DEFAULTS["MAX_CALLBACK_BYTES"] + 10)))
    response = post(client, body)
    assert response.status_code == 413
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.INVALID
    assert "above the limit of 65536 bytes" in callback.invalid_reason
    assert callback.body == ""
    assert callback.headers["content-length"] == str(len(body.encode()))
    no_worker.assert_not_called()


@pytest.mark.django_db
def test_a_body_longer_than_declared_limit_is_cut_and_recorded_truncated(client, settings, no_worker):
    """A sender whose Content-Length is missing or wrong: the body is read up to the limit, no further."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_CALLBACK_BYTES": 2048}
    body = dumps(body_for(notes="y" * 4000)).encode()
    response = client.post(URL, data=body, content_type="application/json", CONTENT_LENGTH="100")
    # Django reads what Content-Length says: a 100-byte prefix, not JSON.
    assert response.status_code == 400
    with mock.patch.object(receive, "_content_length", return_value=None):
        response = client.post(URL, data=body, content_type="application/json")
    assert response.status_code == 413
    callback = ReceivedCallback.objects.latest("pk")
    assert callback.state == ReceivedCallback.INVALID
    assert callback.body.endswith("[truncated]")
    assert len(callback.body) < 1100


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("transaction_uuid=abc&transaction_status=SUCCESSFUL", "the body is not JSON"),
        ("", "the body is not JSON"),
        ('{"transaction_uuid": "x",', "the body is not JSON"),
        (b"\xff\xfe\x00garbage", "the body is not JSON"),
        ('{"total_amount": NaN}', "the body is not JSON"),
        ("[" * 30_000 + "]" * 30_000, "the body is not JSON"),
        ("[1, 2]", "the body is not a JSON object"),
        ("null", "the body is not a JSON object"),
        ('"SUCCESSFUL"', "the body is not a JSON object"),
        ('{"transaction_uuid": "' + UUID + '", "transaction_status": "OK\\u0000"}', "NUL character"),
        ('{"transaction_uuid": "' + UUID + '", "transaction_status": "OK", "F\\ud800": 1}', "surrogate"),
    ],
    ids=["form", "empty", "cut", "binary", "nan", "deep", "array", "null", "string", "nul", "surrogate"],
)
def test_a_body_that_is_not_a_json_object_answers_400_and_is_stored_invalid(client, no_worker, body, reason):
    response = post(client, body)
    assert response.status_code == 400
    assert response.json()["received"] is False
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.INVALID
    assert reason in callback.invalid_reason
    assert "\x00" not in callback.body
    if body and isinstance(body, str) and len(body) < 1000:
        assert callback.body == body
    no_worker.assert_not_called()


WRONG = [
    ({"transaction_uuid": None}, "transaction_uuid"),
    ({"transaction_uuid": "not-a-uuid"}, "transaction_uuid: Not a transaction uuid."),
    ({"transaction_uuid": 12345}, "transaction_uuid"),
    ({"transaction_id": "3f1c2a9e-0000-4c6e-9f0a-1b2c3d4e5f60"}, "transaction_id: Names another"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "named"), WRONG, ids=[str(c) for c, _ in WRONG])
def test_a_wrong_transaction_uuid_answers_400_and_is_stored_invalid_with_the_field_named(
    client, no_worker, change, named
):
    response = post(client, body_for(**change))
    assert response.status_code == 400, response.content
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.INVALID
    assert named in callback.invalid_reason
    assert callback.dedupe_key is None
    no_worker.assert_not_called()


#: Malformed hints: (change, the hint named, the stored field and what it holds: as if not sent).
MALFORMED_HINTS = [
    ({"transaction_status": None}, "transaction_status", "claimed_status", ""),
    ({"transaction_status": ["SUCCESSFUL"]}, "transaction_status", "claimed_status", ""),
    ({"transaction_status": "S" * 65}, "transaction_status", "claimed_status", ""),
    ({"total_amount": "a lot"}, "total_amount", "total_amount", None),
    ({"total_amount": True}, "total_amount", "total_amount", None),
    ({"total_amount": Decimal("100.005")}, "total_amount", "total_amount", None),
    ({"total_amount_piasters": Decimal("100.5")}, "total_amount_piasters", "total_amount_piasters", None),
    ({"total_amount_piasters": False}, "total_amount_piasters", "total_amount_piasters", None),
    ({"member_id": {"id": 1}}, "member_id", "member_id", ""),
    ({"payment_id": [7]}, "payment_id", "payment_id", ""),
    ({"merchant_id": ["x"]}, "merchant_id", "merchant_id", ""),
    ({"message": {"text": "paid"}}, "message", "message", ""),
    ({"recurring": "yes"}, "recurring", "parent_transaction", ""),
    ({"recurring": {"is_sub_payment": "perhaps"}}, "recurring.is_sub_payment", "is_sub_payment", None),
    ({"recurring": {"parent_transaction": 7}}, "recurring.parent_transaction", "parent_transaction", ""),
    # The service's documentation example: letters beyond f in its "uuid".
    (
        {"recurring": {"is_sub_payment": True, "parent_transaction": "a1b2c3d4-e5f6-g7h8-i9j0-k1l2m3n4o5p6"}},
        "recurring.parent_transaction",
        "parent_transaction",
        "",
    ),
    ({"transaction_id": {"uuid": UUID}}, "transaction_id", "transaction_uuid", UUID),
    ({"transaction_id": True}, "transaction_id", "transaction_uuid", UUID),
]


@committed
@pytest.mark.parametrize(
    ("change", "hint", "stored_as", "value"), MALFORMED_HINTS, ids=[str(c) for c, *_ in MALFORMED_HINTS]
)
def test_a_malformed_hint_never_refuses_the_callback_it_is_stored_as_not_sent_and_flagged(
    client, no_worker, change, hint, stored_as, value
):
    response = post(client, body_for(**change))

    assert response.status_code == 200, response.content
    assert response.json() == {"received": True}
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.QUEUED
    assert callback.transaction_uuid == UUID  # what decides the fetch
    assert set(callback.hint_errors) == {hint}
    assert all(isinstance(m, str) and m for m in callback.hint_errors[hint])
    assert getattr(callback, stored_as) == value
    # The other hints are kept as they came, and the body is stored whole.
    if hint != "merchant_id":
        assert callback.merchant_id == "community-1"
    assert json.loads(callback.body) == json.loads(dumps(body_for(**change)))
    assert callback.dedupe_key == services.dedupe_key(UUID, callback.claimed_status)
    no_worker.assert_called_once_with(([callback.pk],))


@pytest.mark.django_db
def test_a_recurring_hint_keeps_its_well_formed_half(client, no_worker):
    body = body_for(recurring={"is_sub_payment": True, "parent_transaction": "sub_8f2c"})
    assert post(client, body).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.is_sub_payment is True
    assert callback.parent_transaction == ""
    assert callback.hint_errors == {"recurring.parent_transaction": ["Not a transaction uuid."]}


@pytest.mark.django_db
def test_a_callback_without_a_status_is_kept_and_noted(client, no_worker):
    body = body_for()
    del body["transaction_status"]
    assert post(client, body).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.claimed_status == ""
    assert callback.hint_errors == {"transaction_status": ["No status was sent."]}
    assert callback.dedupe_key == f"{UUID}|"


@pytest.mark.django_db
def test_a_refused_callback_names_its_malformed_hints_too(client, no_worker):
    body = body_for(transaction_id=["x"], total_amount="a lot")
    del body["transaction_uuid"]
    assert post(client, body).status_code == 400
    callback = ReceivedCallback.objects.get()
    assert "Required (or a transaction_id holding the uuid)" in callback.invalid_reason
    assert "also malformed" in callback.invalid_reason
    assert set(callback.hint_errors) == {"transaction_id", "total_amount"}


@live
def test_a_renewal_whose_callback_names_a_malformed_parent_joins_the_series_the_service_names(
    client, paycollect_live, recurring_transaction, signal_log
):
    sb = paycollect_live
    (renewal_uuid,) = sb.control.advance_clock(30)  # its own callback goes to the sandbox's demo merchant
    body = body_for(
        renewal_uuid,
        total_amount=Decimal("50.00"),
        total_amount_piasters=5000,
        merchant_id=sb.community_id,
        recurring={"is_sub_payment": True, "parent_transaction": "a1b2c3d4-e5f6-g7h8-i9j0-k1l2m3n4o5p6"},
    )

    assert post(client, body).status_code == 200

    callback = ReceivedCallback.objects.get(transaction_uuid=renewal_uuid)
    assert callback.state == ReceivedCallback.PROCESSED, callback.error
    assert "malformed hints set aside: recurring.parent_transaction" in callback.outcome
    renewal = Transaction.objects.get(uuid=renewal_uuid)
    assert renewal.status == Transaction.SUCCESSFUL
    assert renewal.series == RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    assert renewal.parent_uuid == recurring_transaction.uuid
    assert signal_log.count("recurring_charge_succeeded") == 1


@live
def test_a_renewal_whose_callback_names_another_parent_joins_the_series_the_service_names(
    client, paycollect_live, recurring_transaction
):
    sb = paycollect_live
    (renewal_uuid,) = sb.control.advance_clock(30)
    body = body_for(
        renewal_uuid,
        merchant_id=sb.community_id,
        recurring={"is_sub_payment": True, "parent_transaction": UUID},
    )

    assert post(client, body).status_code == 200

    renewal = Transaction.objects.get(uuid=renewal_uuid)
    assert renewal.parent_uuid == recurring_transaction.uuid
    assert not RecurringSeries.objects.filter(parent_uuid=UUID).exists()


@pytest.mark.django_db
def test_a_callback_without_any_uuid_is_invalid(client, no_worker):
    body = body_for()
    del body["transaction_uuid"]
    assert post(client, body).status_code == 400
    assert "Required (or a transaction_id holding the uuid)" in ReceivedCallback.objects.get().invalid_reason
    body["transaction_id"] = 4821  # the service's integer id names no uuid
    assert post(client, body).status_code == 400


@committed
def test_the_spec_variants_are_parsed_into_the_stored_claims(client, no_worker):
    body = {
        "total_amount_piasters": Decimal("20520.00"),  # a "number" may come with decimals
        "total_amount": Decimal("205.20"),
        "transaction_id": UUID.upper(),  # the spec's example: the uuid under transaction_id
        "transaction_status": "SUCCESSFUL",
        "member_id": "M-1",
        "payment_id": 77,
        "merchant_id": "community-1",
        "message": "Payment of direct order Summer camp is SUCCESSFUL.",
        "recurring": {"is_sub_payment": False, "parent_transaction": UUID},
        "Seats": 2,
        "Member number": "M-88",
        "Newsletter": True,
        "Weight in kg": Decimal("72.5"),
        "Comment": None,
    }
    assert post(client, body).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.QUEUED
    assert callback.transaction_uuid == UUID  # canonical, whatever the spelling sent
    assert callback.dedupe_key == f"{UUID}|SUCCESSFUL"
    assert callback.total_amount == Decimal("205.20")
    assert callback.total_amount_piasters == 20520
    assert callback.member_id == "M-1"
    assert callback.payment_id == "77"
    assert callback.message.startswith("Payment of direct order")
    assert callback.is_sub_payment is False
    assert callback.parent_transaction == UUID
    # Custom fields: labels with spaces kept; a decimal kept exactly, as text.
    assert callback.custom_fields == {
        "Seats": 2,
        "Member number": "M-88",
        "Newsletter": True,
        "Weight in kg": "72.5",
        "Comment": None,
    }
    no_worker.assert_called_once_with(([callback.pk],))


@pytest.mark.django_db
def test_amounts_sent_as_decimal_text_and_both_uuid_keys_are_accepted(client, no_worker):
    body = body_for(total_amount="100.00", total_amount_piasters="10000", transaction_id=UUID)
    assert post(client, body).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.total_amount == Decimal("100.00")
    assert callback.total_amount_piasters == 10000


@committed
def test_a_new_callback_costs_one_insert_and_a_redelivery_three_queries(
    client, no_worker, django_assert_num_queries, django_assert_max_num_queries
):
    with django_assert_num_queries(1):
        assert post(client, body_for()).status_code == 200
    no_worker.assert_called_once()
    with django_assert_max_num_queries(3):
        assert post(client, body_for()).status_code == 200  # a redelivery
    assert no_worker.call_count == 1


@committed
def test_a_redelivery_is_stored_as_a_duplicate_and_not_queued_again(client, no_worker):
    first = post(client, body_for())
    second = post(client, body_for())
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json() == {"received": True}
    original, duplicate = ReceivedCallback.objects.order_by("pk")
    assert original.state == ReceivedCallback.QUEUED
    assert duplicate.state == ReceivedCallback.DUPLICATE
    assert duplicate.duplicate_of == original
    assert duplicate.dedupe_key is None
    assert duplicate.body == original.body
    no_worker.assert_called_once_with(([original.pk],))
    # Another claimed status for the same uuid is news, not a duplicate.
    post(client, body_for(status="FAILED"))
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.QUEUED).count() == 2


@committed
def test_a_redelivery_gives_a_failed_original_another_chance_once(client, no_worker):
    post(client, body_for())
    original = ReceivedCallback.objects.get()
    ReceivedCallback.objects.filter(pk=original.pk).update(state=ReceivedCallback.FAILED)
    post(client, body_for())
    post(client, body_for())
    original.refresh_from_db()
    assert original.state == ReceivedCallback.QUEUED
    assert [c.args for c in no_worker.call_args_list] == [(([original.pk],),)] * 2
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.DUPLICATE).count() == 2


@live
def test_a_redelivery_verifies_again_an_original_the_service_had_not_confirmed_yet(
    client, paycollect_live, pay, signal_log, settings
):
    """The service sent "SUCCESSFUL" before its own records said so: the first verification found
    PENDING. Its redelivery is the chance to apply the outcome (once, for many redeliveries)."""
    sb = paycollect_live
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_FETCH_INTERVAL": 600}  # the test moves past it
    txn = pay("100.00")
    post(client, body_for(txn.uuid))
    original = ReceivedCallback.objects.get()
    assert original.state == ReceivedCallback.PROCESSED
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.PENDING

    sb.control.complete(txn.uuid, "SUCCESSFUL")
    # Within CALLBACK_FETCH_INTERVAL of the first fetch, a redelivery costs no fetch.
    assert post(client, body_for(txn.uuid)).status_code == 200
    original.refresh_from_db()
    assert (original.state, original.attempts) == (ReceivedCallback.PROCESSED, 1)
    FetchMark.objects.update(claimed_at=timezone.now() - dt.timedelta(minutes=11))  # the interval passes
    for _ in range(3):
        assert post(client, body_for(txn.uuid)).status_code == 200
    original.refresh_from_db()
    assert original.state == ReceivedCallback.PROCESSED
    assert original.attempts == 2  # verified again once: the next redeliveries were throttled
    assert "service says SUCCESSFUL" in original.outcome
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.SUCCESSFUL
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.DUPLICATE).count() == 4
    assert signal_log.count("payment_succeeded") == 1
    # Once the transaction is final, redeliveries cost no fetch at all.
    cache.clear()
    fetches = txn.api_calls.filter(operation="get_transaction").count()
    post(client, body_for(txn.uuid))
    assert txn.api_calls.filter(operation="get_transaction").count() == fetches


@committed
def test_a_broker_that_cannot_be_reached_leaves_the_callback_stored_for_the_command(client, caplog):
    refused = ConnectionRefusedError("broker")
    with mock.patch.object(tasks.process_callbacks, "apply_async", side_effect=refused):
        response = post(client, body_for())
    assert response.status_code == 200  # stored: the sender need not send it again
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.RECEIVED
    assert callback.error.startswith("could not be queued for verification at ")
    assert "(ConnectionRefusedError: broker); the sweep queues it again" in callback.error


@live
def test_under_atomic_requests_the_callback_and_its_failure_are_committed(
    client, paycollect_live, monkeypatch
):
    monkeypatch.setitem(connections.settings["default"], "ATOMIC_REQUESTS", True)
    monkeypatch.setitem(connections["default"].settings_dict, "ATOMIC_REQUESTS", True)
    assert post(client, body_for(UUID)).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.FAILED  # the failure record survived
    assert "NotFoundError" in callback.error
    assert callback.attempts == 1


@pytest.mark.django_db
def test_a_database_failure_answers_503_so_the_sender_tries_again(client, caplog):
    down = OperationalError("db down")
    with mock.patch.object(callback_ledger, "insert_callback", side_effect=down):
        response = post(client, body_for())
    assert response.status_code == 503
    assert CALLBACK_TOKEN not in caplog.text


@pytest.mark.django_db
def test_the_token_never_reaches_a_log_even_for_refused_callbacks(client, caplog, no_worker):
    caplog.set_level(logging.DEBUG)
    post(client, "not json")
    post(client, body_for(total_amount="x"))
    client.get(URL)
    post(client, body_for())
    assert caplog.records  # something was logged...
    assert CALLBACK_TOKEN not in caplog.text  # ...never the token (django.request would log the path)


@pytest.mark.django_db
def test_the_url_works_without_its_trailing_slash(client, no_worker):
    assert post(client, body_for(), url=URL.rstrip("/")).status_code == 200
    assert reverse("paycollect:callback", kwargs={"token": "t"}) == "/paycollect/callback/t/"


# --- the shared secret echoed in the body -------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("sent", [None, "", "wrong-secret", 12345, "echoed-secret-value-012345678"])
def test_a_missing_or_wrong_secret_answers_403_and_is_stored_invalid_without_it(
    client, secret_configured, no_worker, sent
):
    body = body_for()
    if sent is not None:
        body["paycollect secret"] = sent
    response = post(client, body)
    assert response.status_code == 403
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.INVALID
    assert callback.invalid_reason == (
        "the callback secret is missing" if sent is None else "the callback secret does not match"
    )
    assert callback.transaction_uuid == UUID  # what the forgery claimed, for the admin
    assert callback.dedupe_key is None
    assert "paycollect secret" not in callback.custom_fields
    if isinstance(sent, str) and sent:
        assert sent not in callback.body
        assert json.loads(callback.body)["paycollect secret"] == "[redacted]"
    no_worker.assert_not_called()


@pytest.mark.django_db
def test_the_right_secret_is_accepted_and_never_stored(client, secret_configured, no_worker, monkeypatch):
    compared = []
    real = hmac.compare_digest
    monkeypatch.setattr(receive.hmac, "compare_digest", lambda a, b: compared.append(b) or real(a, b))
    body = body_for(**{"paycollect secret": secret_configured, "Seats": 2})
    assert post(client, body).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.QUEUED
    assert callback.custom_fields == {"Seats": 2}
    assert secret_configured not in callback.body
    assert json.loads(callback.body)["paycollect secret"] == "[redacted]"
    # Compared with both accepted secrets (rotation), each in constant time.
    assert [b"a-new-secret-not-yet-in-use-000", secret_configured.encode()] == compared[-2:]


@pytest.mark.django_db
def test_a_secret_spelled_with_json_escapes_is_still_redacted(client, secret_configured, no_worker):
    escaped = "".join(f"\\u{ord(c):04x}" for c in secret_configured)
    text = dumps(body_for())[:-1] + f', "paycollect secret": "{escaped}"}}'
    assert post(client, text).status_code == 200
    callback = ReceivedCallback.objects.get()
    assert escaped not in callback.body
    assert secret_configured not in callback.body
    assert json.loads(callback.body)["paycollect secret"] == "[redacted]"
    assert json.loads(callback.body)["transaction_uuid"] == UUID


@pytest.mark.django_db
def test_our_secrets_are_scrubbed_from_bodies_refused_before_the_secret_is_read(
    client, secret_configured, no_worker
):
    text = f'{{"paycollect secret": "{secret_configured}", "note": "{CALLBACK_TOKEN}", "cut'
    assert post(client, text).status_code == 400
    callback = ReceivedCallback.objects.get()
    assert callback.invalid_reason == "the body is not JSON"
    assert secret_configured not in callback.body
    assert CALLBACK_TOKEN not in callback.body
    assert callback.body == '{"paycollect secret": "[redacted]", "note": "[redacted]", "cut'


@live
def test_with_the_right_secret_the_callback_is_verified(client, paycollect_live, pay, secret_configured):
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    assert post(client, body_for(txn.uuid, **{"paycollect secret": secret_configured})).status_code == 200
    assert ReceivedCallback.objects.get().state == ReceivedCallback.PROCESSED
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL


# --- client IP behind proxies -------------------------------------------------------------------------


def nets(*entries: str) -> tuple[Any, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


@pytest.mark.parametrize(
    ("remote", "forwarded", "trusted", "expected"),
    [
        ("198.51.100.7", "", (), "198.51.100.7"),
        # Not behind a trusted proxy: X-Forwarded-For is the client's own claim and is ignored.
        ("198.51.100.7", "203.0.113.1", (), "198.51.100.7"),
        ("10.0.0.2", "203.0.113.1", ("10.0.0.0/8",), "203.0.113.1"),
        # Several hops: the right-most untrusted one; what is left of it may be forged.
        ("10.0.0.2", "1.2.3.4, 203.0.113.1, 10.0.0.9", ("10.0.0.0/8",), "203.0.113.1"),
        # Ports, as some proxies write them.
        ("10.0.0.2", "203.0.113.1:51234", ("10.0.0.0/8",), "203.0.113.1"),
        ("10.0.0.2", "[2001:db8::7]:443, 10.0.0.9:80", ("10.0.0.0/8",), "2001:db8::7"),
        ("10.0.0.2", "2001:db8::7", ("10.0.0.0/8",), "2001:db8::7"),
        ("10.0.0.2", '"[2001:DB8:0::7]"', ("10.0.0.0/8",), "2001:db8::7"),
        # IPv6 proxies, IPv4-mapped addresses, zone ids.
        ("fd00::2", "203.0.113.1", ("fd00::/8",), "203.0.113.1"),
        ("::ffff:10.0.0.2", "::ffff:203.0.113.1", ("10.0.0.2",), "203.0.113.1"),
        ("fe80::1%eth0", "", (), "fe80::1"),
        # Every hop is ours: the left-most.
        ("10.0.0.2", "10.0.0.5, 10.0.0.9", ("10.0.0.0/8",), "10.0.0.5"),
        ("10.0.0.2", "", ("10.0.0.0/8",), "10.0.0.2"),
        # Unreadable: nothing can be said.
        ("10.0.0.2", "unknown, 10.0.0.9", ("10.0.0.0/8",), None),
        ("", "203.0.113.1", (), None),
        ("not an address", "", (), None),
    ],
)
def test_the_client_ip_is_the_rightmost_address_not_a_trusted_proxy(remote, forwarded, trusted, expected):
    meta = {"REMOTE_ADDR": remote, "HTTP_X_FORWARDED_FOR": forwarded}
    assert receive.client_ip(meta, nets(*trusted)) == expected


@pytest.mark.django_db
def test_the_client_ip_is_stored_from_the_trusted_proxies_setting(client, settings, no_worker, caplog):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TRUSTED_PROXIES": ["10.0.0.0/8", "oops"]}
    post(
        client,
        body_for(),
        REMOTE_ADDR="10.1.2.3",
        HTTP_X_FORWARDED_FOR="198.51.100.1, [2001:db8::7]:8443",
        HTTP_X_REQUEST_ID="req-1",
        HTTP_USER_AGENT="the-service/1.0",
    )
    callback = ReceivedCallback.objects.get()
    assert callback.remote_addr == "2001:db8::7"
    assert callback.headers == {
        "content-type": "application/json",
        "content-length": str(len(callback.body.encode())),
        "user-agent": "the-service/1.0",
        "x-forwarded-for": "198.51.100.1, [2001:db8::7]:8443",
        "x-request-id": "req-1",
    }
    assert "'oops' is not an address or network" in caplog.text
    # The default trusts no proxy.
    settings.PAYCOLLECT = {k: v for k, v in settings.PAYCOLLECT.items() if k != "TRUSTED_PROXIES"}
    post(client, body_for(status="FAILED"), REMOTE_ADDR="10.1.2.3", HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert ReceivedCallback.objects.latest("pk").remote_addr == "10.1.2.3"


# --- re-processing: the command and the admin ----------------------------------------------------------


def stored_callback(uuid: str, state: str, age: dt.timedelta = dt.timedelta(minutes=5)) -> ReceivedCallback:
    return ReceivedCallback.objects.create(
        state=state,
        transaction_uuid=uuid,
        claimed_status="SUCCESSFUL",
        dedupe_key=f"{uuid}|SUCCESSFUL|{state}",
        received_at=timezone.now() - age,
        body="{}",
    )


@live
def test_the_command_processes_callbacks_left_unqueued_and_failed_ones_on_request(
    paycollect_live, pay, capsys, signal_log
):
    sb = paycollect_live
    paid, declined, recent = pay("10.00"), pay("20.00"), pay("30.00")
    sb.control.complete(paid.uuid, "SUCCESSFUL")
    sb.control.complete(declined.uuid, "FAILED")
    left = stored_callback(paid.uuid, ReceivedCallback.RECEIVED)
    failed = stored_callback(declined.uuid, ReceivedCallback.FAILED)
    just_now = stored_callback(recent.uuid, ReceivedCallback.QUEUED, age=dt.timedelta(seconds=5))

    call_command("paycollect_process_callbacks")
    out = capsys.readouterr().out
    assert "1 callback(s) to process" in out
    assert f"callback #{left.pk} ({paid.uuid} claims SUCCESSFUL): processed" in out
    assert "Processed 1 callback(s): 1 processed." in out
    assert Transaction.objects.get(pk=paid.pk).status == Transaction.SUCCESSFUL
    just_now.refresh_from_db()
    assert just_now.state == ReceivedCallback.QUEUED  # its task may be running: left alone

    call_command("paycollect_process_callbacks", "--failed")
    assert "Processed 1 callback(s): 1 processed." in capsys.readouterr().out
    failed.refresh_from_db()
    assert failed.state == ReceivedCallback.PROCESSED
    assert Transaction.objects.get(pk=declined.pk).status == Transaction.FAILED
    assert signal_log.count("payment_succeeded") == 1

    call_command("paycollect_process_callbacks", "--ids", str(just_now.pk), str(left.pk), "999999")
    captured = capsys.readouterr()
    assert f"callback #{left.pk} is processed, nothing to verify; skipped" in captured.err
    assert "callback #999999 does not exist; skipped" in captured.err
    assert "Processed 1 callback(s): 1 processed." in captured.out


@live
def test_the_command_reports_a_callback_that_still_fails_and_exits_1(paycollect_live, capsys):
    sb = paycollect_live
    stuck = stored_callback(UUID, ReceivedCallback.FAILED)
    with pytest.raises(CommandError, match="1 callback"):
        call_command("paycollect_process_callbacks", "--failed")
    assert "failed: NotFoundError" in capsys.readouterr().err
    stuck.refresh_from_db()
    assert stuck.state == ReceivedCallback.FAILED
    assert stuck.attempts == 1
    fetches = len(sb.control.journal("fetch_transaction"))
    call_command("paycollect_process_callbacks", "--dry-run", "--failed")
    assert "would be processed" in capsys.readouterr().out
    assert len(sb.control.journal("fetch_transaction")) == fetches


@pytest.mark.django_db
def test_the_command_refuses_an_age_of_zero():
    with pytest.raises(CommandError, match="more than zero"):
        call_command("paycollect_process_callbacks", "--older-than", "0s")
    call_command("paycollect_process_callbacks", "--older-than", "0s", "--failed")  # ignored with --failed


def staff(django_user_model: Any, *codenames: str) -> Any:
    user = django_user_model.objects.create_user(username="staff", password="pw", is_staff=True)
    perms = Permission.objects.filter(content_type__app_label="paycollect", codename__in=codenames)
    user.user_permissions.add(*perms)
    return user


ADMIN = "/admin/paycollect/receivedcallback/"


@live
def test_the_admin_reprocess_action_verifies_a_failed_callback_again(
    client, django_user_model, paycollect_live, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    sb.control.fault("fetch_transaction", "status", status=503, times=None)
    post(client, body_for(txn.uuid))
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.FAILED
    assert callback.error.startswith("ServerError")
    invalid = ReceivedCallback.objects.create(state=ReceivedCallback.INVALID, body="nope")
    sb.control.clear_faults()

    client.force_login(staff(django_user_model, "view_receivedcallback", "reprocess_receivedcallback"))
    page = client.get(ADMIN)
    assert "reprocess" in {name for name, _ in page.context["action_form"].fields["action"].choices}
    detail = client.get(f"{ADMIN}{callback.pk}/change/")
    assert detail.status_code == 200
    assert "ServerError" in detail.content.decode()
    assert CALLBACK_TOKEN not in detail.content.decode()
    assert "CALLBACK_TOKENS[0]" in detail.content.decode()

    response = client.post(ADMIN, {"action": "reprocess", "_selected_action": [callback.pk, invalid.pk]})
    assert response.status_code == 302
    text = " | ".join(str(m) for m in get_messages(response.wsgi_request))
    assert f"Reprocess: 1 succeeded (#{callback.pk})" in text
    assert f"#{invalid.pk}: it is invalid: nothing to verify" in text
    callback.refresh_from_db()
    assert callback.state == ReceivedCallback.PROCESSED
    assert callback.attempts == 2
    assert callback.error == ""
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert signal_log.count("payment_succeeded") == 1


@live
def test_without_the_permission_the_reprocess_action_is_hidden_and_refused(
    client, django_user_model, paycollect_live
):
    callback = stored_callback(UUID, ReceivedCallback.FAILED)
    client.force_login(staff(django_user_model, "view_receivedcallback"))
    page = client.get(ADMIN)
    assert page.status_code == 200
    assert page.context["action_form"] is None  # no action at all is offered
    response = client.post(ADMIN, {"action": "reprocess", "_selected_action": [callback.pk]})
    assert response.status_code in (200, 302)
    callback.refresh_from_db()
    assert callback.state == ReceivedCallback.FAILED
    assert callback.attempts == 0
    assert not paycollect_live.control.journal("fetch_transaction")


@pytest.mark.django_db
def test_the_admin_filters_by_state_and_validity_and_searches_by_uuid(client, django_user_model):
    good = stored_callback(UUID, ReceivedCallback.PROCESSED)
    bad = ReceivedCallback.objects.create(
        state=ReceivedCallback.INVALID, invalid_reason="the body is not JSON"
    )
    client.force_login(staff(django_user_model, "view_receivedcallback"))

    def shown(query: str) -> set[int]:
        response = client.get(f"{ADMIN}?{query}")
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    assert shown("valid=yes") == {good.pk}
    assert shown("valid=no") == {bad.pk}
    assert shown("state__exact=processed") == {good.pk}
    assert shown(f"q={UUID}") == {good.pk}
    assert client.get(f"{ADMIN}{bad.pk}/change/").status_code == 200
    nested = ReceivedCallback.objects.create(state=ReceivedCallback.INVALID, body="[" * 30_000 + "]" * 30_000)
    assert client.get(f"{ADMIN}{nested.pk}/change/").status_code == 200
    assert client.get(f"{ADMIN}add/").status_code == 403


@pytest.mark.django_db
def test_the_admin_lists_and_shows_callbacks_with_malformed_hints(client, django_user_model, no_worker):
    body = body_for(
        recurring={"is_sub_payment": True, "parent_transaction": "a1b2c3d4-e5f6-g7h8-i9j0-k1l2m3n4o5p6"}
    )
    assert post(client, body).status_code == 200
    flagged = ReceivedCallback.objects.get()
    clean = stored_callback(UUID.replace("3f", "4f"), ReceivedCallback.PROCESSED)
    client.force_login(staff(django_user_model, "view_receivedcallback"))

    def shown(query: str) -> set[int]:
        response = client.get(f"{ADMIN}?{query}")
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    assert shown("malformed_hints=yes") == {flagged.pk}
    assert shown("malformed_hints=no") == {clean.pk}
    page = client.get(f"{ADMIN}{flagged.pk}/change/").content.decode()
    assert "malformed hints (stored as not sent)" in page.lower()
    assert "recurring.parent_transaction" in page
    assert "Not a transaction uuid." in page
