"""The callback view under a real WSGI server (gunicorn): bodies sent chunked, without a Content-Length
(what some proxies and HTTP clients send), are read up to the size limit, and refused with 413 past it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.servers import free_port, served_test_project
from tests.support.example_site import copy_of_the_test_database
from tests.support.payments import CALLBACK_TOKEN

UUID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"
LIMIT = 65536


@dataclass
class Served:
    url: str
    database: Path

    def rows(self) -> list[dict[str, object]]:
        with sqlite3.connect(self.database) as db:
            db.row_factory = sqlite3.Row
            query = "SELECT * FROM paycollect_receivedcallback ORDER BY id"
            return [dict(row) for row in db.execute(query)]


@pytest.fixture(scope="module")
def gunicorn(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Served]:
    """The test project in gunicorn (two worker processes) on an SQLite file, a copy of the test database;
    the service is a closed port, so each verification fails at once: these tests are about what the view
    reads and stores."""
    directory = tmp_path_factory.mktemp("gunicorn")
    with django_db_blocker.unblock():
        copied = copy_of_the_test_database(directory / "site.sqlite3")
    closed = f"http://127.0.0.1:{free_port()}"
    settings = {"BASE_URL": closed, "MAX_NETWORK_RETRIES": 0, "TIMEOUT": [1, 1]}
    with served_test_project(directory, workers=2, paycollect=settings, migrate=not copied) as url:
        yield Served(url, directory / "site.sqlite3")


def chunked(body: bytes, size: int = 1000) -> Iterator[bytes]:
    """A generator body: requests sends it with Transfer-Encoding: chunked and no Content-Length."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def send(served: Served, body: object) -> requests.Response:
    return requests.post(
        f"{served.url}/paycollect/callback/{CALLBACK_TOKEN}/",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )


def test_a_chunked_callback_is_read_and_stored(gunicorn):
    document = {"transaction_uuid": UUID.upper(), "transaction_status": "SUCCESSFUL", "Notes": "x" * 3000}
    text = json.dumps(document)
    before = len(gunicorn.rows())
    response = send(gunicorn, chunked(text.encode()))
    assert response.request.headers["Transfer-Encoding"] == "chunked"
    assert "Content-Length" not in response.request.headers
    assert response.status_code == 200, response.text
    assert response.json() == {"received": True}
    [row] = gunicorn.rows()[before:]
    assert row["body"] == text
    assert row["transaction_uuid"] == UUID
    assert row["claimed_status"] == "SUCCESSFUL"
    assert json.loads(str(row["headers"]))["user-agent"].startswith("python-requests/")


@pytest.mark.parametrize(("size", "status"), [(LIMIT, 200), (LIMIT + 1, 413), (10 * LIMIT, 413)])
def test_a_chunked_body_is_read_up_to_the_limit(gunicorn, size, status):
    head = json.dumps({"transaction_uuid": UUID, "transaction_status": f"SIZE-{size}", "Notes": ""})[:-2]
    text = head + "y" * (size - len(head) - 2) + '"}'
    assert len(text) == size
    before = len(gunicorn.rows())
    response = send(gunicorn, chunked(text.encode(), size=8192))
    assert response.status_code == status, response.text
    [row] = gunicorn.rows()[before:]
    if status == 200:
        assert row["body"] == text
    else:
        assert row["state"] == "invalid"
        assert row["invalid_reason"] == f"the body is above the limit of {LIMIT} bytes"
        assert str(row["body"]).endswith("… [truncated]")


def test_a_body_with_a_content_length_is_read_as_before(gunicorn):
    response = send(gunicorn, json.dumps({"transaction_uuid": UUID, "transaction_status": "FAILED"}))
    assert "Content-Length" in response.request.headers
    assert response.status_code == 200
    assert gunicorn.rows()[-1]["claimed_status"] == "FAILED"
