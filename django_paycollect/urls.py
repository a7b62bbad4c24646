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
    token, ``CALLBACK_TOKENS[0]``; left out when there is none) as absolute URLs built on ``request``: what a
    direct order must carry so that its customer comes back to ``SUCCESS_URL`` or ``FAILURE_URL`` and its
    callback is heard, and what to configure for Pay's API payment. The callback URL holds a secret: pass it
    to the service, never show nor store it (``DirectOrder`` stores it without the token). A URL that no
    validator would let through (a host without a dot, as a test client's ``testserver``) is left out too: the
    service could not call it."""
    urls = {"redirect_url": request.build_absolute_uri(reverse("paycollect:return"))}
    tokens = paycollect_settings.texts("CALLBACK_TOKENS")  # one text is one token, never its letters
    if tokens:
        urls["callback_url"] = request.build_absolute_uri(reverse("paycollect:callback", args=[tokens[0]]))
    valid = URLValidator(schemes=["http", "https"])
    usable = {}
    for name, url in urls.items():
        try:
            valid(url)
        except ValidationError:
            continue
        usable[name] = url
    return usable
