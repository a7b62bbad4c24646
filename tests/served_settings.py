"""Settings of a site served by a real WSGI server in tests (tests/app/test_wsgi_server.py): the test
settings on an SQLite file the test prepares (PAYCOLLECT_SERVED_DB), with the PAYCOLLECT setting it
passes (PAYCOLLECT_SERVED_PAYCOLLECT, JSON). Celery runs eagerly, as in the other app tests."""

import json
import os

from tests.settings import *  # noqa: F403
from tests.settings import PAYCOLLECT

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["PAYCOLLECT_SERVED_DB"]}}
PAYCOLLECT = {**PAYCOLLECT, **json.loads(os.environ.get("PAYCOLLECT_SERVED_PAYCOLLECT") or "{}")}
