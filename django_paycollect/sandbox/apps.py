from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from . import live_deployment_reason


class SandboxConfig(AppConfig):
    name = "django_paycollect.sandbox"
    label = "paycollect_sandbox"
    verbose_name = "Payment Collection Service sandbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        check_not_live()
        from . import checks  # noqa: F401  (registers the system checks)


def check_not_live() -> None:
    """Refuse to load in a live deployment (environment variable or Django setting)."""
    reason = live_deployment_reason()
    if reason is None and str(getattr(settings, "PAYCOLLECT_DEPLOYMENT", "")).strip().lower() == "live":
        reason = "settings.PAYCOLLECT_DEPLOYMENT is 'live': the sandbox refuses to run in a live deployment."
    if reason is not None:
        raise ImproperlyConfigured(
            f"{reason} Remove 'django_paycollect.sandbox' from INSTALLED_APPS in live settings."
        )
