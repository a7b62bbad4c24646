"""The same work as the app's, through Django's public API: the baselines the headlines' targets compare with.

What a developer writing this integration without the app would write: fetch the transaction from the
service with ``requests``, then, in one ``transaction.atomic()`` on the default database, the envelope row
(``ApiCall.objects.create``) and the fetched status on the transaction (``select_for_update().get()`` then
``save(update_fields=...)``, so the project's save receivers hear it as they hear the app's). No status
machine, no checks of the envelope, no secrets scrubbed, no claim of the right to fetch: the floor of doing
this through the ORM. Used by the bare pipeline's task (``bare_tasks``) and by ``reconcile_fetch.py``'s ORM
loop.
"""

from __future__ import annotations

import time
from typing import Any


class Fetcher:
    """One ``requests.Session`` against the service's fetch-transaction endpoint."""

    def __init__(self, base_url: str, community: str, api_key: str) -> None:
        import requests

        self.community = community
        self.path = f"/api/v1/communities/{community}/transactions/"
        self.base = base_url.rstrip("/") + self.path
        self.headers = {"x-api-key": api_key, "Accept": "application/json"}
        self.session = requests.Session()

    def fetch(self, uuid: str) -> tuple[int, dict[str, Any], int]:
        """The answer's HTTP status, its JSON, and the milliseconds it took."""
        started = time.perf_counter()
        response = self.session.get(f"{self.base}{uuid}/", headers=self.headers, timeout=30)
        duration = round((time.perf_counter() - started) * 1000)
        answer = response.json()
        if response.status_code != 200 or (answer.get("data") or {}).get("uuid") != uuid:
            raise SystemExit(f"fetch of {uuid}: {response.status_code} {response.text[:200]}")
        return response.status_code, answer, duration

    def store(self, uuid: str, http_status: int, answer: dict[str, Any], duration: int) -> None:
        """The envelope row and the fetched status, committed together, through the ORM."""
        from django.db import transaction
        from django.utils import timezone

        from django_paycollect.models import ApiCall, Transaction

        data, status = answer["data"], answer.get("status") or {}
        with transaction.atomic():
            txn = Transaction.objects.select_for_update().get(uuid=uuid)
            ApiCall.objects.create(
                operation="get_transaction",
                community_id=self.community,
                method="GET",
                path=f"{self.path}{uuid}/",
                http_status=http_status,
                code=status.get("code"),
                message=status.get("message") or "",
                data=data,
                duration_ms=duration,
                attempts=1,
                transaction=txn,
            )
            txn.status = txn.service_status = data["status"]
            txn.raw = data
            txn.last_synced_at = timezone.now()
            txn.save(update_fields=["status", "service_status", "raw", "last_synced_at", "updated_at"])

    def fetch_and_store(self, uuid: str) -> None:
        self.store(uuid, *self.fetch(uuid))
