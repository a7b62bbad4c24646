"""The INSERT of a new callback row, written once per database: the hot path of callback intake.

``ReceivedCallback.objects.create(**fields)`` builds a model instance and compiles its INSERT for every
callback, which at hundreds of callbacks a second was a good part of a request. Here the statement is built
once per kind of database from the model's own fields, and each value is still prepared by its field
(``get_db_prep_save``, as the ORM prepares it; a default that is not computed, once), so the row is the same
(a test stores the same callback both ways and compares the rows). Used only by the callback ledger, the one
writer of a callback's state.

When a project listens to ``pre_save`` or ``post_save`` of ``ReceivedCallback``, the ORM's ``create`` is
used instead, so its receivers still hear of every row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, signals

from ..models import ReceivedCallback


@dataclass(frozen=True)
class _Statement:
    sql: str
    fields: tuple[Field[Any, Any], ...]  # in the order of the statement's columns
    names: frozenset[str]  # what a caller may give (not the relations)
    defaults: dict[str, Any]  # prepared once: the defaults that are not computed (a callable's are)
    returning: bool  # the new key comes back with the INSERT


#: One statement per database vendor.
_STATEMENTS: dict[str, _Statement] = {}


def _statement(connection: BaseDatabaseWrapper) -> _Statement:
    key = connection.vendor
    if key not in _STATEMENTS:
        meta = ReceivedCallback._meta
        fields = tuple(f for f in meta.concrete_fields if f is not meta.pk)
        quote = connection.ops.quote_name
        table, pk = quote(meta.db_table), quote(str(meta.pk.column))
        columns = ", ".join(quote(str(f.column)) for f in fields)
        values = ", ".join(["%s"] * len(fields))
        # Names from the model, quoted by the database's own rules; values are parameters.
        sql = f"INSERT INTO {table} ({columns}) VALUES ({values})"  # noqa: S608
        returning = bool(connection.features.can_return_columns_from_insert)
        if returning:  # PostgreSQL, SQLite 3.35 and later: the new key in the same round trip
            sql = f"{sql} RETURNING {table}.{pk}"
        defaults = {
            f.name: f.get_db_prep_save(f.get_default(), connection)
            for f in fields
            if not (f.has_default() and callable(f.default))
        }
        names = frozenset(f.name for f in fields if not f.is_relation)
        _STATEMENTS[key] = _Statement(sql, fields, names, defaults, returning)
    return _STATEMENTS[key]


def insert_callback(**values: Any) -> int:
    """Insert a ReceivedCallback row with these values (by field name; the others take their defaults) and
    return its primary key. Raises ``IntegrityError`` as ``create`` does (the unique ``dedupe_key``)."""
    model = ReceivedCallback
    if signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
        return int(model.objects.create(**values).pk)
    connection = connections[router.db_for_write(model)]
    statement = _statement(connection)
    if not statement.names.issuperset(values):
        unknown = sorted(set(values) - statement.names)
        raise TypeError(f"not a field of ReceivedCallback without a relation: {unknown}")
    defaults = statement.defaults
    params = [
        f.get_db_prep_save(values[f.name], connection)
        if f.name in values
        else defaults[f.name]
        if f.name in defaults
        else f.get_db_prep_save(f.get_default(), connection)
        for f in statement.fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        if statement.returning:
            return int(cursor.fetchone()[0])
        return int(connection.ops.last_insert_id(cursor, model._meta.db_table, str(model._meta.pk.column)))
