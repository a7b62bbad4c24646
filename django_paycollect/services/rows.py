"""Whole rows read by a unique column, new rows inserted, and rows updated by their key, by statements built
once: the hot reads of a callback's verification (the callback, its transaction, the community's
credentials), the rows written once per fetch or status change (an API call, a status change), and the
guarded writes of a sync and of a verification (a transaction's fetched status, a callback's outcome).

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


#: Each UPDATE by model, database vendor, columns written, columns counted up, columns checked equal (and
#: those of them checked NULL), columns checked unequal: built once per shape, not per row. With the fields
#: of its written values and of its checked values (a NULL is checked without one), in order.
_UPDATES: dict[tuple[Any, ...], tuple[str, tuple[Field[Any, Any], ...], tuple[Field[Any, Any], ...]]] = {}


def update_row(
    model: type[Model],
    pk: Any,
    values: dict[str, Any],
    *,
    equal: dict[str, Any] | None = None,
    unequal: dict[str, Any] | None = None,
    count_up: tuple[str, ...] = (),
) -> int:
    """``model.objects.filter(pk=pk, **equal).exclude(**unequal).update(**values)``, and each field of
    ``count_up`` one more, by a statement built once per shape; returns the rows written (0 or 1). Names are
    fields' names or attributes (``series`` or ``series_id``); each value is prepared by its field as the
    ORM's UPDATE prepares it (a related object by its key), each checked value as its lookup does; an
    ``equal`` None is ``IS NULL``. For the writes made once per fetch or verification, whose compiling by
    the ORM cost more than the statement (tests compare the rows with the ORM's)."""
    equal, unequal = equal or {}, unequal or {}
    connection = connections[router.db_for_write(model)]
    nulls = tuple(name for name, value in equal.items() if value is None)
    key = (model, connection.vendor, tuple(values), count_up, tuple(equal), nulls, tuple(unequal))
    statement = _UPDATES.get(key)
    if statement is None:
        statement = _UPDATES[key] = _update_statement(model, connection, key)
    sql, written, checked = statement
    params = [
        _prepared(field, value, connection) for field, value in zip(written, values.values(), strict=True)
    ]
    params.append(pk)
    compared = [value for value in (*equal.values(), *unequal.values()) if value is not None]
    params += [
        field.get_db_prep_value(value, connection) for field, value in zip(checked, compared, strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)


def _update_statement(
    model: type[Model], connection: BaseDatabaseWrapper, key: tuple[Any, ...]
) -> tuple[str, tuple[Field[Any, Any], ...], tuple[Field[Any, Any], ...]]:
    _, _, names, count_up, equal, nulls, unequal = key
    meta = model._meta
    quote = connection.ops.quote_name

    def column(name: str) -> str:
        return quote(str(_field(model, name).column))

    written = tuple(_field(model, name) for name in names)
    if any(field.primary_key for field in written):
        raise TypeError(f"update_row does not change a {model.__name__}'s key")
    sets = [f"{quote(str(field.column))} = %s" for field in written]
    sets += [f"{column(name)} = {column(name)} + 1" for name in count_up]
    if not sets:
        raise TypeError("update_row needs something to write")
    where = [f"{quote(str(meta.pk.column))} = %s"]
    where += [f"{column(name)} IS NULL" if name in nulls else f"{column(name)} = %s" for name in equal]
    where += [f"NOT ({column(name)} = %s)" for name in unequal]
    checked = tuple(_field(model, name) for name in (*equal, *unequal) if name not in nulls)
    # Names from the model, quoted by the database's own rules; values are parameters.
    sql = f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} WHERE {' AND '.join(where)}"  # noqa: S608
    return sql, written, checked


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    """A concrete field by its name or its attribute (``series_id``)."""
    meta = model._meta
    for field in meta.concrete_fields:
        if name in (field.name, field.attname):
            return field
    return meta.get_field(name)  # type: ignore[return-value]  # raises FieldDoesNotExist, naming it


def _prepared(field: Field[Any, Any], value: Any, connection: BaseDatabaseWrapper) -> Any:
    # As the ORM's UPDATE prepares a value: a related object by its key, then the field's own preparation.
    if field.remote_field is not None and hasattr(value, "prepare_database_save"):
        value = value.prepare_database_save(field)
    return field.get_db_prep_save(value, connection)
