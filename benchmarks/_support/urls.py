"""The test suite's URLs, plus the baseline of the callback ingest benchmark (``bare/<token>/``).

The bare view is what any Django endpoint storing a POSTed body costs: it reads the body and inserts it,
with the client address, into a table of the same shape as ``ReceivedCallback`` (same columns and
indexes, see ``benchmarks/callback_ingest.py``), through the same handler, middleware and URL resolver.
It checks nothing, parses nothing and deduplicates nothing.
"""

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from tests.urls import urlpatterns as test_urlpatterns

#: Set by the benchmark to the baseline model (created at run time, not part of any app's migrations).
BARE_MODEL: Any = None


@csrf_exempt
def bare_callback(request: HttpRequest, token: str) -> JsonResponse:
    BARE_MODEL.objects.create(body=request.body.decode("utf-8"), remote_addr=request.META.get("REMOTE_ADDR"))
    return JsonResponse({"received": True})


urlpatterns = [*test_urlpatterns, path("bare/<str:token>/", bare_callback)]
