"""An API call is stored by one INSERT built once (``services.rows.insert_row``; reconciliation writes
one per fetched transaction), and the row is the one ``ApiCall.save()`` stores: the same values in every
column, read back from the database. A project listening to ApiCall's saves still hears of every row. The
same for a status change (``services.rows.insert_row``, one per change a sync applies)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from django_paycollect.models import ApiCall, Transaction, TransactionStatusChange
from django_paycollect.services.rows import insert_row

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 26, 20, 40, 5, 123456, tzinfo=dt.UTC)


def fields(txn: Transaction | None, **changed: Any) -> dict[str, Any]:
    """Every kind of column an API call has: text, JSON (nested, Arabic, Decimals as strings), numbers,
    flags, a link."""
    return {
        "operation": "get_transaction",
        "community_id": "c-1",
        "method": "GET",
        "path": "/api/v1/communities/c-1/transactions/3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60/",
        "request_body": None,
        "sent": True,
        "http_status": 200,
        "code": 200,
        "message": "تم",
        "errors": [],
        "data": {
            "uuid": "3f1c2a9e",
            "status": "PENDING",
            "total_amount": "104.50",
            "nested": {"l": [1, "2"]},
        },
        "count": None,
        "next": "",
        "previous": "",
        "error_class": "",
        "error_message": "",
        "body_excerpt": "",
        "outcome_unknown": False,
        "duration_ms": 21,
        "attempts": 1,
        "task_id": "task-1",
        "transaction": txn,
        "created_at": NOW,
        **changed,
    }


def stored_row(pk: int) -> dict[str, Any]:
    row = ApiCall.objects.filter(pk=pk).values().get()
    del row["id"]
    return row


@pytest.fixture
def txn() -> Transaction:
    return Transaction.objects.create(
        uuid="3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60",
        community_id="c-1",
        total_amount=Decimal("104.50"),
        original_amount=Decimal("104.50"),
    )


@pytest.mark.parametrize(
    "changed",
    [
        {},
        {"http_status": None, "code": None, "data": None, "duration_ms": None, "transaction": None},
        {"sent": False, "error_class": "ConnectError", "error_message": "refused", "errors": [{"a": ["b"]}]},
    ],
)
def test_the_row_is_the_one_save_stores(txn, changed):
    ours = ApiCall(**fields(txn, **changed))
    with CaptureQueriesContext(connection) as captured:
        insert_row(ours)
    theirs = ApiCall(**fields(txn, **changed))
    theirs.save()
    assert len(captured) == 1
    assert ours.pk is not None
    assert ours.pk != theirs.pk
    assert not ours._state.adding
    assert stored_row(ours.pk) == stored_row(theirs.pk)


def test_a_link_saved_after_the_row_was_built_is_stored(txn):
    later = Transaction(uuid="9a8b7c6d-5e4f-3021-1203-a4b5c6d7e8f9", community_id="c-1", total_amount=1)
    row = ApiCall(**fields(later))
    later.save()
    insert_row(row)
    assert ApiCall.objects.get(pk=row.pk).transaction_id == later.pk


def test_a_project_listening_to_saves_hears_of_every_row(txn):
    heard: list[ApiCall] = []

    def listener(sender: Any, instance: ApiCall, created: bool, **kwargs: Any) -> None:
        heard.append(instance)

    post_save.connect(listener, sender=ApiCall)
    try:
        row = ApiCall(**fields(txn))
        insert_row(row)
    finally:
        post_save.disconnect(listener, sender=ApiCall)
    assert heard == [row]
    assert row.pk is not None


def test_a_status_change_is_the_row_save_stores(txn):
    def change() -> TransactionStatusChange:
        return TransactionStatusChange(
            transaction=txn,
            from_status="PENDING",
            to_status="SUCCESSFUL",
            service_status="SUCCESSFUL",
            source="sync",
        )

    ours, theirs = change(), change()
    with CaptureQueriesContext(connection) as captured:
        insert_row(ours)
    theirs.save()
    assert len(captured) == 1
    assert ours.pk is not None
    assert ours.pk != theirs.pk
    stored = TransactionStatusChange.objects.filter(pk__in=[ours.pk, theirs.pk]).order_by("pk").values()
    first, second = ({k: v for k, v in row.items() if k not in ("id", "at")} for row in stored)
    assert first == second
    assert ours.at == TransactionStatusChange.objects.get(pk=ours.pk).at
