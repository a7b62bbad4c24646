"""OpenAPI helpers: drf-spectacular's decorators when it is installed (the ``api`` extra), no-ops when not.

The API works without drf-spectacular; only the schema (and its browsable page) needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drf_spectacular.types import OpenApiTypes
    from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema

    HAVE_SPECTACULAR = True
else:
    try:
        from drf_spectacular.types import OpenApiTypes
        from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema

        HAVE_SPECTACULAR = True
    except ImportError:  # the API without the schema: the decorators keep the views as they are
        HAVE_SPECTACULAR = False

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


__all__ = [
    "HAVE_SPECTACULAR",
    "OpenApiExample",
    "OpenApiParameter",
    "OpenApiResponse",
    "OpenApiTypes",
    "extend_schema",
]
