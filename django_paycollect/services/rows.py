"""Whole rows read by a unique column, and new rows inserted, by statements built once: the hot reads of a
callback's verification (the callback, its transaction, the community's credentials) and the rows written
once per fetch or status change (an API call, a status change).

``Model.objects.get(pk=...)`` compiles its SELECT on every call; for a model of forty columns that compiling
was most of a read's CPU (about 0.6 ms of 0.75 on the 2-core development machine, where the statement and its
round trip took 0.15). Here the ORM compiles the same query once per model, column, database and thread,
and each row becomes an instance through the ORM's own converters (``from_db_value`` of every field, the
backend's) and ``Model.from_db``, so the instance is the one ``get`` returns (a test compares them field by
field, on SQLite and on PostgreSQL). Once per thread: the converters Django hands out belong to the thread's
connection.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model, signals

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class _Select:
    sql: str
    attnames: tuple[str, ...]  # of the model's fields, in the order of the statement's columns
    converters: tuple[tuple[int, tuple[Any, ...], Any], ...]  # (column, converters, expression)
    field: Field[Any, Any]  # the column looked up: it prepares the value as the ORM's lookup does


_compiled = threading.local()


def read_row(model: type[M], column: str, value: Any, *, using: str | None = None) -> M | None:
    """The instance of ``model`` whose unique ``column`` equals ``value``, as ``objects.get`` would read it,
    or None when there is none."""
    if value is None:
        raise ValueError(f"{model.__name__}.{column}: a value to look for, not None")
    alias = using or router.db_for_read(model)
    selects: dict[tuple[type[Model], str, str], _Select] = _compiled.__dict__.setdefault("selects", {})
    select = selects.get((model, column, alias))
    connection = connections[alias]
    if select is None:
        select = selects[(model, column, alias)] = _compile(model, column, value, alias, connection)
    field = select.field
    param = field.get_db_prep_value(field.get_prep_value(value), connection, prepared=True)
    with connection.cursor() as cursor:
        cursor.execute(select.sql, [param])
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for position, converters, expression in select.converters:
        for converter in converters:
            values[position] = converter(values[position], expression, connection)
    return model.from_db(alias, select.attnames, values)


def _compile(
    model: type[Model], column: str, value: Any, alias: str, connection: BaseDatabaseWrapper
) -> _Select:
    meta = model._meta
    field = meta.get_field(column)
    unique = isinstance(field, Field) and (
        field.unique or any(tuple(c.fields) == (field.name,) for c in meta.total_unique_constraints)
    )
    if not isinstance(field, Field) or not unique:
        raise ValueError(f"{model.__name__}.{column} is not a unique column")
    compiler = model._default_manager.db_manager(alias).filter(**{column: value}).query.get_compiler(alias)
    sql, params = compiler.as_sql()
    if len(params) != 1:  # pragma: no cover (one lookup, one parameter)
        raise ValueError(f"{model.__name__}.{column}: a lookup of one parameter expected, not {len(params)}")
    klass_info = compiler.klass_info or {}
    positions = list(klass_info.get("select_fields", ()))
    if positions != list(range(compiler.col_count)):  # pragma: no cover (a plain query of one model)
        raise ValueError(f"{model.__name__}: the statement selects more than the model's own columns")
    expressions = [compiler.select[position][0] for position in positions]
    converters = tuple(
        (position, tuple(found), expression)
        for position, (found, expression) in compiler.get_converters(expressions).items()
    )
    attnames = tuple(expression.target.attname for expression in expressions)
    return _Select(sql, attnames, converters, field)


#: Each model's INSERT per database vendor, and its columns' fields in order: built once, not per row.
_INSERTS: dict[tuple[type[Model], str], tuple[str, tuple[Field[Any, Any], ...]]] = {}


def insert_row(row: Model) -> None:
    """Insert a new ``row`` as ``row.save()`` does, by a statement built once from its model's fields.

    For the rows written once per fetch or status change (an ApiCall, a status change), whose INSERT the ORM
    compiles again for every row: in reconciliation that compiling cost more of the process's time than the
    statement. Each value is still prepared by its field (``pre_save``, ``get_db_prep_save``), so the row is
    the same (a test compares them column by column). ``row.save()`` when a project listens to the model's
    ``pre_save`` or ``post_save``, when the row is stored already, or where the database cannot return the
    new key from the INSERT."""
    model = type(row)
    connection = connections[router.db_for_write(model, instance=row)]
    if (
        not row._state.adding
        or not connection.features.can_return_columns_from_insert
        or signals.pre_save.has_listeners(model)
        or signals.post_save.has_listeners(model)
    ):
        row.save()
        return
    # As save() does: a link saved after the row was built is stored by its key (Django 5.2 to 6.1 have it).
    row._prepare_related_fields_for_save(operation_name="save")  # type: ignore[attr-defined]
    statement = _INSERTS.get((model, connection.vendor))
    if statement is None:
        meta = model._meta
        fields = tuple(field for field in meta.concrete_fields if field is not meta.pk)
        quote = connection.ops.quote_name
        columns = ", ".join(quote(str(field.column)) for field in fields)
        marks = ", ".join(["%s"] * len(fields))
        table = quote(meta.db_table)
        # Names from the model, quoted by the database's own rules; values are parameters.
        sql = (
            f"INSERT INTO {table} ({columns}) VALUES ({marks}) RETURNING {table}.{quote(str(meta.pk.column))}"  # noqa: S608
        )
        statement = _INSERTS[model, connection.vendor] = (sql, fields)
    sql, fields = statement
    params = [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row.pk = cursor.fetchone()[0]
    row._state.adding = False
    row._state.db = connection.alias
