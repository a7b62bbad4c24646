"""The bare pipeline's worker side, through Django's public API: one Celery task per callback.

``urls.bare_orm`` stores a callback with ``BareCallback.objects.create`` and publishes
``bare_verify.delay(pk, uuid)`` after the commit; this task (a Celery worker of its own on the queue
``paycollect-bench-orm``, as many processes as the app's worker) fetches the transaction from the service,
stores the envelope and the status as ``orm_work.Fetcher.store`` does, and marks the stored callback
processed with ``QuerySet.update``. The same work as the app's verification, written as a developer without
the app would write it.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

QUEUE = "paycollect-bench-orm"
_fetchers: list[Any] = []


@shared_task(name="paycollect_bench.bare_verify", acks_late=True)
def bare_verify(pk: int, uuid: str) -> None:
    from django.conf import settings
    from django.utils import timezone

    from .bare import BareCallback
    from .orm_work import Fetcher

    if not _fetchers:
        config = settings.PAYCOLLECT
        _fetchers.append(Fetcher(config["BASE_URL"], str(config["COMMUNITY_ID"]), config["API_KEY"]))
    _fetchers[0].fetch_and_store(uuid)
    BareCallback.objects.filter(pk=pk).update(state="processed", processed_at=timezone.now())
