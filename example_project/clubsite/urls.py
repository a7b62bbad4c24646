"""URLs of the club site: the members app, the payment app's callback and return, the admin and, in the
demo, the sandbox standing in for the service."""

from django.apps import apps
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # callback/<token>/ (configured at the service), return/ (the customer's browser) and return/status/.
    path("payments/", include("django_paycollect.urls")),
    path("", include("clubsite.members.urls")),
]

if apps.is_installed("django_paycollect.sandbox"):
    # Then <site>/sandbox is a base URL answering every path of the service (see docs/sandbox.md).
    urlpatterns.insert(0, path("sandbox/", include("django_paycollect.sandbox.urls")))
