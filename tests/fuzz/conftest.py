"""Fixtures of the fuzz tests: a service address where nothing listens, and a fresh cache."""

from __future__ import annotations

import socket

import pytest
from django.core.cache import cache


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
