"""The exports finance takes into a spreadsheet or an accounting import: transactions, refunds and the
renewals of recurring series, for a period, a community and a currency, as CSV or XLSX (their columns, period,
amounts, times and safe cells as docs/finance-and-operations.md describes them).

One place defines them: each export is a list of columns, read in one query whose rows are streamed
(``iterator(chunk_size=...)``: constant memory at a million rows, no query per row). ``paycollect_export``,
the admin's actions and the dashboard's links only call it.
"""

from __future__ import annotations

import csv
import datetime as dt
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import IO, Any

from django.db.models import Model, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from ..amounts import amount_text
from ..conf import paycollect_settings
from ..models import Community, RecurringSeries, Refund, Transaction
from ..models.payments import RENEWAL
from .figures import midnight

#: Rows read from the database at a time (a server-side cursor's fetch on PostgreSQL).
CHUNK_SIZE = 2000
#: The formats an export is written in.
FORMATS = ("csv", "xlsx")
#: What a row's period is read by: its creation or its completion.
BASES = ("completed", "created")
DEFAULT_BASIS = "completed"
#: The days a period can start and end on: a day's midnight moved by any time zone's offset stays a datetime.
FIRST_DAY = dt.date(1, 1, 2)
LAST_DAY = dt.date(9999, 12, 30)

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

#: The first characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

# What a column holds, which says how each format writes it.
TEXT, AMOUNT, TIME, NUMBER = "text", "amount", "time", "number"


class ExportError(ValueError):
    """A request for an export that cannot be made (a bad date, an unknown community or format): its
    message says which and why, for the command's usage error and the admin's message."""


# --- what an export is ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column: its header (the spec's word), the ORM path read, what it holds, and whether it is
    personal data that ``include_pii=False`` leaves out."""

    name: str
    field: str
    kind: str = TEXT
    pii: bool = False


@dataclass(frozen=True)
class Export:
    name: str
    model: type[Model]
    columns: tuple[Column, ...]
    #: Model permissions (``app_label.codename``) of which one lets a user see these rows in the admin.
    viewers: tuple[str, ...]
    #: The rows that completed (what ``completed`` lists).
    completed: Q
    #: The ORM paths of the period's two bases, of the community, of the currency and of the row's status
    #: (by default a transaction's).
    created_field: str = "created_at"
    completed_field: str = "succeeded_at"
    community_field: str = "community_id"
    currency_field: str = "currency"
    status_field: str = "status"
    #: What every row of this export is (the renewals are transactions of one kind).
    only: Q | None = None

    @property
    def statuses(self) -> tuple[str, ...]:
        """The values its ``status`` column can hold (the model's choices)."""
        field = self.model._meta.get_field(self.status_field)
        choices = getattr(field, "choices", None) or ()
        return tuple(str(value) for value, _label in choices)

    def columns_for(self, include_pii: bool = True) -> tuple[Column, ...]:
        return tuple(column for column in self.columns if include_pii or not column.pii)

    @property
    def ordering(self) -> tuple[str, ...]:
        # Oldest first, as a ledger reads; the primary key makes the order total (and the output repeatable).
        return (self.created_field, "pk")


def _payment_columns(refund: bool) -> tuple[Column, ...]:
    """The columns of a payment: the transaction's own, or (``refund``) a refund's transaction's."""
    at = "transaction__" if refund else ""
    return (
        Column("customer_name", f"{at}customer_name", pii=True),
        Column("customer_email", f"{at}customer_email", pii=True),
        Column("customer_phone", f"{at}customer_phone", pii=True),
        Column("member_id", f"{at}member_id", pii=True),
        Column("merchant_reference", f"{at}merchant_reference"),
        Column("payment_for", f"{at}payment_for"),
        Column("pay_using", f"{at}pay_using"),
    )


TRANSACTIONS = Export(
    name="transactions",
    model=Transaction,
    columns=(
        Column("uuid", "uuid"),
        Column("id", "service_id", NUMBER),
        Column("community_id", "community_id"),
        Column("status", "status"),
        Column("amount", "total_amount", AMOUNT),
        Column("currency", "currency"),
        Column("refunded_amount", "refunded_amount", AMOUNT),
        *_payment_columns(refund=False),
        Column("parent_transaction", "parent_uuid"),
        Column("transaction_order", "transaction_order", NUMBER),
        Column("created", "created_at", TIME),
        Column("completed", "succeeded_at", TIME),
    ),
    viewers=("paycollect.view_transaction",),
    completed=Q(succeeded_at__isnull=False),
)

REFUNDS = Export(
    name="refunds",
    model=Refund,
    columns=(
        Column("id", "pk", NUMBER),
        Column("transaction_uuid", "transaction__uuid"),
        Column("community_id", "transaction__community_id"),
        Column("status", "state"),
        Column("refund_amount", "amount", AMOUNT),
        Column("currency", "transaction__currency"),
        Column("amount", "transaction__total_amount", AMOUNT),
        Column("refunded_amount", "transaction__refunded_amount", AMOUNT),
        *_payment_columns(refund=True),
        Column("created", "created_at", TIME),
        Column("completed", "completed_at", TIME),
    ),
    completed_field="completed_at",
    community_field="transaction__community_id",
    currency_field="transaction__currency",
    status_field="state",
    # A failed refund has a completion time too: completed means the money went back.
    completed=Q(state=Refund.SUCCEEDED, completed_at__isnull=False),
    viewers=("paycollect.view_refund",),
)

RENEWALS = replace(
    TRANSACTIONS,
    name="renewals",
    columns=(
        Column("uuid", "uuid"),
        Column("id", "service_id", NUMBER),
        Column("parent_transaction", "parent_uuid"),
        Column("transaction_order", "transaction_order", NUMBER),
        Column("community_id", "community_id"),
        Column("status", "status"),
        Column("amount", "total_amount", AMOUNT),
        Column("currency", "currency"),
        Column("refunded_amount", "refunded_amount", AMOUNT),
        *_payment_columns(refund=False),
        Column("created", "created_at", TIME),
        Column("completed", "succeeded_at", TIME),
    ),
    # A series' page shows its charges: who may view the series may export its renewals.
    viewers=("paycollect.view_transaction", "paycollect.view_recurringseries"),
    only=RENEWAL,
)

#: Every export by the name the command and the admin use.
EXPORTS: dict[str, Export] = {export.name: export for export in (TRANSACTIONS, REFUNDS, RENEWALS)}


# --- reading a request: the one reading of its dates, community and format -------------------------------


def parse_day(text: str) -> dt.date:
    """A calendar day written ``YYYY-MM-DD``, from :data:`FIRST_DAY` to :data:`LAST_DAY`."""
    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ExportError(
            gettext("%(text)r is not a day: write YYYY-MM-DD (e.g. 2026-10-31).") % {"text": text}
        ) from None
    return _within_range(day)


def _within_range(day: dt.date) -> dt.date:
    # Past them, midnight at the end of the day (or moved to UTC) is no datetime: an OverflowError.
    if not FIRST_DAY <= day <= LAST_DAY:
        raise ExportError(
            gettext("%(day)s is out of range: a period's days are from %(first)s to %(last)s.")
            % {"day": day.isoformat(), "first": FIRST_DAY.isoformat(), "last": LAST_DAY.isoformat()}
        )
    return day


@dataclass(frozen=True)
class ExportPeriod:
    """``since`` to ``until``, both days included, in the site's time zone; either may be open."""

    since: dt.date | None = None
    until: dt.date | None = None

    def __post_init__(self) -> None:
        for day in (self.since, self.until):
            if day is not None:
                _within_range(day)
        if self.since and self.until and self.since > self.until:
            raise ExportError(
                gettext("The period starts (%(since)s) after it ends (%(until)s).")
                % {"since": self.since.isoformat(), "until": self.until.isoformat()}
            )

    @property
    def start(self) -> dt.datetime | None:
        """Midnight at the start of ``since`` (included)."""
        return None if self.since is None else midnight(self.since)

    @property
    def end(self) -> dt.datetime | None:
        """Midnight at the end of ``until`` (excluded)."""
        return None if self.until is None else midnight(self.until + dt.timedelta(days=1))


def known_community(community_id: str) -> str:
    """``community_id`` if this site knows it (the settings' community or a Community row)."""
    if community_id == str(paycollect_settings.COMMUNITY_ID or "") and community_id:
        return community_id
    if Community.objects.filter(community_id=community_id).exists():
        return community_id
    raise ExportError(
        gettext("Unknown community %(community)r: neither PAYCOLLECT's community nor a Community row.")
        % {"community": community_id}
    )


def check_format(name: str) -> str:
    """``name`` if it is a format this site can write (XLSX needs the ``xlsx`` extra)."""
    if name not in FORMATS:
        raise ExportError(
            gettext("Unknown format %(format)r: one of %(formats)s.")
            % {"format": name, "formats": ", ".join(FORMATS)}
        )
    if name == "xlsx":
        _xlsxwriter()
    return name


def _xlsxwriter() -> Any:
    try:
        import xlsxwriter
    except ImportError:
        raise ExportError(
            gettext(
                "XLSX needs the xlsxwriter library: pip install 'django-paycollect[xlsx]', or export as CSV."
            )
        ) from None
    return xlsxwriter


# --- selecting the rows ------------------------------------------------------------------------------------


def check_statuses(export: Export, statuses: Iterable[str]) -> list[str]:
    """``statuses`` if each is a value of ``export``'s ``status`` column, as the export writes it."""
    wanted = list(statuses)
    for status in wanted:
        if status not in export.statuses:
            raise ExportError(
                gettext("Unknown status %(status)r of %(export)s: one of %(statuses)s.")
                % {"status": status, "export": export.name, "statuses": ", ".join(export.statuses)}
            )
    return wanted


def may_view(user: Any, export: Export) -> bool:
    """Whether ``user`` may see the rows of ``export`` (one of its ``viewers`` permissions): exporting them
    needs it, besides the export permission."""
    return any(user.has_perm(permission) for permission in export.viewers)


def selection(
    export: Export,
    *,
    period: ExportPeriod | None = None,
    basis: str = DEFAULT_BASIS,
    community_id: str | None = None,
    currency: str | None = None,
    statuses: Iterable[str] = (),
) -> QuerySet[Any]:
    """The rows of ``export`` in the period (by ``basis``), of a community and a currency (None: any), of
    ``statuses`` (empty: any).

    By ``completed`` only the rows that completed (``export.completed``: payments paid, refunds that
    succeeded), with or without a period; by ``created`` every row, whatever its status."""
    if basis not in BASES:
        raise ExportError(
            gettext("Unknown basis %(basis)r: one of %(bases)s.")
            % {"basis": basis, "bases": ", ".join(BASES)}
        )
    wanted = check_statuses(export, statuses)
    queryset = export.model._default_manager.all()
    if export.only is not None:
        queryset = queryset.filter(export.only)
    if basis == "completed":
        queryset = queryset.filter(export.completed)
    if wanted:
        queryset = queryset.filter(**{f"{export.status_field}__in": wanted})
    when = export.completed_field if basis == "completed" else export.created_field
    if period is not None and period.start is not None:
        queryset = queryset.filter(**{f"{when}__gte": period.start})
    if period is not None and period.end is not None:
        queryset = queryset.filter(**{f"{when}__lt": period.end})
    if community_id:
        queryset = queryset.filter(**{export.community_field: community_id})
    if currency:
        queryset = queryset.filter(**{export.currency_field: currency})
    return queryset


def of_series(series: QuerySet[RecurringSeries]) -> QuerySet[Transaction]:
    """The renewals of these series, as the renewals export selects them (by their parent's uuid: a renewal
    may be stored before its series is fetched, with no link to the series row yet)."""
    return Transaction.objects.filter(RENEWAL, parent_uuid__in=series.order_by().values("parent_uuid"))


def rows(
    export: Export, queryset: QuerySet[Any], *, include_pii: bool = True, chunk_size: int = CHUNK_SIZE
) -> Iterator[tuple[Any, ...]]:
    """The values of each row of ``queryset`` (already filtered), column by column, oldest first.

    One query whatever the number of rows (the related transaction of a refund is joined, not fetched per
    row), read ``chunk_size`` rows at a time: memory does not grow with the rows.
    """
    fields = [column.field for column in export.columns_for(include_pii)]
    ordered = queryset.order_by(*export.ordering).values_list(*fields)
    return ordered.iterator(chunk_size=chunk_size)


# --- cells -------------------------------------------------------------------------------------------------


def safe_text(value: str) -> str:
    """A text cell no spreadsheet runs as a formula: a leading single quote before ``=``, ``+``, ``-``, ``@``,
    a tab or a carriage return (OWASP's advice for CSV injection). Other text is unchanged."""
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def _time_writer() -> Callable[[dt.datetime], str]:
    """ISO 8601 in the site's time zone, with its offset (naive times, ``USE_TZ = False``, as they are). The
    zone is looked up once per export, not once per cell."""
    zone = timezone.get_current_timezone()

    def text(value: dt.datetime) -> str:
        return (value.astimezone(zone) if value.tzinfo is not None else value).isoformat()

    return text


def _text_cells(columns: Sequence[Column]) -> Callable[[Sequence[Any]], list[str]]:
    """What makes a row's cells as CSV writes them: amounts as exact text (``amount_text``), times in ISO
    8601, numbers as digits, text made safe; empty for None. Chosen once per column, not per cell."""
    by_kind: dict[str, Callable[[Any], str]] = {
        AMOUNT: amount_text,
        TIME: _time_writer(),
        NUMBER: str,
        # Text columns hold text (CharField values are str): made safe as they are.
        TEXT: safe_text,
    }
    writers = [by_kind[column.kind] for column in columns]

    def cells(record: Sequence[Any]) -> list[str]:
        return ["" if v is None else w(v) for w, v in zip(writers, record, strict=True)]

    return cells


# --- CSV ---------------------------------------------------------------------------------------------------


class _Line:
    """What ``csv.writer`` writes to: hands back the line instead of keeping it."""

    def write(self, line: str) -> str:
        return line


def csv_chunks(
    export: Export,
    records: Iterable[Sequence[Any]],
    *,
    include_pii: bool = True,
    chunk_bytes: int = 64 * 1024,
) -> Iterator[bytes]:
    """The CSV, UTF-8, header first, in chunks of about ``chunk_bytes`` (a streamed response's pieces)."""
    columns = export.columns_for(include_pii)
    writer = csv.writer(_Line())
    cells = _text_cells(columns)
    pending: list[str] = [writer.writerow([column.name for column in columns])]
    size = 0
    for record in records:
        line = writer.writerow(cells(record))
        pending.append(line)
        size += len(line)
        if size >= chunk_bytes:
            yield "".join(pending).encode("utf-8")
            pending, size = [], 0
    if pending:
        yield "".join(pending).encode("utf-8")


# --- XLSX --------------------------------------------------------------------------------------------------

#: Rows a worksheet holds (Excel's limit, its header included); past it the export goes on in a new sheet.
XLSX_MAX_ROWS = 1_048_576


def write_xlsx(
    export: Export, records: Iterable[Sequence[Any]], target: IO[bytes], *, include_pii: bool = True
) -> None:
    """The workbook into ``target`` (a binary file). xlsxwriter's constant-memory mode writes each row to a
    temporary file as it comes, so memory does not grow with the rows; the file is assembled at the end."""
    xlsxwriter = _xlsxwriter()
    columns = export.columns_for(include_pii)
    workbook = xlsxwriter.Workbook(
        target,
        {
            "constant_memory": True,
            # Text is written as text, always: never read as a formula, a number or a link.
            "strings_to_formulas": False,
            "strings_to_numbers": False,
            "strings_to_urls": False,
        },
    )
    money = workbook.add_format({"num_format": "0.00"})
    as_time = _time_writer()
    # The one place an amount becomes a float: XLSX stores numbers as IEEE doubles. Every amount the columns
    # hold (at most 14 digits, 2 of them decimals) is within a double's 15 exact significant digits, so the
    # cell shows the exact amount with the 0.00 format.
    by_kind: dict[str, Callable[[Any, int, int, Any], object]] = {
        AMOUNT: lambda sheet, row, col, value: sheet.write_number(row, col, float(value), money),
        NUMBER: lambda sheet, row, col, value: sheet.write_number(row, col, value),
        TIME: lambda sheet, row, col, value: sheet.write_string(row, col, as_time(value)),
        TEXT: lambda sheet, row, col, value: sheet.write_string(row, col, safe_text(str(value))),
    }
    writers = [by_kind[column.kind] for column in columns]
    sheet = None
    row = XLSX_MAX_ROWS
    for record in records:
        if row >= XLSX_MAX_ROWS:
            sheet = _new_sheet(workbook, export, columns)
            row = 1
        for col, (write, value) in enumerate(zip(writers, record, strict=True)):
            if value is not None:
                write(sheet, row, col, value)
        row += 1
    if sheet is None:
        _new_sheet(workbook, export, columns)
    workbook.close()


def _new_sheet(workbook: Any, export: Export, columns: Sequence[Column]) -> Any:
    number = len(workbook.worksheets()) + 1
    sheet = workbook.add_worksheet(export.name if number == 1 else f"{export.name} {number}")
    for col, column in enumerate(columns):
        sheet.write_string(0, col, column.name)
    return sheet


def xlsx_chunks(
    export: Export,
    records: Iterable[Sequence[Any]],
    *,
    include_pii: bool = True,
    chunk_bytes: int = 64 * 1024,
) -> Iterator[bytes]:
    """The workbook in chunks for a streamed response: written to a temporary file (an XLSX is a zip whose
    directory comes last, so nothing can be sent before the last row is read), then read back in pieces."""
    with tempfile.TemporaryFile() as spool:
        write_xlsx(export, records, spool, include_pii=include_pii)
        spool.seek(0)
        while chunk := spool.read(chunk_bytes):
            yield chunk


WRITERS: dict[str, Callable[..., Iterator[bytes]]] = {"csv": csv_chunks, "xlsx": xlsx_chunks}


def chunks(
    export: Export, queryset: QuerySet[Any], file_format: str, *, include_pii: bool = True
) -> Iterator[bytes]:
    """The export of ``queryset`` in ``file_format``, as bytes to stream: what every surface sends."""
    check_format(file_format)
    return WRITERS[file_format](
        export, rows(export, queryset, include_pii=include_pii), include_pii=include_pii
    )


def filename(export: Export, file_format: str, period: ExportPeriod | None = None) -> str:
    """``transactions-2026-10-01-2026-10-31.csv``: what the download is saved as."""
    parts = [export.name]
    if period is not None and (period.since or period.until):
        parts += [
            period.since.isoformat() if period.since else "start",
            period.until.isoformat() if period.until else "now",
        ]
    return f"{'-'.join(parts)}.{file_format}"
