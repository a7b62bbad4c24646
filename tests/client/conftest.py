"""Fixtures of the client tests: a client that never sleeps, and a responses mock.

Builders of response bodies and the table of the ten operations are in ``support.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import responses

from django_paycollect.client import PayCollectClient

from .support import envelope as build_envelope
from .support import make_client


@pytest.fixture
def sleeps() -> list[float]:
    """What the client asked to sleep; it never really sleeps in these tests."""
    return []


@pytest.fixture
def client(sleeps: list[float]) -> Iterator[PayCollectClient]:
    """A client with the API key and the basic credentials, retries on, ``_sleep`` recorded."""
    made, _ = make_client()
    made._sleep = sleeps.append
    with made:
        yield made


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    """Every HTTP request of the test goes to this mock; an unregistered URL fails the call."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def envelope() -> Callable[..., dict[str, Any]]:
    """The envelope builder, for tests that prefer a fixture to an import."""
    return build_envelope
