"""The Celery app of the worker processes started by tests/worker (``celery -A tests.worker.celery_app``)."""

import os
import time
from typing import Any

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.worker.settings")

app = Celery("paycollect-worker-tests")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["django_paycollect"])

_slow = float(os.environ.get("PAYCOLLECT_WORKER_SLOW_SUCCESS_SIGNAL", "0") or 0)
if _slow:
    from django_paycollect import signals

    def _slow_receiver(sender: Any, **kwargs: Any) -> None:
        # Holds the task after the status change is committed and before the message is acknowledged,
        # so a test can kill the worker in exactly that window.
        time.sleep(_slow)

    signals.payment_succeeded.connect(_slow_receiver, weak=False)
