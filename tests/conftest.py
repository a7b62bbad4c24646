"""Fixtures shared by the app's tests: the app configured against a live sandbox, and ready-made payments.

The sandbox runs in its own process (the ``paycollect_sandbox`` fixture of our pytest plugin) and is
reached over real HTTP. Tests that change state through the service layer need ``transactional_db``:
the service layer refuses to call the service inside ``transaction.atomic``. Helpers are in tests/support/,
never imported from here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.core.handlers.base import BaseHandler
from django.db import connection, connections

from django_paycollect import services, signals
from django_paycollect.models import RecurringSeries, Transaction
from tests import (
    celery_app,  # noqa: F401  (configures the Celery app the tasks use)
    hypothesis_profiles,  # noqa: F401  (loads PAYCOLLECT_HYPOTHESIS_PROFILE)
)
from tests.support import flush
from tests.support.payments import BILLING, CALLBACK_TOKEN, complete

flush.install()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="row locks need PostgreSQL: run make test-postgres")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def paycollect_live(paycollect_sandbox: Any, settings: Any) -> Any:
    """PAYCOLLECT pointed at the live sandbox; yields the sandbox (``client``, ``control``, credentials)."""
    sb = paycollect_sandbox
    settings.PAYCOLLECT = {
        "BASE_URL": sb.base_url,
        "COMMUNITY_ID": sb.community_id,
        "API_KEY": sb.api_key,
        "BASIC_CREDENTIALS": sb.basic_credentials,
        "VARIABLE_AMOUNT_ID": sb.variable_amount_id,
        "CALLBACK_TOKENS": [CALLBACK_TOKEN],
        "TIMEOUT": (2.0, 10.0),
        "MAX_NETWORK_RETRIES": 1,
    }
    return sb


@pytest.fixture
def pay(paycollect_live: Any) -> Any:
    """Start a payment through the service layer: ``pay(amount="100.00", **options)`` -> Transaction."""

    def start(amount: str = "100.00", **options: Any) -> Transaction:
        options.setdefault("billing_data", BILLING)
        return services.start_payment(amount=Decimal(amount), **options)

    return start


@pytest.fixture
def paid_transaction(transactional_db: None, paycollect_live: Any, pay: Any) -> Transaction:
    """A 100.00 EGP transaction, paid at the sandbox and synced: SUCCESSFUL."""
    return complete(paycollect_live, pay("100.00", merchant_reference="order-paid"))


@pytest.fixture
def recurring_transaction(transactional_db: None, paycollect_live: Any, pay: Any) -> Transaction:
    """A paid monthly recurring payment whose RecurringSeries exists."""
    txn = pay(
        "50.00",
        merchant_reference="membership-1",
        recurring={
            "expiry_date": dt.date.today() + dt.timedelta(days=365),
            "minimum_days_between_payments": 30,
        },
    )
    txn = complete(paycollect_live, txn)
    assert RecurringSeries.objects.filter(parent_uuid=txn.uuid).exists()
    return txn


class SignalLog:
    """Every paycollect signal sent during a test, in order, as (name, kwargs)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.sent]

    def count(self, name: str) -> int:
        return self.names().count(name)


@pytest.fixture
def signal_log() -> Iterator[SignalLog]:
    log = SignalLog()
    receivers = []
    for name, signal in signals.ALL_SIGNALS.items():

        def receiver(sender: Any, _name: str = name, **kwargs: Any) -> None:
            kwargs.pop("signal", None)
            log.sent.append((_name, kwargs))

        signal.connect(receiver, weak=False)
        receivers.append((signal, receiver))
    yield log
    for signal, receiver in receivers:
        signal.disconnect(receiver)


@pytest.fixture
def atomic_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """ATOMIC_REQUESTS on, as many merchants run: every view not marked non-atomic runs in atomic."""
    monkeypatch.setitem(connections.settings["default"], "ATOMIC_REQUESTS", True)

    def view(request: Any) -> None:
        return None

    # The switch works: an unmarked view would now be wrapped in atomic.
    assert BaseHandler().make_view_atomic(view) is not view
