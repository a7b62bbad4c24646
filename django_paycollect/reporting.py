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
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connections, router
from django.db.models import BigIntegerField, Count, F, Min, Model, Q, QuerySet, Sum, Value
from django.db.models.functions import Cast, Round, TruncDate
from django.utils import timezone
from django.utils.translation import gettext

from .models import (
    ZERO,
    DirectOrder,
    ReceivedCallback,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
)
from .services import STALE_IN_FLIGHT, stuck_filter

#: The periods the dashboard offers, in days.
PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 30
#: The longest period a report covers (the command accepts any number of days up to this).
MAX_DAYS = 366
#: Percentiles of the time from a callback's receipt to its verification, measured over the period's latest
#: verified callbacks, at most VERIFICATION_SAMPLE of them (so the cost does not grow with the traffic).
PERCENTILES = (50, 95)
VERIFICATION_SAMPLE = 10_000

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
    start = dt.datetime.combine(first_day, dt.time.min)
    if settings.USE_TZ:
        start = timezone.make_aware(start)
    return Period(days, first_day, last_day, start, now, timezone.get_current_timezone_name())


def _day_of(field_name: str) -> TruncDate:
    return TruncDate(field_name, tzinfo=timezone.get_current_timezone() if settings.USE_TZ else None)


# --- money in the database ------------------------------------------------------------------------------


def _sum(model: type[Model], field_name: str, **extra: Any) -> Sum:
    """``SUM`` of a money column, exact: PostgreSQL sums numerics exactly; SQLite stores decimals as
    floats and would sum them as floats, so there the sum is of whole piasters (integers)."""
    if connections[router.db_for_read(model)].vendor == "sqlite":
        return Sum(Cast(Round(F(field_name) * Value(100)), BigIntegerField()), **extra)
    return Sum(field_name, **extra)


def _money(total: Any) -> Decimal:
    """What :func:`_sum` gave: an integer of piasters (SQLite), a Decimal, or None for no rows."""
    if total is None:
        return ZERO
    if isinstance(total, int):
        return (Decimal(total) / _HUNDRED).quantize(ZERO)
    return Decimal(total).quantize(ZERO)


@dataclass(frozen=True)
class Amount:
    """A number of items and their total."""

    count: int = 0
    amount: Decimal = ZERO

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.count + other.count, self.amount + other.amount)


def _amount(row: Mapping[str, Any] | None) -> Amount:
    if not row:
        return Amount()
    return Amount(int(row["count"] or 0), _money(row["total"]))


# --- collected and refunded per day ---------------------------------------------------------------------


@dataclass(frozen=True)
class Day:
    date: dt.date
    collected: Amount
    refunded: Amount
    #: Of ``collected``: renewal charges of recurring series.
    renewals: Amount

    @property
    def net(self) -> Decimal:
        return self.collected.amount - self.refunded.amount


def _renewal() -> Q:
    """A renewal charge: a payment of a recurring series other than its first (the parent)."""
    return ~Q(parent_uuid="") & ~Q(parent_uuid=F("uuid"))


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
    renewals = _per_day(succeeded.filter(_renewal()), "succeeded_at", "total_amount")
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
        .annotate(count=Count("*"), total=_sum(queryset.model, money))
        .order_by()
    )
    return {row["day"]: row for row in rows}


# --- payments started in the period, by status ------------------------------------------------------------


@dataclass(frozen=True)
class StatusLine:
    status: str
    label: str
    started: Amount


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
        .annotate(count=Count("*"), total=_sum(Transaction, "total_amount"))
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


# --- callbacks -------------------------------------------------------------------------------------------


def stuck_callbacks(now: dt.datetime | None = None) -> Q:
    """Stuck callbacks: what the sweep queues again (received but never queued, or queued and overdue by
    ``CALLBACK_REQUEUE_AFTER``). The one definition is the callback ledger's
    (:func:`~django_paycollect.services.callback_ledger.stuck_filter`), shared with the sweep, the callback
    list's filter and the check ``paycollect.W005``."""
    return stuck_filter(now)


@dataclass(frozen=True)
class CallbackHealth:
    #: Callbacks received in the period, by state now.
    received: int
    verified: int
    failed: int
    duplicates: int
    invalid: int
    #: Received or queued now, whenever they arrived: waiting for a worker, or stuck, with the oldest's age.
    waiting: int
    stuck: int
    oldest_stuck_age: dt.timedelta | None
    #: Time from receipt to verification of the period's verified callbacks, by percentile.
    verification_time: dict[int, dt.timedelta | None]


def callback_health(span: Period) -> CallbackHealth:
    """The whole site's callbacks. Five queries."""
    in_period = ReceivedCallback.objects.filter(received_at__gte=span.start, received_at__lte=span.end)
    states = {
        row["state"]: row["count"] for row in in_period.values("state").annotate(count=Count("*")).order_by()
    }
    stuck = stuck_callbacks(span.end)
    unverified = ReceivedCallback.objects.filter(
        state__in=(ReceivedCallback.RECEIVED, ReceivedCallback.QUEUED)
    ).aggregate(count=Count("*"), stuck=Count("pk", filter=stuck), oldest=Min("received_at", filter=stuck))
    verified = in_period.filter(state=ReceivedCallback.PROCESSED, processed_at__isnull=False)
    return CallbackHealth(
        received=sum(states.values()),
        verified=states.get(ReceivedCallback.PROCESSED, 0),
        failed=states.get(ReceivedCallback.FAILED, 0),
        duplicates=states.get(ReceivedCallback.DUPLICATE, 0),
        invalid=states.get(ReceivedCallback.INVALID, 0),
        waiting=unverified["count"] - unverified["stuck"],
        stuck=unverified["stuck"],
        oldest_stuck_age=(span.end - unverified["oldest"]) if unverified["oldest"] else None,
        verification_time=_percentiles(verified, states.get(ReceivedCallback.PROCESSED, 0)),
    )


def _percentiles(verified: QuerySet[ReceivedCallback], count: int) -> dict[int, dt.timedelta | None]:
    """Nearest-rank percentiles of (processed_at - received_at) over the latest ``VERIFICATION_SAMPLE``
    verified callbacks: three bounded queries, whatever the number of rows (None when there are none)."""
    size = min(count, VERIFICATION_SAMPLE)
    # The receipt time of the sample's oldest, read first so the planner sees the bound and plans for at
    # most a sample's rows rather than the whole period's.
    latest = verified.order_by("-received_at").values_list("received_at", flat=True)
    bound = list(latest[VERIFICATION_SAMPLE - 1 : VERIFICATION_SAMPLE])
    if bound:
        verified = verified.filter(received_at__gte=bound[0])
    durations = (
        verified.annotate(duration=F("processed_at") - F("received_at"))
        .order_by("duration")
        .values_list("duration", flat=True)
    )
    result: dict[int, dt.timedelta | None] = {}
    for percentile in PERCENTILES:
        rank = max(1, math.ceil(percentile * size / 100))
        found = list(durations[rank - 1 : rank])
        result[percentile] = found[0] if found else None
    return result


# --- what needs a person ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attention:
    """Items of one kind that need a person, and where the admin lists exactly them."""

    key: str
    label: str
    count: int
    #: ``app_label.model_name`` of the admin changelist listing them, and its query.
    model: str
    query: dict[str, str] = field(default_factory=dict)
    #: Counted for the whole site rather than the community.
    site_wide: bool = False


def needs_a_person(community_id: str, now: dt.datetime | None = None) -> list[Attention]:
    """Everything of the community (callbacks: of the site) waiting for a person. Six queries."""
    now = now or timezone.now()
    flags = {
        "payments": Q(outcome_unknown=True),
        "captures": Q(capture_state=Transaction.CAPTURE_UNKNOWN),
        "mismatches": Q(amount_mismatch=True),
        "unrecognised": Q(status_unrecognised=True),
    }
    any_flag = Q()
    for condition in flags.values():
        any_flag |= condition
    transactions = Transaction.objects.filter(any_flag, community_id=community_id).aggregate(
        **{key: Count("pk", filter=condition) for key, condition in flags.items()}
    )
    stale = now - STALE_IN_FLIGHT
    refunds = Refund.objects.filter(
        Q(state=Refund.UNKNOWN) | Q(state=Refund.PENDING, created_at__lt=stale),
        transaction__community_id=community_id,
    ).aggregate(
        unknown=Count("pk", filter=Q(state=Refund.UNKNOWN)),
        stale=Count("pk", filter=Q(state=Refund.PENDING)),
    )
    unknown_series = RecurringSeries.objects.filter(
        community_id=community_id, cancel_state=RecurringSeries.CANCEL_UNKNOWN
    ).count()
    unknown_orders = DirectOrder.objects.filter(community_id=community_id, state=DirectOrder.UNKNOWN).count()
    # Two counts rather than one with filters: each reads only the state index.
    callbacks_failed = ReceivedCallback.objects.filter(state=ReceivedCallback.FAILED).count()
    callbacks_stuck = ReceivedCallback.objects.filter(stuck_callbacks(now)).count()
    in_community = {"community_id__exact": community_id}
    return [
        Attention(
            "payments_unknown",
            gettext("Payments of unknown outcome"),
            transactions["payments"],
            "paycollect.transaction",
            {**in_community, "outcome_unknown__exact": "1"},
        ),
        Attention(
            "refunds_unknown",
            gettext("Refunds of unknown outcome"),
            refunds["unknown"],
            "paycollect.refund",
            {"community": community_id, "state__exact": Refund.UNKNOWN},
        ),
        Attention(
            "refunds_stale",
            gettext("Refunds pending for over %(minutes)d minutes")
            % {"minutes": STALE_IN_FLIGHT // dt.timedelta(minutes=1)},
            refunds["stale"],
            "paycollect.refund",
            {"community": community_id, "state__exact": Refund.PENDING, "created_at__lt": stale.isoformat()},
        ),
        Attention(
            "captures_unknown",
            gettext("Captures of unknown outcome"),
            transactions["captures"],
            "paycollect.transaction",
            {**in_community, "capture_state__exact": Transaction.CAPTURE_UNKNOWN},
        ),
        Attention(
            "cancellations_unknown",
            gettext("Cancellations of unknown outcome"),
            unknown_series,
            "paycollect.recurringseries",
            {**in_community, "cancel_state__exact": RecurringSeries.CANCEL_UNKNOWN},
        ),
        Attention(
            "direct_orders_unknown",
            gettext("Direct orders of unknown outcome"),
            unknown_orders,
            "paycollect.directorder",
            {**in_community, "state__exact": DirectOrder.UNKNOWN},
        ),
        Attention(
            "amount_mismatches",
            gettext("Amount mismatches"),
            transactions["mismatches"],
            "paycollect.transaction",
            {**in_community, "amount_mismatch__exact": "1"},
        ),
        Attention(
            "unrecognised_statuses",
            gettext("Unrecognised statuses"),
            transactions["unrecognised"],
            "paycollect.transaction",
            {**in_community, "status_unrecognised__exact": "1"},
        ),
        Attention(
            "callbacks_failed",
            gettext("Callbacks whose verification failed"),
            callbacks_failed,
            "paycollect.receivedcallback",
            {"state__exact": ReceivedCallback.FAILED},
            site_wide=True,
        ),
        Attention(
            "callbacks_stuck",
            gettext("Stuck callbacks"),
            callbacks_stuck,
            "paycollect.receivedcallback",
            {"waiting": "stuck"},  # the callback list's filter: the same definition
            site_wide=True,
        ),
    ]


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
        .annotate(total=_sum(Transaction, "total_amount"), refunded=_sum(Transaction, "refunded_amount"))
        .order_by("currency")
    )
    by_currency = {row["currency"]: row for row in paid}
    row = by_currency.get(currency)
    collected = _money(row["total"]) if row else ZERO
    refunded = _money(row["refunded"]) if row else ZERO
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

    @property
    def collected(self) -> Amount:
        return sum((day.collected for day in self.days), Amount())

    @property
    def refunded(self) -> Amount:
        return sum((day.refunded for day in self.days), Amount())

    @property
    def renewals(self) -> Amount:
        return sum((day.renewals for day in self.days), Amount())

    @property
    def net(self) -> Decimal:
        return self.collected.amount - self.refunded.amount

    @property
    def started(self) -> Amount:
        return sum((line.started for line in self.by_status), Amount())

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


def _amount_json(value: Amount) -> dict[str, Any]:
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
            "received": r.callbacks.received,
            "verified": r.callbacks.verified,
            "failed": r.callbacks.failed,
            "duplicates": r.callbacks.duplicates,
            "invalid": r.callbacks.invalid,
            "waiting": r.callbacks.waiting,
            "stuck": r.callbacks.stuck,
            "oldest_stuck_age_seconds": seconds(r.callbacks.oldest_stuck_age),
            "verification_seconds": {
                f"p{p}": seconds(value) for p, value in r.callbacks.verification_time.items()
            },
        },
        "needs_a_person": {item.key: item.count for item in r.attention},
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
