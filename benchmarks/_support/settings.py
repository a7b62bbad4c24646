"""Settings of the benchmarks: the test suite's settings on a SQLite file (``PAYCOLLECT_BENCH_DB``), or on
the PostgreSQL database a benchmark made when ``PAYCOLLECT_BENCH_ON_POSTGRES`` is set
(``_support.setup_django_on_postgres``).

A file, not ``:memory:``: commits, page cache and index maintenance cost what they cost in a real
deployment on SQLite (rollback journal, ``synchronous=FULL``, Django's defaults). Connections are
persistent (``CONN_MAX_AGE=None``), as a tuned deployment runs them, so that opening a connection per
request does not hide the cost of the code measured.

With ``PAYCOLLECT_BENCH_BROKER`` (a broker URL), the processes ``callback_intake_gunicorn.py`` starts
(gunicorn, a Celery worker) run as a production site does: tasks go to that broker, with the settings
``docs/celery.md`` and ``docs/deployment.md`` recommend, and ``PAYCOLLECT_BENCH_PAYCOLLECT`` (JSON) is merged
into ``PAYCOLLECT``.

With ``PAYCOLLECT_BENCH_PROJECT=receivers``, the project that listens to saves (``receivers.py``): a global
``post_save`` receiver and django-simple-history registered on ``Transaction``.
"""

import json
import os

from tests.settings import *  # noqa: F403
from tests.settings import PAYCOLLECT

if os.environ.get("PAYCOLLECT_BENCH_ON_POSTGRES"):
    # The test settings' PostgreSQL (PAYCOLLECT_TEST_POSTGRES, pointed at the benchmark's database).
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
if os.environ.get("PAYCOLLECT_BENCH_PROJECT", "plain") == "receivers":
    INSTALLED_APPS = [
        *INSTALLED_APPS,  # noqa: F405
        "simple_history",
        "benchmarks._support.receivers.ReceiversConfig",
    ]
DEBUG = False
# Superusers are logged in with force_login; no password is ever hashed for real.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if os.environ.get("PAYCOLLECT_BENCH_BROKER"):
    CELERY_TASK_ALWAYS_EAGER = False
    CELERY_BROKER_URL = os.environ["PAYCOLLECT_BENCH_BROKER"]
    CELERY_TASK_DEFAULT_QUEUE = "paycollect-bench"
    CELERY_TASK_ACKS_LATE = True
    CELERY_TASK_REJECT_ON_WORKER_LOST = True
    CELERY_WORKER_PREFETCH_MULTIPLIER = 1
    # The worker keeps its database session from task to task, as docs/deployment.md sets it up.
    CELERY_DB_REUSE_MAX = 1000
    CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
    # The bare pipeline's task (``bare_tasks``), on a queue of its own.
    CELERY_IMPORTS = ["benchmarks._support.bare_tasks"]
    CELERY_TASK_ROUTES = {"paycollect_bench.bare_verify": {"queue": "paycollect-bench-orm"}}
    PAYCOLLECT = {**PAYCOLLECT, **json.loads(os.environ.get("PAYCOLLECT_BENCH_PAYCOLLECT") or "{}")}

if os.environ.get("PAYCOLLECT_BENCH_TASKS") == "db":
    # task_runners.py: Django's task framework on the benchmark's database (django-tasks-db), for the
    # processes whose PAYCOLLECT (above) says TASK_RUNNER "django"; the others keep Celery.
    if "django_tasks_db" not in INSTALLED_APPS:
        INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks_db"]
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
