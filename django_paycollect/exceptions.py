"""Exceptions of the Django side. They subclass Django's own, so Django does the right thing with them:
configuration errors are ImproperlyConfigured, bad input is a ValidationError naming the field.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured, ValidationError


class PayCollectConfigurationError(ImproperlyConfigured):
    """The PAYCOLLECT setting is missing something or holds a wrong value."""


class PaymentRefused(ValidationError):
    """The request was refused before or by the service; ``message_dict`` names the fields."""


class ServiceUsageError(RuntimeError):
    """The service layer was called in a way that would put money at risk (e.g. inside atomic)."""
