"""The fault matrix: every operation, through the service layer as the app calls it, against every fault.

Each cell injects one fault at the sandbox (``control.fault``), calls the service function, and checks:

* what the caller gets: a read a single fault does not outlast is retried once (``MAX_NETWORK_RETRIES`` 1)
  and succeeds; otherwise the service layer's ``ServiceUnavailable`` is raised, the client's error class
  behind it. A write is never resent: the service function records "outcome unknown" and returns that
  state (``create_community`` its ApiCall row, flagged);
* the sandbox's journal: how many requests reached it (one for every write);
* the one ApiCall row stored for the call: ``error_class``, ``outcome_unknown``, ``attempts``, and what it
  keeps of the answer (the envelope's code, an excerpt of an HTML page or of the broken JSON);
* the effect at the sandbox (its own state): done once when the fault came after the work, never twice;
* reconciliation, faults cleared: it settles what fetching can settle (an unknown start is abandoned, a
  pending transaction synced, an unknown cancellation settled from ``recurring.active``), reports for
  review what the spec gives no way to fetch (refunds, captures, direct orders, community creations)
  and sends no write again;
* the app's signals from the faulted call to the end of reconciliation: each once, none for what stays
  uncertain.

The sandbox is served in the test's process (tests/support/in_process.py): a reset, an answer dropped after
the work and a latency past the read timeout reach the client as a socket would bring them, without the wait;
tests/sandbox/test_faults.py runs each of them against the live sandbox too and proves the client sees the
same. The results are printed as a table at the end of the run (``conftest.py``).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from django_paycollect import reconciliation, services
from django_paycollect.client import (
    Logo,
    OutcomeUnknownError,
    PayCollectError,
    ServerError,
    UnexpectedResponseError,
)
from django_paycollect.exceptions import ServiceUnavailable, StateConflict
from django_paycollect.models import (
    ApiCall,
    DirectOrder,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
)
from tests.support.payments import BILLING

pytestmark = pytest.mark.django_db(transaction=True)

#: (connect, read) seconds of the call under the latency fault: the latency is well beyond the read timeout.
SHORT_TIMEOUT = (1.0, 0.5)
LATENCY_MS = 1500
MAX_NETWORK_RETRIES = 1

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
NGINX_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)
CHALLENGE_403 = (
    "<!DOCTYPE html><html lang=en><head><title>Just a moment...</title></head><body>"
    "<h1>Checking your browser before accessing the site.</h1>"
    "<noscript>Enable JavaScript and cookies to continue</noscript></body></html>"
)
#: A 200 whose JSON is cut short: the answer of a service that did the work and then broke its reply.
BROKEN_JSON = '{"status": {"code": 200, "message": "OK", "errors": []}, "data": {"transaction_uu'


# --- the faults ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    key: str
    label: str
    kind: str
    options: dict[str, Any]
    #: Whether the sandbox does the operation's work (before the fault hits the answer).
    work_done: bool
    #: Whether the client asks a read again after it (network failures, 429/502/503/504).
    read_retried: bool
    error: type[PayCollectError]
    http_status: int | None
    #: What the ApiCall row keeps of the answer: the envelope's code, or an excerpt of the body.
    code: int | None = None
    excerpt: str = ""


FAULTS = (
    Fault(
        key="latency",
        label=f"latency {LATENCY_MS / 1000:g} s > timeout {SHORT_TIMEOUT[1]:g} s",
        kind="latency",
        options={"latency_ms": LATENCY_MS},
        work_done=True,  # the sandbox waits, then works: the client has given up by then
        read_retried=True,
        error=OutcomeUnknownError,
        http_status=None,
    ),
    Fault(
        key="reset",
        label="reset before the work",
        kind="reset",
        options={},
        work_done=False,
        read_retried=True,
        error=OutcomeUnknownError,
        http_status=None,
    ),
    Fault(
        key="drop",
        label="work done, answer dropped",
        kind="drop_after",
        options={},
        work_done=True,
        read_retried=True,
        error=OutcomeUnknownError,
        http_status=None,
    ),
    Fault(
        key="500",
        label="500 error envelope",
        kind="status",
        options={"status": 500},
        work_done=False,
        read_retried=False,  # only 429, 502, 503 and 504 are asked again
        error=ServerError,
        http_status=500,
        code=500,
    ),
    Fault(
        key="502",
        label="502 HTML (gateway)",
        kind="html",
        options={"status": 502, "body": NGINX_502},
        work_done=False,
        read_retried=True,
        error=UnexpectedResponseError,
        http_status=502,
        excerpt="502 Bad Gateway",
    ),
    Fault(
        key="403",
        label="403 HTML challenge page",
        kind="html",
        options={"status": 403, "body": CHALLENGE_403},
        work_done=False,
        read_retried=False,
        error=UnexpectedResponseError,
        http_status=403,
        excerpt="Just a moment...",
    ),
    Fault(
        key="json",
        label="200 malformed JSON, after work",
        kind="status",
        options={"status": 200, "body": BROKEN_JSON, "after_work": True},
        work_done=True,
        read_retried=False,
        error=UnexpectedResponseError,
        http_status=200,
        excerpt='"data": {"transaction_uu',
    ),
)


# --- the operations -----------------------------------------------------------------------------------


@dataclass
class Cell:
    """One run of one operation against one fault: the sandbox, the fixtures, and what the case arranged."""

    sb: Any
    request: pytest.FixtureRequest
    fault: Fault
    times: int | None
    state: dict[str, Any] = field(default_factory=dict)


class Case:
    """An operation as the app calls it; subclasses say how to arrange, call and check it."""

    label = ""
    sandbox_op = ""
    api_op = ""
    writes = False
    #: The signals sent from the faulted call to the end of reconciliation, each once.
    signals: tuple[str, ...] = ()

    def arrange(self, cell: Cell) -> None:
        """Create what the call needs (before the fault is injected)."""

    def act(self, cell: Cell) -> Any:
        raise NotImplementedError

    def effect(self, cell: Cell) -> int:
        """How many times the operation's work has been done at the sandbox (writes)."""
        return 0

    def succeeded(self, cell: Cell, result: Any) -> str:
        raise NotImplementedError

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        """Check the local state after the fault; return what the caller got, for the table."""
        return "raised"

    def expected_signals(self, cell: Cell) -> list[str]:
        return sorted(self.signals)

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        """Check what reconciliation did; return it for the table."""
        assert summary.findings == []
        return "nothing to settle (a read)"


class PrepareAmount(Case):
    label = "prepare_amount"
    sandbox_op = api_op = "prepare_amount"

    def act(self, cell: Cell) -> Any:
        return services.prepare_amount(Decimal("100.00"))

    def succeeded(self, cell: Cell, result: Any) -> str:
        assert result == Decimal("104.50")
        return f"ok: {result}"


class StartPayment(Case):
    label = "start_payment"
    sandbox_op = api_op = "pay"
    writes = True
    signals = ("transaction_status_changed",)  # NEW -> ABANDONED

    def act(self, cell: Cell) -> Any:
        return services.start_payment(
            amount=Decimal("100.00"), billing_data=BILLING, merchant_reference="fault-order"
        )

    def effect(self, cell: Cell) -> int:
        # Transactions the service created: none in this test but this one.
        stats = cell.sb.client.dashboard_statistics(community_id=cell.sb.community_id).result
        return int(stats.total_number_of_transactions)

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        txn = result
        assert isinstance(txn, Transaction)
        assert (txn.status, txn.uuid, txn.outcome_unknown) == (Transaction.NEW, None, True)
        assert call.transaction_id == txn.pk
        cell.state["txn"] = txn
        # The customer clicks again: the open reference is returned, nothing is sent again.
        again = self.act(cell)
        assert again.pk == txn.pk
        return "returned NEW, outcome_unknown set"

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        txn = cell.state["txn"]
        txn.refresh_from_db()
        assert txn.status == Transaction.ABANDONED
        assert summary.abandoned == 1
        assert [str(f) for f in summary.findings] == [
            f"transaction #{txn.pk}: start outcome unknown: abandoned"
        ]
        return "settled: NEW -> ABANDONED"


class SyncTransaction(Case):
    label = "sync_transaction"
    sandbox_op = "fetch_transaction"
    api_op = "get_transaction"
    signals = ("payment_succeeded", "transaction_status_changed")  # by the retry or by reconciliation

    def arrange(self, cell: Cell) -> None:
        txn = cell.request.getfixturevalue("pay")("100.00", merchant_reference="fault-sync")
        cell.sb.control.complete(txn.uuid)  # paid at the service; we have not heard of it yet
        cell.state["txn"] = txn

    def act(self, cell: Cell) -> Any:
        return services.sync_transaction(cell.state["txn"])

    def succeeded(self, cell: Cell, result: Any) -> str:
        assert result.status == Transaction.SUCCESSFUL
        return "ok: PENDING -> SUCCESSFUL"

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        txn = cell.state["txn"]
        txn.refresh_from_db()
        assert txn.status == Transaction.PENDING
        assert call.transaction_id == txn.pk
        return "raised"

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        txn = cell.state["txn"]
        txn.refresh_from_db()
        assert txn.status == Transaction.SUCCESSFUL
        if survived:
            assert summary.findings == []
            return "nothing left (synced by the retry)"
        assert (summary.fetched, summary.changed) == (1, 1)
        assert [str(f) for f in summary.findings] == [f"transaction {txn.uuid}: PENDING -> SUCCESSFUL"]
        return "settled: fetched, PENDING -> SUCCESSFUL"


class Capture(Case):
    label = "capture"
    sandbox_op = api_op = "capture"
    writes = True

    def arrange(self, cell: Cell) -> None:
        cell.state["txn"] = cell.request.getfixturevalue("paid_transaction")

    def act(self, cell: Cell) -> Any:
        return services.capture(cell.state["txn"])

    def effect(self, cell: Cell) -> int:
        return int(cell.sb.control.transaction(cell.state["txn"].uuid)["sandbox"]["captured"])

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        assert result.capture_state == Transaction.CAPTURE_UNKNOWN
        assert call.transaction_id == result.pk
        # A second click is refused here, before anything is sent.
        with pytest.raises(StateConflict, match="outcome unknown"):
            services.capture(cell.state["txn"])
        return "returned capture unknown"

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        [finding] = summary.needs_review
        assert finding.kind == "capture"
        assert "capture outcome unknown" in finding.outcome
        return "reported: needs review"


class RefundCase(Case):
    label = "refund"
    sandbox_op = api_op = "refund"
    writes = True

    def arrange(self, cell: Cell) -> None:
        cell.state["txn"] = cell.request.getfixturevalue("paid_transaction")

    def act(self, cell: Cell) -> Any:
        return services.refund(cell.state["txn"], Decimal("10.00"))

    def effect(self, cell: Cell) -> int:
        refunded = cell.sb.control.transaction(cell.state["txn"].uuid)["sandbox"]["refunded_amount"]
        count, rest = divmod(Decimal(str(refunded)), Decimal("10.00"))
        assert rest == 0
        return int(count)

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        assert isinstance(result, Refund)
        assert result.state == Refund.UNKNOWN
        assert (call.refund_id, call.transaction_id) == (result.pk, result.transaction_id)
        txn = Transaction.objects.get(pk=result.transaction_id)
        assert txn.refunded_amount == 0
        assert txn.refundable_amount == Decimal("90.00")  # the unknown refund holds its amount
        # The refund page shown before is submitted again: refused under the lock, nothing sent.
        with pytest.raises(StateConflict, match="changed"):
            services.refund(txn, Decimal("10.00"), expected_refundable=Decimal("100.00"))
        return "returned refund unknown"

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        [finding] = summary.needs_review
        assert finding.kind == "refund"
        assert "refund of 10.00 EGP: outcome unknown" in finding.outcome
        return "reported: needs review"


class CancelRecurring(Case):
    label = "cancel_recurring"
    sandbox_op = api_op = "cancel_recurring"
    writes = True

    def arrange(self, cell: Cell) -> None:
        cell.state["txn"] = cell.request.getfixturevalue("recurring_transaction")
        cell.state["series"] = RecurringSeries.objects.get()

    def act(self, cell: Cell) -> Any:
        return services.cancel_recurring(cell.state["series"])

    def effect(self, cell: Cell) -> int:
        fetched = cell.sb.control.transaction(cell.state["txn"].uuid)["transaction"]
        return int(not fetched["recurring"]["active"])

    def expected_signals(self, cell: Cell) -> list[str]:
        return ["recurring_series_cancelled"] if cell.fault.work_done else []

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        assert result.cancel_state == RecurringSeries.CANCEL_UNKNOWN
        assert call.series_id == result.pk
        return "returned cancel unknown"

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        series = cell.state["series"]
        series.refresh_from_db()
        assert summary.cancels_settled == 1
        assert summary.needs_review == []
        if cell.fault.work_done:
            assert (series.cancel_state, series.active) == (RecurringSeries.CANCEL_DONE, False)
            return "settled: cancelled (recurring.active false)"
        assert (series.cancel_state, series.active) == (RecurringSeries.CANCEL_FAILED, True)
        return "settled: not cancelled, may be sent again"


class ValidatePromocode(Case):
    label = "validate_promocode"
    sandbox_op = api_op = "validate_promocode"

    def act(self, cell: Cell) -> Any:
        return services.validate_promocode("SAVE10", amount=Decimal("100.00"), phone_number="+201001234567")

    def succeeded(self, cell: Cell, result: Any) -> str:
        assert result.promocode_id
        return "ok: promocode valid"


class CreateCommunity(Case):
    label = "create_community"
    sandbox_op = api_op = "create_community"
    writes = True
    name = "Fault Club"

    def act(self, cell: Cell) -> Any:
        return services.create_community(name=self.name, logo=Logo("logo.png", PNG), app_modules=["Event"])

    def effect(self, cell: Cell) -> int:
        return sum(c["name"] == self.name for c in cell.sb.control.communities())

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        # No row of its own: the ApiCall is returned, flagged.
        assert result == call
        assert result.outcome_unknown
        return "returned its ApiCall, outcome_unknown set"

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        if summary.needs_review:
            return "reported: needs review"
        return "NOT REPORTED"


class FetchStatistics(Case):
    label = "fetch_statistics"
    sandbox_op = api_op = "dashboard_statistics"

    def act(self, cell: Cell) -> Any:
        return services.fetch_statistics()

    def succeeded(self, cell: Cell, result: Any) -> str:
        assert isinstance(result, StatisticsSnapshot)
        assert result.total_number_of_transactions == 0
        return "ok: snapshot stored"

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        assert not StatisticsSnapshot.objects.exists()
        return "raised"


class CreateDirectOrder(Case):
    label = "create_direct_order"
    sandbox_op = "direct_order"
    api_op = "create_direct_order"
    writes = True

    def act(self, cell: Cell) -> Any:
        return services.create_direct_order(
            name="Invoice F",
            amount=Decimal("90.00"),
            payment_methods=["card"],
            customer_name="Omar Said",
            customer_email="omar@example.com",
            customer_mobile="+201001112222",
            send_by_email=True,  # the sandbox mails each order it creates: its outbox counts them
        )

    def effect(self, cell: Cell) -> int:
        return sum(m["channel"] == "EMAIL" for m in cell.sb.control.outbox())

    def failed(self, cell: Cell, result: Any, call: ApiCall) -> str:
        assert isinstance(result, DirectOrder)
        assert (result.state, result.payment_link) == (DirectOrder.UNKNOWN, "")
        assert call.direct_order_id == result.pk
        assert DirectOrder.objects.count() == 1
        return "returned order UNKNOWN"

    def settle(self, cell: Cell, summary: reconciliation.Summary, survived: bool) -> str:
        [finding] = summary.needs_review
        assert finding.kind == "direct_order"
        assert "creation outcome unknown" in finding.outcome
        return "reported: needs review"


CASES: tuple[Case, ...] = (
    PrepareAmount(),
    StartPayment(),
    SyncTransaction(),
    Capture(),
    RefundCase(),
    CancelRecurring(),
    ValidatePromocode(),
    CreateCommunity(),
    FetchStatistics(),
    CreateDirectOrder(),
)


def _cells() -> list[Any]:
    cells = []
    for case_index, case in enumerate(CASES):
        for fault_index, fault in enumerate(FAULTS):
            # Reads: once with a fault the retry outlasts (times=1), once with one that stays (times=None).
            for times in (1,) if case.writes else (1, None):
                ident = f"{case.label}-{fault.key}" + ("" if case.writes else f"-times{times or 'All'}")
                order = (case_index, fault_index, times or 99)
                cells.append(pytest.param(case, fault, times, order, id=ident))
    return cells


# --- helpers ------------------------------------------------------------------------------------------


def wait_for_journal(sb: Any, operation: str, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The sandbox's journal for ``operation`` once it holds ``count`` entries.

    A request the client gave up on (a read timeout) is journaled when the sandbox finishes it, later.
    """
    deadline = time.monotonic() + timeout
    while True:
        entries = sb.control.journal(operation)
        if len(entries) >= count or time.monotonic() > deadline:
            return entries
        time.sleep(0.05)


# --- the matrix ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "fault", "times", "order"), _cells())
def test_fault_matrix(
    case: Case,
    fault: Fault,
    times: int | None,
    order: tuple[int, int, int],
    request: pytest.FixtureRequest,
    paycollect_in_process: Any,
    settings: Any,
    signal_log: Any,
    fault_matrix_rows: list[dict[str, Any]],
) -> None:
    sb = paycollect_in_process
    cell = Cell(sb, request, fault, times)
    case.arrange(cell)
    journal_before = len(sb.control.journal(case.sandbox_op))
    calls_before = list(ApiCall.objects.filter(operation=case.api_op).values_list("pk", flat=True))
    effect_before = case.effect(cell)
    signal_log.sent.clear()

    # The latency fault's call runs with the short timeout; the other faults do not depend on it, and
    # setup and reconciliation keep the usual one, so a busy machine cannot turn them into timeouts.
    sb.control.fault(case.sandbox_op, fault.kind, times=times, **fault.options)
    configured = settings.PAYCOLLECT
    settings.PAYCOLLECT = {
        **configured,
        "TIMEOUT": SHORT_TIMEOUT if fault.kind == "latency" else configured["TIMEOUT"],
        "MAX_NETWORK_RETRIES": MAX_NETWORK_RETRIES,
    }
    result: Any = None
    raised: ServiceUnavailable | None = None
    try:
        result = case.act(cell)
    except ServiceUnavailable as exc:
        raised = exc
    finally:
        settings.PAYCOLLECT = configured

    # Exactly one ApiCall row for the call.
    [call] = ApiCall.objects.filter(operation=case.api_op).exclude(pk__in=calls_before)

    # What reached the sandbox: a write once; a read once more when the fault is one the client retries.
    survives = not case.writes and fault.read_retried and times == 1
    expected_requests = 1 if case.writes or not fault.read_retried else 1 + MAX_NETWORK_RETRIES
    # The client's own count too, so a request sent more often than expected is waited for and counted.
    sent = max(expected_requests, call.attempts)
    entries = wait_for_journal(sb, case.sandbox_op, journal_before + sent)[journal_before:]
    faulted = 1 if survives or times == 1 else expected_requests
    assert Counter(e["fault"] for e in entries) == Counter({fault.kind: faulted, "": len(entries) - faulted})
    assert len(entries) == expected_requests
    assert call.attempts == expected_requests

    if survives:
        assert raised is None, f"a read the retry outlasts raised {raised!r}"
        outcome = f"{case.succeeded(cell, result)}, after a retry"
        assert (call.error_class, call.outcome_unknown, call.http_status) == ("", False, 200)
    else:
        expected = fault.error.__name__
        assert call.error_class == expected
        assert call.outcome_unknown is case.writes
        assert call.http_status == fault.http_status
        assert call.sent
        assert call.error_message
        assert call.code == fault.code
        assert fault.excerpt in call.body_excerpt
        if case.writes:
            assert raised is None, f"{case.label} raised {raised!r} instead of recording the unknown outcome"
            outcome = case.failed(cell, result, call)
        else:
            assert raised is not None, f"{case.label} returned {result!r}"
            cause = raised.__cause__
            assert isinstance(cause, PayCollectError)
            assert type(cause) is fault.error
            assert cause.outcome_unknown is False
            outcome = f"{case.failed(cell, result, call)} ServiceUnavailable ({expected})"

    # The effect at the sandbox: once when the fault came after the work, never twice.
    effect = "-"
    if case.writes:
        done = case.effect(cell) - effect_before
        assert done == int(fault.work_done)
        effect = "done once" if done else "not done"

    # Reconciliation, faults cleared: settles what a fetch can settle, reports the rest, resends no write.
    sb.control.clear_faults()
    summary = reconciliation.reconcile(older_than=timedelta(0))
    assert summary.errors == []
    settled = case.settle(cell, summary, survives)
    if case.sandbox_op != "fetch_transaction":  # reconciliation fetches; nothing else is sent again
        assert len(sb.control.journal(case.sandbox_op)) == journal_before + expected_requests
    if case.writes:
        assert case.effect(cell) - effect_before == int(fault.work_done)
    # Locally too: each signal once, none for what stays uncertain.
    assert sorted(signal_log.names()) == case.expected_signals(cell)

    fault_matrix_rows.append(
        {
            "order": order,
            "operation": case.label,
            "fault": fault.label,
            "times": "1" if times == 1 else "every",
            "outcome": outcome,
            "requests": str(len(entries)),
            "api_call": f"{call.error_class or '-'}, {'yes' if call.outcome_unknown else 'no'}, "
            f"{call.attempts}",
            "effect": effect,
            "reconciliation": settled,
        }
    )


# --- what the matrix found ----------------------------------------------------------------------------


@pytest.mark.parametrize("fault", [f for f in FAULTS if f.key in ("drop", "reset")], ids=lambda f: f.key)
def test_reconciliation_reports_a_community_creation_of_unknown_outcome(
    paycollect_in_process: Any, fault: Fault
) -> None:
    paycollect_in_process.control.fault("create_community", fault.kind, **fault.options)
    call = services.create_community(name="Lost Club", logo=Logo("logo.png", PNG))
    assert call == ApiCall.objects.get(operation="create_community")
    assert call.outcome_unknown
    summary = reconciliation.reconcile(older_than=timedelta(0))
    assert len(summary.needs_review) == 1
