"""What every spec operation shares: method check, injected faults, authentication, JSON parsing, the
envelope on every answer, and the journal entry. It lives in the view layer (not middleware) so that a
mounted sandbox behaves the same inside any project's middleware stack."""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import logging
import time
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from rest_framework import serializers

from .. import callbacks, fastpath, faults, journal
from ..envelope import ApiError, envelope_response, loads
from ..models import Community, Fault

logger = logging.getLogger(__name__)

AUTH_NONE = "none"
AUTH_KEY = "key"
AUTH_KEY_AND_BASIC = "key+basic"


class Call:
    """One request to a spec operation: the authenticated community and the parsed JSON body."""

    def __init__(self, request: HttpRequest) -> None:
        self.request = request
        self._community: Community | None = None
        self.parsed: Any = None

    @property
    def community(self) -> Community:
        if self._community is None:  # only reachable from a view declared without authentication
            raise ApiError(
                401, "authentication failed", [{"x-api-key": [gettext("This operation needs an API key.")]}]
            )
        return self._community

    def json(self) -> dict[str, Any]:
        if self.parsed is None:
            raw = self.request.body
            if not raw.strip():
                raise ApiError.field("non_field_errors", gettext("The request body must be a JSON object."))
            try:
                parsed = loads(raw)
            except ValueError as exc:
                raise ApiError.field(
                    "non_field_errors", gettext("Malformed JSON: %(error)s") % {"error": str(exc)[:120]}
                ) from None
            if not isinstance(parsed, dict):
                raise ApiError.field("non_field_errors", gettext("The request body must be a JSON object."))
            self.parsed = parsed
        body: dict[str, Any] = self.parsed
        return body

    def check_community(self, community_id: Any) -> None:
        """A key only acts for its own community (403 otherwise, whether or not the other one exists)."""
        if community_id is None or isinstance(community_id, dict | list):
            return  # the serializer reports a missing or malformed community_id
        if str(community_id) != self.community.community_id:
            raise ApiError(
                403,
                "permission denied",
                [{"community_id": [gettext("The API key is not linked to this community.")]}],
            )


Handler = Callable[..., HttpResponse]


def ok(code: int, data: Mapping[str, Any]) -> HttpResponse:
    return envelope_response(code, data)


def validated(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
    data: Any,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    serializer = serializer_class(data=data, context=context or {})
    if not serializer.is_valid():
        raise ApiError.validation(serializer.errors)
    result: dict[str, Any] = dict(serializer.validated_data)
    return result


def community_or_400(community_id: str) -> Community:
    community = Community.objects.filter(community_id=community_id).first()
    if community is None:
        raise ApiError.field("community_id", gettext("Community not found."))
    return community


def _key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def authenticate_key(request: HttpRequest) -> Community:
    """401 for a missing or unknown key; the key's value never appears in an answer or a log."""
    key = str(request.META.get("HTTP_X_API_KEY", "")).strip()
    if not key:
        raise ApiError(
            401,
            "authentication failed",
            [{"x-api-key": [gettext("Authentication credentials were not provided.")]}],
        )
    community = fastpath.community_for_key_digest(_key_digest(key))
    if community is None or not hmac.compare_digest(community.api_key.encode(), key.encode()):
        raise ApiError(401, "authentication failed", [{"x-api-key": [gettext("Invalid API key.")]}])
    return community


def authenticate_basic(request: HttpRequest, community: Community) -> None:
    """``Authorization: Basic <username>:<password>`` as the spec writes it (literal), or base64 encoded."""
    header = str(request.META.get("HTTP_AUTHORIZATION", "")).strip()
    scheme, _, value = header.partition(" ")
    if not header:
        raise ApiError(
            401,
            "authentication failed",
            [{"Authorization": [gettext("Basic credentials were not provided.")]}],
        )
    if scheme.lower() != "basic" or not value.strip():
        raise ApiError(
            401, "authentication failed", [{"Authorization": [gettext("Use Basic <username>:<password>.")]}]
        )
    value = value.strip()
    candidates = [value]
    with contextlib.suppress(binascii.Error, ValueError):
        candidates.append(base64.b64decode(value, validate=True).decode("utf-8"))
    expected = f"{community.basic_username}:{community.basic_password}".encode()
    # Compare every candidate so the time taken does not depend on which form matched.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(candidate.encode("utf-8"), expected)
    if not matched:
        raise ApiError(
            401, "authentication failed", [{"Authorization": [gettext("Invalid basic credentials.")]}]
        )


def operation(name: str, methods: tuple[str, ...], auth: str) -> Callable[[Handler], Handler]:
    def decorate(handler: Handler) -> Handler:
        @csrf_exempt
        @wraps(handler)
        def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            started = time.monotonic()
            call = Call(request)
            fault_kind = ""
            try:
                callbacks.ensure_worker()
                response, fault_kind = _dispatch(call, name, methods, auth, handler, kwargs)
            except Exception:
                logger.exception("sandbox operation %s failed", name)
                response = envelope_response(500, None, "server error", [])
            journal.record(
                request, name, response, fault_kind, int((time.monotonic() - started) * 1000), call.parsed
            )
            return response

        return view

    return decorate


def _dispatch(
    call: Call, name: str, methods: tuple[str, ...], auth: str, handler: Handler, kwargs: dict[str, Any]
) -> tuple[HttpResponse, str]:
    request = call.request
    if request.method not in methods:
        return _method_not_allowed(request, methods), ""
    fault = faults.take(name)
    if fault is not None:
        faults.sleep_latency(fault)
        if fault.kind == Fault.Kind.RESET:
            return faults.connection_fault(request, Fault.Kind.RESET), fault.kind
        if fault.kind in (Fault.Kind.STATUS, Fault.Kind.HTML) and not fault.after_work:
            return faults.status_response(fault), fault.kind
    try:
        if auth in (AUTH_KEY, AUTH_KEY_AND_BASIC):
            call._community = authenticate_key(request)
            if auth == AUTH_KEY_AND_BASIC:
                authenticate_basic(request, call._community)
        response = handler(call, **kwargs)
    except ApiError as exc:
        response = exc.response()
    if fault is not None:
        if fault.kind == Fault.Kind.DROP_AFTER:
            return faults.connection_fault(request, Fault.Kind.DROP_AFTER), fault.kind
        if fault.kind in (Fault.Kind.STATUS, Fault.Kind.HTML):
            return faults.status_response(fault), fault.kind
    return response, fault.kind if fault is not None else ""


def _method_not_allowed(request: HttpRequest, methods: tuple[str, ...]) -> HttpResponse:
    allowed = ", ".join(methods)
    return ApiError(
        405,
        "method not allowed",
        [
            {
                "method": [
                    gettext("Method %(method)s is not allowed here; use %(allowed)s.")
                    % {"method": request.method, "allowed": allowed}
                ]
            }
        ],
        headers={"Allow": allowed},
    ).response()


@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """Every unknown path under the prefix answers the envelope too (no HTML 404, no slash redirect)."""
    return ApiError(
        404, "not found", [{"path": [gettext("No operation at %(path)s.") % {"path": request.path}]}]
    ).response()
