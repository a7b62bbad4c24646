"""A new callback is stored by one INSERT written once (``services.callback_insert``), and the row is the one
``ReceivedCallback.objects.create`` stores: the same values in every column, read back from the database. A
redelivery, and a claim of the right to fetch that another verification holds, are one statement each that
changes nothing and raises no database error (``ON CONFLICT``). A verification's two writes of the row are
the ORM's UPDATEs, written once."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from django.core.exceptions import FieldDoesNotExist
from django.db import IntegrityError, connection
from django.db.models import DateTimeField, F
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_paycollect.models import FetchMark, ReceivedCallback, Transaction
from django_paycollect.services.callback_insert import insert_callback, take_fetch_turn, update_callback

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 24, 17, 38, 5, 123456, tzinfo=dt.UTC)


def fields(**changed: Any) -> dict[str, Any]:
    """What the callback view stores for a new callback: every kind of column, and a uuid in capitals."""
    return {
        "state": ReceivedCallback.QUEUED,
        "dedupe_key": "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60|SUCCESSFUL",
        "received_at": NOW,
        "queued_at": NOW,
        "next_attempt_at": NOW,
        "token_index": 0,
        "remote_addr": "2001:db8::1",
        "headers": {"content-type": "application/json", "user-agent": "Service/1.0 «ü»"},
        "body": '{"transaction_uuid": "3F1C2A9E-8B7D-4C6E-9F0A-1B2C3D4E5F60", "note": "\\u0645"}',
        "transaction_uuid": "3F1C2A9E-8B7D-4C6E-9F0A-1B2C3D4E5F60",
        "claimed_status": "SUCCESSFUL",
        "payment_id": "4821",
        "merchant_id": "c-1",
        "member_id": "",
        "total_amount": Decimal("104.50"),
        "total_amount_piasters": 10450,
        "is_sub_payment": False,
        "parent_transaction": "9A8B7C6D5E4F30211203A4B5C6D7E8F9",
        "message": "مرحبا",
        "custom_fields": {"Membership number": "A-10293", "Amount": "1.10", "nested": {"list": [1, "2"]}},
        "hint_errors": {"recurring.parent_transaction": ["Not a uuid."]},
        **changed,
    }


def stored_row(pk: int) -> dict[str, Any]:
    row = ReceivedCallback.objects.filter(pk=pk).values().get()
    del row["id"], row["dedupe_key"]
    return row


@pytest.mark.parametrize(
    "changed",
    [
        {},
        {"remote_addr": None, "total_amount": None, "is_sub_payment": None, "token_index": None},
        {"remote_addr": "203.0.113.7", "total_amount": Decimal("0.5"), "headers": {}, "custom_fields": {}},
    ],
)
def test_the_row_is_the_one_the_orm_stores(changed):
    ours = insert_callback(**fields(**changed))
    theirs = ReceivedCallback.objects.create(**fields(**changed, dedupe_key="another"))
    assert stored_row(ours) == stored_row(theirs.pk)
    row = stored_row(ours)
    assert (
        row["transaction_uuid"] == "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"
    )  # canonical, as the field stores it
    assert row["parent_transaction"] == "9a8b7c6d-5e4f-3021-1203-a4b5c6d7e8f9"
    assert row["attempts"] == 0
    assert row["outcome"] == row["error"] == row["invalid_reason"] == ""


def test_the_instant_given_for_the_three_timestamps_is_prepared_once():
    insert_callback(**fields(dedupe_key="warm|SUCCESSFUL"))  # the statement is built, its defaults prepared
    original = DateTimeField.get_db_prep_value
    with mock.patch.object(
        DateTimeField, "get_db_prep_value", autospec=True, side_effect=original
    ) as prepare:
        same = insert_callback(**fields())
        assert prepare.call_count == 1
        later = NOW + dt.timedelta(seconds=1)
        apart = insert_callback(**fields(dedupe_key="apart|SUCCESSFUL", next_attempt_at=later))
        assert prepare.call_count == 3  # a different instant is prepared for itself
    assert same is not None
    assert apart is not None
    row = stored_row(same)
    assert row["received_at"] == row["queued_at"] == row["next_attempt_at"] == NOW
    row = stored_row(apart)
    assert (row["received_at"], row["queued_at"], row["next_attempt_at"]) == (NOW, NOW, later)


def test_defaults_are_the_models():
    pk = insert_callback(transaction_uuid="x", claimed_status="PENDING")
    callback = ReceivedCallback.objects.get(pk=pk)
    assert callback.state == ReceivedCallback.RECEIVED
    assert callback.headers == callback.custom_fields == callback.hint_errors == {}
    assert timezone.now() - callback.received_at < dt.timedelta(minutes=1)
    assert callback.dedupe_key is None


def test_one_statement_and_a_second_row_of_the_same_key_is_none_without_a_database_error():
    with CaptureQueriesContext(connection) as captured:
        first = insert_callback(**fields())
    [insert] = [q["sql"] for q in captured.captured_queries if "INSERT" in q["sql"]]
    assert insert.startswith('INSERT INTO "paycollect_receivedcallback"')
    assert 'ON CONFLICT ("dedupe_key") DO NOTHING' in insert
    # Inside this test's transaction: no savepoint is needed, and the transaction stays usable.
    with CaptureQueriesContext(connection) as captured:
        assert insert_callback(**fields(body="a redelivery")) is None
    assert len(captured.captured_queries) == 1
    assert ReceivedCallback.objects.get().pk == first
    assert ReceivedCallback.objects.get().body == fields()["body"]  # the first one stays as it was
    # Rows without a key never meet each other.
    assert insert_callback(**fields(dedupe_key=None)) != insert_callback(**fields(dedupe_key=None))


def test_another_violation_is_still_an_error():
    with pytest.raises(IntegrityError):
        insert_callback(**fields(received_at=None))


def test_an_unknown_or_related_field_is_refused():
    with pytest.raises(TypeError, match="stat"):
        insert_callback(stat="queued")
    with pytest.raises(TypeError, match="duplicate_of"):
        insert_callback(duplicate_of=None)


def test_receivers_of_post_save_still_hear_of_every_row():
    heard: list[int] = []

    def receiver(sender: Any, instance: ReceivedCallback, created: bool, **kwargs: Any) -> None:
        heard.append(instance.pk)

    post_save.connect(receiver, sender=ReceivedCallback)
    try:
        pk = insert_callback(**fields())
    finally:
        post_save.disconnect(receiver, sender=ReceivedCallback)
    assert heard == [pk]
    assert stored_row(pk)["transaction_uuid"] == "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"


def test_with_receivers_a_redelivery_is_still_none_and_raises_nothing():
    post_save.connect(_ignore, sender=ReceivedCallback)
    try:
        first = insert_callback(**fields())
        assert insert_callback(**fields()) is None
    finally:
        post_save.disconnect(_ignore, sender=ReceivedCallback)
    assert list(ReceivedCallback.objects.values_list("pk", flat=True)) == [first]


def _ignore(sender: Any, **kwargs: Any) -> None:
    pass


# --- the right to fetch a uuid: one statement, and a held claim is no database error --------------------

UUID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"


def claim(now: dt.datetime, *, asked: dt.datetime = NOW, interval: dt.timedelta | None = None) -> bool:
    seconds = None if interval is None else interval.total_seconds()
    return take_fetch_turn(UUID, seconds, asked=asked, now=now) is not None


def test_a_fetch_claim_is_one_statement_taken_once_per_interval():
    five = dt.timedelta(seconds=5)
    with CaptureQueriesContext(connection) as captured:
        assert claim(NOW, interval=five)  # no mark yet: inserted
    [statement] = [q["sql"] for q in captured.captured_queries]
    assert statement.startswith('INSERT INTO "paycollect_fetchmark"')
    assert 'ON CONFLICT ("uuid") DO UPDATE' in statement
    with CaptureQueriesContext(connection) as captured:
        assert not claim(NOW + dt.timedelta(seconds=4), interval=five)  # held: nothing, and no error
    assert len(captured.captured_queries) == 1
    assert FetchMark.objects.get().claimed_at == NOW
    assert claim(NOW + five, interval=five)  # the interval is over
    assert FetchMark.objects.get().claimed_at == NOW + five
    assert claim(NOW + five + dt.timedelta(seconds=1))  # a person asked: no interval
    assert FetchMark.objects.count() == 1


def test_a_fetch_claim_is_refused_while_a_later_fetch_found_the_uuid_unknown():
    assert claim(NOW)
    FetchMark.objects.update(not_found_at=NOW + dt.timedelta(seconds=1))
    later = NOW + dt.timedelta(minutes=5)
    assert not claim(later, asked=NOW)  # asked before that fetch: it answered this one too
    assert not claim(later, asked=NOW + dt.timedelta(seconds=1))
    assert claim(later, asked=NOW + dt.timedelta(seconds=2))  # asked after it: fetch again
    assert FetchMark.objects.get().claimed_at == later


def test_returns_and_callbacks_take_their_turns_to_fetch_apart():
    assert take_fetch_turn(UUID, 30, by="return") is not None
    assert take_fetch_turn(UUID, 30, by="return") is None  # within the returns' interval
    assert take_fetch_turn(UUID, 30) is not None  # a callback does not wait for a return's turn
    assert take_fetch_turn(UUID, 30) is None
    assert take_fetch_turn(UUID, None) is not None  # a person asked: now
    assert sorted(FetchMark.objects.values_list("uuid", flat=True)) == [UUID, f"return:{UUID}"]


# --- a verification's writes ---------------------------------------------------------------------------


def test_a_verification_s_writes_are_the_rows_the_orm_s_updates_write():
    txn = Transaction.objects.create(
        uuid="3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60", community_id="c-1", total_amount=Decimal("104.50")
    )
    ours = insert_callback(**fields())
    theirs = insert_callback(**fields(dedupe_key="another"))
    verified = {
        "transaction": txn,
        "state": ReceivedCallback.PROCESSED,
        "processed_at": NOW,
        "next_attempt_at": None,
        "outcome": "service says SUCCESSFUL; transaction is SUCCESSFUL; the callback named «c-1»",
        "error": "",
        "traceback": "",
    }

    assert update_callback(ours, count_attempt=True, task_id="task-1") == 1
    ReceivedCallback.objects.filter(pk=theirs).update(attempts=F("attempts") + 1, task_id="task-1")
    assert stored_row(ours) == stored_row(theirs)
    assert update_callback(ours, unless_state=ReceivedCallback.PROCESSED, **verified) == 1
    ReceivedCallback.objects.filter(pk=theirs).exclude(state=ReceivedCallback.PROCESSED).update(**verified)
    assert stored_row(ours) == stored_row(theirs)
    row = stored_row(ours)
    assert (row["attempts"], row["task_id"], row["transaction_id"], row["state"]) == (
        1,
        "task-1",
        txn.pk,
        ReceivedCallback.PROCESSED,
    )


def test_a_row_in_the_spared_state_is_left_as_it_is():
    pk = insert_callback(**fields(state=ReceivedCallback.PROCESSED, outcome="first"))

    assert update_callback(pk, unless_state=ReceivedCallback.PROCESSED, outcome="second") == 0
    assert ReceivedCallback.objects.get(pk=pk).outcome == "first"
    assert update_callback(987654, count_attempt=True) == 0  # no such row: nothing written


def test_a_verification_s_write_names_real_fields_and_not_the_key():
    pk = insert_callback(**fields())
    with pytest.raises(FieldDoesNotExist):
        update_callback(pk, no_such_field=1)
    with pytest.raises(TypeError, match="key"):
        update_callback(pk, id=5)
    with pytest.raises(TypeError, match="something to write"):
        update_callback(pk)
