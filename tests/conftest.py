"""Fixtures shared by the app's tests: the app configured against the sandbox, in one of two tiers, and
ready-made payments.

- ``paycollect_in_process`` (the middle tier): the sandbox mounted in the test project and served in the
  test's own thread, every ``requests`` session of the process reaching it without a socket
  (tests/support/in_process.py). For the tests that need "the service answered X": the admin, the REST API,
  tasks, services, reconciliation, the fault matrix.
- ``paycollect_live`` (the end-to-end tier): the standalone runner in its own process (the
  ``paycollect_sandbox`` fixture of our pytest plugin), reached over real HTTP, its callbacks sent by its own
  thread. For what a socket, a second process or a callback on its own schedule changes.

``pay``, ``paid_transaction`` and ``recurring_transaction`` use the tier the test asked for (the live one when
it named neither). Tests that change state through the service layer need ``transactional_db``: the service
layer refuses to call the service inside ``transaction.atomic``. Helpers are in tests/support/, never
imported from here.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.handlers.base import BaseHandler
from django.db import connection, connections

from django_paycollect import services, signals
from django_paycollect.models import RecurringSeries, Transaction
from django_paycollect.sandbox import fastpath, seed
from django_paycollect.sandbox.testing import Sandbox
from tests import (
    celery_app,  # noqa: F401  (configures the Celery app the tasks use)
    hypothesis_profiles,  # noqa: F401  (loads PAYCOLLECT_HYPOTHESIS_PROFILE)
)
from tests.support import example_site, flush, in_process
from tests.support.payments import BILLING, CALLBACK_TOKEN, complete

flush.install()


#: Fixtures of pytest-django that open the test database.
DATABASE_FIXTURES = {
    "_django_db_helper",
    "db",
    "transactional_db",
    "live_server",
    "django_db_reset_sequences",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        # Every property test: what make test-fuzz runs with the full hypothesis profile.
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.fuzz)
        # What make test-postgres runs: the rest runs the same code whatever the test database is.
        uses = item.get_closest_marker("django_db") or item.get_closest_marker("postgres")
        if uses or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.database)
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="row locks need PostgreSQL: run make test-postgres")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


def _point_at(sb: Sandbox, settings: Any) -> None:
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


@pytest.fixture
def paycollect_live(paycollect_sandbox: Any, settings: Any) -> Any:
    """End-to-end tier: PAYCOLLECT pointed at the live sandbox process; yields the sandbox (``client``,
    ``control``, credentials)."""
    _point_at(paycollect_sandbox, settings)
    return paycollect_sandbox


@pytest.fixture
def paycollect_in_process(
    transactional_db: None, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[in_process.InProcessSandbox]:
    """Middle tier: PAYCOLLECT pointed at the sandbox served in this thread, freshly seeded on the test
    database; yields its handle (``client``, ``control``, credentials, ``deliver_callbacks()``).

    On ``transactional_db``, as every test that changes state through the service layer must be: the sandbox
    writes on the test's own connection, and the service layer refuses to call it inside an atomic block."""
    settings.PAYCOLLECT_SANDBOX = in_process.SANDBOX_SETTINGS
    with in_process.serving(monkeypatch):
        # Caches of the process's sandbox that outlive a test database.
        fastpath.forget_communities()
        fastpath.forget_faults()
        sb = in_process.InProcessSandbox.from_identity(seed.seed(None, f"{in_process.BASE}/sandbox"))
        _point_at(sb, settings)
        try:
            yield sb
        finally:
            sb.close()
            fastpath.forget_communities()
            fastpath.forget_faults()


@pytest.fixture
def paycollect_service(request: pytest.FixtureRequest) -> Sandbox:
    """The sandbox of the test's tier: in-process when the test uses ``paycollect_in_process``, else live."""
    names = request.fixturenames
    if "paycollect_in_process" in names and "paycollect_live" in names:
        raise pytest.UsageError(f"{request.node.nodeid}: one tier per test, paycollect_in_process or _live")
    tier = "paycollect_in_process" if "paycollect_in_process" in names else "paycollect_live"
    served: Sandbox = request.getfixturevalue(tier)
    return served


@pytest.fixture
def pay(paycollect_service: Any) -> Any:
    """Start a payment through the service layer: ``pay(amount="100.00", **options)`` -> Transaction."""

    def start(amount: str = "100.00", **options: Any) -> Transaction:
        options.setdefault("billing_data", BILLING)
        return services.start_payment(amount=Decimal(amount), **options)

    return start


@pytest.fixture
def paid_transaction(transactional_db: None, paycollect_service: Any, pay: Any) -> Transaction:
    """A 100.00 EGP transaction, paid at the sandbox and synced: SUCCESSFUL."""
    return complete(paycollect_service, pay("100.00", merchant_reference="order-paid"))


@pytest.fixture
def recurring_transaction(transactional_db: None, paycollect_service: Any, pay: Any) -> Transaction:
    """A paid monthly recurring payment whose RecurringSeries exists."""
    txn = pay(
        "50.00",
        merchant_reference="membership-1",
        recurring={
            "expiry_date": dt.date.today() + dt.timedelta(days=365),
            "minimum_days_between_payments": 30,
        },
    )
    txn = complete(paycollect_service, txn)
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

    def count_once_sent(self, name: str, expected: int, timeout: float = 10.0) -> int:
        """The count of ``name`` once it reached ``expected`` (or the time ran out). A verifying thread marks
        its callback processed in the transaction that applies the status, and sends the signals just after
        that commit: a test that saw the row processed may look a moment before they are sent."""
        deadline = time.monotonic() + timeout
        while self.count(name) < expected and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.count(name)


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


@pytest.fixture(scope="session")
def example_migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project's database migrated once per test run: copy it, never open it
    (tests/support/example_site.py)."""
    return example_site.migrated_database(tmp_path_factory)
