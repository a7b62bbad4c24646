"""A project that mounts the sandbox under a prefix, as the docs say, and the admin where staff log in."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("sandbox/", include("django_paycollect.sandbox.urls")),
]
