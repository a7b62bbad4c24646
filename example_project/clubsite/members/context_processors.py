from __future__ import annotations

from typing import Any

from django.apps import apps
from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

CLUB_NAME = _("Riverside Club")


def club(request: HttpRequest) -> dict[str, Any]:
    sandbox = apps.is_installed("django_paycollect.sandbox")
    return {
        "club_name": CLUB_NAME,
        "sandbox_dashboard_url": reverse("paycollect_sandbox:dashboard") if sandbox else "",
    }
