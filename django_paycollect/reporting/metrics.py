"""Prometheus metrics of the app, read from the database when they are scraped (needs the ``metrics`` extra).

:class:`PayCollectCollector` keeps no counters in the process: each scrape reads the database with a fixed
number of aggregate queries (:data:`QUERIES`), through ``health``'s definitions, so it needs no multiprocess
directory under gunicorn. :func:`install` registers it with the default ``REGISTRY`` when the app is ready (if
``METRICS`` is on); :func:`metrics_view` serves it behind a token of ``METRICS_TOKENS``. The families are
those of :func:`_families`, described in docs/finance-and-operations.md.
"""

from __future__ import annotations

import datetime as dt
import hmac
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from django.db import DatabaseError
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..conf import metrics_enabled, paycollect_settings
from ..models import ApiCall, ReceivedCallback
from .health import housekeeping, unverified_callbacks, waiting_for_a_person

logger = logging.getLogger(__name__)

#: Seconds a scrape's reading is kept and served again. Prometheus scrapes every 15 to 60 seconds, often
#: from two servers (a highly available pair) and sometimes twice at once: a few seconds collapse those
#: into one reading of the database while staying far fresher than any alert's ``for:``.
CACHE_SECONDS = 5.0
#: The window of the "recent" families (verification time, calls of the service): long enough to hold a
#: quiet site's few calls, short enough that an outage shows within it. Their cost grows with the traffic
#: of this window only (the ``received_at`` and ``created_at`` indexes), never with the table.
RECENT_WINDOW = dt.timedelta(minutes=15)
#: Upper bounds (seconds) of the histogram buckets: receipt to verification, and one call of the service.
VERIFICATION_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
API_CALL_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: The queries of one reading: callbacks by state, unverified, verification time, what needs a person
#: (``health.waiting_for_a_person``: seven, six when ``RECONCILE_GIVE_UP_AFTER`` is None), calls of the
#: service, the periodic jobs.
QUERIES = 12


# --- the families ------------------------------------------------------------------------------------------


def _families() -> dict[str, Metric]:
    """Every family, empty: what :meth:`PayCollectCollector.describe` names and a reading fills."""
    gauge, histogram = GaugeMetricFamily, GaugeHistogramMetricFamily
    window = f"the last {int(RECENT_WINDOW.total_seconds() // 60)} minutes"
    families: list[Metric] = [
        gauge("paycollect_up", "1 when the app's metrics were read from the database, 0 when it failed."),
        gauge("paycollect_callbacks", "Stored callbacks by state now.", labels=["state"]),
        gauge(
            "paycollect_callbacks_stuck",
            "Callbacks stuck: received but never queued, or queued and overdue by CALLBACK_REQUEUE_AFTER.",
        ),
        gauge("paycollect_callbacks_waiting", "Callbacks received or queued, not verified yet, not stuck."),
        gauge(
            "paycollect_callbacks_oldest_stuck_age_seconds",
            "Age of the oldest stuck callback (0: none is stuck).",
        ),
        histogram(
            "paycollect_callback_verification_seconds",
            f"Receipt to verification of the callbacks received and verified in {window}.",
            labels=[],
        ),
        gauge(
            "paycollect_needs_a_person",
            "Items waiting for a person, by kind, over the whole site (as the dashboard counts them).",
            labels=["kind"],
        ),
        gauge(
            "paycollect_api_calls",
            f"Calls of the service in {window}, by operation and outcome "
            "(ok, unknown, or the class of the error).",
            labels=["operation", "outcome"],
        ),
        histogram(
            "paycollect_api_call_duration_seconds",
            f"Duration of the calls of the service in {window}, by operation.",
            labels=["operation"],
        ),
        gauge(
            "paycollect_housekeeping_idle_seconds",
            "Seconds since the job last ran (never run: since it is watched).",
            labels=["task"],
        ),
        gauge(
            "paycollect_housekeeping_late_after_seconds",
            "Seconds without a run after which the job is late (three intervals of its beat entry).",
            labels=["task"],
        ),
        gauge(
            "paycollect_housekeeping_late",
            "1 when the job is late, as the dashboard and check W007 say.",
            labels=["task"],
        ),
    ]
    return {family.name: family for family in families}


@dataclass(frozen=True)
class _Buckets:
    """Conditional counts of one duration column: ``le_<i>`` for each bound, its sum and count."""

    bounds: Sequence[float]

    def aggregates(self, duration: Any, scale: Callable[[float], Any]) -> dict[str, Any]:
        found = Q(**{f"{duration}__isnull": False})
        counts = {
            f"le_{i}": Count("pk", filter=found & Q(**{f"{duration}__lte": scale(bound)}))
            for i, bound in enumerate(self.bounds)
        }
        return {**counts, "count": Count("pk", filter=found), "total": Sum(duration)}

    def buckets(self, row: dict[str, Any]) -> list[tuple[str, float]]:
        values = [(repr(float(bound)), float(row[f"le_{i}"])) for i, bound in enumerate(self.bounds)]
        return [*values, ("+Inf", float(row["count"]))]


def _read(now: dt.datetime) -> list[Metric]:
    families = _families()

    def gauge(name: str) -> GaugeMetricFamily:
        return cast(GaugeMetricFamily, families[name])

    def histogram(name: str) -> GaugeHistogramMetricFamily:
        return cast(GaugeHistogramMetricFamily, families[name])

    gauge("paycollect_up").add_metric([], 1)

    by_state = dict.fromkeys(ReceivedCallback.State.values, 0)
    for state_row in ReceivedCallback.objects.values("state").annotate(n=Count("*")).order_by():
        by_state[state_row["state"]] = state_row["n"]
    for state, count in by_state.items():
        gauge("paycollect_callbacks").add_metric([state], count)

    unverified = unverified_callbacks(now)
    gauge("paycollect_callbacks_stuck").add_metric([], unverified.stuck)
    gauge("paycollect_callbacks_waiting").add_metric([], unverified.waiting)
    oldest = unverified.oldest_stuck_age.total_seconds() if unverified.oldest_stuck_age else 0
    gauge("paycollect_callbacks_oldest_stuck_age_seconds").add_metric([], oldest)

    since = now - RECENT_WINDOW
    verification = _Buckets(VERIFICATION_BUCKETS)
    took = ExpressionWrapper(F("processed_at") - F("received_at"), output_field=DurationField())
    verified = (
        ReceivedCallback.objects.filter(
            received_at__gte=since, state=ReceivedCallback.PROCESSED, processed_at__isnull=False
        )
        .annotate(took=took)
        .aggregate(**verification.aggregates("took", lambda seconds: dt.timedelta(seconds=seconds)))
    )
    total = verified["total"].total_seconds() if verified["total"] is not None else 0.0
    histogram("paycollect_callback_verification_seconds").add_metric(
        [], verification.buckets(verified), total
    )

    for kind, count in waiting_for_a_person(None, now).items():
        gauge("paycollect_needs_a_person").add_metric([kind], count)

    calls = _Buckets(API_CALL_BUCKETS)
    by_operation: dict[str, dict[str, Any]] = {}
    rows = (
        ApiCall.objects.filter(created_at__gte=since)
        .values("operation", "outcome_unknown", "error_class")
        .annotate(n=Count("*"), **calls.aggregates("duration_ms", lambda seconds: int(seconds * 1000)))
        .order_by()
    )
    for row in cast(Iterable[dict[str, Any]], rows):
        outcome = "unknown" if row["outcome_unknown"] else (row["error_class"] or "ok")
        gauge("paycollect_api_calls").add_metric([row["operation"], outcome], row["n"])
        # The histogram is by operation only: the outcomes' rows summed.
        summed = by_operation.setdefault(row["operation"], {})
        for key, number in row.items():
            if key.startswith("le_") or key in ("count", "total"):
                summed[key] = summed.get(key, 0) + (number or 0)
    for operation, summed in sorted(by_operation.items()):
        histogram("paycollect_api_call_duration_seconds").add_metric(
            [operation], calls.buckets(summed), summed["total"] / 1000
        )

    for job in housekeeping(now):
        gauge("paycollect_housekeeping_late_after_seconds").add_metric(
            [job.job], job.late_after.total_seconds()
        )
        gauge("paycollect_housekeeping_late").add_metric([job.job], int(job.late))
        if job.idle_for is not None:  # not watched: no row, nothing to say
            gauge("paycollect_housekeeping_idle_seconds").add_metric([job.job], job.idle_for.total_seconds())
    return list(families.values())


# --- the collector ---------------------------------------------------------------------------------------


class PayCollectCollector(Collector):
    """Reads the families from the database at scrape time, keeping a reading :data:`CACHE_SECONDS`."""

    def __init__(self, cache_seconds: float = CACHE_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.cache_seconds = cache_seconds
        self._clock = clock
        # Held while reading: scrapes arriving together wait for one reading rather than make their own.
        self._lock = threading.Lock()
        self._reading: tuple[float, list[Metric]] | None = None

    def describe(self) -> Iterable[Metric]:
        # The names only: registering must not read the database (the app is not ready to).
        return list(_families().values())

    def collect(self) -> Iterable[Metric]:
        if not metrics_enabled():  # turned off since it was registered: nothing, and no query
            return []
        with self._lock:
            now = self._clock()
            if self._reading is not None and now - self._reading[0] < self.cache_seconds:
                return self._reading[1]
            try:
                families = _read(timezone.now())
            except DatabaseError:
                # Not kept: the next scrape tries again. The other collectors of the registry still answer.
                logger.exception("The app's metrics could not be read from the database")
                down = GaugeMetricFamily("paycollect_up", _families()["paycollect_up"].documentation)
                down.add_metric([], 0)
                return [down]
            self._reading = (now, families)
            return families


_installed: weakref.WeakKeyDictionary[CollectorRegistry, PayCollectCollector] = weakref.WeakKeyDictionary()
_install_lock = threading.Lock()


def install(registry: CollectorRegistry = REGISTRY) -> PayCollectCollector | None:
    """Register the collector with ``registry`` once (called by the app's ``ready()``; again is harmless),
    if ``METRICS`` is on. Returns it, or None when metrics are off."""
    if not metrics_enabled():
        return None
    with _install_lock:
        collector = _installed.get(registry)
        if collector is None:
            collector = PayCollectCollector()
            registry.register(collector)
            _installed[registry] = collector
        return collector


# --- the view --------------------------------------------------------------------------------------------


def _authorised(request: HttpRequest) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return False
    given = token.strip().encode()
    # Every token compared, in constant time: which one matched (or how nearly) takes no time to tell.
    matched = False
    for expected in paycollect_settings.METRICS_TOKENS or ():
        matched |= hmac.compare_digest(given, str(expected).encode())
    return matched


@never_cache
@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """The default registry in Prometheus's text format, for a scraper sending ``Authorization: Bearer
    <token>`` with a token of ``METRICS_TOKENS``; 401 otherwise, 404 when metrics are off. Mount it in the
    project's URLs (``path("metrics/", metrics_view)``)."""
    if not metrics_enabled():
        raise Http404("metrics are off")
    if not _authorised(request):
        refused = HttpResponse("A bearer token of PAYCOLLECT['METRICS_TOKENS'] is needed.\n", status=401)
        refused["WWW-Authenticate"] = 'Bearer realm="metrics"'
        refused["Content-Type"] = "text/plain; charset=utf-8"
        return refused
    install()  # metrics turned on after the app was ready (override_settings): registered now, once
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
