"""The club site's Celery app, configured from the CELERY_* Django settings.

Without ``CELERY_BROKER_URL`` the settings make every task run inline (eager): the demo needs no broker
and no worker. With a broker, start workers and beat as the docs' deployment page shows::

    celery -A clubsite worker -l info
    celery -A clubsite beat -l info
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clubsite.settings")

app = Celery("clubsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
