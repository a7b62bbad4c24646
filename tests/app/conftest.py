"""Fixtures of the app's callback tests."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from django_paycollect import tasks
from tests.support.callbacks import URL


@pytest.fixture
def callbacks_to_us(paycollect_live: Any, live_server: Any) -> str:
    """The sandbox's API payment sends its callbacks to our callback view on the live server."""
    url = f"{live_server.url}{URL}"
    paycollect_live.control.configure_api_payment(paycollect_live.variable_amount_id, callback_url=url)
    return url


@pytest.fixture
def no_worker() -> Any:
    """Callbacks are stored and queued, but no task runs (what the ingest alone does)."""
    with mock.patch.object(tasks.process_callbacks, "apply_async") as publish:
        yield publish


@pytest.fixture
def secret_configured(settings: Any) -> str:
    secret = "echoed-secret-value-0123456789"
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "CALLBACK_SECRET_FIELD": "paycollect secret",
        "CALLBACK_SECRET": ["a-new-secret-not-yet-in-use-000", secret],
    }
    return secret
