"""URLs of the club site: the members app, the payment app's callback and return, the admin and, in the
demo, the sandbox standing in for the service."""

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

urlpatterns = [
    path("admin/", admin.site.urls),
    # set_language: the language switch in the header of every page.
    path("i18n/", include("django.conf.urls.i18n")),
    # The words of the checkout's JavaScript (the members app's djangojs catalogue), in the page's language.
    path("jsi18n/", JavaScriptCatalog.as_view(packages=["clubsite.members"]), name="javascript-catalog"),
    # callback/<token>/ (configured at the service), return/ (the customer's browser) and return/status/.
    path("payments/", include("django_paycollect.urls")),
    # The REST API of single-page and mobile checkouts (the members' checkout page uses it).
    path("api/", include("django_paycollect.api.urls")),
    path("", include("clubsite.members.urls")),
]

if apps.is_installed("drf_spectacular"):
    # The API's OpenAPI schema and browsable pages of it (from the sidecar's static files: no CDN).
    from django.views import View
    from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

    class SwaggerPage(SpectacularSwaggerView):
        """OPTIONS says which methods the page takes, as a Django view does: DRF's answer, a description of
        the view, would be rendered by the page's HTML template renderer, which has no template for it (a
        500)."""

        def options(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return View.options(self, request, *args, **kwargs)

    urlpatterns[-1:-1] = [
        path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
        path("api/docs/", SwaggerPage.as_view(url_name="schema"), name="api-docs"),
        path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    ]

if apps.is_installed("django_paycollect.sandbox"):
    # Then <site>/sandbox is a base URL answering every path of the service (see docs/sandbox.md).
    urlpatterns.insert(0, path("sandbox/", include("django_paycollect.sandbox.urls")))
