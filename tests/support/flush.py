"""The test database emptied between transactional tests without making its content types and permissions
again each time.

After a transactional test Django empties every table, then sends ``post_migrate``, whose receivers
(contenttypes and auth here) make the content types and permissions again: two queries per model, about
50 ms, paid by each of the suite's thousand transactional tests. They make the same rows every time, so the
first flush of a process sends the signal and keeps what its receivers wrote, and every later flush writes
those rows back, one INSERT per table. A flush of a narrowed app registry (``available_apps``), or with
other receivers connected than at the first flush, sends the signal as Django does.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.core.management.commands import flush
from django.core.management.sql import emit_post_migrate_signal
from django.db import connections, transaction
from django.db.models.signals import post_migrate

#: (database alias, receivers) -> the rows post_migrate wrote into an empty database: (table, columns, rows).
_written: dict[tuple[str, tuple[Any, ...]], list[tuple[str, list[str], list[tuple[Any, ...]]]]] = {}


def install() -> None:
    flush.emit_post_migrate_signal = _after_flush  # type: ignore[attr-defined]


def _after_flush(verbosity: int, interactive: bool, db: str, **kwargs: Any) -> None:
    if kwargs or apps.stored_app_configs:  # options Django may add, or apps narrowed for this test
        emit_post_migrate_signal(verbosity, interactive, db, **kwargs)
        return
    key = (db, tuple(lookup for lookup, *_ in post_migrate.receivers))
    rows = _written.get(key)
    if rows is None:
        emit_post_migrate_signal(verbosity, interactive, db)
        _written[key] = _rows_of_every_table(db)
        return
    connection = connections[db]
    quote = connection.ops.quote_name
    # One transaction: foreign keys are checked at its end, whatever the order of the tables.
    with transaction.atomic(using=db), connection.cursor() as cursor:
        for table, columns, values in rows:
            names = ", ".join(quote(column) for column in columns)
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {quote(table)} ({names}) VALUES ({marks})", values)  # noqa: S608
    ContentType.objects.clear_cache()


def _rows_of_every_table(db: str) -> list[tuple[str, list[str], list[tuple[Any, ...]]]]:
    connection = connections[db]
    quote = connection.ops.quote_name
    written = []
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.django_table_names(only_existing=True)):
            cursor.execute(f"SELECT * FROM {quote(table)}")  # noqa: S608
            values = [tuple(row) for row in cursor.fetchall()]
            if values:
                written.append((table, [column[0] for column in cursor.description], values))
    return written
