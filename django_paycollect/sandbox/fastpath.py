"""Hand-written SQL for the per-request work every operation shares, and for Fetch transaction.

Why: compiling an ORM query costs a few hundred microseconds, more than a small Django view; a fetch made
four of them (fault check, key lookup, transaction, journal entry) and ran seven times slower than a
minimal view. These statements are built from the models' own table and column names and convert values
with Django's own converters, so they stay correct on SQLite and PostgreSQL; everything else uses the ORM.
Statements are built once per database vendor.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Model

from .models import Community, Fault, JournalEntry, RecurringSeries, Transaction
from .state import WRITE_LOCK

_Converter = Callable[[Any, Any, Any], Any]


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    return field


def _q(name: str | None) -> str:
    assert name is not None
    return connection.ops.quote_name(name)


def _table(model: type[Model]) -> str:
    return _q(model._meta.db_table)


def _column(model: type[Model], name: str) -> str:
    return _q(_field(model, name).column)


def _converters(fields: Sequence[Field[Any, Any]]) -> list[tuple[Any, list[_Converter]]]:
    out = []
    for field in fields:
        column = field.get_col(field.model._meta.db_table)
        out.append(
            (column, [*connection.ops.get_db_converters(column), *field.get_db_converters(connection)])
        )
    return out


def _convert(row: Sequence[Any], converters: list[tuple[Any, list[_Converter]]]) -> list[Any]:
    values = []
    for value, (expression, functions) in zip(row, converters, strict=True):
        converted = value
        for function in functions:
            converted = function(converted, expression, connection)
        values.append(converted)
    return values


@dataclass(frozen=True)
class _Statements:
    faults: str
    transaction: str
    transaction_qmark: str
    transaction_converters: list[tuple[Any, list[_Converter]]]
    series_converters: list[tuple[Any, list[_Converter]]]
    journal_insert: str
    journal_fields: list[Field[Any, Any]]


_TX_FIELDS = (
    "id",
    "uuid",
    "created",
    "member_id",
    "total_amount",
    "currency",
    "payment_for",
    "status",
    "custom_fields_json",
    "transaction_order",
)
_SERIES_FIELDS = (
    "id",
    "parent_uuid",
    "recurring_count",
    "expiry_date",
    "minimum_days_between_payments",
    "active",
)
_statements: dict[str, _Statements] = {}


def _build() -> _Statements:
    tx_fields = [_field(Transaction, n) for n in _TX_FIELDS]
    series_fields = [_field(RecurringSeries, n) for n in _SERIES_FIELDS]
    columns = [f"t.{_q(f.column)}" for f in tx_fields] + [f"s.{_q(f.column)}" for f in series_fields]
    journal_fields = [f for f in JournalEntry._meta.concrete_fields if not f.primary_key]
    transaction_sql = (
        f"SELECT {', '.join(columns)} FROM {_table(Transaction)} t "  # noqa: S608
        f"LEFT OUTER JOIN {_table(RecurringSeries)} s "
        f"ON s.{_column(RecurringSeries, 'id')} = t.{_column(Transaction, 'series')} "
        f"WHERE t.{_column(Transaction, 'uuid')} = %s AND t.{_column(Transaction, 'community')} = %s"
    )
    return _Statements(
        faults=(
            f"SELECT {', '.join(_column(Fault, name) for name in _FAULT_FIELDS)} "  # noqa: S608
            f"FROM {_table(Fault)} ORDER BY {_column(Fault, 'id')}"
        ),
        transaction=transaction_sql,
        transaction_qmark=transaction_sql.replace("%s", "?"),
        transaction_converters=_converters(tx_fields),
        series_converters=_converters(series_fields),
        journal_insert=(
            f"INSERT INTO {_table(JournalEntry)} ({', '.join(_q(f.column) for f in journal_fields)}) "  # noqa: S608
            f"VALUES ({', '.join(['%s'] * len(journal_fields))})"
        ),
        journal_fields=journal_fields,
    )


def _sql() -> _Statements:
    statements = _statements.get(connection.vendor)
    if statements is None:
        statements = _statements[connection.vendor] = _build()
    return statements


# --- faults -------------------------------------------------------------------------------------------


# How long a process trusts what it last read about faults and keys without asking the database again.
# Every database call also hands the interpreter lock to another request thread, and under concurrency
# those hand-offs, more than the queries, made a fetch slow. Changes made by this process (the control
# API, a reset) apply at once; changes made by another process serving the same database (a sandbox
# mounted under several workers) apply within this time.
TRUST_SECONDS = 1.0

_FAULT_FIELDS = ("id", "operation", "kind", "status_code", "body", "latency_ms", "after_work", "remaining")


@dataclass(frozen=True)
class FaultRow:
    """A stored fault as last read (see :data:`TRUST_SECONDS`)."""

    id: int
    operation: str
    kind: str
    status_code: int | None
    body: str
    latency_ms: int
    after_work: bool
    remaining: int | None


_faults: tuple[FaultRow, ...] = ()
_faults_read_at = -TRUST_SECONDS
# Bumped by forget_faults(): a read that started before a change is used once but never cached,
# so a fault injected while another thread was reading takes effect at once.
_faults_generation = 0


def oldest_fault(operation: str) -> FaultRow | None:
    """The oldest stored fault for ``operation`` (or for every operation), as last read."""
    global _faults, _faults_read_at
    rows = _faults
    if time.monotonic() - _faults_read_at >= TRUST_SECONDS:
        generation = _faults_generation
        with connection.cursor() as cursor:
            cursor.execute(_sql().faults)
            rows = tuple(
                FaultRow(int(id_), str(op), str(kind), code, str(body), int(latency), bool(after), left)
                for id_, op, kind, code, body, latency, after, left in cursor.fetchall()
            )
        if generation == _faults_generation:
            _faults, _faults_read_at = rows, time.monotonic()
    return next((row for row in rows if row.operation in (operation, Fault.ANY_OPERATION)), None)


def forget_faults() -> None:
    global _faults_read_at, _faults_generation
    _faults_generation += 1
    _faults_read_at = -TRUST_SECONDS


# --- the API key ----------------------------------------------------------------------------------------

# Communities by key digest, with the time they were read. A community row is never edited in place
# (a reset deletes and recreates), so only its existence can go stale.
_communities: dict[str, tuple[Community, float]] = {}
_communities_lock = threading.Lock()
# As for faults: a read that raced a reset is used once, never cached.
_communities_generation = 0


def community_for_key_digest(digest: str) -> Community | None:
    cached = _communities.get(digest)
    if cached is not None and time.monotonic() - cached[1] < TRUST_SECONDS:
        return cached[0]
    generation = _communities_generation
    # The logo can be large and is never needed to authenticate.
    community = Community.objects.defer("logo").filter(api_key_sha256=digest).first()
    if community is not None:
        with _communities_lock:
            if generation != _communities_generation:
                return community
            if len(_communities) > 1000:
                _communities.clear()
            _communities[digest] = (community, time.monotonic())
    return community


def forget_communities() -> None:
    global _communities_generation
    with _communities_lock:
        _communities_generation += 1
        _communities.clear()


# --- fetch transaction ----------------------------------------------------------------------------


def transaction_row(transaction_uuid: uuid.UUID, community_pk: int) -> dict[str, Any] | None:
    """The columns the Transaction resource needs (and its series'), converted as the ORM would."""
    sql = _sql()
    uuid_param = _field(Transaction, "uuid").get_db_prep_value(transaction_uuid, connection)
    if connection.vendor == "sqlite":
        # The DB-API cursor directly: Django's wrapper rewrites the placeholders with a regex on every call.
        connection.ensure_connection()
        assert connection.connection is not None
        cursor = connection.connection.cursor()
        try:
            cursor.execute(sql.transaction_qmark, [uuid_param, community_pk])
            row = cursor.fetchone()
        finally:
            cursor.close()
    else:
        with connection.cursor() as django_cursor:
            django_cursor.execute(sql.transaction, [uuid_param, community_pk])
            row = django_cursor.fetchone()
    if row is None:
        return None
    split = len(_TX_FIELDS)
    result: dict[str, Any] = dict(
        zip(_TX_FIELDS, _convert(row[:split], sql.transaction_converters), strict=True)
    )
    result["series"] = None
    if row[split] is not None:  # the series' id: a recurring transaction
        series = _convert(row[split:], sql.series_converters)
        result["series"] = dict(zip(_SERIES_FIELDS, series, strict=True))
    return result


# --- the journal ----------------------------------------------------------------------------------


def insert_journal(entries: Sequence[JournalEntry]) -> None:
    sql = _sql()
    rows = [
        [f.get_db_prep_save(getattr(e, f.attname), connection) for f in sql.journal_fields] for e in entries
    ]
    # Serialised inside the process: SQLite answers a second concurrent writer "busy" and its retry
    # sleeps whole milliseconds, far longer than waiting for this lock.
    with WRITE_LOCK, transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql.journal_insert, rows)
