"""What the migration makes: the indexes of the app's text columns on PostgreSQL."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.db import connection


@pytest.mark.postgres
@pytest.mark.django_db
def test_only_unique_true_columns_keep_a_pattern_index_on_postgresql():
    """Django adds a ``varchar_pattern_ops`` twin (for ``LIKE``) to each text column with ``db_index`` or
    ``unique``. The app matches identifiers and states only exactly, so its indexed columns use plain
    indexes (``models.fields.exact_indexes``) and unique constraints; only the rarely written unique=True
    columns (a community's id, a series' parent) keep a twin."""
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
