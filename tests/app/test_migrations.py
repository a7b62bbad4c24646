"""The upgrade to canonical uuids: existing rows are rewritten in the canonical form, and rows that named one
transaction in two spellings (the duplicates the old lookups created) are reported, never deleted."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("paycollect", "0001_initial")]
PAID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"
OTHER = "7b1e3d5f-2c40-4b6d-9e8f-0a1b2c3d4e5f"


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def test_the_upgrade_makes_uuids_canonical_and_reports_duplicates_without_deleting_them(capsys):
    after = MigrationExecutor(connection).loader.graph.leaf_nodes("paycollect")
    old = migrate(BEFORE)
    try:
        Transaction = old.get_model("paycollect", "Transaction")
        RecurringSeries = old.get_model("paycollect", "RecurringSeries")
        ReceivedCallback = old.get_model("paycollect", "ReceivedCallback")

        def txn(uuid, status="SUCCESSFUL", **fields):
            return Transaction.objects.create(
                community_id="c", total_amount=Decimal("100.00"), uuid=uuid, status=status, **fields
            ).pk

        # Started here, then created twice more from callbacks spelled differently (the old bug).
        started = txn(PAID, merchant_reference="order-1")
        upper = txn(PAID.upper())
        bare = txn(PAID.replace("-", ""), last_error="an earlier note")
        # Another payment known only in capitals; one without a uuid; one with text that is no uuid.
        alone = txn(OTHER.upper(), parent_uuid=PAID.upper())
        unstarted = txn(None, status="NEW")
        legacy = txn("Legacy-Ref-7")
        series = RecurringSeries.objects.create(
            parent_uuid=PAID.replace("-", "").upper(), community_id="c"
        ).pk
        first = ReceivedCallback.objects.create(
            transaction_uuid=PAID.upper(), claimed_status="SUCCESSFUL", dedupe_key=f"{PAID}|SUCCESSFUL"
        ).pk
        second = ReceivedCallback.objects.create(
            transaction_uuid=PAID.replace("-", ""),
            claimed_status="SUCCESSFUL",
            dedupe_key=f"{PAID.replace('-', '')}|SUCCESSFUL",
            parent_transaction=OTHER.upper(),
        ).pk
        third = ReceivedCallback.objects.create(
            transaction_uuid=OTHER.replace("-", ""),
            claimed_status="FAILED",
            dedupe_key=f"{OTHER.replace('-', '')}|FAILED",
        ).pk
        capsys.readouterr()

        new = migrate(after)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("paycollect"))

    report = capsys.readouterr().out
    Transaction = new.get_model("paycollect", "Transaction")
    RecurringSeries = new.get_model("paycollect", "RecurringSeries")
    ReceivedCallback = new.get_model("paycollect", "ReceivedCallback")
    uuids = dict(Transaction.objects.values_list("pk", "uuid"))
    assert len(uuids) == 6  # nothing deleted
    assert uuids[started] == PAID  # the one started here keeps the uuid
    assert uuids[upper] == f"{PAID} duplicate #{upper}"
    assert uuids[bare] == f"{PAID} duplicate #{bare}"
    assert (uuids[alone], uuids[unstarted], uuids[legacy]) == (OTHER, None, "Legacy-Ref-7")
    assert Transaction.objects.get(pk=alone).parent_uuid == PAID
    note = Transaction.objects.get(pk=bare).last_error
    assert note.startswith(
        f"Upgrade to canonical uuids: this row's uuid {PAID.replace('-', '')!r} names the same"
    )
    assert note.endswith("an earlier note")
    assert Transaction.objects.get(uuid=PAID.upper()).pk == started  # lookups in any spelling find one row
    assert RecurringSeries.objects.get(pk=series).parent_uuid == PAID
    callbacks = {row.pk: row for row in ReceivedCallback.objects.all()}
    assert {row.transaction_uuid for row in callbacks.values()} == {PAID, OTHER}
    assert callbacks[second].parent_transaction == OTHER
    assert callbacks[first].dedupe_key == f"{PAID}|SUCCESSFUL"
    assert (callbacks[second].dedupe_key, callbacks[second].duplicate_of_id) == (None, first)
    assert callbacks[third].dedupe_key == f"{OTHER}|FAILED"

    assert "3 row(s) named one transaction in another spelling; nothing was deleted" in report
    assert f"paycollect.Transaction #{upper}: uuid {PAID.upper()!r} duplicates #{started}" in report
    assert f"paycollect.Transaction #{bare}: uuid" in report
    assert f"paycollect.ReceivedCallback #{second}: the same claim as callback #{first}" in report


@pytest.mark.postgres
def test_only_unique_true_columns_keep_a_pattern_index_on_postgresql():
    """Django adds a ``varchar_pattern_ops`` twin (for ``LIKE``) to each text column with ``db_index`` or
    ``unique``. The app matches identifiers and states only exactly, so its indexed columns use plain
    indexes (``models.exact_indexes``) and unique constraints; only the rarely written unique=True columns
    (a community's id, a series' parent) keep a twin."""
    models = list(apps.get_app_config("paycollect").get_models())
    tables = {model._meta.db_table for model in models}
    unique = {
        (model._meta.db_table, field.column)
        for model in models
        for field in model._meta.concrete_fields
        if field.unique and (field.db_type(connection) or "").startswith("varchar")
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename, indexdef FROM pg_indexes WHERE indexdef LIKE '%%pattern_ops%%'")
        twins = {
            (table, re.search(r"\((\w+) (?:varchar|text)_pattern_ops\)", definition)[1])
            for table, definition in cursor.fetchall()
            if table in tables
        }
    assert twins == unique
    # Written on every call to the service, every callback stored, every fetch claimed, every payment:
    # their unique columns are constraints (no twin), not unique=True.
    for hot in [
        ("paycollect_apicall", "task_id"),
        ("paycollect_receivedcallback", "dedupe_key"),
        ("paycollect_fetchmark", "uuid"),
        ("paycollect_transaction", "uuid"),
    ]:
        assert hot not in twins
