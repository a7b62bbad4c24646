"""Settings of the processes that tests/worker/test_db_worker.py starts (gunicorn, ``manage.py db_worker``,
the sweep's command): the test settings with the Django runner on django-tasks-db (no Celery app, no broker),
on the database the test names in PAYCOLLECT_TASKS_DB (an SQLite file's absolute path, or PostgreSQL's
``host:port:dbname:user``), with the PAYCOLLECT the test passes (PAYCOLLECT_TASKS_PAYCOLLECT, JSON).
"""

import json
import os

from tests.settings import *  # noqa: F403
from tests.settings import PAYCOLLECT

_database = os.environ["PAYCOLLECT_TASKS_DB"]
if _database.startswith("/"):
    # WAL: readers (the web process, a second worker) never wait for the writer; a writer waits up to 30 s.
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _database,
            "OPTIONS": {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;"},
        }
    }
else:
    _host, _port, _name, _user = _database.split(":")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": _host,
            "PORT": _port,
            "NAME": _name,
            "USER": _user,
            "CONN_MAX_AGE": 60,
        }
    }

TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
PAYCOLLECT = {
    **PAYCOLLECT,
    **json.loads(os.environ.get("PAYCOLLECT_TASKS_PAYCOLLECT") or "{}"),
    "TASK_RUNNER": "django",
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_paycollect": {"handlers": ["console"], "level": "INFO"}},
}
