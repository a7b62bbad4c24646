"""Settings of the benchmarks: the test suite's settings on a SQLite file (``PAYCOLLECT_BENCH_DB``), or on
the test settings' PostgreSQL when ``PAYCOLLECT_BENCH_ON_POSTGRES`` is set (``admin_dashboard.py`` does).

A file, not ``:memory:``: commits, page cache and index maintenance cost what they cost in a real
deployment on SQLite (rollback journal, ``synchronous=FULL``, Django's defaults). Connections are
persistent (``CONN_MAX_AGE=None``), as a tuned deployment runs them, so that opening a connection per
request does not hide the cost of the code measured.
"""

import os

from tests.settings import *  # noqa: F403

if os.environ.get("PAYCOLLECT_BENCH_ON_POSTGRES"):
    # admin_dashboard.py: the test settings' PostgreSQL (PAYCOLLECT_TEST_POSTGRES, pointed at its database).
    DATABASES["default"]["CONN_MAX_AGE"] = None  # noqa: F405
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("PAYCOLLECT_BENCH_DB", "bench.sqlite3"),
            "CONN_MAX_AGE": None,
        }
    }
ROOT_URLCONF = "benchmarks._support.urls"
DEBUG = False
# Superusers are logged in with force_login; no password is ever hashed for real.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
