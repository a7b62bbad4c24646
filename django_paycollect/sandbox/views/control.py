"""The control API under ``<prefix>/_control/``: drive the sandbox from tests and demos.

Enabled by ``PAYCOLLECT_SANDBOX["CONTROL_API"]`` (on in the standalone runner and the pytest fixture, off by
default when mounted); when off every control path answers the 404 envelope. Answers use the spec's envelope
too, so one decoder reads everything. Not part of the service's interface.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from functools import wraps
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from .. import callbacks, fastpath, faults, journal, seed, services
from ..conf import CALLBACK_UUID_KEYS, get_settings
from ..envelope import ApiError, envelope_response, loads
from ..models import (
    ApiPayment,
    CallbackDelivery,
    Community,
    Fault,
    FeeRule,
    OutboxMessage,
    Promocode,
    RecurringSeries,
    Transaction,
)
from ..state import get_state, now, writing
from .api import transaction_resource
from .common import not_found

ControlView = Callable[..., HttpResponse]


def control(*methods: str) -> Callable[[ControlView], ControlView]:
    def decorate(fn: ControlView) -> ControlView:
        @csrf_exempt
        @wraps(fn)
        def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            if not get_settings().control_api:
                return not_found(request)
            if request.method not in methods:
                allowed = ", ".join(methods)
                return ApiError(
                    405, "method not allowed", [{"method": [f"Use {allowed}."]}], headers={"Allow": allowed}
                ).response()
            try:
                return fn(request, **kwargs)
            except ApiError as exc:
                return exc.response()
            except ObjectDoesNotExist:
                return ApiError(404, "not found", [{"id": ["Not found."]}]).response()

        return view

    return decorate


def _body(request: HttpRequest) -> dict[str, Any]:
    if not request.body.strip():
        return {}
    try:
        parsed = loads(request.body)
    except ValueError:
        raise ApiError.field("non_field_errors", "Malformed JSON.") from None
    if not isinstance(parsed, dict):
        raise ApiError.field("non_field_errors", "The body must be a JSON object.")
    return parsed


def _ok(data: dict[str, Any], code: int = 200) -> HttpResponse:
    return envelope_response(code, data)


def _int(value: Any, field: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ApiError.field(field, f"Must be an integer of at least {minimum}.")
    return value


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ApiError.field("transaction_uuid", "Transaction not found.", code=404) from None


def _tx_details(tx: Transaction) -> dict[str, Any]:
    return {
        "transaction": transaction_resource(tx),
        "sandbox": {
            "community_id": tx.community.community_id,
            "pay_using": tx.pay_using,
            "bill_reference": tx.bill_reference,
            "original_amount": tx.original_amount,
            "refunded_amount": tx.refunded_amount,
            "captured": tx.captured_at is not None,
            "is_sub_payment": tx.is_sub_payment,
            "redirect_url": services.redirect_target(tx) if tx.status != Transaction.Status.PENDING else None,
            "callbacks": list(tx.callbacks.order_by("id").values_list("id", flat=True)),
        },
    }


# --- transactions and the clock -------------------------------------------------------------------------


@control("POST")
def complete(request: HttpRequest, transaction_uuid: str) -> HttpResponse:
    """Complete a PENDING transaction (a kiosk payment, or a card payment without the page)."""
    outcome = str(_body(request).get("outcome", "SUCCESSFUL")).upper()
    tx = services.complete(_uuid(transaction_uuid), outcome)
    return _ok(_tx_details(tx))


@control("GET")
def transaction_detail(request: HttpRequest, transaction_uuid: str) -> HttpResponse:
    tx = Transaction.objects.select_related("community", "series", "api_payment", "direct_order").filter(
        uuid=_uuid(transaction_uuid)
    )
    return _ok(_tx_details(tx.get()))


@control("POST")
def renewal_outcome(request: HttpRequest, transaction_uuid: str) -> HttpResponse:
    """Make the next renewal(s) of the transaction's series fail (transaction_order 0)."""
    body = _body(request)
    if str(body.get("outcome", "FAILED")).upper() != "FAILED":
        raise ApiError.field("outcome", "Only FAILED can be planned; renewals succeed otherwise.")
    times = _int(body.get("times", 1), "times", 1)
    with writing():
        tx = Transaction.objects.select_related("series").get(uuid=_uuid(transaction_uuid))
        if tx.series is None:
            raise ApiError.field("transaction_uuid", "Transaction is not part of a recurring payment.")
        RecurringSeries.objects.filter(pk=tx.series.pk).update(fail_next_renewals=times)
    return _ok({"fail_next_renewals": times})


@control("GET")
def clock(request: HttpRequest) -> HttpResponse:
    return _ok({"now": now().isoformat(), "offset_seconds": get_state().clock_offset_seconds})


@control("POST")
def clock_advance(request: HttpRequest) -> HttpResponse:
    """Move the sandbox clock forward by whole days and run the recurring renewals that fall due."""
    days = _int(_body(request).get("days", 0), "days", 0)
    renewals = services.advance_clock(days)
    return _ok({"now": now().isoformat(), "renewals": [str(tx.uuid) for tx in renewals]})


# --- callbacks ------------------------------------------------------------------------------------------


@control("GET")
def callback_list(request: HttpRequest) -> HttpResponse:
    deliveries = CallbackDelivery.objects.select_related("transaction").order_by("id")
    if request.GET.get("transaction_uuid"):
        deliveries = deliveries.filter(transaction__uuid=_uuid(request.GET["transaction_uuid"]))
    items = [callbacks.as_dict(d) for d in deliveries.prefetch_related("attempt_log")[:500]]
    return _ok({"callbacks": items, "plan": get_state().callback_plan})


@control("GET")
def callback_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _ok(callbacks.as_dict(CallbackDelivery.objects.select_related("transaction").get(pk=pk)))


@control("POST")
def callback_redeliver(request: HttpRequest, pk: int) -> HttpResponse:
    """Send a stored callback again (a duplicate, from the receiver's point of view)."""
    delivery = callbacks.redeliver(pk)
    return _ok(callbacks.as_dict(delivery))


@control("POST")
def callback_next(request: HttpRequest) -> HttpResponse:
    """Plan the next callbacks: {"action": "drop"|"duplicate"|"delay", "times": N, "delay_seconds": S}."""
    body = _body(request)
    action = body.get("action")
    if action not in callbacks.PLAN_ACTIONS:
        raise ApiError.field("action", f"Must be one of {', '.join(callbacks.PLAN_ACTIONS)}.")
    times = _int(body.get("times", 1), "times", 1)
    delay = body.get("delay_seconds", 0)
    if action == "delay" and (isinstance(delay, bool) or not isinstance(delay, int | Decimal) or delay <= 0):
        raise ApiError.field("delay_seconds", "A positive number of seconds is required for delay.")
    plan = callbacks.add_plan(str(action), times, float(delay))
    return _ok({"plan": plan})


# --- faults -----------------------------------------------------------------------------------------------


@control("GET", "POST", "DELETE")
def fault_collection(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        fault = faults.create(_body(request))
        return _ok(faults.as_dict(fault), 201)
    if request.method == "DELETE":
        with writing():
            Fault.objects.all().delete()
        fastpath.forget_faults()
    return _ok({"faults": [faults.as_dict(f) for f in Fault.objects.order_by("id")]})


# --- reset, journal, configuration ----------------------------------------------------------------------


@control("POST")
def reset(request: HttpRequest) -> HttpResponse:
    """Wipe everything and reseed with the same identity (community id, keys, variable_amount_id)."""
    identity = seed.reset()
    return _ok(_public_identity(identity))


def _public_identity(identity: dict[str, Any]) -> dict[str, Any]:
    return {
        "base_url": identity.get("base_url"),
        "community_id": identity.get("community_id"),
        "api_key": identity.get("api_key"),
        "basic_username": identity.get("basic_username"),
        "basic_password": identity.get("basic_password"),
        "variable_amount_id": identity.get("variable_amount_id"),
        "member_variable_amount_id": identity.get("member_variable_amount_id"),
    }


@control("GET")
def identity(request: HttpRequest) -> HttpResponse:
    return _ok(_public_identity(get_state().seed))


@control("GET", "DELETE")
def requests_journal(request: HttpRequest) -> HttpResponse:
    if request.method == "DELETE":
        journal.clear()
        return _ok({"requests": []})
    limit = request.GET.get("limit", "")
    rows = journal.entries(request.GET.get("operation") or None, int(limit) if limit.isdigit() else None)
    return _ok({"requests": rows})


@control("GET", "POST")
def config(request: HttpRequest) -> HttpResponse:
    """Runtime settings: callback_uuid_key, callback_retry_delays and require_original_amount (reset restores
    the Django settings)."""
    if request.method == "POST":
        body = _body(request)
        with writing():
            state = get_state()
            updated = dict(state.config)
            if "callback_uuid_key" in body:
                if body["callback_uuid_key"] not in CALLBACK_UUID_KEYS:
                    raise ApiError.field(
                        "callback_uuid_key", f"Must be one of {', '.join(CALLBACK_UUID_KEYS)}."
                    )
                updated["callback_uuid_key"] = body["callback_uuid_key"]
            if "callback_retry_delays" in body:
                delays = body["callback_retry_delays"]
                if not isinstance(delays, list) or not all(
                    isinstance(d, int | Decimal) and not isinstance(d, bool) and 0 <= d <= 3600
                    for d in delays
                ):
                    raise ApiError.field("callback_retry_delays", "A list of seconds (0 to 3600).")
                updated["callback_retry_delays"] = [float(d) for d in delays]
            if "require_original_amount" in body:
                if not isinstance(body["require_original_amount"], bool):
                    raise ApiError.field("require_original_amount", "Must be true or false.")
                updated["require_original_amount"] = body["require_original_amount"]
            state.config = updated
            state.save(update_fields=["config"])
    settings = get_settings()
    stored = get_state().config
    return _ok(
        {
            "callback_uuid_key": stored.get("callback_uuid_key", settings.callback_uuid_key),
            "callback_retry_delays": callbacks.retry_delays(),
            "require_original_amount": stored.get(
                "require_original_amount", settings.require_original_amount
            ),
        }
    )


# --- communities, API payments, promocodes, fee rules, outbox ---------------------------------------


@control("GET")
def community_list(request: HttpRequest) -> HttpResponse:
    """Every community with its sandbox credentials (create_community answers an empty data object)."""
    items = [
        {
            "community_id": c.community_id,
            "name": c.name,
            "api_key": c.api_key,
            "basic_username": c.basic_username,
            "basic_password": c.basic_password,
            "app_modules": c.app_modules,
            "payment_methods": c.payment_methods,
            "kiosk_processor": c.kiosk_processor,
            "wallet_processor": c.wallet_processor,
            "logo_content_type": c.logo_content_type,
            "extra": c.extra,
            "api_payments": [_api_payment(p) for p in c.api_payments.order_by("id")],
        }
        for c in Community.objects.order_by("id").prefetch_related("api_payments")
    ]
    return _ok({"communities": items})


def _api_payment(api_payment: ApiPayment) -> dict[str, Any]:
    return {
        "variable_amount_id": api_payment.pk,
        "community_id": api_payment.community.community_id,
        "name": api_payment.name,
        "redirect_url": api_payment.redirect_url,
        "callback_url": api_payment.callback_url,
        "requires_member_id": api_payment.requires_member_id,
    }


def _apply_api_payment_fields(api_payment: ApiPayment, body: dict[str, Any]) -> None:
    for field in ("name", "redirect_url", "callback_url"):
        if field in body:
            value = body[field]
            if value is not None and not isinstance(value, str):
                raise ApiError.field(field, "Must be a string.")
            setattr(api_payment, field, value or "")
    if "requires_member_id" in body:
        api_payment.requires_member_id = bool(body["requires_member_id"])


@control("GET", "POST")
def api_payment_collection(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        body = _body(request)
        community = Community.objects.filter(community_id=str(body.get("community_id", ""))).first()
        if community is None:
            raise ApiError.field("community_id", "Community not found.")
        with writing():
            api_payment = ApiPayment(community=community, name=str(body.get("name") or "API payment"))
            _apply_api_payment_fields(api_payment, body)
            api_payment.save()
        return _ok(_api_payment(api_payment), 201)
    items = [_api_payment(p) for p in ApiPayment.objects.select_related("community").order_by("id")]
    return _ok({"api_payments": items})


@control("GET", "POST")
def api_payment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Set an API payment's redirect_url / callback_url (what the merchant dashboard does)."""
    with writing():
        api_payment = ApiPayment.objects.select_related("community").get(pk=pk)
        if request.method == "POST":
            _apply_api_payment_fields(api_payment, _body(request))
            api_payment.save()
    return _ok(_api_payment(api_payment))


@control("POST")
def promocode_create(request: HttpRequest) -> HttpResponse:
    import datetime as dt

    body = _body(request)
    community = Community.objects.filter(community_id=str(body.get("community_id", ""))).first()
    if community is None:
        raise ApiError.field("community_id", "Community not found.")
    kind = str(body.get("kind", "VALUE")).upper()
    if kind not in Promocode.Kind.values:
        raise ApiError.field("kind", "Must be VALUE or PERCENTAGE.")
    try:
        value = Decimal(str(body["value"]))
        expires = dt.date.fromisoformat(body["expires_on"]) if body.get("expires_on") else None
        min_amount = Decimal(str(body["min_amount"])) if body.get("min_amount") is not None else None
        max_amount = Decimal(str(body["max_amount"])) if body.get("max_amount") is not None else None
    except (KeyError, ArithmeticError, ValueError, TypeError):
        raise ApiError.field(
            "non_field_errors", "value (number), expires_on (YYYY-MM-DD), min/max_amount."
        ) from None
    with writing():
        promo = Promocode.objects.create(
            community=community,
            name=str(body.get("name") or "PROMO"),
            kind=kind,
            value=value,
            currency=str(body.get("currency") or "EGP").upper(),
            expires_on=expires,
            min_amount=min_amount,
            max_amount=max_amount,
            payment_for=str(body.get("payment_for") or ""),
        )
    return _ok({"promocode_id": promo.pk, "name": promo.name}, 201)


@control("GET", "POST")
def fee_rules(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        body = _body(request)
        try:
            percentage = Decimal(str(body.get("percentage", "0")))
            fixed = Decimal(str(body.get("fixed_amount", "0")))
        except ArithmeticError:
            raise ApiError.field("percentage", "percentage and fixed_amount must be numbers.") from None
        with writing():
            community = None
            if body.get("community_id"):
                community = Community.objects.get(community_id=str(body["community_id"]))
            FeeRule.objects.filter(
                community=community,
                payment_method=str(body.get("payment_method", "card")).lower(),
                currency=str(body.get("currency") or "").upper(),
            ).delete()
            FeeRule.objects.create(
                community=community,
                payment_method=str(body.get("payment_method", "card")).lower(),
                currency=str(body.get("currency") or "").upper(),
                percentage=percentage,
                fixed_amount=fixed,
            )
    rules = [
        {
            "community_id": r.community.community_id if r.community else None,
            "payment_method": r.payment_method,
            "currency": r.currency or None,
            "percentage": r.percentage,
            "fixed_amount": r.fixed_amount,
        }
        for r in FeeRule.objects.select_related("community").order_by("id")
    ]
    return _ok({"fee_rules": rules})


@control("GET")
def outbox(request: HttpRequest) -> HttpResponse:
    messages = [
        {
            "id": m.pk,
            "channel": m.channel,
            "to": m.to,
            "cc": m.cc,
            "subject": m.subject,
            "body": m.body,
            "payment_id": m.direct_order.payment_id,
            "created": m.created.isoformat(),
        }
        for m in OutboxMessage.objects.select_related("direct_order").order_by("id")
    ]
    return _ok({"messages": messages})
