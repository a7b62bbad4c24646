"""The figures of the payments dashboard and of ``paycollect_report``: what came in, what is healthy, and
what needs a person, for one community and currency over a period of days.

Everything is computed in the database, by aggregation, with a fixed number of queries whatever the
number of rows (the indexes named ``paycollect_*_report*`` serve them). Amounts are summed exactly (as
decimals, or on SQLite, which would sum them as floats, as whole piasters) and returned as ``Decimal``.

Days are calendar days of the current time zone (``TIME_ZONE``); a period of 7 days is today and the six
days before it, up to now. What the figures mean:

* *collected*: successful payments, on the day they became successful here (``succeeded_at``), renewal
  charges of recurring series included; *refunded*: refunds that succeeded, on the day they did;
* *started*: payments created in the period, by their status now; the success rate is the successful
  ones among those the service decided (successful or failed);
* callbacks are counted for the whole site (a callback names its community only once verified);
* what needs a person is counted over all time, whatever the currency: it does not go away by itself.

A package: ``figures`` (the period, money, collected per day, payments by status), ``health`` (callbacks,
what needs a person, whether the periodic jobs are late), ``report`` (the statistics comparison, the
whole report, its text and JSON) and ``exports`` (transactions, refunds and renewals of a period as CSV and
XLSX, whose totals are these figures).
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
