"""The Prometheus metrics (``reporting.metrics``): each family's values on a seeded database, a fixed number
of queries from 10 to 10,000 rows, the reading kept a few seconds, the view's bearer token, registration
once, and nothing registered when ``METRICS`` is off. On SQLite and, under ``make test-postgres``,
PostgreSQL."""

from __future__ import annotations

import datetime as dt
import re
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.apps import apps
from django.core.checks import run_checks
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from django_paycollect import reporting
from django_paycollect.models import (
    ApiCall,
    DirectOrder,
    HousekeepingRun,
    ReceivedCallback,
    Refund,
    Transaction,
)
from django_paycollect.reporting import metrics
from django_paycollect.reporting.metrics import PayCollectCollector, install

pytestmark = pytest.mark.django_db

TOKEN = "a-long-random-metrics-token-0123"
RULES = Path(metrics.__file__).parents[1] / "prometheus" / "alerts.yml"


def read(collector: PayCollectCollector | None = None) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """One scrape of a new collector (or the given one), as {(sample name, labels): value}."""
    families = (collector or PayCollectCollector()).collect()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in families
        for sample in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def txn(**fields: Any) -> Transaction:
    values = {
        "uuid": str(uuid.uuid4()),
        "community_id": "club-a",
        "currency": "EGP",
        "status": Transaction.PENDING,
        "total_amount": Decimal("10.00"),
    }
    return Transaction.objects.create(**{**values, **fields})


def call(
    operation: str, ago: dt.timedelta, *, ms: int | None, error: str = "", unknown: bool = False
) -> None:
    ApiCall.objects.create(
        operation=operation,
        method="POST",
        path="/x",
        duration_ms=ms,
        error_class=error,
        outcome_unknown=unknown,
        created_at=timezone.now() - ago,
    )


@pytest.fixture
def seeded(settings: Any) -> None:
    """Callbacks in every state, things waiting for a person, calls of the service, the periodic jobs."""
    now = timezone.now()
    ago = lambda **kw: now - dt.timedelta(**kw)  # noqa: E731
    new = ReceivedCallback.objects.create
    # Verified recently in 3 s and in 40 s; one verified two hours ago is outside the window.
    new(state=ReceivedCallback.PROCESSED, received_at=ago(minutes=5), processed_at=ago(minutes=5, seconds=-3))
    new(
        state=ReceivedCallback.PROCESSED, received_at=ago(minutes=4), processed_at=ago(minutes=4, seconds=-40)
    )
    new(state=ReceivedCallback.PROCESSED, received_at=ago(hours=2), processed_at=ago(hours=2, seconds=-1))
    new(state=ReceivedCallback.FAILED, received_at=ago(minutes=3))
    new(state=ReceivedCallback.DUPLICATE, received_at=ago(minutes=3))
    # Stuck: received and never queued (an hour ago), queued and overdue; waiting: queued and due now.
    new(state=ReceivedCallback.RECEIVED, received_at=ago(hours=1))
    new(state=ReceivedCallback.QUEUED, received_at=ago(minutes=30), next_attempt_at=ago(minutes=20))
    new(state=ReceivedCallback.QUEUED, received_at=ago(seconds=5), next_attempt_at=ago(seconds=5))
    # Waiting for a person: a payment and a refund of unknown outcome, a direct order, one open too long.
    unknown = txn(status=Transaction.NEW, uuid=None, outcome_unknown=True, created_at=ago(minutes=10))
    Refund.objects.create(transaction=unknown, amount=Decimal("1.00"), state=Refund.UNKNOWN)
    DirectOrder.objects.create(community_id="club-b", state=DirectOrder.UNKNOWN, amount=Decimal("5.00"))
    txn(created_at=ago(days=8))
    txn(created_at=ago(days=1))  # open, but not for too long
    # Calls of the service: two pays (0.2 s fine, 3 s a server error), a fetch of unknown outcome, an old one.
    call("pay", dt.timedelta(minutes=2), ms=200)
    call("pay", dt.timedelta(minutes=1), ms=3000, error="ServerError")
    call("get_transaction", dt.timedelta(minutes=1), ms=None, error="OutcomeUnknownError", unknown=True)
    call("pay", dt.timedelta(hours=1), ms=100)
    # The sweep last ran ten minutes ago (late: three of its one-minute intervals), reconciliation one ago.
    HousekeepingRun.objects.all().delete()
    HousekeepingRun.objects.create(
        job=HousekeepingRun.SWEEP, last_run_at=ago(minutes=10), watched_since=ago(days=9)
    )
    HousekeepingRun.objects.create(
        job=HousekeepingRun.RECONCILIATION, last_run_at=ago(minutes=1), watched_since=ago(days=9)
    )


def test_each_family_reads_what_the_database_holds(seeded):
    samples = read()
    assert value(samples, "paycollect_up") == 1
    by_state = {
        state: value(samples, "paycollect_callbacks", state=state) for state in ReceivedCallback.State
    }
    assert by_state == {"received": 1, "queued": 2, "processed": 3, "failed": 1, "duplicate": 1, "invalid": 0}
    assert value(samples, "paycollect_callbacks_stuck") == 2
    assert value(samples, "paycollect_callbacks_waiting") == 1
    assert 3590 < value(samples, "paycollect_callbacks_oldest_stuck_age_seconds") < 3700

    verification = "paycollect_callback_verification_seconds"
    assert value(samples, f"{verification}_bucket", le="2.0") == 0
    assert value(samples, f"{verification}_bucket", le="5.0") == 1
    assert value(samples, f"{verification}_bucket", le="30.0") == 1
    assert value(samples, f"{verification}_bucket", le="60.0") == 2
    assert value(samples, f"{verification}_bucket", le="+Inf") == 2
    assert value(samples, f"{verification}_gcount") == 2
    assert value(samples, f"{verification}_gsum") == pytest.approx(43)

    person = {
        kind: v
        for (name, labels), v in samples.items()
        if name == "paycollect_needs_a_person"
        for _, kind in labels
    }
    assert person == {
        **dict.fromkeys(reporting.health.ATTENTION_KINDS, 0),
        "payments_unknown": 1,
        "refunds_unknown": 1,
        "direct_orders_unknown": 1,
        "callbacks_failed": 1,
        "callbacks_stuck": 2,
        "open_too_long": 1,
    }

    calls = {
        tuple(sorted(labels)): v for (name, labels), v in samples.items() if name == "paycollect_api_calls"
    }
    assert calls == {
        (("operation", "pay"), ("outcome", "ok")): 1,
        (("operation", "pay"), ("outcome", "ServerError")): 1,
        (("operation", "get_transaction"), ("outcome", "unknown")): 1,
    }
    duration = "paycollect_api_call_duration_seconds"
    assert value(samples, f"{duration}_bucket", operation="pay", le="0.25") == 1
    assert value(samples, f"{duration}_bucket", operation="pay", le="2.5") == 1
    assert value(samples, f"{duration}_bucket", operation="pay", le="5.0") == 2
    assert value(samples, f"{duration}_gsum", operation="pay") == pytest.approx(3.2)
    # A call that got no answer has no duration: counted among the calls, not in the histogram.
    assert value(samples, f"{duration}_gcount", operation="get_transaction") == 0

    assert value(samples, "paycollect_housekeeping_late", task="sweep") == 1
    assert value(samples, "paycollect_housekeeping_late", task="reconciliation") == 0
    assert 595 < value(samples, "paycollect_housekeeping_idle_seconds", task="sweep") < 700
    assert value(samples, "paycollect_housekeeping_late_after_seconds", task="sweep") == 180
    assert value(samples, "paycollect_housekeeping_late_after_seconds", task="reconciliation") == 2700


def test_the_metrics_say_what_the_dashboard_says(seeded):
    """One reading of stuck, waiting and late: the dashboard's figures for the site."""
    samples = read()
    now = timezone.now()
    health = reporting.callback_health(reporting.period(1, now))
    assert value(samples, "paycollect_callbacks_stuck") == health.stuck
    assert value(samples, "paycollect_callbacks_waiting") == health.waiting
    for job in reporting.housekeeping(now):
        assert value(samples, "paycollect_housekeeping_late", task=job.job) == job.late
    for kind, count in reporting.health.waiting_for_a_person(None, now).items():
        assert value(samples, "paycollect_needs_a_person", kind=kind) == count


def test_a_site_that_never_gives_up_on_open_payments_has_no_open_too_long(seeded, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RECONCILE_GIVE_UP_AFTER": None}
    kinds = {dict(labels)["kind"] for name, labels in read() if name == "paycollect_needs_a_person"}
    assert "open_too_long" not in kinds
    assert "payments_unknown" in kinds


def seed(rows: int) -> None:
    now = timezone.now()
    states = list(ReceivedCallback.State.values)
    ReceivedCallback.objects.bulk_create(
        ReceivedCallback(
            state=states[i % len(states)],
            received_at=now - dt.timedelta(seconds=i),
            processed_at=now - dt.timedelta(seconds=i // 2),
        )
        for i in range(rows)
    )
    operations = ["pay", "get_transaction", "refund"]
    ApiCall.objects.bulk_create(
        ApiCall(
            operation=operations[i % 3],
            method="POST",
            path="/x",
            duration_ms=i % 5000,
            error_class=["", "ServerError", "ValidationError"][i % 3],
            created_at=now - dt.timedelta(seconds=i % 600),
        )
        for i in range(rows)
    )
    Transaction.objects.bulk_create(
        Transaction(
            uuid=str(uuid.uuid4()),
            community_id=f"club-{i % 7}",
            currency="EGP",
            status=Transaction.PENDING,
            total_amount=Decimal("1.00"),
            outcome_unknown=i % 2 == 0,
            created_at=now - dt.timedelta(days=i % 10),
        )
        for i in range(rows)
    )


def queries_of_one_reading() -> int:
    with CaptureQueriesContext(connection) as captured:
        read()
    return len(captured)


def test_a_reading_makes_the_same_queries_for_ten_rows_and_ten_thousand():
    seed(10)
    few = queries_of_one_reading()
    seed(9_990)
    assert ReceivedCallback.objects.count() == 10_000
    assert queries_of_one_reading() == few == metrics.QUERIES


def test_a_reading_is_kept_a_few_seconds_then_read_again(seeded):
    clock = [1000.0]
    collector = PayCollectCollector(clock=lambda: clock[0])
    first = read(collector)
    ReceivedCallback.objects.create(state=ReceivedCallback.FAILED)
    clock[0] += metrics.CACHE_SECONDS - 0.1
    with CaptureQueriesContext(connection) as captured:
        kept = read(collector)
    assert len(captured) == 0
    assert kept == first
    clock[0] += 0.2
    again = read(collector)
    assert (
        value(again, "paycollect_callbacks", state="failed")
        == value(first, "paycollect_callbacks", state="failed") + 1
    )


@pytest.mark.django_db(transaction=True)
def test_a_database_that_cannot_be_read_says_so_and_the_next_scrape_reads_again():
    collector = PayCollectCollector()
    table = HousekeepingRun._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} RENAME TO paycollect_away")
    try:
        down = read(collector)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE paycollect_away RENAME TO {table}")
    assert down == {("paycollect_up", frozenset()): 0}
    assert value(read(collector), "paycollect_up") == 1  # the failure was not kept


# --- registration ---------------------------------------------------------------------------------------


def paycollect_families(registry: CollectorRegistry) -> list[str]:
    text = generate_latest(registry).decode()
    return [f.name for f in text_string_to_metric_families(text) if f.name.startswith("paycollect_")]


def test_the_app_registers_its_collector_once_with_the_default_registry():
    apps.get_app_config("paycollect").ready()  # again, as a reloader or a test runner might
    assert install() is install()
    families = paycollect_families(REGISTRY)
    assert families.count("paycollect_up") == 1
    assert "paycollect_callbacks" in families


def test_registering_reads_no_database():
    registry = CollectorRegistry(auto_describe=True)
    with CaptureQueriesContext(connection) as captured:
        install(registry)
    assert len(captured) == 0


@pytest.mark.parametrize("setting", [False])
def test_metrics_off_registers_nothing_and_the_view_is_not_found(settings, client, setting):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "METRICS": setting, "METRICS_TOKENS": [TOKEN]}
    registry = CollectorRegistry(auto_describe=True)
    assert install(registry) is None
    assert paycollect_families(registry) == []


def test_metrics_turned_off_after_registering_serve_nothing_and_read_nothing(settings):
    install()
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "METRICS": False}
    with CaptureQueriesContext(connection) as captured:
        families = paycollect_families(REGISTRY)
    assert families == []
    assert len(captured) == 0


def test_without_prometheus_client_the_default_is_off_and_true_is_an_error(settings, monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if the extra were not installed
    registry = CollectorRegistry(auto_describe=True)
    assert install(registry) is None
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "METRICS": True}
    assert install(registry) is None
    assert "paycollect.E014" in check_ids()


def check_ids() -> list[str]:
    return [
        m.id
        for m in run_checks(include_deployment_checks=False, databases=[])
        if m.id.startswith("paycollect.")
    ]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"METRICS": "maybe"}, "paycollect.E013"),  # "yes", "1": True (tests/app/test_setting_kinds.py)
        ({"METRICS": 2}, "paycollect.E013"),
        ({"METRICS_TOKENS": 12345}, "paycollect.E015"),  # one text is one token (test_setting_kinds.py)
        ({"METRICS_TOKENS": [""]}, "paycollect.E015"),
        ({"METRICS_TOKENS": ["short"]}, "paycollect.W008"),
    ],
)
def test_a_metrics_setting_that_would_hide_the_metrics_is_a_check(settings, changes, expected):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, **changes}
    assert expected in check_ids()


def test_good_metrics_settings_pass_the_checks(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "METRICS": True, "METRICS_TOKENS": [TOKEN]}
    assert not {"paycollect.E013", "paycollect.E014", "paycollect.E015", "paycollect.W008"} & set(check_ids())


# --- the view ----------------------------------------------------------------------------------------------


@pytest.fixture
def with_token(settings: Any) -> None:
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "METRICS_TOKENS": ["an-older-token-still-accepted-1", TOKEN],
    }


def test_the_view_serves_the_registry_to_a_bearer_of_a_token(client, with_token):
    answer = client.get("/metrics/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain; version=")
    names = [f.name for f in text_string_to_metric_families(answer.content.decode())]
    assert "paycollect_up" in names
    assert "paycollect_callback_verification_seconds" in names
    assert "no-cache" in answer["Cache-Control"] or "max-age=0" in answer["Cache-Control"]


@pytest.mark.parametrize(
    "authorization",
    [None, "", f"Basic {TOKEN}", "Bearer ", "Bearer wrong-token-of-the-same-length-0", f"Bearer {TOKEN}x"],
)
def test_the_view_refuses_anyone_without_a_token_and_tells_no_secret(client, with_token, authorization):
    headers = {"Authorization": authorization} if authorization is not None else {}
    answer = client.get("/metrics/", headers=headers)
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"].startswith("Bearer")
    assert TOKEN.encode() not in answer.content
    assert b"paycollect_" not in answer.content


def test_staff_without_a_token_are_refused_too(admin_client, with_token):
    assert admin_client.get("/metrics/").status_code == 401


def test_no_token_configured_refuses_everyone(client, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "METRICS_TOKENS": []}
    assert client.get("/metrics/", headers={"Authorization": "Bearer "}).status_code == 401


def test_the_view_is_not_found_when_metrics_are_off(client, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "METRICS": False, "METRICS_TOKENS": [TOKEN]}
    assert client.get("/metrics/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404


def test_the_view_answers_reads_only(client, with_token):
    answer = client.post("/metrics/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 405


# --- the alerting rules ------------------------------------------------------------------------------------


def test_every_alert_reads_families_the_collector_exposes():
    """The rules and the collector cannot drift apart: each series an alert names is one we serve."""
    served = set(metrics._families())
    suffixes = ("_bucket", "_gcount", "_gsum")
    groups = yaml.safe_load(RULES.read_text())["groups"]
    named = set()
    for group in groups:
        for rule in group["rules"]:
            named |= set(re.findall(r"\bpaycollect_[a-z_]+", rule["expr"]))
    assert named
    for name in named:
        family = next((name[: -len(s)] for s in suffixes if name.endswith(s)), name)
        assert family in served, name
