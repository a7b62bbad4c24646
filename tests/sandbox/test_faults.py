"""Injected faults, seen through the typed client: what a client sees, and whether the work was done.

Each test runs twice: against the standalone sandbox over a real socket, and against the sandbox served in
the test's process (the middle tier, tests/support/in_process.py), which emulates what a socket does (a reset,
an answer dropped after the work, a read timeout). The client must see the same in both: the in-process tier
is only as honest as this module proves it."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from django_paycollect.client import (
    OutcomeUnknownError,
    PayCollectClient,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
)
from django_paycollect.sandbox.testing import Sandbox

from .support import BILLING


@pytest.fixture(params=["live", pytest.param("in-process", marks=pytest.mark.django_db(transaction=True))])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    served: Sandbox = request.getfixturevalue(
        "paycollect_sandbox" if request.param == "live" else "paycollect_in_process"
    )
    return served


def _pay(client: PayCollectClient, sandbox: Sandbox) -> str:
    started = client.pay(
        community_id=sandbox.community_id,
        amount=Decimal("20.00"),
        original_amount=Decimal("20.00"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
    )
    return started.result.transaction_uuid or ""


def _transactions(sandbox: Sandbox) -> int:
    figures = sandbox.client.dashboard_statistics(community_id=sandbox.community_id).result
    return figures.total_number_of_transactions or 0


def _fetch(sandbox: Sandbox, client: PayCollectClient, tx_uuid: str) -> str | None:
    return client.get_transaction(community_id=sandbox.community_id, transaction_uuid=tx_uuid).result.status


def test_reset_before_the_work_leaves_no_transaction(sandbox: Sandbox) -> None:
    sandbox.control.fault("pay", "reset")
    with pytest.raises(OutcomeUnknownError):
        _pay(sandbox.client, sandbox)
    assert _transactions(sandbox) == 0
    (entry,) = sandbox.control.journal("pay")
    assert entry["fault"] == "reset"
    assert entry["response_status"] is not None
    # Injected once: the next payment goes through on a fresh connection.
    assert _pay(sandbox.client, sandbox)
    assert _transactions(sandbox) == 1


def test_drop_after_the_work_leaves_the_outcome_unknown_but_the_work_done(
    sandbox: Sandbox,
) -> None:
    sandbox.control.fault("pay", "drop_after")
    with pytest.raises(OutcomeUnknownError) as raised:
        _pay(sandbox.client, sandbox)
    assert raised.value.outcome_unknown is True
    assert _transactions(sandbox) == 1  # the payment exists although the client never heard of it


def test_reads_are_retried_through_resets_and_5xx(sandbox: Sandbox) -> None:
    tx = _pay(sandbox.client, sandbox)
    sandbox.control.fault("fetch_transaction", "reset")
    sandbox.control.fault("fetch_transaction", "status", status=502)
    client = sandbox.make_client(max_network_retries=2, backoff_base=0.01)
    assert _fetch(sandbox, client, tx) == "PENDING"
    faults_seen = [e["fault"] for e in sandbox.control.journal("fetch_transaction")]
    assert faults_seen == ["reset", "status", ""]


def test_a_fault_for_n_requests_then_cleared(sandbox: Sandbox) -> None:
    tx = _pay(sandbox.client, sandbox)
    sandbox.control.fault("fetch_transaction", "status", status=503, times=None)
    assert [(f["operation"], f["times"]) for f in sandbox.control.faults()] == [("fetch_transaction", None)]
    client = sandbox.make_client(max_network_retries=1, backoff_base=0.01)
    with pytest.raises(ServerError) as raised:
        _fetch(sandbox, client, tx)
    assert raised.value.http_status == 503
    assert raised.value.envelope is not None
    assert raised.value.envelope.code == 503
    with pytest.raises(ServerError):
        _fetch(sandbox, client, tx)
    sandbox.control.clear_faults()
    assert _fetch(sandbox, client, tx) == "PENDING"


def test_html_firewall_page_is_not_mistaken_for_a_bad_key(sandbox: Sandbox) -> None:
    sandbox.control.fault("pay", "html", status=403)
    with pytest.raises(UnexpectedResponseError) as raised:
        _pay(sandbox.client, sandbox)
    assert raised.value.http_status == 403
    assert "Access denied" in raised.value.body_excerpt
    assert _transactions(sandbox) == 0  # the firewall answered; the service never saw the request


def test_status_after_the_work(sandbox: Sandbox) -> None:
    tx = _pay(sandbox.client, sandbox)
    sandbox.control.complete(tx)
    sandbox.control.fault("refund", "status", status=500, after_work=True)
    with pytest.raises(ServerError) as raised:
        sandbox.client.refund(transaction_uuid=tx, refund_amount=Decimal("20.00"))
    assert raised.value.outcome_unknown is True
    # The refund did happen: nothing is left to refund.
    with pytest.raises(ValidationError) as again:
        sandbox.client.refund(transaction_uuid=tx, refund_amount=Decimal("0.01"))
    assert "fully refunded" in str(again.value)


def test_latency_beyond_the_read_timeout(sandbox: Sandbox) -> None:
    sandbox.control.fault("pay", "latency", latency_ms=1500)
    impatient = sandbox.make_client(timeout=(3.05, 0.3))
    with pytest.raises(OutcomeUnknownError):
        _pay(impatient, sandbox)
    # The sandbox finishes the work after the client gave up: the payment exists.
    deadline = time.monotonic() + 10
    while not sandbox.control.journal("pay") and time.monotonic() < deadline:
        time.sleep(0.05)
    (entry,) = sandbox.control.journal("pay")
    assert entry["fault"] == "latency"
    assert entry["response_status"] == 200
    assert _transactions(sandbox) == 1


def test_fault_requests_are_validated(sandbox: Sandbox) -> None:
    for bad in (
        {"operation": "teleport", "kind": "reset"},
        {"operation": "pay", "kind": "explode"},
        {"operation": "pay", "kind": "latency"},
        {"operation": "pay", "kind": "status", "status": 99},
        {"operation": "pay", "kind": "reset", "times": 0},
    ):
        response = sandbox.control.session.post(f"{sandbox.base_url}/_control/faults", json=bad, timeout=10)
        assert response.status_code == 400, bad
    assert sandbox.control.faults() == []
