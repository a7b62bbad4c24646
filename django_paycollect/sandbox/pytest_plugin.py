"""pytest plugin (entry point ``paycollect_sandbox``): a live sandbox for tests.

Fixtures:

- ``paycollect_sandbox``: a :class:`~django_paycollect.sandbox.testing.Sandbox`, reset before each test:
  ``base_url``, ``community_id``, ``api_key``, ``variable_amount_id``, ``basic_credentials``, ``client`` (a
  configured ``PayCollectClient``), ``control`` (complete, advance_clock, fault, journal, callbacks, ...)
  and ``submit_payment_page``.
- ``paycollect_sandbox_server``: the session's sandbox process (one per test session).
- ``paycollect_callback_receiver``: a merchant callback endpoint on a loopback port.

Loaded in every pytest run where the package is installed, so it imports nothing heavy at import time and
needs neither Django settings nor pytest-django: the sandbox runs in its own process with its own settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import CallbackReceiver, Sandbox, SandboxProcess

_RETRY_DELAYS_INI = "paycollect_sandbox_callback_retry_delays"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        _RETRY_DELAYS_INI,
        "Seconds between callback attempts of the paycollect_sandbox fixture (comma-separated).",
        default="0.2,0.5,1",
    )


@pytest.fixture(scope="session")
def paycollect_sandbox_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SandboxProcess]:
    from .testing import start_sandbox

    try:
        delays = str(request.config.getini(_RETRY_DELAYS_INI))
    except ValueError:  # the fixtures were imported by a conftest instead of loaded as a plugin
        delays = "0.2,0.5,1"
    process = start_sandbox(tmp_path_factory.mktemp("paycollect_sandbox"), callback_retry_delays=delays)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def paycollect_sandbox(paycollect_sandbox_server: SandboxProcess) -> Iterator[Sandbox]:
    from .testing import Sandbox, SandboxError

    if paycollect_sandbox_server.process.poll() is not None:
        raise SandboxError(f"the sandbox process has exited:\n{paycollect_sandbox_server.log_tail()}")
    sandbox = Sandbox.from_identity(paycollect_sandbox_server.info)
    # Each test starts from the seed: same credentials, no transactions, clock at real time, no faults.
    sandbox.control.reset()
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.fixture
def paycollect_callback_receiver() -> Iterator[CallbackReceiver]:
    from .testing import CallbackReceiver

    receiver = CallbackReceiver()
    try:
        yield receiver
    finally:
        receiver.close()
