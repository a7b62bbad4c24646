"""Callbacks' health and what needs a person, counted in the database."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from django.db.models import Count, F, Min, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from .. import reconciliation
from ..conf import paycollect_settings
from ..models import (
    DirectOrder,
    HousekeepingRun,
    ReceivedCallback,
    RecurringSeries,
    Refund,
    Transaction,
)
from ..schedules import beat_interval
from ..services.callback_ledger import stuck_filter
from ..services.common import STALE_IN_FLIGHT
from .figures import Period

#: Percentiles of the time from a callback's receipt to its verification, measured over the period's latest
#: verified callbacks, at most :data:`VERIFICATION_SAMPLE` of them.
PERCENTILES = (50, 95)
#: How many latest verified callbacks they are measured over, so a report's cost does not grow with the
#: traffic (a constant: only a benchmark had a reason to turn it).
VERIFICATION_SAMPLE = 10_000


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
    unverified = unverified_callbacks(span.end)
    verified = in_period.filter(state=ReceivedCallback.PROCESSED, processed_at__isnull=False)
    return CallbackHealth(
        received=sum(states.values()),
        verified=states.get(ReceivedCallback.PROCESSED, 0),
        failed=states.get(ReceivedCallback.FAILED, 0),
        duplicates=states.get(ReceivedCallback.DUPLICATE, 0),
        invalid=states.get(ReceivedCallback.INVALID, 0),
        waiting=unverified.waiting,
        stuck=unverified.stuck,
        oldest_stuck_age=unverified.oldest_stuck_age,
        verification_time=_percentiles(verified, states.get(ReceivedCallback.PROCESSED, 0)),
    )


@dataclass(frozen=True)
class Unverified:
    """Callbacks received or queued now, whenever they arrived: waiting for a worker, or stuck."""

    waiting: int
    stuck: int
    oldest_stuck_age: dt.timedelta | None


def unverified_callbacks(now: dt.datetime | None = None) -> Unverified:
    """The callbacks not verified yet, stuck or not, and the oldest stuck one's age. One query."""
    now = now or timezone.now()
    stuck = stuck_callbacks(now)
    unverified = ReceivedCallback.objects.filter(state__in=ReceivedCallback.WAITING_STATES).aggregate(
        count=Count("*"), stuck=Count("pk", filter=stuck), oldest=Min("received_at", filter=stuck)
    )
    return Unverified(
        waiting=unverified["count"] - unverified["stuck"],
        stuck=unverified["stuck"],
        oldest_stuck_age=(now - unverified["oldest"]) if unverified["oldest"] else None,
    )


def _percentiles(verified: QuerySet[ReceivedCallback], count: int) -> dict[int, dt.timedelta | None]:
    """Nearest-rank percentiles of (processed_at - received_at) over the latest :data:`VERIFICATION_SAMPLE`
    verified callbacks: three bounded queries, whatever the number of rows (None when there are none)."""
    sample = VERIFICATION_SAMPLE
    size = min(count, sample)
    # The receipt time of the sample's oldest, read first so the planner sees the bound and plans for at
    # most a sample's rows rather than the whole period's.
    latest = verified.order_by("-received_at").values_list("received_at", flat=True)
    bound = list(latest[sample - 1 : sample])
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


#: The kinds of :func:`needs_a_person`, in its order: the keys of :func:`waiting_for_a_person`'s counts.
ATTENTION_KINDS = (
    "payments_unknown",
    "refunds_unknown",
    "refunds_stale",
    "captures_unknown",
    "cancellations_unknown",
    "direct_orders_unknown",
    "amount_mismatches",
    "unrecognised_statuses",
    "callbacks_failed",
    "callbacks_stuck",
    "open_too_long",
)


def waiting_for_a_person(community_id: str | None = None, now: dt.datetime | None = None) -> dict[str, int]:
    """How many items of each kind (:data:`ATTENTION_KINDS`) wait for a person: of the community, or of
    the whole site when ``community_id`` is None (callbacks are always the site's). ``open_too_long`` is
    left out when ``RECONCILE_GIVE_UP_AFTER`` is None (nothing is given up on). The one reading of these
    definitions, for the dashboard, the report and the metrics. Seven queries."""
    now = now or timezone.now()
    scope = Q() if community_id is None else Q(community_id=community_id)
    flags = {
        "payments_unknown": Q(outcome_unknown=True),
        "captures_unknown": Q(capture_state=Transaction.CAPTURE_UNKNOWN),
        "amount_mismatches": Q(amount_mismatch=True),
        "unrecognised_statuses": Q(status_unrecognised=True),
    }
    any_flag = Q()
    for condition in flags.values():
        any_flag |= condition
    counts: dict[str, int] = Transaction.objects.filter(any_flag, scope).aggregate(
        **{key: Count("pk", filter=condition) for key, condition in flags.items()}
    )
    stale = now - STALE_IN_FLIGHT
    refunds = Refund.objects.filter(
        Q(state=Refund.UNKNOWN) | Q(state=Refund.PENDING, created_at__lt=stale),
        Q() if community_id is None else Q(transaction__community_id=community_id),
    ).aggregate(
        unknown=Count("pk", filter=Q(state=Refund.UNKNOWN)),
        stale=Count("pk", filter=Q(state=Refund.PENDING)),
    )
    counts["refunds_unknown"] = refunds["unknown"]
    counts["refunds_stale"] = refunds["stale"]
    counts["cancellations_unknown"] = RecurringSeries.objects.filter(
        scope, cancel_state=RecurringSeries.CANCEL_UNKNOWN
    ).count()
    counts["direct_orders_unknown"] = DirectOrder.objects.filter(scope, state=DirectOrder.UNKNOWN).count()
    # Two counts rather than one with filters: each reads only the state index.
    counts["callbacks_failed"] = ReceivedCallback.objects.filter(state=ReceivedCallback.FAILED).count()
    counts["callbacks_stuck"] = ReceivedCallback.objects.filter(stuck_callbacks(now)).count()
    too_old = reconciliation.given_up(now)
    if too_old is not None:
        counts["open_too_long"] = Transaction.objects.filter(too_old, scope).count()
    return {kind: counts[kind] for kind in ATTENTION_KINDS if kind in counts}


def needs_a_person(community_id: str, now: dt.datetime | None = None) -> list[Attention]:
    """Everything of the community (callbacks: of the site) waiting for a person. Seven queries."""
    now = now or timezone.now()
    own, refunds = {"community_id__exact": community_id}, {"community": community_id}
    stale = (now - STALE_IN_FLIGHT).isoformat()
    labels = {
        "payments_unknown": gettext("Payments of unknown outcome"),
        "refunds_unknown": gettext("Refunds of unknown outcome"),
        "refunds_stale": gettext("Refunds pending for over %(minutes)d minutes")
        % {"minutes": STALE_IN_FLIGHT // dt.timedelta(minutes=1)},
        "captures_unknown": gettext("Captures of unknown outcome"),
        "cancellations_unknown": gettext("Cancellations of unknown outcome"),
        "direct_orders_unknown": gettext("Direct orders of unknown outcome"),
        "amount_mismatches": gettext("Amount mismatches"),
        "unrecognised_statuses": gettext("Unrecognised statuses"),
        "callbacks_failed": gettext("Callbacks whose verification failed"),
        "callbacks_stuck": gettext("Stuck callbacks"),
    }
    # The admin changelist (``paycollect.<model>``) and the query that list exactly each kind's items.
    lists: dict[str, tuple[str, dict[str, str]]] = {
        "payments_unknown": ("transaction", {**own, "outcome_unknown__exact": "1"}),
        "refunds_unknown": ("refund", {**refunds, "state__exact": Refund.UNKNOWN}),
        "refunds_stale": ("refund", {**refunds, "state__exact": Refund.PENDING, "created_at__lt": stale}),
        "captures_unknown": ("transaction", {**own, "capture_state__exact": Transaction.CAPTURE_UNKNOWN}),
        "cancellations_unknown": (
            "recurringseries",
            {**own, "cancel_state__exact": RecurringSeries.CANCEL_UNKNOWN},
        ),
        "direct_orders_unknown": ("directorder", {**own, "state__exact": DirectOrder.UNKNOWN}),
        "amount_mismatches": ("transaction", {**own, "amount_mismatch__exact": "1"}),
        "unrecognised_statuses": ("transaction", {**own, "status_unrecognised__exact": "1"}),
        "callbacks_failed": ("receivedcallback", {"state__exact": ReceivedCallback.FAILED}),
        # The callback list's filter: the same definition.
        "callbacks_stuck": ("receivedcallback", {"waiting": "stuck"}),
    }
    give_up = reconciliation.give_up_after()
    if give_up is not None:
        labels["open_too_long"] = gettext("Payments open for over %(days)d days (no longer fetched)") % {
            "days": give_up // dt.timedelta(days=1)
        }
        lists["open_too_long"] = (
            "transaction",
            {
                **own,
                "status__in": f"{Transaction.NEW},{Transaction.PENDING}",
                "uuid__isnull": "False",
                "created_at__lt": (now - give_up).isoformat(),
            },
        )
    # Callbacks are counted for the whole site (a callback names its community only once verified).
    return [
        Attention(
            key, labels[key], count, f"paycollect.{model}", query, site_wide=model == "receivedcallback"
        )
        for key, count in waiting_for_a_person(community_id, now).items()
        for model, query in [lists[key]]
    ]


# --- the periodic jobs --------------------------------------------------------------------------------------

#: A periodic job is late when it has not run for more than this many of its intervals: a beat (or every
#: worker) stopped, not a run that a busy queue delayed a little.
LATE_AFTER_INTERVALS = 3
#: The jobs watched, the task of each (whose beat entry gives its interval) and how it is named.
HOUSEKEEPING_JOBS = (
    (HousekeepingRun.SWEEP, "paycollect.sweep_callbacks"),
    (HousekeepingRun.RECONCILIATION, "paycollect.reconcile"),
)


@dataclass(frozen=True)
class Housekeeping:
    """One periodic job: when it last ran to its end (None: never), how often it should, and whether late."""

    job: str
    label: str
    task: str
    interval: dt.timedelta
    last_run_at: dt.datetime | None
    #: Since when its runs are expected (its row's ``watched_since``); None: not watched (no row).
    watched_since: dt.datetime | None
    #: It ran, and then has not for more than :data:`LATE_AFTER_INTERVALS` intervals (never run: not late).
    late: bool
    #: How long since it last ran (never run: since it is watched); None when not watched.
    idle_for: dt.timedelta | None

    @property
    def late_after(self) -> dt.timedelta:
        return self.interval * LATE_AFTER_INTERVALS

    @property
    def never_run(self) -> bool:
        return self.last_run_at is None

    def warning(self) -> str:
        """What a person reads when it is late (the admin, the dashboard, the report, check W007)."""
        from .report import duration_text

        values = {"age": duration_text(self.idle_for), "interval": duration_text(self.interval)}
        # Whole sentences per job and runner, so that each language can word them as it must. On Django's
        # task framework there is no beat: the jobs are the commands its timers or cron run.
        if housekeeping_without_beat():
            if self.job == HousekeepingRun.SWEEP:
                text = gettext(
                    "The callback sweep last ran %(age)s ago, though it should run every %(interval)s: "
                    "is its timer or cron line running manage.py paycollect_process_callbacks --stuck?"
                )
            else:
                text = gettext(
                    "Reconciliation last ran %(age)s ago, though it should run every %(interval)s: "
                    "is its timer or cron line running manage.py paycollect_reconcile?"
                )
        elif self.job == HousekeepingRun.SWEEP:
            text = gettext(
                "The callback sweep last ran %(age)s ago, though it should run every %(interval)s: "
                "is celery beat running, with the sweep in its schedule, and a worker?"
            )
        else:
            text = gettext(
                "Reconciliation last ran %(age)s ago, though it should run every %(interval)s: is celery "
                "beat running, with reconciliation in its schedule, and a worker?"
            )
        return text % values


def housekeeping_not_run_yet(jobs: list[Housekeeping]) -> str | None:
    """One plain sentence when some of ``jobs`` (:func:`housekeeping`'s) have never run on this site (a
    development site, the demo, a site whose beat is not started yet), None when every one has run: the
    dashboard's note and the check ``paycollect.I001``, with :func:`housekeeping_how_to_start`."""
    waiting = {job.job for job in jobs if job.never_run}
    # Whole sentences per case, so that each language can word them as it must.
    if waiting == {HousekeepingRun.SWEEP, HousekeepingRun.RECONCILIATION}:
        return gettext(
            "The periodic jobs (the callback sweep and reconciliation) have not run yet on this site."
        )
    if waiting == {HousekeepingRun.SWEEP}:
        return gettext("The callback sweep has not run yet on this site.")
    if waiting == {HousekeepingRun.RECONCILIATION}:
        return gettext("Reconciliation has not run yet on this site.")
    return None


def housekeeping_without_beat() -> bool:
    """Whether the site runs its jobs on Django's task framework (``TASK_RUNNER`` ``"django"``): no beat,
    the periodic jobs from timers or cron."""
    return bool(paycollect_settings.TASK_RUNNER == "django")


def housekeeping_how_to_start() -> str:
    """How the periodic jobs are started: the note's second sentence, the check's hint."""
    if housekeeping_without_beat():
        return gettext(
            "To run them, run manage.py paycollect_process_callbacks --stuck every minute and manage.py "
            "paycollect_reconcile every 15 minutes, from systemd timers or cron (the deployment docs have "
            "the units)."
        )
    return gettext(
        "To run them, start celery beat with django_paycollect.schedules.BEAT_SCHEDULE in "
        "CELERY_BEAT_SCHEDULE, and a worker; or, without beat, run manage.py paycollect_process_callbacks "
        "--stuck and manage.py paycollect_reconcile from cron, as often as those entries say."
    )


def sweep_question() -> str:
    """What re-queues stuck callbacks on this site's runner, asked (check W005's hint)."""
    if housekeeping_without_beat():
        return (
            "Are a db_worker and the sweep's timer or cron line (`manage.py paycollect_process_callbacks "
            "--stuck`, every minute) running?"
        )
    return (
        "Is celery beat running with django_paycollect.schedules.BEAT_SCHEDULE (its sweep queues them "
        "again), and a worker?"
    )


def housekeeping(now: dt.datetime | None = None) -> list[Housekeeping]:
    """When the sweep and reconciliation last ran, and whether either is late: run, and then not for more
    than :data:`LATE_AFTER_INTERVALS` of its beat entry's interval (``schedules.beat_interval``). One query.
    A job never run is not late, however long watched: such a site (development, the demo, beat not started
    yet) is told so calmly (:func:`housekeeping_not_run_yet`), not warned of a stopped beat."""
    now = now or timezone.now()
    rows = {row.job: row for row in HousekeepingRun.objects.all()}
    labels = dict(HousekeepingRun.JOB_CHOICES)
    result = []
    for job, task in HOUSEKEEPING_JOBS:
        row = rows.get(job)
        interval = beat_interval(task)
        last, watched = (row.last_run_at, row.watched_since) if row else (None, None)
        since = last or watched
        idle_for = max(now - since, dt.timedelta(0)) if since is not None else None
        late = last is not None and idle_for is not None and idle_for > interval * LATE_AFTER_INTERVALS
        result.append(Housekeeping(job, str(labels[job]), task, interval, last, watched, late, idle_for))
    return result
