"""The test suite's URLs, plus the baselines of the callback benchmarks (``bare-orm/`` and
``bare-pipeline/<token>/``).

The bare views are what any Django endpoint storing a POSTed body costs: each reads the body and inserts it,
with the client address, into a table of the same shape as ``ReceivedCallback`` (same columns and
indexes, see ``bare.py``), through the same handler, middleware and URL resolver, and hands it on to a
worker. They check nothing and deduplicate nothing.

- ``bare-orm/`` (the baseline of the targets: the same work through Django's public API):
  the body's ``transaction_uuid`` read (``json.loads``), ``BareCallback.objects.create`` (the body, the uuid,
  the address), then
  ``bare_tasks.bare_verify.delay(pk, uuid)`` in ``transaction.on_commit``: a Celery message to the broker
  per callback, as a plain Django project publishes its tasks;
- ``bare-pipeline/`` (the hand-written floor, printed for information only): one INSERT built once from the
  model's fields, each value prepared by its field, the new key returned, then the row's id and uuid pushed
  to a Redis list (``LPUSH``, the list ``PAYCOLLECT_BENCH_BARE_QUEUE`` on ``PAYCOLLECT_BENCH_BROKER``) for
  ``bare_worker.py`` to fetch and mark with hand-written SQL.
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from tests.urls import urlpatterns as test_urlpatterns

from .bare import BareCallback

#: Redis list the bare pipeline's view pushes to and its worker pops from.
BARE_QUEUE = os.environ.get("PAYCOLLECT_BENCH_BARE_QUEUE", "paycollect-bench-bare")


@csrf_exempt
def bare_orm(request: HttpRequest, token: str) -> JsonResponse:
    from .bare_tasks import bare_verify

    body = request.body.decode("utf-8")
    uuid = json.loads(body)["transaction_uuid"]
    row = BareCallback.objects.create(
        body=body, transaction_uuid=uuid, remote_addr=request.META.get("REMOTE_ADDR")
    )
    transaction.on_commit(lambda: bare_verify.delay(row.pk, uuid))
    return JsonResponse({"received": True})


_STATEMENT: dict[str, Any] = {}


def _insert_bare(values: dict[str, Any]) -> int:
    """The row inserted by a statement built once (the hand-written floor)."""
    if not _STATEMENT:
        meta = BareCallback._meta
        fields = [f for f in meta.concrete_fields if f is not meta.pk]
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in fields)
        marks = ", ".join(["%s"] * len(fields))
        _STATEMENT["sql"] = (
            f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({marks}) "  # noqa: S608
            f"RETURNING {quote(meta.pk.column)}"
        )
        _STATEMENT["fields"] = fields
        _STATEMENT["defaults"] = {
            f.name: f.get_db_prep_save(f.get_default(), connection)
            for f in fields
            if not (f.has_default() and callable(f.default))
        }
    defaults = _STATEMENT["defaults"]
    params = [
        f.get_db_prep_save(values[f.name], connection)
        if f.name in values
        else defaults[f.name]
        if f.name in defaults
        else f.get_db_prep_save(f.get_default(), connection)
        for f in _STATEMENT["fields"]
    ]
    with connection.cursor() as cursor:
        cursor.execute(_STATEMENT["sql"], params)
        return int(cursor.fetchone()[0])


_redis: list[Any] = []


@csrf_exempt
def bare_pipeline(request: HttpRequest, token: str) -> JsonResponse:
    body = request.body.decode("utf-8")
    uuid = json.loads(body)["transaction_uuid"]
    pk = _insert_bare(
        {"body": body, "transaction_uuid": uuid, "remote_addr": request.META.get("REMOTE_ADDR")}
    )
    if not _redis:
        import redis

        _redis.append(redis.Redis.from_url(os.environ["PAYCOLLECT_BENCH_BROKER"]))
    _redis[0].lpush(BARE_QUEUE, f"{pk} {uuid}")  # autocommit: the row is committed already
    return JsonResponse({"received": True})


urlpatterns = [
    *test_urlpatterns,
    path("bare-orm/<str:token>/", bare_orm),
    path("bare-pipeline/<str:token>/", bare_pipeline),
]
