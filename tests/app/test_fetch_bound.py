"""Fetches caused by callbacks are bounded per transaction: a flood of distinct claims about one uuid never
turns into a flood of requests to the service (the bound is a database row, shared by every process)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from django_paycollect import tasks
from django_paycollect.models import FetchMark, ReceivedCallback, Transaction
from django_paycollect.sandbox.envelope import dumps
from tests.support.payments import CALLBACK_TOKEN

pytestmark = pytest.mark.django_db(transaction=True)

URL = f"/paycollect/callback/{CALLBACK_TOKEN}/"
CB = ReceivedCallback


@pytest.fixture(autouse=True)
def long_interval(paycollect_live: Any, settings: Any) -> None:
    """An interval no slow machine outlasts while posting: the tests move the clock past it themselves."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_FETCH_INTERVAL": 600}


def post(client: Any, uuid: str, status: str) -> int:
    body = {"transaction_uuid": uuid, "transaction_status": status}
    return int(client.post(URL, data=dumps(body), content_type="application/json").status_code)


def fetches(sb: Any) -> int:
    return len(sb.control.journal("fetch_transaction"))


def interval_passes() -> None:
    FetchMark.objects.update(claimed_at=timezone.now() - dt.timedelta(minutes=11))  # past the 600 s


def test_three_hundred_distinct_claims_about_one_uuid_cost_two_fetches(
    client, paycollect_live, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")

    statuses = ["SUCCESSFUL", *(f"CLAIM-{n}" for n in range(299))]
    assert [post(client, txn.uuid, status) for status in statuses] == [200] * 300
    assert CB.objects.filter(dedupe_key__isnull=False).count() == 300  # 300 distinct claims, none a duplicate
    assert fetches(sb) == 1  # the first one fetched; the others wait for the interval
    assert CB.objects.get(claimed_status="SUCCESSFUL").state == CB.PROCESSED
    waiting = CB.objects.filter(state=CB.QUEUED)
    assert waiting.count() == 299
    assert all("fetched moments ago" in outcome for outcome in waiting.values_list("outcome", flat=True))
    assert all(due > timezone.now() for due in waiting.values_list("next_attempt_at", flat=True))

    interval_passes()
    for pk in waiting.order_by("pk").values_list("pk", flat=True):
        assert tasks.process_callbacks.apply(args=[[pk]]).get() == {CB.PROCESSED: 1}
    # One more fetch, sent after they were all queued, answered the 299 of them.
    assert fetches(sb) == 2
    assert CB.objects.filter(state=CB.PROCESSED).count() == 300
    answered = CB.objects.filter(outcome__contains="answered by the fetch sent at")
    assert answered.count() == 298
    assert Transaction.objects.get().status == Transaction.SUCCESSFUL
    assert signal_log.count("payment_succeeded") == 1


def test_a_uuid_the_service_does_not_know_is_asked_about_once_per_interval(client, paycollect_live):
    sb = paycollect_live
    forged = "0badc0de-0000-4000-8000-00000000f00d"
    for n in range(50):
        post(client, forged, f"CLAIM-{n}")
    assert fetches(sb) == 1
    assert CB.objects.filter(state=CB.FAILED).count() == 1
    interval_passes()
    for pk in CB.objects.filter(state=CB.QUEUED).values_list("pk", flat=True):
        tasks.process_callbacks.apply(args=[[pk]])
    assert fetches(sb) == 2
    failed = CB.objects.filter(state=CB.FAILED)
    assert failed.count() == 50
    assert failed.filter(error__contains="the service does not know it (answered by the fetch").count() == 48


def test_a_person_asking_again_is_not_deferred(client, paycollect_live, pay, capsys):
    sb = paycollect_live
    txn = pay("100.00")
    post(client, txn.uuid, "SUCCESSFUL")  # verified: PENDING, it says
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    post(client, txn.uuid, "PAID")  # within the interval: waits
    waiting = CB.objects.get(claimed_status="PAID")
    assert waiting.state == CB.QUEUED
    call_command("paycollect_process_callbacks", "--ids", str(waiting.pk))
    assert "processed: service says SUCCESSFUL" in capsys.readouterr().out
    assert fetches(sb) == 2
