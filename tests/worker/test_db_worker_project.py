"""Issue 34's acceptance: a new project (``django-admin startproject``) with no Celery app and no broker, only
``django_tasks_db`` in INSTALLED_APPS, ``TASKS`` on its ``DatabaseBackend`` and ``TASK_RUNNER`` "django",
passes ``check``, stores a callback without verifying it in the request, and one ``manage.py db_worker
--batch`` verifies it against the standalone sandbox: the payment SUCCESSFUL, the callback processed.

On the Django of the interpreter running the tests: Django 6.x's own ``django.tasks``, or on Django 5.2 the
``django-tasks`` backport (the "tasks" extra brings both).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import django
import pytest
import requests

from django_paycollect.sandbox.envelope import dumps
from tests.servers import gunicorn_serving
from tests.support.payments import BILLING

pytest.importorskip("django_tasks_db", reason='needs the "tasks" extra (django-tasks-db)')

pytestmark = [pytest.mark.worker]

TOKEN = "a-long-random-callback-token-0123456789"


def project_settings(sb: Any) -> str:
    return f"""

INSTALLED_APPS += ["django_tasks_db", "django_paycollect"]
TASKS = {{"default": {{"BACKEND": "django_tasks_db.DatabaseBackend"}}}}
PAYCOLLECT = {{
    "BASE_URL": {sb.base_url!r},
    "COMMUNITY_ID": {sb.community_id!r},
    "API_KEY": {sb.api_key!r},
    "VARIABLE_AMOUNT_ID": {sb.variable_amount_id!r},
    "CALLBACK_TOKENS": [{TOKEN!r}],
    "TASK_RUNNER": "django",
}}
"""


URLS = """from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("payments/", include("django_paycollect.urls")),
]
"""


def test_a_new_project_on_django_tasks_alone_verifies_a_callback_with_one_db_worker_batch(
    paycollect_sandbox, tmp_path: Path
):
    sb = paycollect_sandbox
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PAYCOLLECT_", "PYTHONPATH"))},
        "PYTHONPATH": str(tmp_path),
    }

    def manage(*args: str) -> str:
        done = subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, (
            f"manage.py {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        )
        return done.stdout + done.stderr

    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "shop", "."], cwd=tmp_path, env=env, check=True
    )
    with (tmp_path / "shop" / "settings.py").open("a") as settings:
        settings.write(project_settings(sb))
    (tmp_path / "shop" / "urls.py").write_text(URLS)
    assert not (tmp_path / "shop" / "celery.py").exists()

    checked = manage("check", "--database", "default")
    assert "System check identified no issues" in checked, checked
    manage("migrate", "--noinput", "-v", "0")

    # A payment made at the service: the project learns of it from its callback.
    started = sb.client.pay(
        community_id=sb.community_id,
        amount=Decimal("90.00"),
        original_amount=Decimal("90.00"),
        variable_amount_id=sb.variable_amount_id,
        billing_data=BILLING,
    )
    uuid = started.result.transaction_uuid
    sb.control.complete(uuid, "SUCCESSFUL")

    database = tmp_path / "db.sqlite3"

    def query(sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(database) as db:
            return db.execute(sql).fetchall()

    with gunicorn_serving(
        "shop.wsgi:application",
        "-w",
        "1",
        cwd=tmp_path,
        env=env,
        log=tmp_path / "gunicorn.log",
        probe="/payments/return/status/",
    ) as url:
        body = dumps({"transaction_uuid": uuid, "transaction_status": "SUCCESSFUL"})
        answer = requests.post(
            f"{url}/payments/callback/{TOKEN}/",
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
    # Stored, and its task with it; not verified in the request.
    assert query("SELECT state FROM paycollect_receivedcallback") == [("queued",)]
    assert query("SELECT count(*) FROM paycollect_transaction") == [(0,)]
    assert query("SELECT task_path, status FROM django_tasks_database_dbtaskresult") == [
        ("django_paycollect.tasks.on_django.process_callbacks", "READY")
    ]

    manage("db_worker", "--batch", "--no-startup-delay")

    assert query("SELECT state FROM paycollect_receivedcallback") == [("processed",)]
    assert query("SELECT uuid, status FROM paycollect_transaction") == [(uuid, "SUCCESSFUL")]
    assert query("SELECT status FROM django_tasks_database_dbtaskresult") == [("SUCCESSFUL",)]
    print(f"\nDjango {django.get_version()}: a new project verified its callback with one db_worker --batch")
