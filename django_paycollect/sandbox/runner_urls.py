"""Root URLconf of the standalone runner: the sandbox at PAYCOLLECT_SANDBOX_PREFIX (default: the root)."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def health(request: HttpRequest) -> HttpResponse:
    """The smallest possible view: readiness probe, and the benchmark's baseline."""
    return HttpResponse(b'{"ok":true}', content_type="application/json")


_prefix = str(getattr(settings, "PAYCOLLECT_SANDBOX_PREFIX", "")).strip("/")

urlpatterns = [
    path("_health", health, name="health"),
    path(f"{_prefix}/" if _prefix else "", include("django_paycollect.sandbox.urls")),
]
