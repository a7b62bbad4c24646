"""The sandbox's system checks: its control API and its dashboard must never be open by accident."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.urls import NoReverseMatch, reverse

from .conf import dashboard_on, get_settings


@register(Tags.security)
def check_control_api(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """The control API (``_control/``) answers without authentication: it reveals the sandbox's API key and
    completes payments nobody paid. Reachable with DEBUG off, it is an error, unless the settings say this
    is a staging sandbox meant to be driven from outside (``PAYCOLLECT_SANDBOX["STAGING"]``): then a warning.
    """
    conf = get_settings()
    if settings.DEBUG or not conf.control_api or not _mounted():
        return []
    if conf.staging:
        return [
            Warning(
                "The sandbox's control API is reachable with DEBUG off (PAYCOLLECT_SANDBOX['STAGING'] "
                "says this is a staging sandbox): anyone who reaches it can read its API key and "
                "complete payments.",
                hint="Keep this site off the public internet, or set "
                "PAYCOLLECT_SANDBOX['CONTROL_API'] = False.",
                id="paycollect_sandbox.W001",
            )
        ]
    return [
        Error(
            "The sandbox's control API is reachable with DEBUG off: without logging in, anyone can read the "
            "sandbox's API key and complete payments nobody paid.",
            hint="Set PAYCOLLECT_SANDBOX['CONTROL_API'] = False (its default), or, on a staging site "
            "that really drives the sandbox from outside, acknowledge it with "
            "PAYCOLLECT_SANDBOX['STAGING'] = True.",
            id="paycollect_sandbox.E001",
        )
    ]


@register(Tags.security)
def check_dashboard(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """The dashboard (``_sandbox/``) shows the sandbox's credentials to staff and changes where its API
    payments send customers and callbacks. Reachable with DEBUG off (``DASHBOARD = True``) it is for staff
    only: a warning, unless ``STAGING`` acknowledges a sandbox used without DEBUG. Open to visitors who are
    not staff there (``DASHBOARD_PUBLIC``), it is an error, or a warning on an acknowledged staging sandbox.
    """
    conf = get_settings()
    if settings.DEBUG or not dashboard_on() or not _mounted("paycollect_sandbox:dashboard"):
        return []
    if not conf.dashboard_public:
        if conf.staging:
            return []
        return [
            Warning(
                "The sandbox dashboard is reachable with DEBUG off: staff users can read the sandbox's "
                "credentials and change where its API payments send customers and callbacks.",
                hint="Leave PAYCOLLECT_SANDBOX['DASHBOARD'] unset (on with DEBUG only) or set it to False; "
                "on a staging site that uses the sandbox without DEBUG, set PAYCOLLECT_SANDBOX['STAGING'] "
                "= True.",
                id="paycollect_sandbox.W002",
            )
        ]
    if conf.staging:
        return [
            Warning(
                "The sandbox dashboard is open to visitors who are not staff with DEBUG off "
                "(PAYCOLLECT_SANDBOX['DASHBOARD_PUBLIC'] on a staging sandbox): anyone who reaches it can "
                "change where its API payments send customers and callbacks.",
                hint="Keep this site off the public internet, or set "
                "PAYCOLLECT_SANDBOX['DASHBOARD_PUBLIC'] = False (staff only).",
                id="paycollect_sandbox.W003",
            )
        ]
    return [
        Error(
            "The sandbox dashboard is open to visitors who are not staff with DEBUG off: without logging in, "
            "anyone can change where the sandbox's API payments send customers and callbacks.",
            hint="Set PAYCOLLECT_SANDBOX['DASHBOARD_PUBLIC'] = False (its default: staff only), or, on a "
            "staging site, acknowledge it with PAYCOLLECT_SANDBOX['STAGING'] = True.",
            id="paycollect_sandbox.E002",
        )
    ]


def _mounted(url_name: str = "paycollect_sandbox:control_identity") -> bool:
    """Whether the project's URLconf serves that part of the sandbox at all."""
    try:
        reverse(url_name)
    except NoReverseMatch:
        return False
    return True
