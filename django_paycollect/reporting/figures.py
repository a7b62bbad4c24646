"""The period, exact money sums, what was collected and refunded per day, payments by status."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connections, router
from django.db.models import BigIntegerField, Count, F, Model, QuerySet, Sum, Value
from django.db.models.functions import Cast, Round, TruncDate
from django.utils import timezone

from ..models import Refund, Transaction
from ..models.fields import ZERO

#: The periods the dashboard offers, in days.
PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 30
#: The longest period a report covers (the command accepts any number of days up to this).
MAX_DAYS = 366

_HUNDRED = Decimal(100)


# --- the period ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Period:
    """``days`` calendar days ending today: from the first day's midnight to ``end`` (now)."""

    days: int
    first_day: dt.date
    last_day: dt.date
    start: dt.datetime
    end: dt.datetime
    time_zone: str

    @property
    def dates(self) -> list[dt.date]:
        return [self.first_day + dt.timedelta(days=n) for n in range(self.days)]


def period(days: int, now: dt.datetime | None = None) -> Period:
    """The period of ``days`` days ending at ``now`` (default: now), in the current time zone."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"a period is 1 to {MAX_DAYS} days, not {days}")
    now = now or timezone.now()
    local_now = timezone.localtime(now) if settings.USE_TZ else now
    last_day = local_now.date()
    first_day = last_day - dt.timedelta(days=days - 1)
    return Period(days, first_day, last_day, midnight(first_day), now, timezone.get_current_timezone_name())


def midnight(day: dt.date) -> dt.datetime:
    """Midnight at the start of ``day`` in the current time zone: a day of the site, whatever the server's."""
    moment = dt.datetime.combine(day, dt.time.min)
    return timezone.make_aware(moment) if settings.USE_TZ else moment


def _day_of(field_name: str) -> TruncDate:
    return TruncDate(field_name, tzinfo=timezone.get_current_timezone() if settings.USE_TZ else None)


# --- money in the database ------------------------------------------------------------------------------


def money_sum(model: type[Model], field_name: str, **extra: Any) -> Sum:
    """``SUM`` of a money column, exact: PostgreSQL sums numerics exactly; SQLite stores decimals as
    floats and would sum them as floats, so there the sum is of whole piasters (integers)."""
    if connections[router.db_for_read(model)].vendor == "sqlite":
        return Sum(Cast(Round(F(field_name) * Value(100)), BigIntegerField()), **extra)
    return Sum(field_name, **extra)


def money_total(total: Any) -> Decimal:
    """What :func:`money_sum` gave: an integer of piasters (SQLite), a Decimal, or None for no rows."""
    if total is None:
        return ZERO
    if isinstance(total, int):
        return (Decimal(total) / _HUNDRED).quantize(ZERO)
    return Decimal(total).quantize(ZERO)


@dataclass(frozen=True)
class Tally:
    """A number of items and their total."""

    count: int = 0
    amount: Decimal = ZERO

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.count + other.count, self.amount + other.amount)


def _amount(row: Mapping[str, Any] | None) -> Tally:
    if not row:
        return Tally()
    return Tally(int(row["count"] or 0), money_total(row["total"]))


# --- collected and refunded per day ---------------------------------------------------------------------


@dataclass(frozen=True)
class Day:
    date: dt.date
    collected: Tally
    refunded: Tally
    #: Of ``collected``: renewal charges of recurring series.
    renewals: Tally

    @property
    def net(self) -> Decimal:
        return self.collected.amount - self.refunded.amount


def collected_per_day(community_id: str, currency: str, span: Period) -> list[Day]:
    """Every day of the period (days without payments too): collected, renewals, refunded. Three queries."""
    succeeded = Transaction.objects.filter(
        community_id=community_id,
        currency=currency,
        succeeded_at__gte=span.start,
        succeeded_at__lte=span.end,
    )
    paid = _per_day(succeeded, "succeeded_at", "total_amount")
    # Apart, so the first query reads only its index; renewals are few and have their own.
    renewals = _per_day(succeeded.renewals(), "succeeded_at", "total_amount")
    refunds = Refund.objects.filter(
        state=Refund.SUCCEEDED,
        completed_at__gte=span.start,
        completed_at__lte=span.end,
        transaction__community_id=community_id,
        transaction__currency=currency,
    )
    refunded = _per_day(refunds, "completed_at", "amount")
    return [
        Day(
            date=day,
            collected=_amount(paid.get(day)),
            refunded=_amount(refunded.get(day)),
            renewals=_amount(renewals.get(day)),
        )
        for day in span.dates
    ]


def _per_day(queryset: QuerySet[Any], when: str, money: str) -> dict[dt.date, dict[str, Any]]:
    rows = (
        queryset.annotate(day=_day_of(when))
        .values("day")
        .annotate(count=Count("*"), total=money_sum(queryset.model, money))
        .order_by()
    )
    return {row["day"]: row for row in rows}


# --- payments started in the period, by status ------------------------------------------------------------


@dataclass(frozen=True)
class StatusLine:
    status: str
    label: str
    started: Tally


def started_by_status(community_id: str, currency: str, span: Period) -> list[StatusLine]:
    """Payments created in the period, by their status now: every status, in the model's order. One query."""
    rows = (
        Transaction.objects.filter(
            community_id=community_id,
            currency=currency,
            created_at__gte=span.start,
            created_at__lte=span.end,
        )
        .values("status")
        .annotate(count=Count("*"), total=money_sum(Transaction, "total_amount"))
        .order_by()
    )
    by_status = {row["status"]: row for row in rows}
    return [
        StatusLine(status, str(label), _amount(by_status.get(status)))
        for status, label in Transaction.STATUS_CHOICES
    ]


def success_rate(lines: Iterable[StatusLine]) -> Decimal | None:
    """Successful among successful and failed, in percent to one decimal; None when none was decided."""
    counts = {line.status: line.started.count for line in lines}
    successful = counts.get(Transaction.SUCCESSFUL, 0)
    decided = successful + counts.get(Transaction.FAILED, 0)
    if not decided:
        return None
    return (Decimal(successful) * _HUNDRED / Decimal(decided)).quantize(Decimal("0.1"))
