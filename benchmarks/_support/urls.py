"""The test suite's URLs, plus the baseline of the callback benchmarks (``bare/<token>/``).

The bare view is what any Django endpoint storing a POSTed body costs: it reads the body and inserts it,
with the client address, into a table of the same shape as ``ReceivedCallback`` (same columns and
indexes, see ``bare.py``), through the same handler, middleware and URL resolver.
It checks nothing, parses nothing and deduplicates nothing.
"""

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from tests.urls import urlpatterns as test_urlpatterns

from .bare import BareCallback


@csrf_exempt
def bare_callback(request: HttpRequest, token: str) -> JsonResponse:
    BareCallback.objects.create(
        body=request.body.decode("utf-8"), remote_addr=request.META.get("REMOTE_ADDR")
    )
    return JsonResponse({"received": True})


urlpatterns = [*test_urlpatterns, path("bare/<str:token>/", bare_callback)]
