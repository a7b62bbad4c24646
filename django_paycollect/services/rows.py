"""Whole rows read by a unique column, with the ORM's own statement compiled once: the hot reads of a
callback's verification (the callback, its transaction, the community's credentials).

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
from django.db.models import Field, Model

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
