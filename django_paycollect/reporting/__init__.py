"""The figures of the payments dashboard and of ``paycollect_report``: what came in, what is healthy, and
what needs a person, for one community and currency over a period of calendar days (docs/admin.md says what
each figure means). Computed in the database by aggregation, in a fixed number of queries whatever the number
of rows (the indexes named ``paycollect_*_report*`` serve them); amounts summed exactly, as ``Decimal``.

Its modules: ``figures`` (the period, money, collected per day, payments by status), ``health`` (callbacks,
what needs a person, late periodic jobs), ``report`` (the statistics comparison, the whole report, its text
and JSON), ``exports`` (CSV and XLSX, whose totals are these figures) and ``metrics`` (Prometheus).
"""

from __future__ import annotations

from .figures import (
    Day,
    Period,
    StatusLine,
    Tally,
    collected_per_day,
    period,
    started_by_status,
    success_rate,
)
from .health import (
    Attention,
    CallbackHealth,
    Housekeeping,
    callback_health,
    housekeeping,
    housekeeping_how_to_start,
    housekeeping_not_run_yet,
    housekeeping_without_beat,
    needs_a_person,
    stuck_callbacks,
)
from .report import Ledger, Report, StatisticsComparison, report, statistics_comparison

__all__ = [
    "Attention",
    "CallbackHealth",
    "Day",
    "Housekeeping",
    "Ledger",
    "Period",
    "Report",
    "StatisticsComparison",
    "StatusLine",
    "Tally",
    "callback_health",
    "collected_per_day",
    "housekeeping",
    "housekeeping_how_to_start",
    "housekeeping_not_run_yet",
    "housekeeping_without_beat",
    "needs_a_person",
    "period",
    "report",
    "started_by_status",
    "statistics_comparison",
    "stuck_callbacks",
    "success_rate",
]
