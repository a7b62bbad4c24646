"""``services.rows.read_row``: the hot reads of a verification, compiled once, give the instance the ORM's
``get`` gives, field for field (on SQLite in ``make test``, on PostgreSQL in ``make test-postgres``)."""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from django.db import connections
from django.db.models import Model
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone

from django_paycollect.models import Community, ReceivedCallback, Transaction
from django_paycollect.services.rows import read_row

pytestmark = pytest.mark.django_db

UUID = "0f6e8a6c-55d2-4c5e-9a43-5f0d2b0f3c11"


def columns(instance: Model) -> dict[str, Any]:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def in_a_new_thread(read: Any) -> Any:
    """Run ``read`` where nothing was compiled yet (the statements are kept per thread)."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(read()))
    worker.start()
    worker.join()
    return result[0]


@pytest.fixture
def stored() -> Transaction:
    return Transaction.objects.create(
        uuid=UUID,
        community_id="community-1",
        status=Transaction.PENDING,
        service_status=Transaction.PENDING,
        total_amount=Decimal("104.50"),
        original_amount=Decimal("110.00"),
        raw={"data": {"status": "PENDING", "amount": "104.50", "names": ["مني", "Mona"]}},
        custom_fields=[{"name": "seat", "value": "12A"}],
        last_synced_at=timezone.now() - dt.timedelta(minutes=5),
    )


def test_a_transaction_read_by_uuid_is_the_one_the_orm_reads(stored):
    found = read_row(Transaction, "uuid", UUID)

    assert found is not None
    assert columns(found) == columns(Transaction.objects.get(uuid=UUID))
    assert isinstance(found.total_amount, Decimal)
    assert found.total_amount == Decimal("104.50")
    assert found._state.adding is False
    assert found._state.db == "default"


def test_the_uuid_looked_for_is_read_as_the_orm_reads_it(stored):
    """Upper case, as some senders write it: the field makes it canonical before the lookup."""
    found = read_row(Transaction, "uuid", UUID.upper())

    assert found is not None
    assert found.pk == stored.pk


def test_a_callback_and_a_community_with_its_encrypted_key_read_as_the_orm_reads_them():
    callback = ReceivedCallback.objects.create(
        state=ReceivedCallback.QUEUED,
        transaction_uuid=UUID,
        claimed_status="SUCCESSFUL",
        body={"transaction_uuid": UUID, "amount": "1.10"},
    )
    community = Community(community_id="community-2", name="Second")
    community.api_key = "key-for-community-2-0123456789"
    community.save()

    read_callback = read_row(ReceivedCallback, "id", callback.pk)
    read_community = read_row(Community, "community_id", "community-2")

    assert read_callback is not None
    assert read_community is not None
    assert columns(read_callback) == columns(ReceivedCallback.objects.get(pk=callback.pk))
    assert columns(read_community) == columns(Community.objects.get(community_id="community-2"))
    assert read_community.api_key == "key-for-community-2-0123456789"


def test_a_row_that_is_not_there_is_none():
    assert read_row(Transaction, "uuid", UUID) is None
    assert read_row(ReceivedCallback, "id", 987654) is None


def test_only_a_unique_column_may_be_read_and_never_by_none():
    with pytest.raises(ValueError, match=r"Transaction\.community_id is not a unique column"):
        read_row(Transaction, "community_id", "community-1")
    with pytest.raises(ValueError, match="not None"):
        read_row(Transaction, "uuid", None)


@pytest.mark.django_db(transaction=True)  # the row committed, so another thread's connection sees it
def test_the_statement_is_compiled_once_per_thread(stored):
    def twice() -> tuple[int, bool]:
        try:
            with mock.patch.object(
                SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql
            ) as compiled:
                first = read_row(Transaction, "uuid", UUID)
                second = read_row(Transaction, "uuid", UUID)
            return compiled.call_count, first is not None and second is not None and first.pk == second.pk
        finally:
            connections.close_all()  # this thread's

    assert in_a_new_thread(twice) == (1, True)
