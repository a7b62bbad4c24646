"""Settings of the Celery worker processes that tests/worker starts: the test settings, pointed at the test
run's own PostgreSQL database, its sandbox and a real Redis broker (all passed in the environment).
"""

import json
import os

from django_paycollect.schedules import BEAT_SCHEDULE
from tests.settings import *  # noqa: F403
from tests.settings import DATABASES

# The database pytest-django created for this run (test_<name>), not the configured one.
DATABASES["default"]["NAME"] = os.environ["PAYCOLLECT_TEST_DB_NAME"]
# Sessions kept, as docs/deployment.md sets up the web and worker processes: CONN_MAX_AGE, and Celery's
# Django fixup told not to close them around every task (the app's handlers look after them instead).
DATABASES["default"]["CONN_MAX_AGE"] = 60
CELERY_DB_REUSE_MAX = 1000
PAYCOLLECT = json.loads(os.environ["PAYCOLLECT_WORKER_PAYCOLLECT"])

CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_URL = os.environ["PAYCOLLECT_TEST_REDIS"]
CELERY_RESULT_BACKEND = CELERY_BROKER_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = os.environ["PAYCOLLECT_WORKER_QUEUE"]
# A message taken by a worker that dies goes back to the queue after 4 s (the default is an hour), and
# the sweep that puts it back runs every second, so the redelivery tests take seconds.
# PAYCOLLECT_WORKER_VISIBILITY_TIMEOUT=7200 (the example project's) shows what the sweep does without it.
# Every worker takes a lock in Redis around that sweep. A worker killed while holding it (the tests kill
# workers, and on a loaded machine the sweep lasts long enough to be caught) would stop every other
# worker's sweep for the lock's default 5 minutes; here it lapses after 5 s.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("PAYCOLLECT_WORKER_VISIBILITY_TIMEOUT", "4")),
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
    "unacked_mutex_expire": 5,
}
# A worker started with an embedded beat (-B) runs the app's sweep every PAYCOLLECT_WORKER_SWEEP_EVERY
# seconds instead of every minute, so the tests of lost messages take seconds.
_sweep_every = float(os.environ.get("PAYCOLLECT_WORKER_SWEEP_EVERY", "0") or 0)
if _sweep_every:
    CELERY_BEAT_SCHEDULE = {
        "paycollect-sweep-callbacks": {
            **BEAT_SCHEDULE["paycollect-sweep-callbacks"],
            "schedule": _sweep_every,
            "options": {"expires": _sweep_every},
        }
    }
# A web process whose broker is down answers each callback after one quick try (see docs/celery.md).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 1
# What a production setting for this app looks like: late acks by default, one message reserved at a
# time, and a task whose process died put back. The state-changing tasks opt out (acks_late=False).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
