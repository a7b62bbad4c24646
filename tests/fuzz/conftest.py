"""Fixtures of the fuzz tests: a service address where nothing listens, and a fresh cache. Every test here is
marked ``fuzz`` (make test-fuzz runs them with every example): their ``@given`` is inside the test."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from django.core.cache import cache

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.fuzz)


@pytest.fixture
def closed_base_url() -> str:
    """``http://127.0.0.1:<port>`` where nothing listens: every call to the service is refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    cache.clear()  # the fetch throttle of returns and redeliveries lives in the cache
