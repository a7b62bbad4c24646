"""The OpenAPI schema (drf-spectacular, the ``api`` extra): it validates for the example project with no
warning, documents every endpoint with its error answers, and the API works the same without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("drf_spectacular", reason="the api extra is not installed")

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"


def test_the_example_projects_schema_validates_without_a_warning(tmp_path: Path) -> None:
    import yaml

    schema = tmp_path / "schema.yaml"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "clubsite.settings",
        "CLUBSITE_DB": str(tmp_path / "db.sqlite3"),
    }
    done = subprocess.run(  # noqa: S603 (our own manage.py)
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(schema)],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    document = yaml.safe_load(schema.read_text())
    operations = {
        (path, method): operation
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }
    assert set(operations) == {
        ("/api/quotes/", "post"),
        ("/api/promocodes/validate/", "post"),
        ("/api/payments/", "get"),
        ("/api/payments/", "post"),
        ("/api/payments/{uuid}/", "get"),
        ("/api/payments/{uuid}/refunds/", "post"),
        ("/api/payments/{uuid}/capture/", "post"),
        ("/api/series/{id}/cancel/", "post"),
        ("/api/direct-orders/", "post"),
        ("/api/direct-orders/{id}/", "get"),
    }
    start = operations[("/api/payments/", "post")]
    assert {"200", "201", "202", "400", "409", "429", "503"} <= set(start["responses"])
    assert start["requestBody"]["content"]["application/json"]["examples"]
    refund = operations[("/api/payments/{uuid}/refunds/", "post")]
    assert {"201", "202", "400", "403", "404", "409", "503"} <= set(refund["responses"])
    # The public view of a payment: its fields, and no secret or internal one.
    payment = document["components"]["schemas"]["Payment"]["properties"]
    assert {"uuid", "status", "state", "amount", "currency", "iframe_url", "bill_reference"} <= set(payment)
    assert not {"raw", "service_id", "owner", "customer_phone", "last_error"} & set(payment)
