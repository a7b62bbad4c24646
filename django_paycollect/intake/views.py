"""The callback endpoint and the browser return: thin views over :mod:`.receive` and :mod:`.returns`.

All are ``transaction.non_atomic_requests``: under ``ATOMIC_REQUESTS`` a stored callback (or a recorded
failure) commits on its own, and no database transaction stays open across a call to the service.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse, QueryDict
from django.shortcuts import render, resolve_url
from django.urls import NoReverseMatch, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from ..conf import paycollect_settings
from . import receive, returns
from .parsing import ReturnParametersSerializer

logger = logging.getLogger("django_paycollect.views")

#: The waiting page: the script polls the status endpoint every POLL_MS for at most MAX_WAIT_SECONDS;
#: without script, the page reloads itself every REFRESH_SECONDS, at most MAX_REFRESHES times.
POLL_MS = 1500
MAX_WAIT_SECONDS = 120
REFRESH_SECONDS = 3
MAX_REFRESHES = MAX_WAIT_SECONDS // REFRESH_SECONDS


@csrf_exempt
@transaction.non_atomic_requests
def callback(request: HttpRequest, token: str) -> HttpResponse:
    """``POST <mount>/callback/<token>/``: store the callback, queue its verification, answer 200.

    The sender learns nothing but "received" (the spec shows no expected reply; any 2xx is the
    usual convention): 200 ``{"received": true}`` for a new callback or a redelivery; 400 (not
    JSON, wrong fields), 403 (secret), 413 (too big) for a callback stored as invalid; 404 and
    nothing stored for an unknown token; 405 for another method; 503 when it could not be stored.
    """
    index = receive.match_token(token)
    if index is None:
        logger.warning("callback refused: unknown token (from %s)", receive.client_ip(request.META) or "?")
        return JsonResponse({"received": False, "error": "not found"}, status=404)
    if request.method != "POST":
        response = JsonResponse({"received": False, "error": "method not allowed"}, status=405)
        response["Allow"] = "POST"
        return response
    try:
        received = receive.receive(request, index)
    except Exception:
        # The database is down or worse: 503 asks the sender to try again (nothing was stored).
        logger.exception("a callback could not be stored")
        return JsonResponse({"received": False, "error": "not stored; try again"}, status=503)
    return JsonResponse(dict(received.answer), status=received.status)


# --- browser returns ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reference:
    """Which transaction a return names: by uuid, or by the service's numeric id (``transaction_id``
    alone, the spec's unresolved variant). ``param`` is how the visitor named it, and the only thing
    passed on (to the destination and the waiting page)."""

    uuid: str
    param: tuple[str, str]

    def status(self) -> str:
        return returns.verified_status(self.uuid) if self.uuid else returns.PUBLIC_PENDING


def _reference_of(query: QueryDict) -> _Reference | None:
    """The transaction a return's query names (:class:`~.parsing.ReturnParametersSerializer`), or None when it
    names none usably. A numeric id we did not store reads as pending, and is not looked up at the service."""
    serializer = ReturnParametersSerializer(data=query.dict())
    if not serializer.is_valid():
        return None
    uuid: str = serializer.validated_data["transaction_uuid"]
    if uuid:
        return _Reference(uuid, ("transaction_uuid", uuid))
    service_id: int | None = serializer.validated_data["service_id"]
    if service_id is None:
        return None
    return _Reference(returns.uuid_for_service_id(service_id) or "", ("transaction_id", str(service_id)))


def _destination(key: str, reference: _Reference) -> str:
    """SUCCESS_URL or FAILURE_URL (a path, URL or URL name) with only what the visitor brought appended
    (``reference.param``): the visitor learns nothing new, and the merchant's page must check that the
    payment belongs to the visitor (session, login) before showing anything about it."""
    configured = getattr(paycollect_settings, key) or "/"
    try:
        url = resolve_url(configured)
    except NoReverseMatch:
        logger.error("PAYCOLLECT['%s'] = %r is neither a URL nor a URL name", key, configured)
        url = "/"
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), reference.param]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


@never_cache
@transaction.non_atomic_requests
@require_safe
def browser_return(request: HttpRequest) -> HttpResponse:
    """``GET <mount>/return/``: where the service redirects the customer's browser after paying.

    The customer goes to the success or failure URL by what the service says. While the status is not final
    (or the service is slow or down, or the transaction unknown) a waiting page polls :func:`return_status`;
    after ``MAX_WAIT_SECONDS`` it says the payment could not be confirmed yet, never that it failed (the
    customer might pay twice). A return that names no transaction it can read shows that neutral page at
    once: the failure URL is only for a payment the service said FAILED.
    """
    reference = _reference_of(request.GET)
    if reference is None:
        logger.info("browser return without a usable transaction uuid or id")
        return _return_page(request, None, 0)
    status = reference.status()
    if status == returns.PUBLIC_SUCCESSFUL:
        return HttpResponseRedirect(_destination("SUCCESS_URL", reference))
    if status == returns.PUBLIC_FAILED:
        return HttpResponseRedirect(_destination("FAILURE_URL", reference))
    try:
        waited = max(0, int(request.GET.get("wait", "0")))
    except ValueError:
        waited = 0
    return _return_page(request, reference, waited)


def _return_page(request: HttpRequest, reference: _Reference | None, waited: int) -> HttpResponse:
    """The waiting page, or (after the last check, or with nothing to check) its neutral end state."""
    context: dict[str, Any] = {
        "unconfirmed": reference is None or waited >= MAX_REFRESHES,
        "refresh_seconds": REFRESH_SECONDS,
        "poll_ms": POLL_MS,
        "max_wait_ms": MAX_WAIT_SECONDS * 1000,
        # django-csp and similar set a per-request nonce; the inline script needs it under a strict CSP.
        "csp_nonce": getattr(request, "csp_nonce", ""),
    }
    if reference is not None:
        namespace = request.resolver_match.namespace if request.resolver_match else None
        return_url = reverse("paycollect:return", current_app=namespace)
        status_url = reverse("paycollect:return_status", current_app=namespace)
        named = dict([reference.param])
        context.update(
            status_url=f"{status_url}?{urlencode(named)}",
            check_url=f"{return_url}?{urlencode({**named, 'wait': waited + 1})}",
            retry_url=f"{return_url}?{urlencode(named)}",
        )
    response = render(request, "paycollect/return_waiting.html", context)
    # The page's URL holds the transaction's uuid or id: it is not sent on to other sites.
    response["Referrer-Policy"] = "same-origin"
    response["X-Robots-Tag"] = "noindex"
    return response


@never_cache
@transaction.non_atomic_requests
@require_safe
def return_status(request: HttpRequest) -> HttpResponse:
    """``GET <mount>/return/status/?transaction_uuid=...`` (or ``?transaction_id=<numeric id>``): only
    ``{"status": ...}`` of the transaction the visitor names, PENDING, SUCCESSFUL or FAILED. An unknown uuid
    or id reads PENDING, like an open transaction, so the answer tells not even which exist."""
    reference = _reference_of(request.GET)
    if reference is None:
        return JsonResponse({"status": "UNKNOWN"}, status=400)
    return JsonResponse({"status": reference.status()})
