"""An export opened as a table: the CSV ``reporting.exports`` writes, read back by the browser's own CSV-free
path (each cell placed in an HTML table as text, as a spreadsheet shows it), for the documentation's picture
(``export-transactions.png``) and to see what a person reading it sees: exact amounts, ISO times in the
site's time zone, Arabic names whole, and a formula shown as text behind its quote.
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import io
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from django_paycollect.reporting import exports

from .support import needs_browser, new_page, screenshot

pytestmark = [pytest.mark.browser, needs_browser]

CAIRO = dt.timezone(dt.timedelta(hours=2))


def payment(n: int, amount: str, name: str, email: str, **fields: Any) -> tuple[Any, ...]:
    """A row of the transactions export as the database hands it over (typed values, column by column)."""
    created = dt.datetime(2026, 3, 9 + n, 8 + n, 15, tzinfo=dt.UTC)
    values: dict[str, Any] = {
        "uuid": f"3f1c2a9e-8b7d-4c6e-9a5b-0000000000{n:02d}",
        "id": 104200 + n,
        "community_id": "club-a",
        "status": "SUCCESSFUL",
        "amount": Decimal(amount),
        "currency": "EGP",
        "refunded_amount": Decimal("0.00"),
        "customer_name": name,
        "customer_email": email,
        "customer_phone": f"+2010012345{n:02d}",
        "member_id": f"M-{700 + n}",
        "merchant_reference": f"order-{5300 + n}",
        "payment_for": "API_PAYMENT",
        "pay_using": "card",
        "parent_transaction": "",
        "transaction_order": None,
        "created": created,
        "completed": created + dt.timedelta(minutes=3),
        **fields,
    }
    return tuple(values[column.name] for column in exports.TRANSACTIONS.columns)


PARENT = "3f1c2a9e-8b7d-4c6e-9a5b-parent"
ROWS = [
    payment(0, "250.50", "Mona Ali", "mona@example.com"),
    payment(1, "100.00", "منى علي", "mona.ali@example.com", refunded_amount=Decimal("20.00")),
    payment(2, "49.99", "Omar Hassan", "omar@example.com", parent_transaction=PARENT, transaction_order=2),
    payment(3, "1000.00", "=HYPERLINK(\"http://x\")", "x@example.com"),
    payment(4, "75.25", "Sara Nabil", "sara@example.com", merchant_reference="-2+3"),
]  # fmt: skip
# A week's export by completion lists only payments paid (``--by completed``): never a failed or pending one.
assert all(row[3] == "SUCCESSFUL" and row[-1] is not None for row in ROWS)


def as_table(data: bytes) -> str:
    """The CSV as a spreadsheet shows it: column letters, row numbers, every cell as the text it holds."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    letters = [chr(ord("A") + i) for i in range(len(rows[0]))]
    amounts = {i for i, name in enumerate(rows[0]) if name in ("amount", "refunded_amount")}
    head = "".join(f"<th>{letter}</th>" for letter in letters)
    body = []
    for number, row in enumerate(rows, start=1):
        cells = "".join(
            f'<td class="{"n" if i in amounts and number > 1 else ""}">{html.escape(cell)}</td>'
            for i, cell in enumerate(row)
        )
        body.append(f'<tr class="{"h" if number == 1 else ""}"><th>{number}</th>{cells}</tr>')
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>transactions.csv</title><style>
      body {{ font: 12px system-ui, sans-serif; margin: 12px; }}
      p {{ margin: 0 0 8px; color: #444; }}
      table {{ border-collapse: collapse; }}
      th, td {{ border: 1px solid #c8c8c8; padding: 3px 6px; white-space: nowrap; }}
      thead th, tbody th {{ background: #f1f1f1; color: #555; font-weight: normal; }}
      tr.h td {{ font-weight: 600; background: #fafafa; }}
      td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
    </style></head><body><p>transactions-2026-03-09-2026-03-15.csv</p>
    <table><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></body></html>"""


@pytest.fixture
def wide_page(request: pytest.FixtureRequest, chromium: Any) -> Iterator[Any]:
    yield from new_page(request, chromium, viewport={"width": 1900, "height": 160})


def test_an_export_opened_as_a_table_shows_exact_amounts_and_safe_cells(
    wide_page: Any, settings: Any
) -> None:
    settings.TIME_ZONE = "Africa/Cairo"
    data = b"".join(exports.csv_chunks(exports.TRANSACTIONS, ROWS))
    wide_page.set_content(as_table(data))
    table = wide_page.locator("table")
    assert table.locator("tbody tr").count() == len(ROWS) + 1
    row = table.locator("tbody tr")
    assert row.nth(1).locator("td").nth(4).inner_text() == "250.50"
    assert row.nth(2).locator("td").nth(7).inner_text() == "منى علي"
    assert row.nth(4).locator("td").nth(7).inner_text() == '\'=HYPERLINK("http://x")'
    assert row.nth(5).locator("td").nth(11).inner_text() == "'-2+3"
    assert row.nth(1).locator("td").nth(16).inner_text() == "2026-03-09T10:15:00+02:00"
    screenshot(wide_page, "export-transactions", docs=True, full_page=True)
