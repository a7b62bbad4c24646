"""Faults injected per operation through ``_control/faults``.

Connection-level faults need the sandbox's own server (``server.py``): the view marks the WSGI environ and
the server resets the TCP connection instead of answering. Mounted inside another project's server there is
no socket to reset, so they degrade to answers a client classifies the same way (documented in
docs/sandbox.md): a reset becomes a 502 HTML page without the work being done, and "do the work, then drop
the response" becomes the work done followed by a 504 HTML page, which leaves the outcome unknown.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.http import HttpRequest, HttpResponse

from . import fastpath
from .envelope import ApiError, envelope_response, message_for
from .models import Fault
from .state import writing

# Keys the sandbox's server puts in the WSGI environ.
ENVIRON_SERVER = "paycollect_sandbox.server"
ENVIRON_CONNECTION_FAULT = "paycollect_sandbox.connection_fault"

OPERATIONS = (
    "prepare_amount",
    "pay",
    "fetch_transaction",
    "capture",
    "refund",
    "cancel_recurring",
    "validate_promocode",
    "create_community",
    "dashboard_statistics",
    "direct_order",
)
ANY_OPERATION = Fault.ANY_OPERATION

DEFAULT_HTML = (
    "<!DOCTYPE html><html><head><title>Access denied</title></head>"
    "<body><h1>Access denied</h1><p>The request was blocked by a security check. "
    "(injected by the sandbox)</p></body></html>"
)


@dataclass(frozen=True)
class ActiveFault:
    kind: str
    status_code: int | None
    body: str
    latency_ms: int
    after_work: bool


def take(operation: str) -> ActiveFault | None:
    """Consume one use of the oldest fault matching the operation, if any."""
    # Fast path without the write lock: almost every request finds no fault, and one that is never used up
    # (a latency on every fetch) has nothing to write: it costs no query and holds back no other request.
    oldest = fastpath.oldest_fault(operation)
    if oldest is None:
        return None
    if oldest.remaining is None:
        return ActiveFault(oldest.kind, oldest.status_code, oldest.body, oldest.latency_ms, oldest.after_work)
    candidates = Fault.objects.filter(operation__in=(operation, ANY_OPERATION))
    with writing():
        fastpath.forget_faults()
        fault = candidates.select_for_update().order_by("id").first()
        if fault is None:
            return None
        if fault.remaining is not None:
            if fault.remaining <= 1:
                fault.delete()
            else:
                Fault.objects.filter(pk=fault.pk).update(remaining=F("remaining") - 1)
        return ActiveFault(
            kind=fault.kind,
            status_code=fault.status_code,
            body=fault.body,
            latency_ms=fault.latency_ms,
            after_work=fault.after_work,
        )


def status_response(fault: ActiveFault) -> HttpResponse:
    code = fault.status_code or (403 if fault.kind == Fault.Kind.HTML else 503)
    if fault.kind == Fault.Kind.HTML:
        return HttpResponse(fault.body or DEFAULT_HTML, status=code, content_type="text/html; charset=utf-8")
    if fault.body:
        return HttpResponse(fault.body, status=code, content_type="application/json")
    return envelope_response(
        code, None, message_for(code), [{"fault": ["Injected through the sandbox's control API."]}]
    )


def supports_connection_faults(request: HttpRequest) -> bool:
    return bool(request.META.get(ENVIRON_SERVER))


def connection_fault(request: HttpRequest, kind: str) -> HttpResponse:
    """Ask the sandbox's server to reset the connection; without it, answer the documented stand-in."""
    if supports_connection_faults(request):
        request.META[ENVIRON_CONNECTION_FAULT] = kind
        # Never sent: the server drops the connection instead.
        return HttpResponse(status=500)
    if kind == Fault.Kind.RESET:
        return HttpResponse(_stand_in_html(502, "Bad gateway"), status=502, content_type="text/html")
    return HttpResponse(_stand_in_html(504, "Gateway timeout"), status=504, content_type="text/html")


def _stand_in_html(code: int, title: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><title>{code} {title}</title></head><body><h1>{title}</h1>"
        "<p>Connection fault injected by the sandbox; this server cannot drop connections, "
        "so it answers this page instead.</p></body></html>"
    )


def sleep_latency(fault: ActiveFault) -> None:
    if fault.latency_ms:
        time.sleep(fault.latency_ms / 1000)


def create(payload: dict[str, Any]) -> Fault:
    """Validate and store a fault from the control API body."""
    operation = str(payload.get("operation", ""))
    if operation not in OPERATIONS and operation != ANY_OPERATION:
        raise ApiError.field("operation", f"Must be one of: {', '.join(OPERATIONS)} or *.")
    kind = str(payload.get("kind", ""))
    if kind not in Fault.Kind.values:
        raise ApiError.field("kind", f"Must be one of: {', '.join(Fault.Kind.values)}.")
    status_code = payload.get("status")
    if status_code is not None and (not isinstance(status_code, int) or not 100 <= status_code <= 599):
        raise ApiError.field("status", "Must be an HTTP status code.")
    latency = payload.get("latency_ms", 0)
    if not isinstance(latency, int) or latency < 0 or latency > 120_000:
        raise ApiError.field("latency_ms", "Must be an integer from 0 to 120000.")
    if kind == Fault.Kind.LATENCY and not latency:
        raise ApiError.field("latency_ms", "A latency fault needs latency_ms.")
    times = payload.get("times", 1)
    if times is not None and (not isinstance(times, int) or times < 1):
        raise ApiError.field("times", "Must be a positive integer, or null for every request until cleared.")
    body = payload.get("body", "")
    if not isinstance(body, str):
        raise ApiError.field("body", "Must be a string.")
    with writing():
        # Forgotten after the commit: a request reading faults before it would cache "none" again.
        transaction.on_commit(fastpath.forget_faults)
        return Fault.objects.create(
            operation=operation,
            kind=kind,
            status_code=status_code,
            body=body,
            latency_ms=latency,
            after_work=bool(payload.get("after_work", False)),
            remaining=times,
        )


def as_dict(fault: Fault) -> dict[str, Any]:
    return {
        "id": fault.pk,
        "operation": fault.operation,
        "kind": fault.kind,
        "status": fault.status_code,
        "body": fault.body,
        "latency_ms": fault.latency_ms,
        "after_work": fault.after_work,
        "times": fault.remaining,
    }
