"""One canonical form for transaction uuids (lower case, with dashes) at every boundary.

A paid transaction's uuid spelled in capitals, or as 32 hex digits, must never become a second local
transaction: not from a callback, a browser return, an argument of the service layer, an admin search,
nor a row written by other code (the database refuses it).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection
from django.db import transaction as db_transaction

from django_paycollect import services
from django_paycollect.ids import canonical_uuid, looks_like_uuid
from django_paycollect.models import (
    ReceivedCallback,
    RecurringSeries,
    Refund,
    Transaction,
    TransactionStatusChange,
)
from django_paycollect.sandbox.envelope import dumps
from tests.support.payments import BILLING, CALLBACK_TOKEN

UUID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"
URL = f"/paycollect/callback/{CALLBACK_TOKEN}/"


def spellings(uuid: str) -> list[str]:
    """The four spellings of one uuid: as issued, in capitals, without dashes, both."""
    return [uuid, uuid.upper(), uuid.replace("-", ""), uuid.replace("-", "").upper()]


# --- the canonical form ---------------------------------------------------------------------------------


def wrapped(uuid: str) -> list[str]:
    """The 36-character form in braces (as GUIDs are often written) or as a URN (RFC 9562), any case."""
    return ["{" + uuid + "}", "{" + uuid.upper() + "}", f"urn:uuid:{uuid}", f"URN:UUID:{uuid.upper()}"]


@pytest.mark.parametrize(
    "spelling",
    [
        *spellings(UUID),
        f"  {UUID.upper()}\n",
        "3F1C2A9E-8b7d-4C6E-9f0a-1B2C3D4E5F60",
        *wrapped(UUID),
        " {" + UUID + "}\t",
        f"Urn:Uuid:{UUID}",
    ],
)
def test_every_spelling_of_a_uuid_has_one_canonical_form(spelling):
    assert looks_like_uuid(spelling)
    assert canonical_uuid(spelling) == UUID


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not-a-uuid",
        "{" + UUID.replace("-", "") + "}",  # wrapped: only the 36-character form
        f"urn:uuid:{UUID.replace('-', '')}",
        "{ " + UUID + " }",
        "{" + UUID,
        UUID + "}",
        f"{{urn:uuid:{UUID}}}",
        f"uuid:{UUID}",
        f"urn:uuid: {UUID}",
        f"urn:{UUID}",
        UUID[:-1],
        UUID + "0",
        UUID.replace("-", "\u2010"),
    ],
)
def test_a_value_that_is_not_a_uuid_is_kept_as_the_text_it_is(text):
    assert not looks_like_uuid(text)
    assert canonical_uuid(text) == text


# --- the model field and the database -------------------------------------------------------------------


@pytest.mark.django_db
def test_the_field_stores_and_looks_up_the_canonical_form():
    txn = Transaction.objects.create(community_id="c", total_amount=Decimal("1.00"), uuid=UUID.upper())
    assert txn.uuid == UUID  # the instance says what the row holds
    assert Transaction.objects.values_list("uuid", flat=True).get() == UUID
    for spelling in spellings(UUID):
        assert Transaction.objects.get(uuid=spelling) == txn
        assert Transaction.objects.filter(uuid__in=[spelling]).get() == txn
        assert RecurringSeries.objects.filter(parent_uuid=spelling).count() == 0
    ReceivedCallback.objects.create(transaction_uuid=UUID.replace("-", ""), parent_transaction=UUID.upper())
    assert ReceivedCallback.objects.values_list("transaction_uuid", "parent_transaction").get() == (
        UUID,
        UUID,
    )
    # Not a uuid: kept exactly, never refused.
    other = Transaction.objects.create(community_id="c", total_amount=Decimal("1.00"), uuid="Legacy-Ref-7")
    assert Transaction.objects.get(uuid="Legacy-Ref-7") == other


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("spelling", spellings(UUID)[1:])
def test_the_database_refuses_a_second_row_for_one_uuid_in_another_spelling(spelling):
    """Even past the ORM (raw SQL, an older process during a deploy): a unique index on the canonical form."""
    Transaction.objects.create(community_id="c", total_amount=Decimal("1.00"), uuid=UUID)
    table = Transaction._meta.db_table
    columns = "uuid, community_id, status, service_status, status_unrecognised, total_amount, currency, "
    columns += "payment_for, member_id, custom_fields, pay_using, iframe_url, bill_reference, kiosk_message, "
    columns += "customer_name, customer_email, customer_phone, merchant_reference, object_id, capture_state, "
    columns += "captured_amount, refunded_amount, outcome_unknown, amount_mismatch, last_error, parent_uuid, "
    columns += "created_at, updated_at"
    values = [
        spelling,
        "c",
        "NEW",
        "",
        False,
        "1.00",
        "EGP",
        "",
        "",
        "[]",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
    ]
    values += [
        "",
        "0.00",
        "0.00",
        False,
        False,
        "",
        "",
        "2026-01-01 00:00:00+00:00",
        "2026-01-01 00:00:00+00:00",
    ]
    placeholders = ", ".join(["%s"] * len(values))
    with pytest.raises(IntegrityError), db_transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", values)  # noqa: S608
    assert Transaction.objects.count() == 1


# --- callbacks ------------------------------------------------------------------------------------------


def post(client: Any, uuid: str, status: str = "SUCCESSFUL") -> int:
    body = {"transaction_uuid": uuid, "transaction_status": status, "merchant_id": "community-1"}
    response = client.post(URL, data=dumps(body), content_type="application/json")
    return response.status_code


@pytest.mark.django_db(transaction=True)
def test_the_four_spellings_of_a_paid_uuid_give_one_row_one_change_one_signal(
    client, paycollect_live, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")

    assert [post(client, spelling) for spelling in spellings(txn.uuid)] == [200] * 4

    assert Transaction.objects.count() == 1
    assert TransactionStatusChange.objects.filter(to_status=Transaction.SUCCESSFUL).count() == 1
    assert signal_log.count("payment_succeeded") == 1
    stored = ReceivedCallback.objects.order_by("pk")
    assert {c.transaction_uuid for c in stored} == {txn.uuid}
    assert [c.state for c in stored] == [ReceivedCallback.PROCESSED] + [ReceivedCallback.DUPLICATE] * 3
    assert len(sb.control.journal("fetch_transaction")) == 1
    # One row, so the local refund check counts every refund against the one payment.
    txn.refresh_from_db()
    assert services.refund(txn, Decimal("100.00")).state == Refund.SUCCEEDED
    with pytest.raises(Exception, match="Nothing is left to refund"):
        services.refund(Transaction.objects.get(uuid=txn.uuid.upper()), Decimal("1.00"))


@pytest.mark.django_db(transaction=True)
def test_a_wrapped_spelling_in_a_callback_is_the_same_paid_transaction(
    client, paycollect_live, pay, signal_log
):
    """The canonicaliser reads braces and ``urn:uuid:`` for every surface: a callback is not refused for
    them, and they are duplicates of the plain spelling, not a second payment."""
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")

    assert [post(client, spelling) for spelling in [txn.uuid, *wrapped(txn.uuid)]] == [200] * 5

    assert Transaction.objects.count() == 1
    assert signal_log.count("payment_succeeded") == 1
    stored = ReceivedCallback.objects.order_by("pk")
    assert {c.transaction_uuid for c in stored} == {txn.uuid}
    assert [c.state for c in stored] == [ReceivedCallback.PROCESSED] + [ReceivedCallback.DUPLICATE] * 4


@pytest.mark.django_db(transaction=True)
def test_the_four_spellings_of_a_uuid_we_never_stored_create_one_transaction(
    client, paycollect_live, signal_log
):
    """A payment started elsewhere (a renewal, a direct order): created from the fetched object, once."""
    sb = paycollect_live
    started = sb.client.pay(
        community_id=sb.community_id,
        amount=Decimal("60.00"),
        original_amount=Decimal("60.00"),
        variable_amount_id=sb.variable_amount_id,
        billing_data=BILLING,
    )
    uuid = started.result.transaction_uuid
    sb.control.complete(uuid, "SUCCESSFUL")

    for spelling in spellings(uuid):
        post(client, spelling)
        post(client, spelling, status="successful")

    txn = Transaction.objects.get()
    assert txn.uuid == uuid
    assert txn.status == Transaction.SUCCESSFUL
    assert signal_log.count("payment_succeeded") == 1
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.PROCESSED).count() == 1


# --- browser returns, service-layer arguments, the admin ----------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("which", range(4))
def test_a_browser_return_finds_the_transaction_whatever_the_spelling(client, paycollect_live, pay, which):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    services.sync_transaction(txn)
    spelling = spellings(txn.uuid)[which]

    response = client.get("/paycollect/return/", {"transaction_uuid": spelling})
    assert response.status_code == 302
    assert response["Location"] == f"/?transaction_uuid={txn.uuid}"
    assert client.get("/paycollect/return/status/", {"transaction_id": spelling}).json() == {
        "status": "SUCCESSFUL"
    }
    assert Transaction.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_service_layer_arguments_are_made_canonical(paycollect_live, pay):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    for spelling in spellings(txn.uuid)[1:]:
        synced = services.sync_transaction(uuid=spelling)
        assert synced.pk == txn.pk
    assert Transaction.objects.count() == 1
    # What the service answers is canonical too (Pay's transaction_uuid, recurring.parent_transaction).
    assert all(uuid == canonical_uuid(uuid) for uuid in Transaction.objects.values_list("uuid", flat=True))


@pytest.mark.django_db
def test_admin_searches_find_a_uuid_in_any_spelling(admin_client):
    txn = Transaction.objects.create(community_id="c", total_amount=Decimal("1.00"), uuid=UUID)
    callback = ReceivedCallback.objects.create(
        transaction_uuid=UUID, claimed_status="SUCCESSFUL", transaction=txn
    )
    for spelling in [*spellings(UUID), *wrapped(UUID)]:
        found = admin_client.get("/admin/paycollect/transaction/", {"q": spelling})
        assert list(found.context["cl"].result_list) == [txn]
        found = admin_client.get("/admin/paycollect/receivedcallback/", {"q": spelling})
        assert list(found.context["cl"].result_list) == [callback]
        found = admin_client.get("/admin/paycollect/apicall/", {"q": spelling})
        assert found.status_code == 200
