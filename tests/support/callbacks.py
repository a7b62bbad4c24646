"""Posting callbacks to the callback view, and waiting for their verification."""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from django_paycollect.models import ReceivedCallback
from django_paycollect.sandbox.envelope import dumps
from tests.support.payments import CALLBACK_TOKEN

live = pytest.mark.django_db(transaction=True)
#: Tests that need on_commit callbacks to run (the task is queued after the commit).
committed = pytest.mark.django_db(transaction=True)

URL = f"/paycollect/callback/{CALLBACK_TOKEN}/"
UUID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"


def body_for(uuid: str = UUID, status: str = "SUCCESSFUL", **extra: Any) -> dict[str, Any]:
    """A callback body as the spec's field table shows it (amounts as JSON numbers)."""
    body: dict[str, Any] = {
        "total_amount_piasters": 10000,
        "total_amount": Decimal("100.00"),
        "transaction_uuid": uuid,
        "transaction_status": status,
        "member_id": None,
        "payment_id": "1",
        "merchant_id": "community-1",
    }
    body.update(extra)
    return body


def post(client: Any, body: Any, url: str = URL, **extra: Any) -> Any:
    data = body if isinstance(body, (str, bytes)) else dumps(body)
    return client.post(url, data=data, content_type="application/json", **extra)


def wait_until(condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll ``condition`` until it is truthy (the live server and the sandbox work in other threads)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def processed_callback(uuid: str, timeout: float = 10.0) -> ReceivedCallback:
    callback = wait_until(
        lambda: ReceivedCallback.objects.filter(
            transaction_uuid=uuid, state=ReceivedCallback.PROCESSED
        ).first(),
        timeout,
    )
    assert callback is not None, list(ReceivedCallback.objects.values("transaction_uuid", "state", "error"))
    return callback
