"""Databases migrated once and copied by the tests that run a site in a process of its own.

The tests that start the example project (its REST API against its schema, memberships, ``demo_setup``,
gunicorn, the browser suite) each ran ``manage.py migrate`` on a new SQLite file: four seconds of a core per
site. The result is the same file every time, so the first of them migrates it under a lock in the run's
temporary root (shared by the pytest-xdist workers) and every site starts from a copy: its own file, as
before, migrated by the project's own ``migrate`` with its own settings, only once. A site of the test
project itself (tests/served_settings.py) starts from a copy of the test database.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.example_project import run_example

_NAME = "example-project-migrated.sqlite3"


def migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The migrated database of this test run (made by the first caller of any worker)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' common directory
    template = root / _NAME
    with (root / f"{_NAME}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            building = root / f"{_NAME}.{os.getpid()}"
            done = run_example(
                "example_project/manage.py", "migrate", "--noinput", "-v", "0", CLUBSITE_DB=str(building)
            )
            assert done.returncode == 0, done.stdout + done.stderr
            building.rename(template)
    return template


def copy_of(template: Path, database: Path) -> Path:
    """A migrated database of the site's own at ``database`` (nothing else of it may be left there)."""
    for stale in database.parent.glob(f"{database.name}*"):
        stale.unlink()
    return Path(shutil.copyfile(template, database))


def copy_of_the_test_database(database: Path) -> bool:
    """The test database, migrated by pytest-django and emptied between tests, copied to an SQLite file at
    ``database``: what ``manage.py migrate`` makes of the test project, without running it again. False when
    there is none, or it is not SQLite (then migrate)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        return False
    connection.ensure_connection()
    if "django_migrations" not in connection.introspection.table_names():
        return False  # no test of this run uses the test database: pytest-django made none
    target = sqlite3.connect(database)
    try:
        connection.connection.backup(target)
    finally:
        target.close()
    return True
