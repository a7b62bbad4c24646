"""The test suite's URLs, plus the baselines of the callback benchmarks (``bare/``, ``bare-sql/`` and
``bare-pipeline/<token>/``).

The bare views are what any Django endpoint storing a POSTed body costs: each reads the body and inserts it,
with the client address, into a table of the same shape as ``ReceivedCallback`` (same columns and
indexes, see ``bare.py``), through the same handler, middleware and URL resolver. They check nothing and
deduplicate nothing. Two insert techniques, so a comparison can name the one it uses:

- ``bare/``: the ORM's ``create`` (a model instance, the INSERT compiled for each request);
- ``bare-sql/``: the app's own technique (``services.callback_insert``): one INSERT built once from the
  model's fields, each value prepared by its field, the defaults that are not computed prepared once, the
  new key returned;
- ``bare-pipeline/``: ``bare-sql/``'s insert, then the body's ``transaction_uuid`` read (``json.loads``) and
  the row's id with it pushed to a Redis list (``LPUSH``, the list ``PAYCOLLECT_BENCH_BARE_QUEUE`` on
  ``PAYCOLLECT_BENCH_BROKER``) after the commit, for ``bare_worker.py`` to fetch and mark: the bare pipeline
  of store, enqueue, fetch, mark.
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from tests.urls import urlpatterns as test_urlpatterns

from .bare import BareCallback

#: Redis list the bare pipeline's view pushes to and its worker pops from.
BARE_QUEUE = os.environ.get("PAYCOLLECT_BENCH_BARE_QUEUE", "paycollect-bench-bare")


@csrf_exempt
def bare_callback(request: HttpRequest, token: str) -> JsonResponse:
    BareCallback.objects.create(
        body=request.body.decode("utf-8"), remote_addr=request.META.get("REMOTE_ADDR")
    )
    return JsonResponse({"received": True})


_STATEMENT: dict[str, Any] = {}


def _insert_bare(values: dict[str, Any]) -> int:
    """The row inserted as ``services.callback_insert`` inserts a callback: a statement built once."""
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


@csrf_exempt
def bare_callback_sql(request: HttpRequest, token: str) -> JsonResponse:
    _insert_bare({"body": request.body.decode("utf-8"), "remote_addr": request.META.get("REMOTE_ADDR")})
    return JsonResponse({"received": True})


_redis: list[Any] = []


@csrf_exempt
def bare_pipeline(request: HttpRequest, token: str) -> JsonResponse:
    body = request.body.decode("utf-8")
    pk = _insert_bare({"body": body, "remote_addr": request.META.get("REMOTE_ADDR")})
    uuid = json.loads(body)["transaction_uuid"]
    if not _redis:
        import redis

        _redis.append(redis.Redis.from_url(os.environ["PAYCOLLECT_BENCH_BROKER"]))
    _redis[0].lpush(BARE_QUEUE, f"{pk} {uuid}")  # autocommit: the row is committed already
    return JsonResponse({"received": True})


urlpatterns = [
    *test_urlpatterns,
    path("bare/<str:token>/", bare_callback),
    path("bare-sql/<str:token>/", bare_callback_sql),
    path("bare-pipeline/<str:token>/", bare_pipeline),
]
