"""The Celery tasks, run eagerly (CELERY_TASK_ALWAYS_EAGER) against the sandbox served in process.

Each task is applied with a fixed task id, so its ApiCall rows can be checked for it. Arguments and
results go through JSON first, as a real broker and result backend would carry them.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import socket
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycollect import services, tasks
from django_paycollect.client import PayCollectClient
from django_paycollect.exceptions import (
    NotFound,
    PayCollectConfigurationError,
    PaymentRefused,
    ServiceUnavailable,
    StateConflict,
)
from django_paycollect.models import (
    ApiCall,
    DirectOrder,
    ReceivedCallback,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
)
from django_paycollect.schedules import BEAT_SCHEDULE
from django_paycollect.services.config import get_client
from django_paycollect.tasks.delivery import NOT_SENT_RETRY_DELAYS, READ_BACKOFF, READ_MAX_RETRIES, retry_read
from tests.celery_app import app
from tests.support.payments import BILLING, complete

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def run(task: Any, task_id: str, **kwargs: Any) -> Any:
    """Apply ``task`` eagerly as a worker would receive it: JSON arguments, a task id, a JSON result."""
    kwargs = json.loads(json.dumps(kwargs))
    result = task.apply(kwargs=kwargs, task_id=task_id).get()
    return json.loads(json.dumps(result))


def calls(operation: str) -> list[ApiCall]:
    return list(ApiCall.objects.filter(operation=operation).order_by("pk"))


# --- design -----------------------------------------------------------------------------------------


READS = [tasks.prepare_amount, tasks.sync_transaction, tasks.validate_promocode, tasks.fetch_statistics]
WRITES = [
    tasks.start_payment,
    tasks.create_direct_order,
    tasks.capture,
    tasks.refund,
    tasks.cancel_recurring,
    tasks.create_community,
]
IDEMPOTENT = [*READS, tasks.process_callbacks, tasks.reconcile, tasks.reconcile_chunk, tasks.prune]


@pytest.mark.parametrize("task", IDEMPOTENT, ids=lambda t: t.name)
def test_idempotent_tasks_ack_late_and_are_requeued_when_their_worker_dies(task):
    assert task.acks_late is True
    assert task.reject_on_worker_lost is True


@pytest.mark.parametrize("task", WRITES, ids=lambda t: t.name)
def test_state_changing_tasks_ack_early_so_a_redelivery_never_calls_the_service_again(task):
    # Explicit False, so a project's CELERY_TASK_ACKS_LATE = True does not turn it on.
    assert task.acks_late is False
    assert task.reject_on_worker_lost is False


def test_every_task_is_registered_under_a_stable_name():
    names = {t.name for t in READS + WRITES + IDEMPOTENT}
    assert all(name.startswith("paycollect.") for name in names)
    assert names <= set(app.tasks)


def test_beat_schedule_names_registered_tasks_and_drops_stale_runs():
    for entry in BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks
        assert entry["options"]["expires"] > 0
        json.dumps(entry.get("kwargs", {}))  # django-celery-beat stores them as JSON
    reconcile = BEAT_SCHEDULE["paycollect-reconcile"]
    assert reconcile["options"]["expires"] < reconcile["schedule"].total_seconds()


# --- reads ------------------------------------------------------------------------------------------


def test_prepare_amount_task(paycollect_in_process):
    total = run(tasks.prepare_amount, "t-prepare", amount="100.00")
    assert Decimal(total) > Decimal("100.00")
    assert calls("prepare_amount")[0].task_id == "t-prepare"


def test_amounts_must_not_be_floats(paycollect_in_process):
    with pytest.raises(PaymentRefused, match=r"not the float 100\.1"):
        tasks.prepare_amount.apply(kwargs={"amount": 100.1}, task_id="t-float").get()
    assert not ApiCall.objects.exists()


def test_sync_transaction_task_by_pk_and_by_uuid(paycollect_in_process, pay):
    txn = pay("70.00")
    paycollect_in_process.control.complete(txn.uuid)
    result = run(tasks.sync_transaction, "t-sync", transaction_id=txn.pk)
    assert result["status"] == Transaction.SUCCESSFUL
    assert result["uuid"] == txn.uuid
    assert calls("get_transaction")[0].task_id == "t-sync"
    # A uuid we never stored (a payment started elsewhere) is created from the fetched object.
    other = paycollect_in_process.client.pay(
        community_id=paycollect_in_process.community_id,
        amount=Decimal("15.00"),
        original_amount=Decimal("15.00"),
        variable_amount_id=paycollect_in_process.variable_amount_id,
        billing_data=BILLING,
    ).result
    result = run(tasks.sync_transaction, "t-sync-uuid", uuid=other.transaction_uuid)
    assert Transaction.objects.get(uuid=other.transaction_uuid).pk == result["transaction_id"]
    assert calls("get_transaction")[-1].task_id == "t-sync-uuid"


def test_read_task_meeting_a_503_retries_with_the_same_task_id(paycollect_in_process, pay):
    txn = pay("30.00")
    paycollect_in_process.control.complete(txn.uuid)
    # The client tries twice (MAX_NETWORK_RETRIES=1) and gives up; the task retries and succeeds.
    paycollect_in_process.control.fault("fetch_transaction", "status", status=503, times=2)
    result = run(tasks.sync_transaction, "t-503", transaction_id=txn.pk)
    assert result["status"] == Transaction.SUCCESSFUL
    rows = calls("get_transaction")
    assert [r.error_class for r in rows] == ["ServerError", ""]
    assert {r.task_id for r in rows} == {"t-503"}
    assert len(paycollect_in_process.control.journal("fetch_transaction")) == 3


def test_read_task_retries_through_the_broker_when_not_eager(paycollect_in_process, pay, monkeypatch):
    txn = pay("30.00")
    paycollect_in_process.control.fault("fetch_transaction", "status", status=503, times=2)
    retried: list[dict[str, Any]] = []
    task = tasks.sync_transaction._get_current_object()

    def retry(exc: Exception | None = None, countdown: float | None = None, **kw: Any) -> Exception:
        retried.append({"exc": exc, "countdown": countdown, "id": task.request.id})
        return RuntimeError("retry scheduled")

    # As in a worker: not eager, so the retry goes through the broker with a countdown.
    monkeypatch.setattr(task, "retry", retry)
    task.push_request(id="t-worker", is_eager=False, retries=0)
    try:
        with pytest.raises(RuntimeError, match="retry scheduled"):
            task.run(transaction_id=txn.pk)
    finally:
        task.pop_request()
    [scheduled] = retried
    # The service layer's "not now", with the client's error behind it.
    assert isinstance(scheduled["exc"], ServiceUnavailable)
    assert type(scheduled["exc"].__cause__).__name__ == "ServerError"
    assert READ_BACKOFF / 2 <= scheduled["countdown"] <= READ_BACKOFF
    assert calls("get_transaction")[0].task_id == "t-worker"


def test_read_task_gives_up_after_its_retries(paycollect_in_process, pay):
    from django_paycollect.client import ServerError

    txn = pay("30.00")
    paycollect_in_process.control.fault("fetch_transaction", "status", status=503, times=None)
    try:
        with pytest.raises(ServiceUnavailable) as caught:
            run(tasks.sync_transaction, "t-503-forever", transaction_id=txn.pk)
        assert isinstance(caught.value.__cause__, ServerError)
    finally:
        paycollect_in_process.control.clear_faults()
    assert len(calls("get_transaction")) == 1 + READ_MAX_RETRIES


def test_a_misconfiguration_fails_a_task_at_once_loudly_and_a_refusal_quietly(
    paycollect_in_process, paid_transaction, settings
):
    # Credentials the service refuses fail the same way on every try: never retried, and not one of the
    # expected refusals, so the worker logs it with its traceback.
    fetched = len(calls("get_transaction"))
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": "not-the-key-0123456789"}
    with pytest.raises(PayCollectConfigurationError):
        run(tasks.sync_transaction, "t-misconfigured-read", transaction_id=paid_transaction.pk)
    with pytest.raises(PayCollectConfigurationError):
        run(tasks.capture, "t-misconfigured-write", transaction_id=paid_transaction.pk)
    assert len(calls("get_transaction")) == fetched + 1
    assert len(calls("capture")) == 1
    refusals = [PaymentRefused("bad"), StateConflict("state"), NotFound("unknown")]
    for task in WRITES:
        assert all(isinstance(refusal, task.throws) for refusal in refusals)
        assert not isinstance(PayCollectConfigurationError("wrong"), task.throws)


def test_validate_promocode_task(paycollect_in_process):
    result = run(
        tasks.validate_promocode, "t-promo", name="SAVE10", amount="100.00", phone_number="+201001234567"
    )
    assert result["promocode_id"]
    assert calls("validate_promocode")[0].task_id == "t-promo"
    with pytest.raises(PaymentRefused):  # refused, not retried
        run(
            tasks.validate_promocode,
            "t-promo-bad",
            name="NO-SUCH",
            amount="1.00",
            phone_number="+201001234567",
        )
    assert len(calls("validate_promocode")) == 2


def test_fetch_statistics_task(paycollect_in_process, paid_transaction):
    result = run(tasks.fetch_statistics, "t-stats")
    assert StatisticsSnapshot.objects.get().pk == result["snapshot_id"]
    assert calls("dashboard_statistics")[0].task_id == "t-stats"


# --- state-changing operations ------------------------------------------------------------------------


def test_start_payment_task(paycollect_in_process, admin_user):
    result = run(
        tasks.start_payment,
        "t-pay",
        amount="100.00",
        billing_data=BILLING,
        merchant_reference="order-7",
        merchant_object=["auth.user", admin_user.pk],
        recurring={
            "expiry_date": str(dt.date.today() + dt.timedelta(days=90)),
            "minimum_days_between_payments": 30,
        },
    )
    txn = Transaction.objects.get(pk=result["transaction_id"])
    assert result["status"] == Transaction.PENDING
    assert result["iframe_url"] == txn.iframe_url
    assert txn.merchant_object == admin_user
    assert calls("pay")[0].task_id == "t-pay"
    assert paycollect_in_process.control.journal("pay")[0]["body"]["is_recurring"] is True


def test_start_payment_with_its_answer_lost_is_not_sent_again(paycollect_in_process):
    paycollect_in_process.control.fault("pay", "drop_after")
    result = run(tasks.start_payment, "t-pay-lost", amount="100.00", billing_data=BILLING)
    assert result["outcome_unknown"] is True
    assert result["status"] == Transaction.NEW
    assert len(paycollect_in_process.control.journal("pay")) == 1


def test_a_redelivered_state_changing_task_does_not_call_again(paycollect_in_process):
    first = run(tasks.start_payment, "t-pay-twice", amount="10.00", billing_data=BILLING)
    # The broker hands the same message (same task id) out again, e.g. after a visibility timeout.
    again = run(tasks.start_payment, "t-pay-twice", amount="10.00", billing_data=BILLING)
    assert again["duplicate_delivery"] is True
    assert again["transaction_id"] == first["transaction_id"]
    assert len(paycollect_in_process.control.journal("pay")) == 1
    assert Transaction.objects.count() == 1


def test_refund_task(paycollect_in_process, paid_transaction, admin_user):
    result = run(
        tasks.refund,
        "t-refund",
        transaction_id=paid_transaction.pk,
        amount="40.00",
        user_id=admin_user.pk,
        expected_refundable="100.00",
    )
    assert result["state"] == Refund.SUCCEEDED
    assert result["amount"] == "40.00"
    refund = Refund.objects.get()
    assert refund.requested_by == admin_user
    assert calls("refund")[0].task_id == "t-refund"
    assert calls("refund")[0].refund == refund


def test_refund_task_whose_answer_was_lost_is_unknown_and_never_resent(
    paycollect_in_process, paid_transaction
):
    paycollect_in_process.control.fault("refund", "drop_after")
    result = run(tasks.refund, "t-refund-lost", transaction_id=paid_transaction.pk, amount="60.00")
    assert result["state"] == Refund.UNKNOWN
    assert Refund.objects.get().state == Refund.UNKNOWN
    assert len(paycollect_in_process.control.journal("refund")) == 1
    [call] = calls("refund")
    assert call.outcome_unknown
    assert call.task_id == "t-refund-lost"
    # Even a redelivery of the same message leaves the service alone.
    again = run(tasks.refund, "t-refund-lost", transaction_id=paid_transaction.pk, amount="60.00")
    assert again["duplicate_delivery"] is True
    assert again["state"] == Refund.UNKNOWN
    assert len(paycollect_in_process.control.journal("refund")) == 1


def test_refund_task_refused_twice_for_a_second_click(paycollect_in_process, paid_transaction):
    run(
        tasks.refund,
        "t-click-1",
        transaction_id=paid_transaction.pk,
        amount="30.00",
        expected_refundable="100.00",
    )
    with pytest.raises(StateConflict, match="changed"):
        run(
            tasks.refund,
            "t-click-2",
            transaction_id=paid_transaction.pk,
            amount="30.00",
            expected_refundable="100.00",
        )
    assert len(paycollect_in_process.control.journal("refund")) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_state_changing_call_never_sent_is_retried(paycollect_in_process, paid_transaction, monkeypatch):
    # The first attempt finds the service unreachable (connection refused: nothing sent); then it is back.
    real = get_client
    down = PayCollectClient(f"http://127.0.0.1:{_closed_port()}", api_key="k", max_network_retries=0)
    clients = iter([down])
    monkeypatch.setattr(services.calls, "get_client", lambda *a, **kw: next(clients, None) or real(*a, **kw))
    result = run(tasks.refund, "t-refund-down", transaction_id=paid_transaction.pk, amount="25.00")
    assert result["state"] == Refund.SUCCEEDED
    assert [r.error_class for r in calls("refund")] == ["ConnectError", ""]
    assert {r.task_id for r in calls("refund")} == {"t-refund-down"}
    assert list(Refund.objects.order_by("pk").values_list("state", flat=True)) == [
        Refund.FAILED,
        Refund.SUCCEEDED,
    ]
    assert len(paycollect_in_process.control.journal("refund")) == 1


def test_a_call_never_sent_is_retried_through_the_broker_when_not_eager(
    paycollect_in_process, paid_transaction, monkeypatch
):
    down = PayCollectClient(f"http://127.0.0.1:{_closed_port()}", api_key="k", max_network_retries=0)
    monkeypatch.setattr(services.calls, "get_client", lambda *a, **kw: down)
    task = tasks.capture._get_current_object()
    scheduled: list[float | None] = []

    def retry(exc: Exception | None = None, countdown: float | None = None, **kw: Any) -> Exception:
        scheduled.append(countdown)
        return RuntimeError("retry scheduled")

    monkeypatch.setattr(task, "retry", retry)
    task.push_request(id="t-capture-down", is_eager=False, retries=0)
    try:
        with pytest.raises(RuntimeError, match="retry scheduled"):
            task.run(transaction_id=paid_transaction.pk)
    finally:
        task.pop_request()
    assert scheduled == [NOT_SENT_RETRY_DELAYS[0]]
    # The last retry gives up: the service is still unavailable.
    task.push_request(id="t-capture-down", is_eager=False, retries=len(NOT_SENT_RETRY_DELAYS))
    try:
        with pytest.raises(ServiceUnavailable):
            task.run(transaction_id=paid_transaction.pk)
    finally:
        task.pop_request()
    assert scheduled == [NOT_SENT_RETRY_DELAYS[0]]
    assert paycollect_in_process.control.journal("capture") == []


def test_a_rate_limited_read_waits_as_long_as_the_service_asks(monkeypatch):
    task = tasks.fetch_statistics._get_current_object()
    scheduled: list[float] = []
    monkeypatch.setattr(
        task, "retry", lambda exc=None, countdown=None, **kw: scheduled.append(countdown) or exc
    )
    task.push_request(id="t-429", is_eager=False, retries=0)
    try:
        with pytest.raises(ServiceUnavailable):
            retry_read(task, ServiceUnavailable("slow down", retry_after=42.0))
    finally:
        task.pop_request()
    assert scheduled == [42.0]


def test_a_payment_never_sent_is_retried_and_one_never_answered_is_not(paycollect_in_process, monkeypatch):
    real = get_client
    down = PayCollectClient(f"http://127.0.0.1:{_closed_port()}", api_key="k", max_network_retries=0)
    clients = iter([down, down, down, down])
    monkeypatch.setattr(services.calls, "get_client", lambda *a, **kw: next(clients, None) or real(*a, **kw))
    # Down for longer than the retries: unavailable in the end, nothing ever sent.
    with pytest.raises(ServiceUnavailable):
        run(tasks.start_payment, "t-pay-down", amount="10.00", billing_data=BILLING)
    assert len(calls("pay")) == 1 + len(NOT_SENT_RETRY_DELAYS)
    assert paycollect_in_process.control.journal("pay") == []
    # Sent and unanswered: never again.
    paycollect_in_process.control.fault("pay", "drop_after")
    result = run(tasks.start_payment, "t-pay-unknown", amount="10.00", billing_data=BILLING)
    assert result["outcome_unknown"] is True
    assert len(paycollect_in_process.control.journal("pay")) == 1


def test_a_state_changing_call_refused_by_the_service_is_not_retried(paycollect_in_process, pay):
    with pytest.raises(PaymentRefused):
        run(
            tasks.start_payment,
            "t-pay-refused",
            amount="10.00",
            billing_data=BILLING,
            variable_amount_id=999999,
        )
    assert len(paycollect_in_process.control.journal("pay")) == 1
    assert len(calls("pay")) == 1


def test_capture_task(paycollect_in_process, paid_transaction):
    result = run(tasks.capture, "t-capture", transaction_id=paid_transaction.pk)
    assert result["capture_state"] == Transaction.CAPTURE_DONE
    assert calls("capture")[0].task_id == "t-capture"


def test_cancel_recurring_task(paycollect_in_process, recurring_transaction):
    series = RecurringSeries.objects.get()
    result = run(tasks.cancel_recurring, "t-cancel", series_id=series.pk)
    assert result["cancel_state"] == RecurringSeries.CANCEL_DONE
    assert result["active"] is False
    assert calls("cancel_recurring")[0].task_id == "t-cancel"


def test_create_direct_order_task(paycollect_in_process):
    user = get_user_model().objects.create_user("clerk")
    result = run(
        tasks.create_direct_order,
        "t-order",
        user_id=user.pk,
        name="Invoice 9",
        amount="250.00",
        payment_methods=["card"],
        customer_name="Omar Said",
        customer_email="omar@example.com",
        customer_mobile="+201001112222",
        recurring={
            "expiry_date": str(dt.date.today() + dt.timedelta(days=60)),
            "minimum_days_between_payments": 7,
        },
    )
    order = DirectOrder.objects.get(pk=result["direct_order_id"])
    assert order.state == DirectOrder.CREATED
    assert result["payment_link"] == order.payment_link
    assert order.created_by == user
    assert order.allow_recurring_payments
    assert calls("create_direct_order")[0].task_id == "t-order"


def test_create_community_task_takes_its_logo_as_base64(paycollect_in_process):
    result = run(
        tasks.create_community,
        "t-community",
        name="Task Club",
        logo_base64=base64.b64encode(PNG).decode(),
        app_modules=["Event"],
    )
    assert result == {"created": True, "outcome_unknown": False}
    assert any(c["name"] == "Task Club" for c in paycollect_in_process.control.communities())
    assert calls("create_community")[0].task_id == "t-community"
    with pytest.raises(PaymentRefused, match="base64"):
        run(tasks.create_community, "t-community-bad", name="Bad", logo_base64="not base64!")


def test_create_community_with_its_answer_lost(paycollect_in_process):
    paycollect_in_process.control.fault("create_community", "drop_after")
    result = run(
        tasks.create_community,
        "t-community-lost",
        name="Lost Club",
        logo_base64=base64.b64encode(PNG).decode(),
    )
    assert result == {"created": None, "outcome_unknown": True}
    assert len(paycollect_in_process.control.journal("create_community")) == 1


# --- callbacks and housekeeping ------------------------------------------------------------------------


def test_process_callbacks_task_verifies_and_is_idempotent(paycollect_in_process, pay, signal_log):
    txn = pay("45.00")
    paycollect_in_process.control.complete(txn.uuid)
    callback = ReceivedCallback.objects.create(
        state=ReceivedCallback.QUEUED, transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL"
    )
    processed = {ReceivedCallback.PROCESSED: 1}
    assert run(tasks.process_callbacks, "t-callback", callback_ids=[callback.pk]) == processed
    assert run(tasks.process_callbacks, "t-callback", callback_ids=[callback.pk]) == processed
    callback.refresh_from_db()
    assert callback.task_id == "t-callback"
    assert callback.attempts == 1
    assert signal_log.count("payment_succeeded") == 1
    assert calls("get_transaction")[0].task_id == "t-callback"


def test_a_message_of_callbacks_reads_its_community_s_credentials_once(paycollect_in_process, pay):
    payments = [pay("45.00") for _ in range(3)]
    ids = []
    for txn in payments:
        paycollect_in_process.control.complete(txn.uuid)
        ids.append(
            ReceivedCallback.objects.create(
                state=ReceivedCallback.QUEUED, transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL"
            ).pk
        )
    with CaptureQueriesContext(connection) as captured:
        assert run(tasks.process_callbacks, "t-batch", callback_ids=ids) == {ReceivedCallback.PROCESSED: 3}
    community_reads = [q for q in captured.captured_queries if 'FROM "paycollect_community"' in q["sql"]]
    assert len(community_reads) == 1


def test_process_callbacks_task_records_a_failure_in_eager_mode_without_retrying(paycollect_in_process, pay):
    txn = pay("45.00")
    callback = ReceivedCallback.objects.create(state=ReceivedCallback.QUEUED, transaction_uuid=txn.uuid)
    paycollect_in_process.control.fault("fetch_transaction", "status", status=503, times=None)
    try:
        assert run(tasks.process_callbacks, "t-callback-down", callback_ids=[callback.pk]) == {"failed": 1}
    finally:
        paycollect_in_process.control.clear_faults()
    callback.refresh_from_db()
    assert callback.state == ReceivedCallback.FAILED
    assert "ServerError" in callback.error


def test_reconcile_task_returns_its_summary(paycollect_in_process, pay):
    txn = pay("20.00")
    complete_at_service_only = paycollect_in_process.control.complete
    complete_at_service_only(txn.uuid)
    Transaction.objects.filter(pk=txn.pk).update(created_at=txn.created_at - dt.timedelta(hours=1))
    result = run(tasks.reconcile, "t-reconcile", older_than="30m")
    assert result["fetched"] == 1
    assert result["changed"] == 1
    assert result["errors"] == 0
    assert calls("get_transaction")[0].task_id == "t-reconcile"
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL


def test_prune_task(paycollect_in_process, paid_transaction):
    ApiCall.objects.update(created_at=paid_transaction.created_at - dt.timedelta(days=100))
    result = run(tasks.prune, "t-prune", older_than="90d")
    assert result["api_calls"] >= 2
    assert not ApiCall.objects.exists()


def test_tasks_work_when_called_directly_too(paycollect_in_process, pay):
    # Called as a function (no worker, no task id): the service runs, nothing is retried.
    txn = pay("12.00")
    complete(paycollect_in_process, txn)
    result = tasks.refund(transaction_id=txn.pk, amount="2.00")
    assert result["state"] == Refund.SUCCEEDED
    assert calls("refund")[0].task_id == ""
