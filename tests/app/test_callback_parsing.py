"""What a callback body claims, as stored: the uuid decides (a wrong one refuses the body, stored invalid with
the field named), every other field is a hint (a malformed one is stored as not sent and flagged), and the
spec's variants are all understood. No verification runs here: the worker is not called.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from django_paycollect.models import ReceivedCallback
from django_paycollect.sandbox.envelope import dumps
from django_paycollect.services.callback_ledger import dedupe_key
from tests.support.callbacks import UUID, body_for, committed, post

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
    assert callback.dedupe_key == dedupe_key(UUID, callback.claimed_status)
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
