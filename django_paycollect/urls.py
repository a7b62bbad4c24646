"""URLs of the app: mount them once, e.g. ``path("payments/", include("django_paycollect.urls"))``.

* ``callback/<token>/``: the callback URL to configure at the service (also answered without its
  trailing slash: an APPEND_SLASH redirect would drop the POST body);
* ``return/``: the redirect URL for the customer's browser;
* ``return/status/``: the status endpoint the waiting page polls.

:func:`service_urls` gives the first two as the service must call them.
"""

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.http import HttpRequest
from django.urls import path, reverse

from .conf import paycollect_settings
from .intake import views

app_name = "paycollect"

urlpatterns = [
    path("callback/<str:token>/", views.callback, name="callback"),
    path("callback/<str:token>", views.callback, name="callback_without_slash"),
    path("return/", views.browser_return, name="return"),
    path("return/status/", views.return_status, name="return_status"),
]


def service_urls(request: HttpRequest) -> dict[str, str]:
    """This site's ``redirect_url`` (the return view) and ``callback_url`` (the callback view with the current
    token; left out when there is none) as absolute URLs built on ``request``, for a direct order or Pay's API
    payment. The callback URL holds a secret: pass it to the service, never show nor store it. A URL no
    validator lets through (``testserver``) is left out too: the service could not call it."""
    urls = {"redirect_url": request.build_absolute_uri(reverse("paycollect:return"))}
    tokens = paycollect_settings.texts("CALLBACK_TOKENS")  # one text is one token, never its letters
    if tokens:
        urls["callback_url"] = request.build_absolute_uri(reverse("paycollect:callback", args=[tokens[0]]))
    return {name: url for name, url in urls.items() if _valid(url)}


def _valid(url: str) -> bool:
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        return False
    return True
