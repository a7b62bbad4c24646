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
what needs a person, whether the periodic jobs are late) and ``report`` (the statistics comparison, the
whole report, its text and JSON).
"""

from __future__ import annotations

from .figures import DEFAULT_PERIOD as DEFAULT_PERIOD
from .figures import MAX_DAYS as MAX_DAYS
from .figures import PERIODS as PERIODS
from .figures import Amount as Amount
from .figures import Day as Day
from .figures import Period as Period
from .figures import StatusLine as StatusLine
from .figures import collected_per_day as collected_per_day
from .figures import period as period
from .figures import started_by_status as started_by_status
from .figures import success_rate as success_rate
from .health import LATE_AFTER_INTERVALS as LATE_AFTER_INTERVALS
from .health import PERCENTILES as PERCENTILES
from .health import Attention as Attention
from .health import CallbackHealth as CallbackHealth
from .health import Housekeeping as Housekeeping
from .health import callback_health as callback_health
from .health import housekeeping as housekeeping
from .health import needs_a_person as needs_a_person
from .health import stuck_callbacks as stuck_callbacks
from .report import Ledger as Ledger
from .report import Report as Report
from .report import StatisticsComparison as StatisticsComparison
from .report import duration_text as duration_text
from .report import report as report
from .report import seconds as seconds
from .report import statistics_comparison as statistics_comparison
