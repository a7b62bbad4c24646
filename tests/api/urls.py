"""The test project's URLs with the REST API mounted (as a project mounts it)."""

from django.urls import include, path

from tests.urls import urlpatterns as base

urlpatterns = [*base, path("api/", include("django_paycollect.api.urls"))]
