"""The service's statistics beside our ledger, the whole report, and its text and JSON forms."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext

from ..models import StatisticsSnapshot, Transaction
from ..models.fields import ZERO
from .figures import (
    DEFAULT_PERIOD,
    Day,
    Period,
    StatusLine,
    Tally,
    collected_per_day,
    money_sum,
    money_total,
    period,
    started_by_status,
    success_rate,
)
from .health import Attention, CallbackHealth, Housekeeping, callback_health, housekeeping, needs_a_person

# --- the service's dashboard statistics beside our ledger --------------------------------------------------


@dataclass(frozen=True)
class Ledger:
    """Our ledger of the community over all time: what the service's statistics should agree with."""

    #: Transactions the service accepted (they have a uuid), every currency.
    transactions: int
    #: Successful payments in the chosen currency, before and after refunds.
    collected: Decimal
    collected_net: Decimal
    #: Every currency of the community's successful payments (the service's figures name none).
    currencies: list[str]


@dataclass(frozen=True)
class StatisticsComparison:
    snapshot: StatisticsSnapshot | None
    ledger: Ledger

    @property
    def transactions_difference(self) -> int | None:
        if self.snapshot is None or self.snapshot.total_number_of_transactions is None:
            return None
        return self.snapshot.total_number_of_transactions - self.ledger.transactions

    def _collected_minus(self, ours: Decimal) -> Decimal | None:
        if self.snapshot is None or self.snapshot.total_collected_transactions is None:
            return None
        return self.snapshot.total_collected_transactions - ours

    @property
    def collected_difference(self) -> Decimal | None:
        return self._collected_minus(self.ledger.collected)

    @property
    def collected_net_difference(self) -> Decimal | None:
        return self._collected_minus(self.ledger.collected_net)


def statistics_comparison(community_id: str, currency: str) -> StatisticsComparison:
    """The latest statistics snapshot of the community and our ledger's totals. Three queries."""
    snapshot = (
        StatisticsSnapshot.objects.filter(community_id=community_id).order_by("-taken_at", "-pk").first()
    )
    paid = (
        Transaction.objects.filter(community_id=community_id, succeeded_at__isnull=False)
        .values("currency")
        .annotate(
            total=money_sum(Transaction, "total_amount"), refunded=money_sum(Transaction, "refunded_amount")
        )
        .order_by("currency")
    )
    by_currency = {row["currency"]: row for row in paid}
    row = by_currency.get(currency)
    collected = money_total(row["total"]) if row else ZERO
    refunded = money_total(row["refunded"]) if row else ZERO
    known = Transaction.objects.filter(community_id=community_id, uuid__isnull=False).count()
    return StatisticsComparison(
        snapshot,
        Ledger(known, collected, collected - refunded, sorted(by_currency)),
    )


# --- the report -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    community_id: str
    currency: str
    period: Period
    days: list[Day]
    by_status: list[StatusLine]
    callbacks: CallbackHealth
    attention: list[Attention]
    statistics: StatisticsComparison
    #: When the sweep and reconciliation last ran, and whether either is late.
    housekeeping: list[Housekeeping]

    @property
    def collected(self) -> Tally:
        return sum((day.collected for day in self.days), Tally())

    @property
    def refunded(self) -> Tally:
        return sum((day.refunded for day in self.days), Tally())

    @property
    def renewals(self) -> Tally:
        return sum((day.renewals for day in self.days), Tally())

    @property
    def net(self) -> Decimal:
        return self.collected.amount - self.refunded.amount

    @property
    def started(self) -> Tally:
        return sum((line.started for line in self.by_status), Tally())

    @property
    def success_rate(self) -> Decimal | None:
        return success_rate(self.by_status)

    @property
    def needs_a_person(self) -> int:
        return sum(item.count for item in self.attention)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: amounts as exact decimal strings, times in ISO 8601, durations in seconds (text)."""
        return _as_json(self)


def report(
    community_id: str, currency: str, days: int = DEFAULT_PERIOD, now: dt.datetime | None = None
) -> Report:
    """Every figure of the dashboard, in a number of queries that does not depend on the rows."""
    span = period(days, now)
    return Report(
        community_id=community_id,
        currency=currency,
        period=span,
        days=collected_per_day(community_id, currency, span),
        by_status=started_by_status(community_id, currency, span),
        callbacks=callback_health(span),
        attention=needs_a_person(community_id, span.end),
        statistics=statistics_comparison(community_id, currency),
        housekeeping=housekeeping(span.end),
    )


# --- text ------------------------------------------------------------------------------------------------


def duration_text(value: dt.timedelta | None) -> str:
    """A short duration for people: 0.4 s, 12.0 s, 5 min, 2 h 5 min, 3 d 4 h."""
    if value is None:
        return "—"
    if value < dt.timedelta(minutes=1):
        exact = Decimal(seconds(value) or "0")
        return gettext("%(seconds)s s") % {"seconds": exact.quantize(Decimal("0.1"))}
    minutes = int(value // dt.timedelta(minutes=1))
    if minutes < 60:
        return gettext("%(minutes)d min") % {"minutes": minutes}
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return gettext("%(hours)d h %(minutes)d min") % {"hours": hours, "minutes": minutes}
    days, hours = divmod(hours, 24)
    return gettext("%(days)d d %(hours)d h") % {"days": days, "hours": hours}


# --- JSON -------------------------------------------------------------------------------------------------


def seconds(value: dt.timedelta | None) -> str | None:
    """A duration as exact seconds text (``"1.250000"``), or None."""
    if value is None:
        return None
    micro = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    return str((Decimal(micro) / Decimal(1_000_000)).quantize(Decimal("0.000001")))


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _amount_json(value: Tally) -> dict[str, Any]:
    return {"count": value.count, "amount": str(value.amount)}


def _as_json(r: Report) -> dict[str, Any]:
    comparison = r.statistics
    snapshot = comparison.snapshot
    return {
        "community_id": r.community_id,
        "currency": r.currency,
        "period": {
            "days": r.period.days,
            "first_day": r.period.first_day.isoformat(),
            "last_day": r.period.last_day.isoformat(),
            "start": r.period.start.isoformat(),
            "end": r.period.end.isoformat(),
            "time_zone": r.period.time_zone,
        },
        "totals": {
            "collected": _amount_json(r.collected),
            "renewals": _amount_json(r.renewals),
            "refunded": _amount_json(r.refunded),
            "net": str(r.net),
            "started": _amount_json(r.started),
            "success_rate_percent": _text(r.success_rate),
        },
        "days": [
            {
                "date": day.date.isoformat(),
                "collected": _amount_json(day.collected),
                "renewals": _amount_json(day.renewals),
                "refunded": _amount_json(day.refunded),
                "net": str(day.net),
            }
            for day in r.days
        ],
        "by_status": {line.status: _amount_json(line.started) for line in r.by_status},
        "callbacks": {
            **{
                name: getattr(r.callbacks, name)
                for name in ("received", "verified", "failed", "duplicates", "invalid", "waiting", "stuck")
            },
            "oldest_stuck_age_seconds": seconds(r.callbacks.oldest_stuck_age),
            "verification_seconds": {
                f"p{p}": seconds(value) for p, value in r.callbacks.verification_time.items()
            },
        },
        "needs_a_person": {item.key: item.count for item in r.attention},
        "housekeeping": {
            job.job: {
                "last_run_at": job.last_run_at.isoformat() if job.last_run_at else None,
                "interval_seconds": seconds(job.interval),
                "late": job.late,
                "late_after_seconds": seconds(job.late_after),
            }
            for job in r.housekeeping
        },
        "statistics": {
            "snapshot": None
            if snapshot is None
            else {
                "taken_at": snapshot.taken_at.isoformat(),
                "balance": _text(snapshot.balance),
                "total_settled": _text(snapshot.total_settled),
                "total_number_of_transactions": snapshot.total_number_of_transactions,
                "total_collected_transactions": _text(snapshot.total_collected_transactions),
                "weekly_collected_transactions": _text(snapshot.weekly_collected_transactions),
            },
            "ledger": {
                "transactions": comparison.ledger.transactions,
                "collected": str(comparison.ledger.collected),
                "collected_net": str(comparison.ledger.collected_net),
                "currencies": comparison.ledger.currencies,
            },
            "difference": {
                "transactions": comparison.transactions_difference,
                "collected": _text(comparison.collected_difference),
                "collected_net": _text(comparison.collected_net_difference),
            },
        },
    }
