"""The payments dashboard: its figures (``reporting``), its admin page, its charts and ``paycollect_report``.

The figures are checked against a prepared ledger whose sums are worked out by hand below: two
communities, EGP and USD, refunds that succeeded, failed, are pending or of unknown outcome, a recurring
series and a renewal charge, payments of unknown outcome, flags, stuck and verified callbacks, and
statistics snapshots. The site's time zone is Cairo (UTC+2 in March 2026), so payments near midnight
UTC land on the Cairo day.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import uuid
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation

from django_paycollect import reconciliation, reporting
from django_paycollect.admin import charts
from django_paycollect.models import (
    Community,
    DirectOrder,
    ReceivedCallback,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
)
from tests.support.admin import staff

UTC = dt.UTC
#: "Now" in every test of the prepared ledger: Sunday 15 March 2026, 12:00 in Cairo.
NOW = dt.datetime(2026, 3, 15, 10, 0, tzinfo=UTC)
DASHBOARD = "/admin/paycollect/dashboard/"


def at(day: int, hour: int, minute: int = 0, month: int = 3) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, minute, tzinfo=UTC)


def txn(amount: str, status: str = Transaction.SUCCESSFUL, *, created: dt.datetime, **fields) -> Transaction:
    values = {
        "uuid": str(uuid.uuid4()),
        "community_id": "club-a",
        "currency": "EGP",
        "status": status,
        "total_amount": Decimal(amount),
        "created_at": created,
    }
    if status == Transaction.SUCCESSFUL:
        values["succeeded_at"] = created + dt.timedelta(minutes=5)
    values.update(fields)
    return Transaction.objects.create(**values)


def refund(of: Transaction, amount: str, state: str, *, created: dt.datetime, completed=None) -> Refund:
    return Refund.objects.create(
        transaction=of, amount=Decimal(amount), state=state, created_at=created, completed_at=completed
    )


def callback(state: str, received: dt.datetime, **fields) -> ReceivedCallback:
    return ReceivedCallback.objects.create(state=state, received_at=received, **fields)


@pytest.fixture
def cairo(settings):
    settings.TIME_ZONE = "Africa/Cairo"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "COMMUNITY_ID": "club-a"}


@pytest.fixture
def ledger(db, cairo):
    """The prepared ledger. Period of 7 days at NOW: 9 to 15 March (Cairo), from 8 March 22:00 UTC."""
    t = {}
    # Successful EGP payments of club-a, by the Cairo day they succeeded.
    t["T13"] = txn("80.00", created=at(8, 22, 10), succeeded_at=at(8, 22, 30),  # 9 Mar 00:30 Cairo
                   capture_state=Transaction.CAPTURE_UNKNOWN)  # fmt: skip
    t["T1"] = txn("100.00", created=at(10, 8))
    t["T12"] = txn("500.00", created=at(11, 7), refunded_amount=Decimal("120.00"))
    t["T11"] = txn("300.00", created=at(1, 9), succeeded_at=at(13, 10))  # a kiosk bill paid 12 days later
    t["T2"] = txn("250.50", created=at(14, 21), succeeded_at=at(14, 23, 30))  # 15 Mar 01:30 Cairo
    # A recurring series: its parent (before the period) and a renewal charge (12 March).
    t["parent"] = txn("49.99", created=at(10, 9, month=2), refunded_amount=Decimal("5.00"))
    series = RecurringSeries.objects.create(
        parent_uuid=t["parent"].uuid,
        parent_transaction=t["parent"],
        community_id="club-a",
        cancel_state=RecurringSeries.CANCEL_UNKNOWN,
    )
    Transaction.objects.filter(pk=t["parent"].pk).update(series=series, parent_uuid=t["parent"].uuid)
    t["T3"] = txn("49.99", created=at(12, 11), series=series, parent_uuid=t["parent"].uuid)
    # Just before the period: 8 March 23:59 in Cairo.
    t["T4"] = txn("10.01", created=at(8, 21), succeeded_at=at(8, 21, 59))
    # Started in the period and not successful.
    t["T5"] = txn("1000.00", Transaction.FAILED, created=at(11, 10))
    t["T6"] = txn("20.00", Transaction.FAILED, created=at(13, 10))
    t["T7"] = txn("75.25", Transaction.PENDING, created=at(15, 7))
    t["T16"] = txn("15.00", Transaction.PENDING, created=at(10, 10), amount_mismatch=True)
    t["T17"] = txn(
        "5.00", Transaction.PENDING, created=at(14, 10), status_unrecognised=True, service_status="ON_HOLD"
    )
    t["T8"] = txn("30.00", Transaction.NEW, created=at(15, 7, 30), uuid=None, outcome_unknown=True)
    t["T9"] = txn("40.00", Transaction.REJECTED, created=at(12, 10), uuid=None)
    t["T10"] = txn("60.00", Transaction.ABANDONED, created=at(11, 10), uuid=None)
    # Elsewhere: another currency, another community (with a flag of its own).
    t["T14"] = txn("999.00", created=at(12, 10), currency="USD")
    t["T15"] = txn("777.00", created=at(12, 10), community_id="club-b", outcome_unknown=True)
    # Refunds.
    refund(t["T12"], "120.00", Refund.SUCCEEDED, created=at(14, 9), completed=at(14, 10))
    refund(t["T12"], "50.00", Refund.UNKNOWN, created=at(14, 11))
    refund(t["T1"], "30.00", Refund.FAILED, created=at(12, 9), completed=at(12, 10))
    refund(t["T2"], "20.00", Refund.PENDING, created=NOW - dt.timedelta(minutes=20))  # left pending
    refund(t["T2"], "10.00", Refund.PENDING, created=NOW - dt.timedelta(minutes=5))  # still in flight
    refund(t["parent"], "5.00", Refund.SUCCEEDED, created=at(1, 9), completed=at(1, 10))
    refund(t["T15"], "7.00", Refund.UNKNOWN, created=at(14, 9))
    RecurringSeries.objects.create(
        parent_uuid="club-b-parent", community_id="club-b", cancel_state=RecurringSeries.CANCEL_UNKNOWN
    )
    order = {"amount": Decimal("10.00"), "customer_name": "Mona Ali", "customer_mobile": "+201001234567"}
    DirectOrder.objects.create(community_id="club-a", name="unknown", state=DirectOrder.UNKNOWN, **order)
    DirectOrder.objects.create(community_id="club-a", name="created", state=DirectOrder.CREATED, **order)
    # Callbacks of the site: ten verified in 1 to 10 seconds, and the others.
    for n in range(1, 11):
        received = at(10, n)
        callback(ReceivedCallback.PROCESSED, received, processed_at=received + dt.timedelta(seconds=n))
    callback(ReceivedCallback.DUPLICATE, at(11, 1))
    callback(ReceivedCallback.DUPLICATE, at(11, 2))
    callback(ReceivedCallback.INVALID, at(11, 3))
    callback(ReceivedCallback.FAILED, at(12, 3))
    callback(ReceivedCallback.FAILED, at(1, 3))  # before the period: still needs a person
    callback(ReceivedCallback.QUEUED, NOW - dt.timedelta(minutes=2))  # waiting: not overdue, not stuck
    callback(ReceivedCallback.QUEUED, NOW - dt.timedelta(minutes=30))  # stuck
    callback(ReceivedCallback.RECEIVED, at(12, 10))  # stuck
    callback(ReceivedCallback.RECEIVED, at(1, 10))  # stuck since before the period: the oldest
    # Statistics: club-a's latest is the one of 14 March; club-b's is later and must not be used.
    stats = {
        "balance": Decimal("100.00"),
        "total_settled": Decimal("1115.49"),
        "weekly_collected_transactions": Decimal("250.50"),
    }
    for community, taken, count, collected in (
        ("club-a", at(1, 12), 3, "1.00"),
        ("club-a", at(14, 12), 15, "1215.49"),
        ("club-b", at(15, 9), 99, "9.99"),
    ):
        StatisticsSnapshot.objects.create(
            community_id=community,
            taken_at=taken,
            total_number_of_transactions=count,
            total_collected_transactions=Decimal(collected),
            **stats,
        )
    return t


# --- the figures, against the ledger worked out by hand ------------------------------------------------

# Collected per Cairo day: T13 80.00 (9), T1 100.00 (10), T12 500.00 (11), T3 49.99 renewal (12),
# T11 300.00 (13), T2 250.50 (15). Refunded: 120.00 of T12 on the 14th. Not counted: T4 (8 March in
# Cairo), the parent (February), T14 (USD), T15 (club-b).
COLLECTED = {
    dt.date(2026, 3, 9): Decimal("80.00"),
    dt.date(2026, 3, 10): Decimal("100.00"),
    dt.date(2026, 3, 11): Decimal("500.00"),
    dt.date(2026, 3, 12): Decimal("49.99"),
    dt.date(2026, 3, 13): Decimal("300.00"),
    dt.date(2026, 3, 14): Decimal("0.00"),
    dt.date(2026, 3, 15): Decimal("250.50"),
}
COLLECTED_TOTAL = (
    Decimal("80.00")
    + Decimal("100.00")
    + Decimal("500.00")
    + Decimal("49.99")
    + Decimal("300.00")
    + Decimal("250.50")
)


def test_the_period_is_days_of_the_site_time_zone(cairo):
    span = reporting.period(7, NOW)
    assert (span.first_day, span.last_day) == (dt.date(2026, 3, 9), dt.date(2026, 3, 15))
    assert span.start == at(8, 22)  # midnight in Cairo
    assert span.end == NOW
    assert span.time_zone == "Africa/Cairo"
    assert len(span.dates) == 7
    with pytest.raises(ValueError, match="1 to 366 days"):
        reporting.period(0, NOW)


def test_collected_and_refunded_per_day_equal_the_hand_computed_sums(ledger):
    report = reporting.report("club-a", "EGP", 7, now=NOW)
    assert [day.date for day in report.days] == list(COLLECTED)
    assert {day.date: day.collected.amount for day in report.days} == COLLECTED
    assert [day.collected.count for day in report.days] == [1, 1, 1, 1, 1, 0, 1]
    assert {day.date: day.refunded.amount for day in report.days if day.refunded.count} == {
        dt.date(2026, 3, 14): Decimal("120.00")
    }
    assert {day.date: day.renewals.amount for day in report.days if day.renewals.count} == {
        dt.date(2026, 3, 12): Decimal("49.99")
    }
    assert Decimal("1280.49") == COLLECTED_TOTAL
    assert report.collected == reporting.Tally(6, Decimal("1280.49"))
    assert report.refunded == reporting.Tally(1, Decimal("120.00"))
    assert report.renewals == reporting.Tally(1, Decimal("49.99"))
    assert report.net == Decimal("1160.49")
    assert all(isinstance(day.collected.amount, Decimal) for day in report.days)


def test_payments_started_in_the_period_by_status_and_the_success_rate(ledger):
    report = reporting.report("club-a", "EGP", 7, now=NOW)
    by_status = {line.status: line.started for line in report.by_status}
    A = reporting.Tally
    assert by_status == {
        # T13, T1, T12, T3, T2 (T11 was created on 1 March).
        "SUCCESSFUL": A(5, sum(map(Decimal, ("80.00", "100.00", "500.00", "49.99", "250.50")))),
        "FAILED": A(2, Decimal("1020.00")),  # T5, T6
        "PENDING": A(3, Decimal("95.25")),  # T7, T16, T17
        "NEW": A(1, Decimal("30.00")),
        "REJECTED": A(1, Decimal("40.00")),
        "ABANDONED": A(1, Decimal("60.00")),
    }  # fmt: skip
    assert report.started == A(13, Decimal("2225.74"))
    assert report.success_rate == Decimal("71.4")  # 5 of 7 decided


def test_the_success_rate_is_none_until_a_payment_is_decided():
    pending = reporting.StatusLine("PENDING", "pending", reporting.Tally(3, Decimal("1.00")))
    assert reporting.success_rate([pending]) is None


def test_callback_health_of_the_whole_site(ledger):
    health = reporting.report("club-a", "EGP", 7, now=NOW).callbacks
    # In the period: 10 verified, 2 duplicates, 1 invalid, 1 failed, 1 waiting, 2 stuck.
    assert health.received == 17
    assert (health.verified, health.failed, health.duplicates, health.invalid) == (10, 1, 2, 1)
    assert (health.waiting, health.stuck) == (1, 3)  # the oldest stuck one arrived before the period
    assert health.oldest_stuck_age == NOW - at(1, 10)
    # Nearest rank of 1..10 seconds: the 5th and the 10th.
    assert health.verification_time == {50: dt.timedelta(seconds=5), 95: dt.timedelta(seconds=10)}


def test_verification_times_come_from_the_latest_verified_callbacks(db, cairo, monkeypatch):
    monkeypatch.setattr("django_paycollect.reporting.health.VERIFICATION_SAMPLE", 4)
    for n in range(1, 9):  # received one hour apart; the latest four took 5, 6, 7 and 8 seconds
        callback(ReceivedCallback.PROCESSED, at(14, n), processed_at=at(14, n) + dt.timedelta(seconds=n))
    health = reporting.callback_health(reporting.period(7, NOW))
    assert health.verified == 8
    assert health.verification_time == {50: dt.timedelta(seconds=6), 95: dt.timedelta(seconds=8)}


def test_what_needs_a_person(ledger):
    items = {item.key: item for item in reporting.needs_a_person("club-a", NOW)}
    assert {key: item.count for key, item in items.items()} == {
        "payments_unknown": 1,  # T8 (T15 is club-b's)
        "refunds_unknown": 1,  # 50.00 of T12 (club-b's is not counted)
        "refunds_stale": 1,  # pending for 20 minutes; the 5-minute one may still be answered
        "captures_unknown": 1,  # T13
        "cancellations_unknown": 1,
        "direct_orders_unknown": 1,
        "amount_mismatches": 1,  # T16
        "unrecognised_statuses": 1,  # T17
        "callbacks_failed": 2,  # whenever they arrived
        "callbacks_stuck": 3,
        "open_too_long": 0,  # RECONCILE_GIVE_UP_AFTER: 7 days
    }
    assert items["callbacks_failed"].site_wide
    assert not items["payments_unknown"].site_wide


def test_payments_open_past_the_give_up_age_need_a_person(db, admin_client):
    old = txn("10.00", Transaction.PENDING, created=NOW - dt.timedelta(days=8))
    txn("10.00", Transaction.PENDING, created=NOW - dt.timedelta(days=6))
    txn("10.00", Transaction.PENDING, created=NOW - dt.timedelta(days=8), community_id="club-b")
    [item] = [item for item in reporting.needs_a_person("club-a", NOW) if item.key == "open_too_long"]
    assert item.count == 1
    assert "7 days" in item.label
    listed = admin_client.get("/admin/paycollect/transaction/", item.query).context["cl"].result_list
    assert [row.pk for row in listed] == [old.pk]


def test_the_index_of_open_payments_covers_exactly_what_reconciliation_calls_open():
    # The "open too long" count reads paycollect_txn_open. A status added to one and not the other
    # would leave that count without its index: a scan of the whole table at a million rows.
    [index] = [index for index in Transaction._meta.indexes if index.name == "paycollect_txn_open"]
    assert index.condition == reconciliation.open_at_the_service()
    assert index.fields == ["community_id", "created_at"]


def test_the_service_statistics_beside_the_ledger(ledger):
    comparison = reporting.report("club-a", "EGP", 7, now=NOW).statistics
    assert comparison.snapshot is not None
    assert comparison.snapshot.taken_at == at(14, 12)
    # Accepted by the service (a uuid), every currency: all of club-a's but T8, T9 and T10.
    assert comparison.ledger.transactions == 14
    # Successful EGP payments of all time: T13, T1, T12, T11, T2, the parent, T3 and T4.
    assert comparison.ledger.collected == Decimal("80.00") + Decimal("100.00") + Decimal("500.00") + Decimal(
        "300.00"
    ) + Decimal("250.50") + Decimal("49.99") + Decimal("49.99") + Decimal("10.01")
    assert comparison.ledger.collected == Decimal("1340.49")
    assert comparison.ledger.collected_net == Decimal("1340.49") - Decimal("120.00") - Decimal("5.00")
    assert comparison.ledger.currencies == ["EGP", "USD"]
    assert comparison.transactions_difference == 15 - 14
    assert comparison.collected_difference == Decimal("-125.00")
    assert comparison.collected_net_difference == Decimal("0.00")


def test_a_community_without_snapshot_or_payments(ledger):
    report = reporting.report("club-z", "GBP", 30, now=NOW)
    assert report.statistics.snapshot is None
    assert report.statistics.transactions_difference is None
    assert report.statistics.collected_difference is None
    assert report.collected == reporting.Tally()
    assert report.success_rate is None
    assert len(report.days) == 30


def test_the_report_as_json_keeps_amounts_exact(ledger):
    data = json.loads(json.dumps(reporting.report("club-a", "EGP", 7, now=NOW).as_dict()))
    assert data["totals"]["collected"] == {"count": 6, "amount": "1280.49"}
    assert data["totals"]["net"] == "1160.49"
    assert data["totals"]["success_rate_percent"] == "71.4"
    assert data["days"][-1] == {
        "date": "2026-03-15",
        "collected": {"count": 1, "amount": "250.50"},
        "renewals": {"count": 0, "amount": "0.00"},
        "refunded": {"count": 0, "amount": "0.00"},
        "net": "250.50",
    }
    assert data["callbacks"]["verification_seconds"] == {"p50": "5.000000", "p95": "10.000000"}
    assert data["callbacks"]["oldest_stuck_age_seconds"] == str(14 * 86400) + ".000000"
    assert data["statistics"]["difference"] == {
        "transactions": 1,
        "collected": "-125.00",
        "collected_net": "0.00",
    }
    assert data["period"]["start"] == "2026-03-09T00:00:00+02:00"


# --- query counts ------------------------------------------------------------------------------------------


def add_activity(first: int, last: int) -> None:
    """Transactions ``first`` to ``last`` of every kind, with a refund and a callback each."""
    statuses = ["SUCCESSFUL", "SUCCESSFUL", "FAILED", "PENDING", "NEW", "SUCCESSFUL", "REJECTED"]
    now = timezone.now()
    created = [now - dt.timedelta(hours=n) for n in range(first, last)]
    made = Transaction.objects.bulk_create(
        Transaction(
            uuid=f"uuid-{n}",
            community_id="club-a",
            currency="USD" if n % 5 == 0 else "EGP",
            status=statuses[n % len(statuses)],
            total_amount=Decimal(n % 300) + Decimal("0.25"),
            refunded_amount=Decimal("0.25") if statuses[n % len(statuses)] == "SUCCESSFUL" else Decimal(0),
            created_at=when,
            succeeded_at=when if statuses[n % len(statuses)] == "SUCCESSFUL" else None,
            parent_uuid="uuid-0" if n % 4 == 0 else "",
            outcome_unknown=n % 50 == 0,
            amount_mismatch=n % 70 == 0,
        )
        for n, when in zip(range(first, last), created, strict=True)
    )
    Refund.objects.bulk_create(
        Refund(
            transaction=t,
            amount=Decimal("0.25"),
            state=Refund.SUCCEEDED,
            created_at=t.created_at,
            completed_at=t.created_at,
        )
        for t in made
        if t.status == "SUCCESSFUL"
    )
    ReceivedCallback.objects.bulk_create(
        ReceivedCallback(
            state=ReceivedCallback.PROCESSED if n % 9 else ReceivedCallback.DUPLICATE,
            received_at=t.created_at,
            processed_at=t.created_at + dt.timedelta(seconds=n % 7),
            transaction=t,
        )
        for n, t in enumerate(made)
    )


def queries_of(action) -> int:
    with CaptureQueriesContext(connection) as captured:
        action()
    return len(captured)


@pytest.mark.django_db
def test_the_number_of_queries_does_not_depend_on_the_rows(cairo, admin_client, monkeypatch):
    monkeypatch.setattr("django_paycollect.reporting.health.VERIFICATION_SAMPLE", 200)  # 1,000 rows exceed it
    url = f"{DASHBOARD}?community=club-a&currency=EGP&days=90"

    def load():
        response = admin_client.get(url)
        assert response.status_code == 200
        assert response.context["report"] is not None

    add_activity(0, 10)
    few = queries_of(lambda: reporting.report("club-a", "EGP", 90))
    few_page = queries_of(load)
    add_activity(10, 1000)
    report = reporting.report("club-a", "EGP", 90)
    assert report.callbacks.verified > 200
    assert report.collected.count > 300
    assert queries_of(lambda: reporting.report("club-a", "EGP", 90)) == few
    assert queries_of(load) == few_page
    assert few <= 20


# --- the admin page ----------------------------------------------------------------------------------------


@pytest.fixture
def frozen(monkeypatch):
    """timezone.now() is NOW (the page and the command read the clock)."""
    monkeypatch.setattr(timezone, "now", lambda: NOW)


def page_of(client, **query):
    query = {"community": "club-a", "currency": "EGP", "days": "7", **query}
    response = client.get(DASHBOARD, query)
    assert response.status_code == 200
    return response, response.content.decode()


def text_in(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</(?:div|tr|table|p)>', html, re.DOTALL)
    assert found, element_id
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())


def test_the_dashboard_is_listed_in_the_app_section_for_those_allowed(db, client, django_user_model):
    allowed = staff(django_user_model, "view_dashboard", username="allowed")
    other = staff(django_user_model, "view_transaction", username="other")
    client.force_login(allowed)
    index = client.get(reverse("admin:index")).content.decode()
    assert f'href="{DASHBOARD}"' in index
    assert (
        f'href="{DASHBOARD}"' in client.get(reverse("admin:app_list", args=["paycollect"])).content.decode()
    )
    client.force_login(other)
    assert DASHBOARD not in client.get(reverse("admin:index")).content.decode()
    assert client.get(DASHBOARD).status_code == 403


def test_the_dashboard_needs_staff_and_its_permission(db, client, django_user_model):
    response = client.get(DASHBOARD)
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
    member = django_user_model.objects.create_user(username="member", password="pw")
    member.user_permissions.add(Permission.objects.get(codename="view_dashboard"))
    client.force_login(member)  # the permission without staff status
    assert client.get(DASHBOARD).status_code == 302
    assert Permission.objects.get(codename="view_dashboard").name == "Can view the payments dashboard"


def test_the_page_shows_the_figures(ledger, frozen, admin_client):
    _, html = page_of(admin_client)
    assert (
        text_in(html, "figure-collected")
        == "Collected 1280.49 EGP 6 payments, of which 1 renewal charge (49.99)"
    )
    assert text_in(html, "figure-refunded") == "Refunded 120.00 EGP 1 refund"
    assert text_in(html, "figure-net") == "Net 1160.49 EGP"
    assert text_in(html, "figure-success-rate").startswith("Success rate 71.4 %")
    assert text_in(html, "figure-attention").startswith("Needs a person 13 ")  # 8 ones, 2 failed, 3 stuck
    assert 'data-date="2026-03-11"' in html
    row = re.search(r'data-date="2026-03-14">(.*?)</tr>', html, re.DOTALL).group(1)
    assert [cell for cell in re.findall(r">([^<]+)</t[dh]>", row)] == [
        "Sat 14 Mar",
        "0.00",
        "0",
        "0.00",
        "120.00",
        "1",
        "-120.00",
    ]
    assert "Figures as of" in html
    assert "Africa/Cairo" in html
    status_row = re.search(r'data-status="FAILED">(.*?)</tr>', html, re.DOTALL).group(1)
    assert "1020.00" in status_row
    statistics = re.search(r'id="paycollect-statistics-table".*?</table>', html, re.DOTALL).group(0)
    assert statistics.count(">+1<") == 1  # transactions: 15 at the service, 14 here
    assert "-125.00 EGP" in html
    assert "0.00 EGP" in html
    assert "also has payments in USD" in text_in(html, "paycollect-other-currencies")
    for figure, value in {"received": "17", "verified": "10", "stuck": "3 (oldest 14 d 0 h)"}.items():
        assert re.search(rf'data-figure="{figure}">.*?<td[^>]*>{re.escape(value)}</td>', html, re.DOTALL), (
            figure
        )
    assert re.search(r'Receipt to verification, median \(p50\)</th><td class="number">5.0 s', html)


def test_the_charts_are_accessible_svg_without_script(ledger, frozen, admin_client):
    _, html = page_of(admin_client)
    content = html[html.index('id="content-main"') :]
    assert "<script" not in content
    svgs = re.findall(r"<svg [^>]*paycollect-chart.*?</svg>", content, re.DOTALL)
    assert len(svgs) == 3
    for svg in svgs:
        assert 'role="img"' in svg
        labelled = re.search(r'aria-labelledby="([^"]+) ([^"]+)"', svg)
        assert f'<title id="{labelled.group(1)}">' in svg
        assert f'<desc id="{labelled.group(2)}">' in svg
        assert "paycollect-axis-label" in svg
        assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    daily = svgs[0]
    assert "Amount (EGP)" in daily
    assert ">Day</text>" in daily
    assert "collected 250.50 EGP (1)" in daily
    assert "refunded 120.00 EGP (1)" in daily
    # Each chart's numbers are also in a table.
    for table in ("paycollect-days", "paycollect-by-status", "paycollect-callback-health"):
        assert f'<table id="{table}">' in content
    assert "@media print" in html


def test_the_attention_links_list_exactly_what_is_counted(ledger, frozen, admin_client):
    txn("10.00", Transaction.PENDING, created=NOW - dt.timedelta(days=8))  # no longer fetched
    _, html = page_of(admin_client)
    rows = re.findall(
        r'<tr data-key="([a-z_]+)".*?<td class="number[^"]*">(\d+)</td>\s*<td>(.*?)</td>', html, re.DOTALL
    )
    assert len(rows) == 11
    for key, count, cell in rows:
        link = re.search(r'href="([^"]+)"', cell)
        assert link, key
        listed = admin_client.get(link.group(1).replace("&amp;", "&"))
        assert listed.status_code == 200, key
        assert "?e=1" not in listed.get("Location", ""), key
        assert listed.context["cl"].result_count == int(count), key


def test_the_status_links_list_the_payments_started_in_the_period(ledger, frozen, admin_client):
    _, html = page_of(admin_client)
    row = re.search(r'data-status="SUCCESSFUL">.*?href="([^"]+)"', html, re.DOTALL)
    listed = admin_client.get(row.group(1).replace("&amp;", "&"))
    assert listed.status_code == 200
    assert {t.uuid for t in listed.context["cl"].result_list} == {
        ledger[name].uuid for name in ("T13", "T1", "T12", "T3", "T2")
    }


def test_without_the_lists_permissions_the_counts_show_without_links(
    ledger, frozen, client, django_user_model
):
    client.force_login(staff(django_user_model, "view_dashboard", "view_refund"))
    _, html = page_of(client)
    assert "/admin/paycollect/transaction/?" not in html
    refunds = re.search(r'data-key="refunds_unknown".*?</tr>', html, re.DOTALL).group(0)
    assert "/admin/paycollect/refund/?" in refunds
    payments = re.search(r'data-key="payments_unknown".*?</tr>', html, re.DOTALL).group(0)
    assert "You may not view this list." in payments


def test_the_page_tells_when_no_statistics_were_fetched(db, cairo, frozen, admin_client):
    _, html = page_of(admin_client)
    assert 'id="paycollect-no-snapshot"' in html
    assert "/admin/paycollect/community/" in html
    assert "Nothing collected or refunded in this period." in html


def test_the_form_defaults_and_refuses_what_it_does_not_offer(db, cairo, admin_client):
    response = admin_client.get(DASHBOARD)
    assert response.context["report"].community_id == "club-a"
    assert response.context["report"].period.days == 30
    assert response.context["report"].currency == "EGP"
    for query in ({"days": "5"}, {"community": "nobody"}, {"currency": "XXX"}, {"days": "x"}):
        response = admin_client.get(DASHBOARD, query)
        assert response.status_code == 200
        assert response.context["report"] is None
        assert response.context["form"].errors


def test_the_page_keeps_its_numbers_and_amounts_unlocalised(ledger, frozen, admin_client, settings):
    settings.LANGUAGE_CODE = "de"
    settings.USE_THOUSAND_SEPARATOR = True
    with translation.override("de"):
        _, html = page_of(admin_client)
    svg = re.search(r"<svg [^>]*paycollect-chart.*?</svg>", html, re.DOTALL).group(0)
    coordinates = re.findall(r'\s(?:x|y|x1|x2|y1|y2|width|height)="([^"]+)"', svg)
    assert coordinates
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", value) for value in coordinates)
    # Amounts are written as the app reads them in every language (docs: Money), never localised.
    assert "1280.49" in html
    assert "1.280,49" not in html


# --- charts -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("span", "step"),
    [("0", "1"), ("3", "1"), ("10", "5"), ("37.5", "10"), ("120", "50"), ("999.99", "250"), ("0.07", "0.02")],
)
def test_grid_steps_are_round_numbers(span, step):
    found = charts.nice_step(Decimal(span))
    assert found.normalize() == Decimal(step).normalize() or (span == "999.99" and found == Decimal("500"))


def day(n: int, collected: str, refunded: str = "0") -> reporting.Day:
    return reporting.Day(
        dt.date(2026, 3, n),
        reporting.Tally(1, Decimal(collected)),
        reporting.Tally(1 if Decimal(refunded) else 0, Decimal(refunded)),
        reporting.Tally(),
    )


def test_daily_bars_are_proportional_and_refunds_hang_below_the_axis():
    chart = charts.daily_chart([day(1, "100"), day(2, "200", "50"), day(3, "0")], "EGP")
    collected = [bar for bar in chart.bars if bar.kind == "collected"]
    refunded = [bar for bar in chart.bars if bar.kind == "refunded"]
    assert abs(collected[1].height - 2 * collected[0].height) <= Decimal("0.1")  # tenths of a pixel
    assert all(bar.y + bar.height == chart.zero_y for bar in collected)
    assert refunded[0].y == chart.zero_y
    assert abs(refunded[0].height - collected[0].height / 2) <= Decimal("0.1")
    assert chart.top <= min(bar.y for bar in chart.bars)
    assert max(bar.y + bar.height for bar in chart.bars) <= chart.plot_bottom
    assert next(tick.label for tick in chart.ticks).startswith("-")
    assert not chart.empty


def test_a_negative_axis_label_is_written_the_way_the_language_writes_it():
    days = [day(1, "1000"), day(2, "500", "2000")]
    with translation.override("en"):
        english = [tick.label for tick in charts.daily_chart(days, "EGP").ticks]
    with translation.override("ar"):
        arabic = [tick.label for tick in charts.daily_chart(days, "EGP").ticks]
    assert english[0] == "-2000"
    # Arabic with Latin digits (CLDR): a left-to-right mark before the sign, which then stays before the
    # digits in right-to-left text (the browser test draws it); Django's Arabic separators.
    assert arabic[0] == "\u200e-2000"
    assert [label for label in arabic if "-" in label] == [
        label for label in arabic if label.startswith("\u200e-")
    ]
    with translation.override("ar"):
        assert charts.number_text(Decimal("-20.00")) == "\u200e-20,00"
        assert charts.number_text(3, plus=True) == "\u200e+3"
        assert charts.number_text(0, plus=True) == "0"


def test_an_empty_period_draws_an_axis_and_says_so():
    chart = charts.daily_chart([day(1, "0"), day(2, "0")], "EGP")
    assert chart.empty
    assert not chart.bars
    assert [tick.label for tick in chart.ticks] == ["0", "1"]


def test_horizontal_bars_scale_to_the_largest():
    chart = charts.bars_chart(
        "c", "t", "d", "n", [charts.Row("a", Decimal(10), "10"), charts.Row("b", Decimal(0), "0")]
    )
    assert len(chart.bars) == 1
    assert chart.bars[0].width == chart.plot_right - chart.left
    assert [label.text for label in chart.values] == ["10", "0"]


# --- paycollect_report -------------------------------------------------------------------------------


def run(*args) -> str:
    out = io.StringIO()
    call_command("paycollect_report", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_the_same_figures(ledger, frozen):
    text = run("--community", "club-a", "--currency", "EGP", "--days", "7")
    assert "club-a, EGP, 7 days: 2026-03-09 to 2026-03-15 (Africa/Cairo)" in text
    assert "Collected: 1280.49 EGP in 6 payments (renewal charges 49.99 in 1)" in text
    assert "Refunded: 120.00 EGP in 1 refund" in text
    assert "Net: 1160.49 EGP" in text
    assert "Success rate: 71.4 %" in text
    # Day, collected, payments, renewals, refunded, refunds, net.
    assert re.search(r"2026-03-14\s+0\.00\s+0\s+0\.00\s+120\.00\s+1\s+-120\.00", text)
    assert re.search(r"Stuck callbacks\s+3", text)
    assert "Receipt to verification: p50 5.0 s, p95 10.0 s" in text
    assert re.search(r"Transactions.*\s15\s+14\s+\+1", text)


def test_the_command_prints_json_with_exact_amounts(ledger, frozen):
    data = json.loads(run("--community", "club-a", "--days", "7", "--json"))
    assert data == json.loads(json.dumps(reporting.report("club-a", "EGP", 7, now=NOW).as_dict()))
    assert data["totals"]["collected"]["amount"] == "1280.49"


def test_the_command_defaults_to_the_settings_community(ledger, frozen):
    data = json.loads(run("--json"))
    assert (data["community_id"], data["currency"], data["period"]["days"]) == ("club-a", "EGP", 30)


@pytest.mark.parametrize("args", [["--days", "0"], ["--days", "400"], ["--currency", "egp!"]])
def test_the_command_refuses_bad_arguments(db, cairo, args):
    with pytest.raises(CommandError):
        run(*args)


def test_the_command_needs_a_community(db, settings):
    settings.PAYCOLLECT = {k: v for k, v in settings.PAYCOLLECT.items() if k != "COMMUNITY_ID"}
    with pytest.raises(CommandError, match="--community"):
        run()


# --- when a payment succeeded --------------------------------------------------------------------------


def test_a_payment_learned_successful_from_the_service_counts_that_day(
    paycollect_in_process, paid_transaction, settings
):
    assert paid_transaction.succeeded_at is not None
    assert timezone.now() - paid_transaction.succeeded_at < dt.timedelta(minutes=1)
    report = reporting.report(paid_transaction.community_id, "EGP", 7)
    assert report.collected == reporting.Tally(1, Decimal("100.00"))
    assert report.days[-1].collected == reporting.Tally(1, Decimal("100.00"))


# --- the statistics button ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_statistics_button_fetches_a_snapshot_beside_the_ledger(
    paycollect_in_process, paid_transaction, client, django_user_model
):
    client.force_login(staff(django_user_model, "view_dashboard"))
    url = f"{DASHBOARD}?days=7"
    response = client.post(url)
    assert response.status_code == 302
    assert response["Location"] == url
    snapshot = StatisticsSnapshot.objects.get()
    assert snapshot.community_id == paycollect_in_process.community_id
    assert snapshot.total_collected_transactions == Decimal("100.00")
    html = client.get(url).content.decode()
    assert "were fetched" in html
    statistics = re.search(r'id="paycollect-statistics-table".*?</table>', html, re.DOTALL).group(0)
    cells = re.findall(r'<td class="number">([^<]*)</td>', statistics)
    # Transactions: the service's, ours, the difference; then collected before and after refunds.
    assert cells[:9] == [
        "1",
        "1",
        "0",
        "100.00 EGP",
        "100.00 EGP",
        "0.00 EGP",
        "100.00 EGP",
        "100.00 EGP",
        "0.00 EGP",
    ]


@pytest.mark.django_db(transaction=True)
def test_the_statistics_button_says_why_it_failed(paycollect_in_process, client, django_user_model):
    Community.objects.create(community_id="no-key-here")
    client.force_login(staff(django_user_model, "view_dashboard"))
    url = f"{DASHBOARD}?community=no-key-here"
    response = client.post(url, follow=True)
    assert "Fetching the statistics of no-key-here failed" in response.content.decode()
    assert not StatisticsSnapshot.objects.exists()
    without = staff(django_user_model, "view_transaction", username="other")
    client.force_login(without)
    assert client.post(url).status_code == 403
