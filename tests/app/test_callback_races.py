"""Callbacks racing each other and the browser return, on PostgreSQL where row locks are real.

Requests go over real HTTP to pytest-django's ``live_server`` (one thread and one database
connection per request), released together by a barrier. Verification runs eagerly inside the
callback request, against the live sandbox.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
import requests
from celery import _state as celery_state
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread, _StaticFilesHandler

from django_paycollect.models import ReceivedCallback, Transaction
from django_paycollect.sandbox.envelope import dumps
from tests.support.payments import BILLING, CALLBACK_TOKEN

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _join_flag() -> Iterator[None]:
    """Eager tasks run on several server threads at once race on Celery's process-wide "inside a task"
    flag (saved and restored around each eager run), and may leave it set: later tests could then not
    read an eager result. Put it back."""
    yield
    celery_state._set_task_join_will_block(False)


class _WideServer(ThreadedWSGIServer):
    # Django's test server listens with a backlog of 10: fifty connections at once would be reset
    # by the kernel before reaching the app. The service's callbacks meet a real server's backlog.
    request_queue_size = 128


class _WideServerThread(LiveServerThread):
    server_class = _WideServer


@pytest.fixture
def server(transactional_db: None) -> Iterator[str]:
    """A live server like pytest-django's, whose listen backlog takes fifty connections at once."""
    thread = _WideServerThread("127.0.0.1", _StaticFilesHandler)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield f"http://127.0.0.1:{thread.port}"
    finally:
        thread.terminate()


def race(work: list[Callable[[], Any]]) -> list[Any]:
    """Run each callable in its own thread, released together; returns results or raised exceptions."""
    barrier = threading.Barrier(len(work))
    results: list[Any] = [None] * len(work)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work[i]()
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def callback_body(txn: Transaction, community_id: str) -> str:
    return dumps(
        {
            "total_amount_piasters": txn.total_amount_piasters,
            "total_amount": txn.total_amount,
            "transaction_uuid": txn.uuid,
            "transaction_status": "SUCCESSFUL",
            "member_id": None,
            "payment_id": str(txn.variable_amount_id),
            "merchant_id": community_id,
        }
    )


def post_callback(url: str, body: str) -> int:
    response = requests.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=30)
    return response.status_code


def browser_return(server: str, query: dict[str, Any]) -> requests.Response:
    return requests.get(f"{server}/paycollect/return/", params=query, allow_redirects=False, timeout=30)


def test_fifty_identical_callbacks_at_once_change_the_status_once(paycollect_live, server, pay, signal_log):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    url = f"{server}/paycollect/callback/{CALLBACK_TOKEN}/"
    body = callback_body(txn, sb.community_id)

    statuses = race([lambda: post_callback(url, body)] * 50)

    assert statuses == [200] * 50, statuses
    stored = ReceivedCallback.objects.filter(transaction_uuid=txn.uuid)
    assert stored.count() == 50
    original = stored.get(state=ReceivedCallback.PROCESSED)
    duplicates = stored.filter(state=ReceivedCallback.DUPLICATE)
    assert duplicates.count() == 49
    assert set(duplicates.values_list("duplicate_of", flat=True)) == {original.pk}
    assert Transaction.objects.get(pk=txn.pk).status_changes.filter(to_status="SUCCESSFUL").count() == 1
    assert signal_log.count("payment_succeeded") == 1
    changes = [kw for name, kw in signal_log.sent if name == "transaction_status_changed"]
    assert [kw["to_status"] for kw in changes] == ["PENDING", "SUCCESSFUL"]  # the start, then the callback
    assert len(sb.control.journal("fetch_transaction")) == 1  # verified once


def test_a_callback_and_the_browser_return_racing_send_one_signal(paycollect_live, server, pay, signal_log):
    sb = paycollect_live
    url = f"{server}/paycollect/callback/{CALLBACK_TOKEN}/"
    rounds = 5
    for _ in range(rounds):
        txn = pay("100.00")
        sb.control.complete(txn.uuid, "SUCCESSFUL")
        body = callback_body(txn, sb.community_id)
        browser = {"transaction_uuid": txn.uuid, "transaction_status": "SUCCESSFUL"}
        results = race([partial(post_callback, url, body), partial(browser_return, server, browser)])
        assert results[0] == 200, results
        assert results[1].status_code == 302, results
        assert "transaction_uuid=" in results[1].headers["Location"]
        assert Transaction.objects.get(pk=txn.pk).status_changes.filter(to_status="SUCCESSFUL").count() == 1
    assert signal_log.count("payment_succeeded") == rounds
    assert Transaction.objects.filter(status=Transaction.SUCCESSFUL).count() == rounds


def spellings(uuid: str) -> list[str]:
    return [uuid, uuid.upper(), uuid.replace("-", ""), uuid.replace("-", "").upper()]


def spelled(body: str, uuid: str, spelling: str) -> str:
    return body.replace(uuid, spelling)


def test_the_four_spellings_of_a_paid_uuid_delivered_at_once_change_the_status_once(
    paycollect_live, server, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    url = f"{server}/paycollect/callback/{CALLBACK_TOKEN}/"
    body = callback_body(txn, sb.community_id)
    bodies = [spelled(body, txn.uuid, spelling) for spelling in spellings(txn.uuid)] * 10

    statuses = race([partial(post_callback, url, b) for b in bodies])

    assert statuses == [200] * 40, statuses
    assert Transaction.objects.count() == 1
    stored = ReceivedCallback.objects.all()
    assert {c.transaction_uuid for c in stored} == {txn.uuid}
    assert stored.filter(state=ReceivedCallback.PROCESSED).count() == 1
    assert stored.filter(state=ReceivedCallback.DUPLICATE).count() == 39
    assert Transaction.objects.get().status_changes.filter(to_status="SUCCESSFUL").count() == 1
    assert signal_log.count("payment_succeeded") == 1
    assert len(sb.control.journal("fetch_transaction")) == 1


def test_the_four_spellings_of_an_unknown_uuid_delivered_at_once_create_one_transaction(
    paycollect_live, server, signal_log
):
    """A payment the merchant never stored (a renewal, a payment made elsewhere): created from the fetch."""
    sb = paycollect_live
    started = sb.client.pay(
        community_id=sb.community_id,
        amount=Decimal("60.00"),
        original_amount=Decimal("60.00"),
        variable_amount_id=sb.variable_amount_id,
        billing_data=BILLING,
    )
    uuid = started.result.transaction_uuid
    sb.control.complete(uuid, "SUCCESSFUL")
    url = f"{server}/paycollect/callback/{CALLBACK_TOKEN}/"
    bodies = [
        dumps({"transaction_uuid": spelling, "transaction_status": status})
        for spelling in spellings(uuid)
        for status in ("SUCCESSFUL", "successful", "Successful")
    ] * 3

    statuses = race([partial(post_callback, url, b) for b in bodies])

    assert statuses == [200] * 36, statuses
    assert list(Transaction.objects.values_list("uuid", "status")) == [(uuid, Transaction.SUCCESSFUL)]
    assert signal_log.count("payment_succeeded") == 1
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.PROCESSED).count() == 1


def test_distinct_claims_racing_fetch_the_transaction_once_per_interval(
    paycollect_live, server, pay, settings
):
    sb = paycollect_live
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_FETCH_INTERVAL": 600}
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    url = f"{server}/paycollect/callback/{CALLBACK_TOKEN}/"
    bodies = [dumps({"transaction_uuid": txn.uuid, "transaction_status": f"CLAIM-{n}"}) for n in range(60)]

    statuses = race([partial(post_callback, url, b) for b in bodies])

    assert statuses == [200] * 60, statuses
    # Each on its own thread and database connection: one took the right to fetch, the rest wait for
    # the interval (or were answered by that fetch, when queued before it was sent).
    assert len(sb.control.journal("fetch_transaction")) == 1
    waiting = ReceivedCallback.objects.filter(state=ReceivedCallback.QUEUED).count()
    processed = ReceivedCallback.objects.filter(state=ReceivedCallback.PROCESSED).count()
    assert (waiting + processed, processed >= 1) == (60, True)
    assert Transaction.objects.get().status == Transaction.SUCCESSFUL
