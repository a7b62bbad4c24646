"""The exports (``reporting.exports``): what they hold, that a period's totals are the dashboard's, safe
cells in CSV and XLSX, streaming in a fixed number of queries, ``paycollect_export``, the admin's actions.

The ledger is the dashboard's prepared one (``tests/app/test_dashboard.py``): Cairo time, 9 to 15 March 2026.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import sys
import zipfile
from decimal import Decimal
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycollect import reporting
from django_paycollect.models import RecurringSeries, Refund, StatisticsSnapshot, Transaction
from django_paycollect.reporting import exports
from tests.app import test_dashboard
from tests.app.test_dashboard import NOW, at, txn
from tests.support.admin import logged_in, offered, post_action, staff, text_of, url

# The dashboard's prepared ledger and its time zone, as fixtures here.
cairo = test_dashboard.cairo
ledger = test_dashboard.ledger

pytestmark = pytest.mark.django_db

WEEK = exports.ExportPeriod(dt.date(2026, 3, 9), dt.date(2026, 3, 15))
FORMULAS = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


def csv_rows(data: bytes | str) -> list[dict[str, str]]:
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return list(csv.DictReader(io.StringIO(text)))


def export_csv(name: str, **selection) -> list[dict[str, str]]:
    export = exports.EXPORTS[name]
    include_pii = selection.pop("include_pii", True)
    queryset = exports.selection(export, **selection)
    return csv_rows(b"".join(exports.chunks(export, queryset, "csv", include_pii=include_pii)))


def total(rows: list[dict[str, str]], column: str) -> Decimal:
    return sum((Decimal(row[column]) for row in rows), Decimal("0.00"))


def xlsx_sheet(data: bytes) -> str:
    """The first worksheet's XML (openpyxl is not a dependency: the sheet is read as the zip holds it)."""
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        return book.read("xl/worksheets/sheet1.xml").decode("utf-8")


def xlsx_cells(data: bytes) -> dict[str, tuple[str, str]]:
    """Each cell of the first sheet: reference -> (type, value); inline strings unescaped."""
    sheet = xlsx_sheet(data)
    cells = {}
    for ref, attrs, body in re.findall(r'<c r="([A-Z]+\d+)"([^>]*)>(.*?)</c>', sheet, re.S):
        kind = re.search(r't="(\w+)"', attrs)
        if kind and kind.group(1) == "inlineStr":
            value = re.search(r"<t[^>]*>(.*?)</t>", body, re.S).group(1)
            value = (
                value.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
            )
            value = re.sub(r"_x([0-9A-F]{4})_", lambda m: chr(int(m.group(1), 16)), value)
            cells[ref] = ("text", value)
        else:
            cells[ref] = ("number", re.search(r"<v>(.*?)</v>", body).group(1))
    return cells


# --- ties out -------------------------------------------------------------------------------------------


def test_a_periods_exports_total_the_dashboards_ledger_for_that_period(ledger):
    found = reporting.report("club-a", "EGP", 7, now=NOW)
    period = exports.ExportPeriod(found.period.first_day, found.period.last_day)
    scope = {"period": period, "community_id": "club-a", "currency": "EGP"}

    paid = export_csv("transactions", **scope)
    assert len(paid) == found.collected.count == 6
    assert total(paid, "amount") == found.collected.amount == Decimal("1280.49")

    refunds = [row for row in export_csv("refunds", **scope) if row["status"] == Refund.SUCCEEDED]
    assert len(refunds) == found.refunded.count
    assert total(refunds, "refund_amount") == found.refunded.amount == Decimal("120.00")

    renewals = export_csv("renewals", **scope)
    assert len(renewals) == found.renewals.count == 1
    assert total(renewals, "amount") == found.renewals.amount == Decimal("49.99")

    # By creation: what the dashboard counts as started in the period, status by status.
    started = export_csv("transactions", basis="created", **scope)
    for line in found.by_status:
        mine = [row for row in started if row["status"] == line.status]
        assert (len(mine), total(mine, "amount")) == (line.started.count, line.started.amount), line.status


def test_the_statistics_comparison_explains_the_difference_from_an_all_time_export(ledger):
    comparison = reporting.statistics_comparison("club-a", "EGP")
    paid = [
        row for row in export_csv("transactions", community_id="club-a", currency="EGP") if row["completed"]
    ]
    assert total(paid, "amount") == comparison.ledger.collected
    assert total(paid, "amount") - total(paid, "refunded_amount") == comparison.ledger.collected_net
    snapshot = StatisticsSnapshot.objects.filter(community_id="club-a").latest("taken_at")
    # The service's total minus the export's is the difference the dashboard shows, to the piaster.
    assert snapshot.total_collected_transactions - total(paid, "amount") == comparison.collected_difference
    assert comparison.collected_difference == Decimal("-125.00")


# --- what the rows hold ---------------------------------------------------------------------------------


def test_columns_are_named_in_the_specs_words_with_times_in_the_site_time_zone(ledger):
    rows = export_csv("transactions", period=WEEK, community_id="club-a", currency="EGP")
    assert list(rows[0])[:7] == [
        "uuid",
        "id",
        "community_id",
        "status",
        "amount",
        "currency",
        "refunded_amount",
    ]
    # T13: succeeded 8 March 22:30 UTC, 9 March in Cairo: in the week.
    first = next(row for row in rows if row["uuid"] == ledger["T13"].uuid)
    assert first["created"] == "2026-03-09T00:10:00+02:00"
    assert first["completed"] == "2026-03-09T00:30:00+02:00"
    assert {"customer_name", "customer_email", "merchant_reference", "refunded_amount"} <= set(first)
    # T4 succeeded at 23:59 on 8 March in Cairo: the day before the period.
    assert ledger["T4"].uuid not in {row["uuid"] for row in rows}


def test_the_last_day_of_the_period_is_included_whole(cairo):
    late = txn("1.00", created=at(15, 21), succeeded_at=at(15, 21, 59))  # 23:59 on 15 March in Cairo
    txn("2.00", created=at(15, 21), succeeded_at=at(15, 22, 0))  # midnight: 16 March
    rows = export_csv("transactions", period=exports.ExportPeriod(until=dt.date(2026, 3, 15)))
    assert [row["uuid"] for row in rows] == [late.uuid]


def test_amounts_are_exact_text_with_two_decimals(cairo):
    txn("999999999999.99", created=at(10, 8), refunded_amount=Decimal("0.01"))
    txn("5", created=at(10, 9))
    rows = export_csv("transactions")
    assert [(row["amount"], row["refunded_amount"]) for row in rows] == [
        ("999999999999.99", "0.01"),
        ("5.00", "0.00"),
    ]


def test_personal_data_can_be_left_out(ledger):
    for name in exports.EXPORTS:
        rows = export_csv(name, include_pii=False)
        assert rows
        assert not {"customer_name", "customer_email", "customer_phone", "member_id"} & set(rows[0]), name
        assert "merchant_reference" in rows[0]


def test_refunds_carry_their_transactions_columns(ledger):
    rows = export_csv("refunds", period=WEEK, community_id="club-a")
    row = next(r for r in rows if r["status"] == Refund.SUCCEEDED)
    assert row["transaction_uuid"] == ledger["T12"].uuid
    assert (row["refund_amount"], row["amount"], row["refunded_amount"]) == ("120.00", "500.00", "120.00")
    assert row["completed"] == "2026-03-14T12:00:00+02:00"


# --- safe cells -----------------------------------------------------------------------------------------


@pytest.fixture
def hostile(cairo):
    """Payments whose text a spreadsheet would run as formulas, and a negative-looking amount nowhere."""
    return [
        txn("12.50", created=at(10, 8 + n), customer_name=text, merchant_reference=text)
        for n, text in enumerate(FORMULAS)
    ]


def test_csv_cells_that_would_run_as_formulas_are_neutralised(hostile):
    rows = export_csv("transactions")
    assert [row["customer_name"] for row in rows] == [f"'{text}" for text in FORMULAS]
    assert [row["merchant_reference"] for row in rows] == [f"'{text}" for text in FORMULAS]
    assert {row["amount"] for row in rows} == {"12.50"}  # numbers are never altered


def test_ordinary_text_is_left_as_it_is():
    assert exports.safe_text("Mona Ali") == "Mona Ali"
    assert exports.safe_text("a=b") == "a=b"
    assert exports.safe_text("") == ""
    assert exports.safe_text("-") == "'-"


def test_xlsx_cells_that_would_run_as_formulas_are_text_and_neutralised(hostile):
    export = exports.TRANSACTIONS
    data = b"".join(exports.chunks(export, exports.selection(export), "xlsx"))
    sheet = xlsx_sheet(data)
    assert "<f>" not in sheet  # no formula anywhere
    cells = xlsx_cells(data)
    header = {cells[f"{col}1"][1]: col for col in "ABCDEFGHIJKLMNOPQRS" if f"{col}1" in cells}
    names = [cells[f"{header['customer_name']}{n}"] for n in range(2, 2 + len(FORMULAS))]
    assert names == [("text", f"'{text}") for text in FORMULAS]
    # Amounts are numbers, shown with two decimals.
    assert cells[f"{header['amount']}2"] == ("number", "12.5")
    styles = zipfile.ZipFile(io.BytesIO(data)).read("xl/styles.xml").decode()
    assert 'formatCode="0.00"' in styles


def test_xlsx_amounts_are_numbers_equal_to_the_exact_amounts(cairo):
    txn("999999999999.99", created=at(10, 8))
    txn("0.10", created=at(10, 9))
    export = exports.TRANSACTIONS
    cells = xlsx_cells(b"".join(exports.chunks(export, exports.selection(export), "xlsx")))
    assert Decimal(cells["E2"][1]).quantize(Decimal("0.01")) == Decimal("999999999999.99")
    assert Decimal(cells["E3"][1]) == Decimal("0.1")


def test_an_empty_export_is_a_header_in_both_formats(db):
    export = exports.REFUNDS
    assert csv_rows(b"".join(exports.chunks(export, exports.selection(export), "csv"))) == []
    cells = xlsx_cells(b"".join(exports.chunks(export, exports.selection(export), "xlsx")))
    assert cells["A1"] == ("text", "id")
    assert "A2" not in cells


# --- streaming ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(exports.EXPORTS))
def test_the_number_of_queries_does_not_grow_with_the_rows(cairo, name):
    def queries_for(rows: int) -> int:
        for n in range(rows):
            payment = txn("10.00", created=at(10, 8) + dt.timedelta(seconds=n), parent_uuid="p-uuid")
            Refund.objects.create(transaction=payment, amount=Decimal("1.00"), state=Refund.SUCCEEDED)
        export = exports.EXPORTS[name]
        with CaptureQueriesContext(connection) as queries:
            list(exports.rows(export, exports.selection(export), chunk_size=7))
        return len(queries)

    few = queries_for(3)
    many = queries_for(60)
    assert few == many


def test_rows_are_read_in_chunks_not_all_at_once(cairo):
    for n in range(5):
        txn("10.00", created=at(10, 8 + n))
    export = exports.TRANSACTIONS
    with mock.patch.object(
        type(exports.selection(export)),
        "iterator",
        autospec=True,
        side_effect=lambda qs, chunk_size: iter(()),
    ) as iterator:
        list(exports.rows(export, exports.selection(export), chunk_size=123))
    assert iterator.call_args.kwargs["chunk_size"] == 123


# --- bad requests ---------------------------------------------------------------------------------------


def test_bad_days_and_periods_are_refused_with_the_reason():
    with pytest.raises(exports.ExportError, match="not a day: write YYYY-MM-DD"):
        exports.parse_day("31/10/2026")
    with pytest.raises(exports.ExportError, match=r"starts \(2026-03-15\) after it ends \(2026-03-09\)"):
        exports.ExportPeriod(dt.date(2026, 3, 15), dt.date(2026, 3, 9))
    with pytest.raises(exports.ExportError, match="Unknown basis"):
        exports.selection(exports.TRANSACTIONS, basis="paid")
    with pytest.raises(exports.ExportError, match="Unknown format"):
        exports.check_format("ods")


def test_xlsx_without_its_library_is_refused_with_what_to_install():
    with (
        mock.patch.dict(sys.modules, {"xlsxwriter": None}),
        pytest.raises(exports.ExportError, match=r"django-paycollect\[xlsx\]"),
    ):
        exports.check_format("xlsx")


# --- the command ----------------------------------------------------------------------------------------


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("paycollect_export", *args, stdout=out)
    return out.getvalue()


def test_the_command_writes_a_periods_csv_to_standard_output(ledger):
    week = ["--since", "2026-03-09", "--until", "2026-03-15"]
    rows = csv_rows(command("transactions", *week, "--community", "club-a", "--currency", "egp"))
    assert total(rows, "amount") == Decimal("1280.49")


def test_the_command_writes_xlsx_to_a_file(ledger, tmp_path):
    target = tmp_path / "renewals.xlsx"
    assert command("renewals", "--format", "xlsx", "--output", str(target), "--without-pii") == ""
    cells = xlsx_cells(target.read_bytes())
    assert ("text", ledger["T3"].uuid) in cells.values()
    assert ("text", "customer_email") not in cells.values()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["transactions", "--since", "2026-13-01"], "not a day"),
        (["transactions", "--since", "2026-03-15", "--until", "2026-03-01"], "after it ends"),
        (["refunds", "--community", "nobody"], "Unknown community 'nobody'"),
        (["renewals", "--format", "xlsx"], "give --output FILE"),
        (["payments"], "invalid choice"),
        (["transactions", "--currency", "EU"], "not a currency code"),
    ],
)
def test_the_command_refuses_bad_input_with_a_clear_error(ledger, args, message):
    with pytest.raises(CommandError, match=message):
        command(*args)


def test_the_command_refuses_xlsx_without_the_library(ledger, tmp_path):
    with (
        mock.patch.dict(sys.modules, {"xlsxwriter": None}),
        pytest.raises(CommandError, match=r"pip install 'django-paycollect\[xlsx\]'"),
    ):
        command("transactions", "--format", "xlsx", "--output", str(tmp_path / "x.xlsx"))
    assert not (tmp_path / "x.xlsx").exists()


# --- the admin ------------------------------------------------------------------------------------------


def streamed(response) -> bytes:
    assert response.status_code == 200, response
    assert response.streaming
    return b"".join(response.streaming_content)


def test_export_actions_are_offered_only_with_the_export_permission(ledger, client, django_user_model):
    viewer = staff(django_user_model, "view_transaction", "view_refund", "view_recurringseries")
    logged_in(client, viewer)
    for model in ("transaction", "refund", "recurringseries"):
        assert not {"export_csv", "export_xlsx"} & offered(client, model)
        response = post_action(client, model, "export_csv", Transaction.objects.none())
        assert not getattr(response, "streaming", False)
    exporter = staff(
        django_user_model,
        "view_transaction",
        "view_refund",
        "view_recurringseries",
        "export_transaction",
        username="finance",
    )
    logged_in(client, exporter)
    for model in ("transaction", "refund", "recurringseries"):
        assert {"export_csv", "export_xlsx"} <= offered(client, model)


def test_the_transaction_action_exports_the_selection(ledger, client, django_user_model):
    logged_in(client, staff(django_user_model, "view_transaction", "export_transaction"))
    chosen = [ledger["T1"], ledger["T12"]]
    response = post_action(client, "transaction", "export_csv", chosen)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="transactions.csv"' in response["Content-Disposition"]
    rows = csv_rows(streamed(response))
    assert [row["uuid"] for row in rows] == [ledger["T1"].uuid, ledger["T12"].uuid]
    response = post_action(client, "transaction", "export_xlsx", chosen)
    assert response["Content-Type"].startswith("application/vnd.openxmlformats")
    assert ("text", ledger["T12"].uuid) in xlsx_cells(streamed(response)).values()


def test_the_series_action_exports_the_renewals_of_the_selected_series(ledger, client, django_user_model):
    logged_in(client, staff(django_user_model, "view_recurringseries", "export_transaction"))
    series = RecurringSeries.objects.filter(community_id="club-a")
    rows = csv_rows(streamed(post_action(client, "recurringseries", "export_csv", series)))
    assert [(row["uuid"], row["parent_transaction"]) for row in rows] == [
        (ledger["T3"].uuid, ledger["parent"].uuid)
    ]


def test_the_refund_action_exports_the_filtered_refunds(ledger, client, django_user_model):
    logged_in(client, staff(django_user_model, "view_refund", "export_transaction"))
    chosen = Refund.objects.filter(state=Refund.SUCCEEDED)
    rows = csv_rows(streamed(post_action(client, "refund", "export_csv", chosen)))
    assert sorted(row["refund_amount"] for row in rows) == ["120.00", "5.00"]


DASHBOARD_EXPORT = "/admin/paycollect/dashboard/export/"
SCOPE = {"community": "club-a", "currency": "EGP", "days": "7"}


def test_the_dashboard_exports_its_period(ledger, client, django_user_model):
    # Exporting rows needs the permission to view them (tests/app/test_export_meaning.py).
    logged_in(client, staff(django_user_model, "view_dashboard", "export_transaction", "view_transaction"))
    with mock.patch("django.utils.timezone.now", return_value=NOW):
        page = client.get(url("dashboard"), SCOPE)
        response = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "transactions", "format": "csv"})
    assert b'id="paycollect-exports"' in page.content
    assert 'filename="transactions-2026-03-09-2026-03-15.csv"' in response["Content-Disposition"]
    assert total(csv_rows(streamed(response)), "amount") == Decimal("1280.49")


def test_the_dashboard_export_needs_the_export_permission(ledger, client, django_user_model):
    logged_in(client, staff(django_user_model, "view_dashboard"))
    page = client.get(url("dashboard"), SCOPE)
    assert b'id="paycollect-exports"' not in page.content
    response = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "transactions", "format": "csv"})
    assert response.status_code == 403
    logged_in(client, staff(django_user_model, "export_transaction", username="exporter-only"))
    assert client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "transactions"}).status_code == 403


def test_the_dashboard_export_refuses_a_bad_request_in_words(ledger, client, django_user_model):
    viewer = staff(
        django_user_model, "view_dashboard", "export_transaction", "view_transaction", "view_refund"
    )
    logged_in(client, viewer)
    response = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "payments"})
    assert response.status_code == 400
    assert b"one of the exports" in response.content
    with mock.patch.dict(sys.modules, {"xlsxwriter": None}):
        response = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "refunds", "format": "xlsx"}, follow=True)
    assert "pip install" in text_of(response)
