"""The metrics under gunicorn with several worker processes and no multiprocess directory: whichever worker
answers a scrape, it reads the same database, so every scrape says what the database holds."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.servers import free_port, served_test_project
from tests.support.payments import CALLBACK_TOKEN

TOKEN = "a-long-random-metrics-token-for-gunicorn"


@dataclass
class Served:
    url: str
    database: Path

    def by_state(self) -> dict[str, float]:
        with sqlite3.connect(self.database) as db:
            rows = db.execute("SELECT state, COUNT(*) FROM paycollect_receivedcallback GROUP BY state")
            return {state: float(count) for state, count in rows}

    def scrape(self) -> dict[str, float]:
        answer = requests.get(
            f"{self.url}/metrics/", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        return {
            sample.labels["state"]: sample.value
            for family in text_string_to_metric_families(answer.text)
            if family.name == "paycollect_callbacks"
            for sample in family.samples
            if sample.value
        }


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The test project in gunicorn, three worker processes, on an SQLite file; the service is a closed port
    (each callback's verification fails at once)."""
    directory = tmp_path_factory.mktemp("gunicorn-metrics")
    closed = f"http://127.0.0.1:{free_port()}"
    settings = {"BASE_URL": closed, "MAX_NETWORK_RETRIES": 0, "TIMEOUT": [1, 1], "METRICS_TOKENS": [TOKEN]}
    with served_test_project(directory, workers=3, paycollect=settings) as url:
        yield Served(url, directory / "site.sqlite3")


def test_every_worker_serves_what_the_database_holds(gunicorn):
    for n in range(4):
        body = {
            "transaction_uuid": f"3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f6{n}",
            "transaction_status": "SUCCESSFUL",
        }
        answer = requests.post(f"{gunicorn.url}/paycollect/callback/{CALLBACK_TOKEN}/", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
    stored = gunicorn.by_state()
    assert sum(stored.values()) == 4
    # Several scrapes, answered by whichever worker is free: each says the same, and what is stored. Each
    # worker reads the database at its first scrape; no worker counts anything of its own.
    scrapes = [gunicorn.scrape() for _ in range(12)]
    assert all(scrape == stored for scrape in scrapes), (stored, scrapes)
