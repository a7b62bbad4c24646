"""The sandbox's own tests use the fixtures its pytest plugin gives users, and the sandbox mounted in this
project.

The plugin arrives through the ``pytest11`` entry point of an installed package (``make install``). In a
checkout that is not installed, the fixtures are imported here instead; never both, or the session would
start two sandboxes.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from django_paycollect.sandbox import callbacks, seed
from django_paycollect.sandbox.testing import Sandbox

_PLUGIN = "django_paycollect.sandbox.pytest_plugin"

if not any(entry.value == _PLUGIN for entry in entry_points(group="pytest11")):
    from django_paycollect.sandbox.pytest_plugin import (  # noqa: F401  (fixtures)
        paycollect_callback_receiver,
        paycollect_sandbox,
        paycollect_sandbox_server,
    )


@pytest.fixture
def mounted_sandbox(live_server: Any, settings: Settings) -> Iterator[Sandbox]:
    """The sandbox mounted in this project (tests/sandbox/urls.py), on the test database, served over real
    HTTP by pytest-django's live server: its row locks are the project's database's, PostgreSQL in
    ``make test-postgres``. Its control API is on, and its callbacks go out from a thread of this process,
    stopped at the end so it never outlives the test database."""
    settings.ROOT_URLCONF = "tests.sandbox.urls"
    settings.PAYCOLLECT_SANDBOX = {"CONTROL_API": True, "CALLBACK_RETRY_DELAYS": [0.2, 0.5, 1.0]}
    sandbox = Sandbox.from_identity(seed.seed(None, f"{live_server.url}/sandbox"))
    try:
        yield sandbox
    finally:
        sandbox.close()
        callbacks.stop_worker()


#: The mounted sandbox needs committed rows (its server and callback threads have their own connections).
_MOUNTED_MARKS = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=["standalone", pytest.param("mounted", marks=_MOUNTED_MARKS)])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    """The standalone runner (its own process and SQLite file), then, on PostgreSQL, the sandbox mounted in
    this project: the same test drives both."""
    fixture = "paycollect_sandbox" if request.param == "standalone" else "mounted_sandbox"
    served: Sandbox = request.getfixturevalue(fixture)
    return served
