"""URLs of the app: mount them once, e.g. ``path("paycollect/", include("django_paycollect.urls"))``.

* ``callback/<token>/``: the callback URL to configure at the service (also answered without its
  trailing slash: an APPEND_SLASH redirect would drop the POST body);
* ``return/``: the redirect URL for the customer's browser;
* ``return/status/``: the status endpoint the waiting page polls.
"""

from django.urls import path

from .intake import views

app_name = "paycollect"

urlpatterns = [
    path("callback/<str:token>/", views.callback, name="callback"),
    path("callback/<str:token>", views.callback, name="callback_without_slash"),
    path("return/", views.browser_return, name="return"),
    path("return/status/", views.return_status, name="return_status"),
]
