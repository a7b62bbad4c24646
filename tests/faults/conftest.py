"""The fault matrix's table: each cell of ``test_fault_matrix.py`` adds a row; the table is printed at the end
of the run (in ``make test`` output too, where test output is captured)."""

from __future__ import annotations

from typing import Any

import pytest

_ROWS = pytest.StashKey[list[dict[str, Any]]]()

COLUMNS = (
    ("operation", "service function"),
    ("fault", "fault"),
    ("times", "times"),
    ("outcome", "what the caller got"),
    ("requests", "requests"),
    ("api_call", "ApiCall: error_class, unknown, attempts"),
    ("effect", "effect at sandbox"),
    ("reconciliation", "reconcile(older_than=0)"),
)

NOTES = (
    "times: 1 = the fault hits one request (a read's single retry outlasts a network fault or a 502); "
    "every = each request until cleared.",
    "requests: entries in the sandbox's journal for the operation. A write is sent once whatever happens.",
    "effect at sandbox: the sandbox's own state (transactions, captured, refunded_amount, recurring.active, "
    "communities, outbox): done once when the fault came after the work, never twice.",
)


@pytest.fixture(scope="session")
def fault_matrix_rows(pytestconfig: pytest.Config) -> list[dict[str, Any]]:
    """Rows of the printed table: one per cell that ran to the end."""
    return pytestconfig.stash.setdefault(_ROWS, [])


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rows = config.stash.get(_ROWS, [])
    if not rows:
        return
    rows = sorted(rows, key=lambda row: row["order"])
    widths = {key: max(len(title), *(len(str(row[key])) for row in rows)) for key, title in COLUMNS}

    def line(values: dict[str, Any]) -> str:
        return " | ".join(str(values[key]).ljust(widths[key]) for key, _ in COLUMNS).rstrip()

    terminalreporter.write_sep("=", f"fault matrix: {len(rows)} cells")
    terminalreporter.write_line(line(dict(COLUMNS)))
    terminalreporter.write_line("-+-".join("-" * widths[key] for key, _ in COLUMNS))
    previous = None
    for row in rows:
        if previous is not None and row["operation"] != previous:
            terminalreporter.write_line("")
        previous = row["operation"]
        terminalreporter.write_line(line(row))
    terminalreporter.write_line("")
    for note in NOTES:
        terminalreporter.write_line(note)
