"""The sandbox's system checks: its control API must never be open by accident."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.urls import NoReverseMatch, reverse

from .conf import get_settings


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


def _mounted() -> bool:
    """Whether the project's URLconf serves the sandbox's control API at all."""
    try:
        reverse("paycollect_sandbox:control_identity")
    except NoReverseMatch:
        return False
    return True
