"""The ten operations of the spec, at its paths, with its methods and envelopes."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext

from .. import fastpath, money, services
from ..conf import get_settings
from ..envelope import ApiError
from ..journal import is_secret_name, redact
from ..models import ApiPayment, Community, DirectOrder, Promocode, Transaction
from ..seed import create_community as create_community_record
from ..serializers import (
    CreateCommunitySerializer,
    DirectOrderSerializer,
    PaySerializer,
    PrepareAmountSerializer,
    PromocodeSerializer,
    RefundBodySerializer,
    TransactionUuidSerializer,
    logo_content_type,
)
from ..state import get_state, today
from .common import (
    AUTH_KEY,
    AUTH_KEY_AND_BASIC,
    AUTH_NONE,
    Call,
    community_or_400,
    ok,
    operation,
    validated,
)


def payment_page_url(request: HttpRequest, tx: Transaction) -> str:
    return request.build_absolute_uri(reverse("paycollect_sandbox:payment_page", args=[tx.uuid]))


def order_page_url(request: HttpRequest, order: DirectOrder) -> str:
    return request.build_absolute_uri(reverse("paycollect_sandbox:order_page", args=[order.payment_id]))


def transaction_resource(tx: Transaction) -> dict[str, Any]:
    """The spec's Transaction resource, field for field."""
    series = tx.series
    return resource_from_values(
        {
            "id": tx.pk,
            "uuid": tx.uuid,
            "created": tx.created,
            "member_id": tx.member_id,
            "total_amount": tx.total_amount,
            "currency": tx.currency,
            "payment_for": tx.payment_for,
            "status": tx.status,
            "custom_fields_json": tx.custom_fields_json,
            "transaction_order": tx.transaction_order,
            "series": None
            if series is None
            else {
                "parent_uuid": series.parent_uuid,
                "recurring_count": series.recurring_count,
                "expiry_date": series.expiry_date,
                "minimum_days_between_payments": series.minimum_days_between_payments,
                "active": series.active,
            },
        }
    )


def resource_from_values(v: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "created": v["created"].astimezone(dt.UTC).isoformat(timespec="microseconds"),
        "id": v["id"],
        "uuid": str(v["uuid"]),
    }
    data["member_id"] = v["member_id"] or None  # null when none, as the service's own answers have it
    data["total_amount"] = money.text(v["total_amount"])
    data["total_amount_currency"] = v["currency"]
    data["payment_for"] = v["payment_for"]
    data["quantity"] = None
    data["status"] = v["status"]
    data["custom_fields_json"] = v["custom_fields_json"]
    data["total_amount_piasters"] = money.to_piasters(v["total_amount"])
    series = v["series"]
    if series is not None:
        data["recurring"] = {
            "parent_transaction": str(series["parent_uuid"]),
            "recurring_count": series["recurring_count"],
            "transaction_order": v["transaction_order"],
            "type": "RECURRING",
            "expiry_date": series["expiry_date"].isoformat(),
            "minimum_days_between_payments": series["minimum_days_between_payments"],
            "active": series["active"],
        }
    return data


# 1. Prepare amount: credential requirements are not shown, so the sandbox asks for none.
@operation("prepare_amount", ("POST",), AUTH_NONE)
def prepare_amount(call: Call) -> HttpResponse:
    data = validated(PrepareAmountSerializer, call.json())
    community = community_or_400(data["community_id"])
    total = services.total_with_fees(
        community, data["amount"], data["currency"], data["selected_payment_method"]
    )
    return ok(200, {"total_amount": total, "total_amount_currency": data["currency"]})


# 2. Pay
@operation("pay", ("POST",), AUTH_KEY)
def pay(call: Call) -> HttpResponse:
    body = call.json()
    call.check_community(body.get("community_id"))
    data = validated(PaySerializer, body, {"require_original_amount": original_amount_required()})
    data["original_amount"] = data.get("original_amount") or None
    community = call.community
    api_payment = ApiPayment.objects.filter(pk=data["variable_amount_id"], community=community).first()
    if api_payment is None:
        raise ApiError.field("variable_amount_id", gettext("No API payment with this id in the community."))
    if api_payment.requires_member_id and not data.get("membership_id"):
        raise ApiError.field("membership_id", gettext("This API payment requires a member id."))
    if data["pay_using"] not in services.community_methods(community):
        raise ApiError.field(
            "pay_using",
            gettext("%(method)s is not enabled for this community.") % {"method": data["pay_using"]},
        )
    if data.get("is_recurring") and data["expiry_date"] <= today():
        raise ApiError.field("expiry_date", gettext("Must be a date after today."))
    if data.get("promocode_id") is not None:
        promo = Promocode.objects.filter(pk=data["promocode_id"], community=community).first()
        data["promocode"] = services.check_promocode(
            promo,
            "promocode_id",
            data["original_amount"] or data["amount"],
            data["currency"],
            services.PAYMENT_FOR_API,
        )
    tx = services.start_payment(community, api_payment, data)
    result: dict[str, Any] = {
        "iframe_url": payment_page_url(call.request, tx),
        "transaction_id": tx.pk,
        "transaction_uuid": str(tx.uuid),
        "transaction_status": tx.status,
    }
    if tx.bill_reference is not None:
        result["message"] = gettext(
            "Pay %(amount)s %(currency)s at any kiosk using bill reference %(reference)s."
        ) % {"amount": money.text(tx.total_amount), "currency": tx.currency, "reference": tx.bill_reference}
        result["bill_refrence"] = tx.bill_reference  # spelled so by the spec
        result["bill_reference"] = tx.bill_reference  # what clients written against the service read
    return ok(200, result)


def original_amount_required() -> bool:
    """``REQUIRE_ORIGINAL_AMOUNT``: the spec's rule unless the settings or ``_control/config`` relax it."""
    configured = get_state().config.get("require_original_amount")
    return get_settings().require_original_amount if configured is None else bool(configured)


# 3. Fetch transaction
@operation("fetch_transaction", ("GET",), AUTH_KEY)
def fetch_transaction(call: Call, community_id: str, transaction_uuid: str) -> HttpResponse:
    call.check_community(community_id)
    try:
        parsed = uuid.UUID(transaction_uuid)
    except ValueError:
        raise ApiError.field("transaction_uuid", "Transaction not found.", code=404) from None
    values = fastpath.transaction_row(parsed, call.community.pk)
    if values is None:
        raise ApiError.field("transaction_uuid", "Transaction not found.", code=404)
    return ok(200, resource_from_values(values))


# 4. Capture: the spec's example answers 201 (its structure says 200); the sandbox follows the example.
@operation("capture", ("POST",), AUTH_KEY)
def capture(call: Call) -> HttpResponse:
    data = validated(TransactionUuidSerializer, call.json())
    services.capture(call.community, data["transaction_uuid"])
    return ok(201, {"message": gettext("Transaction captured successfully.")})


# 5. Refund: 201 like capture.
@operation("refund", ("POST",), AUTH_KEY)
def refund(call: Call) -> HttpResponse:
    data = validated(RefundBodySerializer, call.json())
    services.refund(call.community, data["transaction_uuid"], data["refund_amount"])
    return ok(201, {"message": gettext("Transaction refunded successfully.")})


# 6. Cancel recurring payment
@operation("cancel_recurring", ("POST",), AUTH_KEY)
def cancel_recurring(call: Call) -> HttpResponse:
    data = validated(TransactionUuidSerializer, call.json())
    if services.cancel_recurring(call.community, data["transaction_uuid"]):
        return ok(200, {"message": gettext("Recurring payment cancelled successfully.")})
    return ok(200, {"message": gettext("Recurring payment was already cancelled.")})


# 7. Validate promocode: POST as the testing environment lists it; GET (the live listing) is accepted too,
# with the fields in a JSON body or in the query string.
@operation("validate_promocode", ("POST", "GET"), AUTH_NONE)
def validate_promocode(call: Call) -> HttpResponse:
    request = call.request
    if request.method == "GET" and not request.body.strip():
        payload: dict[str, Any] = request.GET.dict()
    else:
        payload = call.json()
    data = validated(PromocodeSerializer, payload)
    community = community_or_400(data["community_id"])
    promo = Promocode.objects.filter(community=community, name__iexact=data["name"]).first()
    services.check_promocode(promo, "name", data["amount"], data["currency"], data["payment_for"])
    assert promo is not None
    if data["payment_for"] == services.PAYMENT_FOR_API:
        known = data["variable_amount_id"].isdigit() and (
            ApiPayment.objects.filter(pk=int(data["variable_amount_id"]), community=community).exists()
        )
        if not known:
            raise ApiError.field(
                "variable_amount_id", gettext("No API payment with this id in the community.")
            )
    value = services.promocode_value(promo, data["amount"])
    return ok(200, {"value": value, "currency": promo.currency, "promocode_id": promo.pk})


# 8. Create community: credential requirements are not shown, so the sandbox asks for none.
@operation("create_community", ("POST",), AUTH_NONE)
def create_community(call: Call) -> HttpResponse:
    request = call.request
    fields = {key: request.POST.get(key) for key in request.POST}
    serializer = CreateCommunitySerializer(data={**fields, **request.FILES.dict()})
    if not serializer.is_valid():
        raise ApiError.validation(serializer.errors)
    data = serializer.validated_data
    logo = data["logo"]
    content = logo.read()
    # Fields whose rules the spec does not show (order_description, allowed_cards, bank settings) are kept,
    # without secrets: the bank settings' api_password is never stored.
    extra = {
        key: ("[redacted]" if is_secret_name(key) else redact(value))
        for key, value in fields.items()
        if key not in serializer.fields
    }
    create_community_record(
        name=data["name"],
        registered_name=data.get("registered_name", ""),
        address=data.get("address", ""),
        email=data.get("email", ""),
        phone=data.get("phone", ""),
        logo=content,
        logo_content_type=logo_content_type(content[:8]) or "",
        app_modules=data.get("app_modules", []),
        payment_methods=data.get("payment_methods") or ["card", "kiosk"],
        kiosk_processor=data.get("kiosk_processor") or _default_kiosk_processor(),
        wallet_processor=data.get("wallet_processor", ""),
        redirect_successful_only=data.get("redirect_successful_only", ""),
        extra=extra,
    )
    return ok(200, {})


def _default_kiosk_processor() -> str:
    from ..conf import get_settings

    return get_settings().network_names["kiosk_network"]


# 9. Dashboard statistics
@operation("dashboard_statistics", ("GET",), AUTH_KEY_AND_BASIC)
def dashboard_statistics(call: Call) -> HttpResponse:
    community_id = call.request.GET.get("community_id", "").strip()
    if not community_id:
        raise ApiError.field("community_id", gettext("This field is required."))
    call.check_community(community_id)
    return ok(200, services.statistics(call.community))


# 10. Direct order
@operation("direct_order", ("POST",), AUTH_KEY)
def direct_order(call: Call) -> HttpResponse:
    body = call.json()
    call.check_community(body.get("community_id"))
    data = validated(DirectOrderSerializer, body)
    community: Community = call.community
    enabled = services.community_methods(community)
    disabled = [m for m in data["payment_methods"] if m not in enabled]
    if disabled:
        raise ApiError.field(
            "payment_methods",
            gettext("Not enabled for this community: %(methods)s.") % {"methods": ", ".join(disabled)},
        )
    if data.get("allow_recurring_payments") and data["expiry_date"] <= today():
        raise ApiError.field("expiry_date", gettext("Must be a date after today."))
    request = call.request
    order = services.create_direct_order(community, data, lambda o: order_page_url(request, o))
    if order.send_by_email and order.send_by_sms:
        message = gettext(
            "Direct order created. The customer was notified by e-mail and SMS (see the sandbox outbox)."
        )
    elif order.send_by_email:
        message = gettext(
            "Direct order created. The customer was notified by e-mail (see the sandbox outbox)."
        )
    elif order.send_by_sms:
        message = gettext("Direct order created. The customer was notified by SMS (see the sandbox outbox).")
    else:
        message = gettext("Direct order created.")
    return ok(
        201,
        {
            "success": True,
            "merchant_id": community.community_id,
            "payment_id": order.payment_id,
            "payment_link": order_page_url(request, order),
            "message": message,
        },
    )
