from __future__ import annotations

from typing import Any

from django.apps import apps
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

CLUB_NAME = _("Riverside Club")


def club(request: HttpRequest) -> dict[str, Any]:
    sandbox = apps.is_installed("django_paycollect.sandbox")
    dashboard = False
    if sandbox:
        from django_paycollect.sandbox.conf import dashboard_on

        # The link only where the dashboard answers: it is off with DEBUG off unless the settings turn it on.
        dashboard = dashboard_on()
    return {
        "club_name": CLUB_NAME,
        "sandbox_mounted": sandbox,
        "sandbox_dashboard_url": reverse("paycollect_sandbox:dashboard") if dashboard else "",
    }
