"""OpenAPI helpers: drf-spectacular's decorators when it is installed (the ``api`` extra), no-ops when not,
and the documented error answers every operation shares.

The API works without drf-spectacular; only the schema (and its browsable page) needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext_lazy as _

from .serializers import ProblemSerializer

if TYPE_CHECKING:
    from drf_spectacular.types import OpenApiTypes
    from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
else:
    try:
        from drf_spectacular.types import OpenApiTypes
        from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
    except ImportError:  # the API without the schema: the decorators keep the views as they are

        def extend_schema(*args: Any, **kwargs: Any) -> Any:
            return lambda view: view

        class _Described:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self.args, self.kwargs = args, kwargs

        class OpenApiExample(_Described):
            pass

        class OpenApiParameter(_Described):
            QUERY = "query"

        class OpenApiResponse(_Described):
            pass

        class OpenApiTypes:
            OBJECT = STR = "object"


FIELD_ERRORS = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=_(
        'Field errors by the spec\'s dotted field path, e.g. {"billing_data.phone_number": ["..."]}.'
    ),
    examples=[
        OpenApiExample(
            "Field errors",
            value={"billing_data.phone_number": ["Must start with + and the country code."]},
            response_only=True,
            status_codes=["400"],
        )
    ],
)
UNAVAILABLE = OpenApiResponse(
    response=ProblemSerializer,
    description=_(
        "The service cannot be reached (code service_unavailable; nothing was done) or the site's "
        "payments configuration is wrong (code configuration)."
    ),
    examples=[
        OpenApiExample(
            "Unavailable",
            value={
                "code": "service_unavailable",
                "detail": "The payment service cannot be reached; nothing was done.",
            },
            response_only=True,
            status_codes=["503"],
        )
    ],
)
CONFLICT = OpenApiResponse(
    response=ProblemSerializer,
    description=_("The state forbids it (code conflict)."),
    examples=[
        OpenApiExample(
            "Conflict",
            value={
                "code": "conflict",
                "detail": "At most 40.00 EGP can still be refunded.",
                "field_errors": {"amount": ["At most 40.00 EGP can still be refunded."]},
            },
            response_only=True,
            status_codes=["409"],
        )
    ],
)
NOT_YOURS = OpenApiResponse(description=_("No such payment among the caller's."))
REFUSED = OpenApiResponse(description=_("Not signed in, or without the permission."))
THROTTLED = OpenApiResponse(description=_("Too many requests; Retry-After says when to try again."))
_ERRORS = {400: FIELD_ERRORS, 403: REFUSED, 404: NOT_YOURS, 409: CONFLICT, 429: THROTTLED, 503: UNAVAILABLE}


def answers(successes: dict[int, Any], errors: tuple[int, ...]) -> dict[int, Any]:
    """An operation's documented answers: its successes, and the error answers it may give."""
    return {**successes, **{status_code: _ERRORS[status_code] for status_code in errors}}


# What the views import from here, drf-spectacular's or the no-ops (``answers`` is this module's own).
__all__ = ["OpenApiExample", "OpenApiParameter", "OpenApiResponse", "OpenApiTypes", "extend_schema"]
