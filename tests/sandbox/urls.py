"""A project that mounts the sandbox under a prefix, as the docs say."""

from django.urls import include, path

urlpatterns = [
    path("sandbox/", include("django_paycollect.sandbox.urls")),
]
