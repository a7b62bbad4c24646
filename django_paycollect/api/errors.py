"""The service layer's error contract as HTTP answers (the table of statuses and bodies is docs/api.md's).

Field paths are the spec's, dotted (``billing_data.phone_number``); errors of no field are under DRF's
``non_field_errors``. The texts of an unreachable service or a configuration error are ours, never the
client's: those name hosts and settings the device has no business seeing.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.utils import translation
from django.utils.translation import gettext_lazy as _
from rest_framework import status
from rest_framework.response import Response
from rest_framework.settings import api_settings

from ..exceptions import (
    UNAVAILABLE_TEXT,
    NotFound,
    PayCollectConfigurationError,
    PaymentRefused,
    ServiceLayerError,
    ServiceUnavailable,
    StateConflict,
)
from ..forms import refusal_errors
from ..serializers import error_messages
from .payables import PayableRefused

logger = logging.getLogger("django_paycollect.api")

CONFIGURATION_TEXT = _("Payments are not available right now; the site's staff have been told.")


def field_errors(refused: ServiceLayerError) -> dict[str, list[str]]:
    """``{"dotted.path": [texts]}`` of a refusal (``forms.refusal_errors``), under DRF's non-field key."""
    return {
        (api_settings.NON_FIELD_ERRORS_KEY if key == NON_FIELD_ERRORS else key): messages
        for key, messages in refusal_errors(refused).items()
    }


def invalid(detail: Any) -> Response:
    """A 400 in the API's one shape from a DRF serializer's nested errors."""
    flat = error_messages(detail)
    return Response(
        {(key or api_settings.NON_FIELD_ERRORS_KEY): messages for key, messages in flat.items()},
        status=status.HTTP_400_BAD_REQUEST,
    )


def contract_response(error: Exception) -> Response | None:
    """The answer to an error of the service layer (or of the payable hook); None for any other."""
    if isinstance(error, PayableRefused):
        return Response({"reference": [str(error.message)]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(error, StateConflict):
        errors = field_errors(error)
        detail = " ".join(m for messages in errors.values() for m in messages)
        return Response(
            {"code": StateConflict.error_code, "detail": detail, "field_errors": errors},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(error, NotFound):
        return Response(
            {"code": NotFound.error_code, "detail": " ".join(error.messages)},
            status=status.HTTP_404_NOT_FOUND,
        )
    if isinstance(error, PaymentRefused):
        return Response(field_errors(error), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(error, ServiceUnavailable):
        headers = {}
        if error.retry_after is not None:
            headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
        return Response(
            {"code": ServiceUnavailable.error_code, "detail": str(UNAVAILABLE_TEXT)},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers=headers,
        )
    if isinstance(error, PayCollectConfigurationError):
        # Outside the contract (an ImproperlyConfigured): the site's fault, not the customer's, told to the
        # logs (and error reporting), not the device; in English, as every log line, whatever the language.
        with translation.override(None):
            logger.error("REST API: the payments configuration is wrong: %s", error, exc_info=error)
        return Response(
            {"code": PayCollectConfigurationError.error_code, "detail": str(CONFIGURATION_TEXT)},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    return None
