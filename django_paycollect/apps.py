import logging

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
        from .intake.receive import CallbackPathFilter
        from .tasks import connections

        # Django logs the path of every 4xx/5xx answer, and a callback's path holds its token.
        request_log = logging.getLogger("django.request")
        if not any(isinstance(kept, CallbackPathFilter) for kept in request_log.filters):
            request_log.addFilter(CallbackPathFilter())

        # Celery's task signals, so the worker keeps a sound database session from task to task.
        connections.connect()

        if metrics_enabled():
            # Only then: prometheus-client is an optional extra. Registering reads no database.
            from .reporting.metrics import install

            install()
