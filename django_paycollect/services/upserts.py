"""The only SQL the app writes by hand: two statements Django's public API cannot say.

1. A new callback's INSERT that a redelivery turns into nothing inserted, and that returns the new row's key
   (``INSERT ... ON CONFLICT (dedupe_key) DO NOTHING RETURNING id``). ``bulk_create(ignore_conflicts=True)``
   says the first half but returns no key, and ``create`` meets the unique violation as an error: an ERROR
   line with the whole INSERT in PostgreSQL's log for every redelivery, and a savepoint inside a transaction.
2. The claim of the right to fetch a uuid, taken only when the last claim is old enough
   (``INSERT ... ON CONFLICT (uuid) DO UPDATE ... WHERE``): ``bulk_create(update_conflicts=True)`` has no
   condition, and a read-then-write would let two verifications both take it.

Both are written for the vendors the app supports (:data:`VENDORS`: PostgreSQL and SQLite, which both say
``ON CONFLICT`` and ``RETURNING``); check ``paycollect.E020`` refuses a project whose app database is another.
Every value is prepared by its model field's public API (``pre_save``, ``get_db_prep_save``), so a row is the
one ``save()`` would write: ``tests/app/test_upserts.py`` compares them column by column on SQLite and
PostgreSQL, on every supported Django. Neither statement goes through ``save()``: a project's ``pre_save`` and
``post_save`` receivers of ``ReceivedCallback`` and ``FetchMark`` hear nothing of them, whatever they connect
(listed in docs/services.md).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model
from django.utils import timezone

from ..models import FetchMark, ReceivedCallback

#: The database vendors these statements are written for (``connection.vendor``).
VENDORS = ("postgresql", "sqlite")


def insert_callback(callback: ReceivedCallback) -> bool:
    """Insert the new ``callback`` (an unsaved instance) unless one with its ``dedupe_key`` is stored: True,
    and ``callback.pk`` set, when inserted; False, nothing inserted and no error, for a redelivery."""
    if not callback._state.adding:
        raise ValueError("insert_callback stores a new callback, not a saved one")
    using = router.db_for_write(ReceivedCallback, instance=callback)
    connection = connections[using]
    meta = ReceivedCallback._meta
    fields = [field for field in meta.concrete_fields if field is not meta.pk]
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    columns = ", ".join(quote(str(field.column)) for field in fields)
    marks = ", ".join(["%s"] * len(fields))
    dedupe = quote(str(_field(ReceivedCallback, "dedupe_key").column))
    # Names from the model, quoted by the database's own rules; values are parameters.
    sql = (
        f"INSERT INTO {table} ({columns}) VALUES ({marks}) "  # noqa: S608
        f"ON CONFLICT ({dedupe}) DO NOTHING RETURNING {table}.{quote(str(meta.pk.column))}"
    )
    params = [field.get_db_prep_save(field.pre_save(callback, True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    callback.pk = row[0]
    callback._state.adding = False
    callback._state.db = using
    return True


def take_fetch_turn(
    uuid: str,
    interval: float | None,
    *,
    asked: dt.datetime | None = None,
    by: str = "",
    now: dt.datetime | None = None,
) -> dt.datetime | None:
    """Take the right to fetch transaction ``uuid`` now, at most once per ``interval`` seconds across every
    process (None: whenever the last was), in one statement: when it was taken, or None when it was taken
    less than ``interval`` ago or a fetch sent at or after ``asked`` found the uuid unknown. ``by``: who asks,
    when not a callback's verification; browser returns (``"return"``) take turns of their own, so neither
    waits for the other's (a return's fetch sent after a callback was queued answers it anyway)."""
    now = now or timezone.now()
    key, asked = (f"{by}:{uuid}" if by else uuid), asked or now
    due_before = None if interval is None else now - dt.timedelta(seconds=interval)
    connection = connections[router.db_for_write(FetchMark)]
    meta = FetchMark._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    uuid_column, claimed, not_found = (
        quote(str(_field(FetchMark, name).column)) for name in ("uuid", "claimed_at", "not_found_at")
    )
    prepare = _field(FetchMark, "claimed_at").get_db_prep_save
    params = [
        _field(FetchMark, "uuid").get_db_prep_save(key, connection),
        prepare(now, connection),
        prepare(asked, connection),
    ]
    # In DO UPDATE, the table's name is the row already there, EXCLUDED the one proposed. On a conflict,
    # PostgreSQL locks that row and reads its latest version: of claims racing, one matches the WHERE.
    condition = f"({table}.{not_found} IS NULL OR {table}.{not_found} < %s)"
    if due_before is not None:
        condition += f" AND ({table}.{claimed} IS NULL OR {table}.{claimed} <= %s)"
        params.append(prepare(due_before, connection))
    sql = (
        f"INSERT INTO {table} ({uuid_column}, {claimed}, {not_found}) VALUES (%s, %s, NULL) "  # noqa: S608
        f"ON CONFLICT ({uuid_column}) DO UPDATE SET {claimed} = EXCLUDED.{claimed} WHERE {condition}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        # One row inserted or updated, or none (the condition refused the update).
        return now if cursor.rowcount else None


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    found = model._meta.get_field(name)
    if not isinstance(found, Field):  # pragma: no cover (the names are the models' own columns)
        raise TypeError(f"{model.__name__}.{name} is not a column")
    return found
