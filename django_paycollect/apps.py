from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PayCollectConfig(AppConfig):
    name = "django_paycollect"
    label = "paycollect"
    verbose_name = _("Payment collection")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
        from .conf import metrics_enabled
        from .tasks import connections

        # Celery's task signals, so the worker keeps a sound database session from task to task.
        connections.connect()

        if metrics_enabled():
            # Only then: prometheus-client is an optional extra. Registering reads no database.
            from .reporting.metrics import install

            install()
