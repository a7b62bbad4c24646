"""The only hand-written SQL of the app (``services.upserts``), against the ORM on the database the suite
runs on (SQLite, and PostgreSQL in make test-postgres; CI runs both on every supported Django): a new
callback's row is the one ``ReceivedCallback.objects.create`` stores, column by column, read back from the
database; a redelivery, and a claim of the right to fetch that another verification holds, are one statement
each that changes nothing and raises no database error (``ON CONFLICT``)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_paycollect.models import FetchMark, ReceivedCallback
from django_paycollect.services.upserts import insert_callback, take_fetch_turn

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


def insert(**values: Any) -> int | None:
    """``insert_callback`` of a new instance built from ``values``: its key, or None for a redelivery."""
    callback = ReceivedCallback(**values)
    return callback.pk if insert_callback(callback) else None


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
    ours = insert(**fields(**changed))
    theirs = ReceivedCallback.objects.create(**fields(**changed, dedupe_key="another"))
    assert stored_row(ours) == stored_row(theirs.pk)
    row = stored_row(ours)
    assert (
        row["transaction_uuid"] == "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"
    )  # canonical, as the field stores it
    assert row["parent_transaction"] == "9a8b7c6d-5e4f-3021-1203-a4b5c6d7e8f9"
    assert row["attempts"] == 0
    assert row["outcome"] == row["error"] == row["invalid_reason"] == ""


def test_defaults_are_the_models():
    pk = insert(transaction_uuid="x", claimed_status="PENDING")
    callback = ReceivedCallback.objects.get(pk=pk)
    assert callback.state == ReceivedCallback.RECEIVED
    assert callback.headers == callback.custom_fields == callback.hint_errors == {}
    assert timezone.now() - callback.received_at < dt.timedelta(minutes=1)
    assert callback.dedupe_key is None


def test_one_statement_and_a_second_row_of_the_same_key_is_none_without_a_database_error():
    with CaptureQueriesContext(connection) as captured:
        first = insert(**fields())
    [statement] = [q["sql"] for q in captured.captured_queries if "INSERT" in q["sql"]]
    assert statement.startswith('INSERT INTO "paycollect_receivedcallback"')
    assert 'ON CONFLICT ("dedupe_key") DO NOTHING' in statement
    # Inside this test's transaction: no savepoint is needed, and the transaction stays usable.
    with CaptureQueriesContext(connection) as captured:
        assert insert(**fields(body="a redelivery")) is None
    assert len(captured.captured_queries) == 1
    assert ReceivedCallback.objects.get().pk == first
    assert ReceivedCallback.objects.get().body == fields()["body"]  # the first one stays as it was
    # Rows without a key never meet each other.
    assert insert(**fields(dedupe_key=None)) != insert(**fields(dedupe_key=None))


def test_another_violation_is_still_an_error():
    with pytest.raises(IntegrityError):
        insert(**fields(received_at=None))


def test_a_saved_callback_is_refused():
    callback = ReceivedCallback.objects.create(**fields())
    with pytest.raises(ValueError, match="new callback"):
        insert_callback(callback)


def test_receivers_hear_nothing_of_the_statement_whatever_a_project_connects():
    """One behaviour whatever the project connects: the statement never goes through save() (the docs list
    it), so a receiver changes neither what is written nor how."""
    heard: list[Any] = []

    def receiver(sender: Any, instance: Any, **kwargs: Any) -> None:
        heard.append(instance)

    post_save.connect(receiver)  # a global receiver, as audit and history libraries connect
    try:
        with CaptureQueriesContext(connection) as captured:
            first = insert(**fields())
            assert insert(**fields()) is None
    finally:
        post_save.disconnect(receiver)
    assert heard == []
    assert [q["sql"].split()[0] for q in captured.captured_queries] == ["INSERT", "INSERT"]
    assert list(ReceivedCallback.objects.values_list("pk", flat=True)) == [first]


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


def test_a_database_the_statements_are_not_written_for_is_refused_by_a_check(monkeypatch):
    from django_paycollect.checks import check_one_database
    from django_paycollect.services import upserts

    assert check_one_database() == []
    monkeypatch.setattr(upserts, "VENDORS", tuple(v for v in upserts.VENDORS if v != connection.vendor))
    [error] = check_one_database()
    assert error.id == "paycollect.E020"
    assert connection.vendor in error.msg
