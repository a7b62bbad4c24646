"""The statements of callback intake that meet a row already there, written once per database: the INSERT
of a new callback (the hot path) and the claim of the right to fetch a uuid; and the two writes of a
verification to the callback's row (the attempt counted, the outcome recorded), for the same reason.

``ReceivedCallback.objects.create(**fields)`` builds a model instance and compiles its INSERT for every
callback, which at hundreds of callbacks a second was a good part of a request. Here the statement is built
once per kind of database from the model's own fields, and each value is still prepared by its field
(``get_db_prep_save``, as the ORM prepares it; a default that is not computed, once; the one instant given
for the three timestamps of a new callback, once), so the row is the same
(a test stores the same callback both ways and compares the rows). Used only by the callback ledger, the one
writer of a callback's state, and (the fetch claim) by browser returns.

A redelivery, and a fetch claim that another verification holds, are ordinary events, not errors: both
statements say ``ON CONFLICT`` on their unique column, so the database answers "nothing inserted" instead of
raising a unique violation. A violation would be an ERROR in PostgreSQL's log, with the whole INSERT, for
every redelivery (and would need a savepoint inside a transaction).

When a project listens to ``pre_save`` or ``post_save`` of ``ReceivedCallback``, the ORM's ``create`` is
used instead, so its receivers still hear of every row.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateTimeField, Field, Model, signals
from django.utils import timezone

from ..models import FetchMark, ReceivedCallback
from .common import savepoint_if_atomic
from .rows import update_row

#: The unique column that makes a redelivery a duplicate (``paycollect_callback_dedupe_key``).
_DEDUPE_KEY = "dedupe_key"


@dataclass(frozen=True)
class _Statement:
    sql: str
    fields: tuple[Field[Any, Any], ...]  # in the order of the statement's columns
    names: frozenset[str]  # what a caller may give (not the relations)
    defaults: dict[str, Any]  # prepared once: the defaults that are not computed (a callable's are)
    returning: bool  # the new key comes back with the INSERT
    on_conflict: bool  # a row with the same dedupe_key is skipped by the statement, not refused
    #: Per field: whether its prepared value depends on the value alone (a DateTimeField: the same instant
    #: given for received_at, queued_at and next_attempt_at is prepared once per row).
    shared: tuple[bool, ...]


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    found = model._meta.get_field(name)
    if not isinstance(found, Field):  # pragma: no cover (the names are the models' own columns)
        raise TypeError(f"{model.__name__}.{name} is not a column")
    return found


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
        # PostgreSQL and SQLite: a redelivery inserts nothing and raises nothing. Naming the column keeps
        # any other violation (a NOT NULL, say) an error.
        on_conflict = bool(connection.features.supports_update_conflicts_with_target)
        if on_conflict:
            sql = f"{sql} ON CONFLICT ({quote(str(_field(ReceivedCallback, _DEDUPE_KEY).column))}) DO NOTHING"
        returning = bool(connection.features.can_return_columns_from_insert)
        if returning:  # PostgreSQL, SQLite 3.35 and later: the new key in the same round trip (no row: none)
            sql = f"{sql} RETURNING {table}.{pk}"
        defaults = {
            f.name: f.get_db_prep_save(f.get_default(), connection)
            for f in fields
            if not (f.has_default() and callable(f.default))
        }
        names = frozenset(f.name for f in fields if not f.is_relation)
        shared = tuple(type(f) is DateTimeField for f in fields)
        _STATEMENTS[key] = _Statement(sql, fields, names, defaults, returning, on_conflict, shared)
    return _STATEMENTS[key]


def insert_callback(**values: Any) -> int | None:
    """Insert a ReceivedCallback row with these values (by field name; the others take their defaults) and
    return its primary key; None, and no row, when a callback with the same ``dedupe_key`` is stored
    already (a redelivery). Never raises ``IntegrityError`` for that."""
    model = ReceivedCallback
    if signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model):
        return _create(**values)
    connection = connections[router.db_for_write(model)]
    statement = _statement(connection)
    if not statement.names.issuperset(values):
        unknown = sorted(set(values) - statement.names)
        raise TypeError(f"not a field of ReceivedCallback without a relation: {unknown}")
    defaults = statement.defaults
    params: list[Any] = []
    prepared: dict[int, Any] = {}  # by the given object's id, for the shared fields (``values`` holds them)
    for f, shared in zip(statement.fields, statement.shared, strict=True):
        if f.name not in values:
            params.append(
                defaults[f.name] if f.name in defaults else f.get_db_prep_save(f.get_default(), connection)
            )
        elif shared:
            given = values[f.name]
            if id(given) not in prepared:
                prepared[id(given)] = f.get_db_prep_save(given, connection)
            params.append(prepared[id(given)])
        else:
            params.append(f.get_db_prep_save(values[f.name], connection))
    if not statement.on_conflict:  # a database without ON CONFLICT: the violation, caught
        try:
            with savepoint_if_atomic(model), connection.cursor() as cursor:
                cursor.execute(statement.sql, params)
                return _inserted_pk(connection, cursor, statement)
        except IntegrityError:
            return None
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        return _inserted_pk(connection, cursor, statement)


def _inserted_pk(connection: BaseDatabaseWrapper, cursor: Any, statement: _Statement) -> int | None:
    if statement.returning:
        row = cursor.fetchone()
        return None if row is None else int(row[0])
    if cursor.rowcount == 0:
        return None
    meta = ReceivedCallback._meta
    return int(connection.ops.last_insert_id(cursor, meta.db_table, str(meta.pk.column)))


def _create(**values: Any) -> int | None:
    # The ORM's create, so pre_save and post_save receivers hear of the row. A redelivery is found by a
    # lookup first: only one racing its original meets the unique violation (caught, as a redelivery).
    model = ReceivedCallback
    key = values.get(_DEDUPE_KEY)
    if key is not None and model.objects.filter(dedupe_key=key).exists():
        return None
    try:
        with savepoint_if_atomic(model):
            return int(model.objects.create(**values).pk)
    except IntegrityError:
        if key is not None and model.objects.filter(dedupe_key=key).exists():
            return None
        raise


# --- the right to fetch a uuid ------------------------------------------------------------------------


#: One statement per (database vendor, whether the last claim's age counts).
_CLAIMS: dict[tuple[str, bool], str] = {}


def _claim_statement(connection: BaseDatabaseWrapper, timed: bool) -> str:
    key = (connection.vendor, timed)
    if key not in _CLAIMS:
        meta = FetchMark._meta
        quote = connection.ops.quote_name
        table = quote(meta.db_table)
        uuid, claimed, not_found = (
            quote(str(_field(FetchMark, n).column)) for n in ("uuid", "claimed_at", "not_found_at")
        )
        # In DO UPDATE, the table's name is the row already there, EXCLUDED the one proposed. On a conflict,
        # PostgreSQL locks that row and reads its latest version: of claims racing, one matches the WHERE.
        not_answered = f"({table}.{not_found} IS NULL OR {table}.{not_found} < %s)"
        due = f" AND ({table}.{claimed} IS NULL OR {table}.{claimed} <= %s)" if timed else ""
        _CLAIMS[key] = (
            f"INSERT INTO {table} ({uuid}, {claimed}, {not_found}) VALUES (%s, %s, NULL) "  # noqa: S608
            f"ON CONFLICT ({uuid}) DO UPDATE SET {claimed} = EXCLUDED.{claimed} "
            f"WHERE {not_answered}{due}"
        )
    return _CLAIMS[key]


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
    connection = connections[router.db_for_write(FetchMark)]  # SQLite and PostgreSQL: both say ON CONFLICT
    prepare = _field(FetchMark, "claimed_at").get_db_prep_save
    params = [_field(FetchMark, "uuid").get_db_prep_save(key, connection), prepare(now, connection)]
    params.append(_field(FetchMark, "not_found_at").get_db_prep_save(asked, connection))
    if due_before is not None:
        params.append(prepare(due_before, connection))
    with connection.cursor() as cursor:
        cursor.execute(_claim_statement(connection, due_before is not None), params)
        # One row inserted or updated, or none (the condition refused the update).
        return now if cursor.rowcount else None


# --- a verification's two writes of the callback's row --------------------------------------------------


def update_callback(
    callback_id: int, *, count_attempt: bool = False, unless_state: str | None = None, **values: Any
) -> int:
    """Write ``values`` (by field name) to the callback's row, counting one more attempt when
    ``count_attempt``, and leaving a row whose state is ``unless_state`` alone; returns the rows written
    (0 or 1). What ``ReceivedCallback.objects.filter(pk=...).exclude(state=...).update(...)`` writes (a test
    compares the rows), by a statement built once (:func:`~.rows.update_row`): a verification writes the row
    twice, and the ORM's compiling of those two UPDATEs was a fifth of its CPU."""
    return update_row(
        ReceivedCallback,
        callback_id,
        values,
        unequal=None if unless_state is None else {"state": unless_state},
        count_up=("attempts",) if count_attempt else (),
    )
