"""HTML pages: the hosted payment page (behind iframe_url and payment_link), the sandbox dashboard, the
outbox, and a built-in demo merchant that the seeded API payment redirects and calls back to."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.text import get_text_list
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from .. import journal, money, services
from ..conf import dashboard_on, get_settings
from ..envelope import ApiError, loads
from ..journal import mask_url, redact_url
from ..models import (
    ApiPayment,
    CallbackDelivery,
    Community,
    DirectOrder,
    MerchantInboxItem,
    OutboxMessage,
    Promocode,
    Transaction,
)
from ..state import now, writing

PAY = "pay"
DECLINE = "decline"

#: What the pages call the payment methods and purposes they know; others are shown as the client sent them.
METHOD_LABELS = {"card": _("Card"), "kiosk": _("Cash at a kiosk")}
PAYMENT_FOR_LABELS = {
    services.PAYMENT_FOR_API: _("API payment"),
    services.PAYMENT_FOR_DIRECT_ORDER: _("Direct order"),
    "EVENT": _("Event"),
    "BILL": _("Bill"),
}
CHANNEL_LABELS: dict[str, Any] = {
    OutboxMessage.Channel.EMAIL: _("E-mail"),
    OutboxMessage.Channel.SMS: _("Text message"),
}
#: The result page's headline for each final status (another status is shown as the service spells it).
RESULT_HEADLINES: dict[str, Any] = {
    Transaction.Status.SUCCESSFUL: _("Payment successful"),
    Transaction.Status.FAILED: _("Payment failed"),
    Transaction.Status.PENDING: _("Payment pending"),
}


def method_label(method: str) -> str:
    return str(METHOD_LABELS.get(method.strip().lower(), method))


def _not_found(request: HttpRequest, headline: str) -> HttpResponse:
    return render(request, "paycollect_sandbox/not_found.html", {"what": headline}, status=404)


def _result(
    request: HttpRequest, tx: Transaction, *, redirect: str | None, late: bool = False, status: int = 200
) -> HttpResponse:
    context = {
        "tx": tx,
        "redirect": redirect,
        "late": late,
        "status": RESULT_HEADLINES.get(tx.status, tx.status),
    }
    return render(request, "paycollect_sandbox/result.html", context, status=status)


def _transaction(transaction_uuid: Any) -> Transaction | None:
    return (
        Transaction.objects.select_related("community", "api_payment", "direct_order", "series", "promocode")
        .filter(uuid=transaction_uuid)
        .first()
    )


def _finish(request: HttpRequest, tx: Transaction) -> HttpResponse:
    """After completion: the browser redirect with the spec's parameters, or the sandbox's result page."""
    target = services.redirect_target(tx)
    if target:
        return HttpResponseRedirect(target)
    return _result(request, tx, redirect=None)


# --- the hosted payment page ---------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def payment_page(request: HttpRequest, transaction_uuid: Any) -> HttpResponse:
    tx = _transaction(transaction_uuid)
    if tx is None:
        return _not_found(request, gettext("Unknown transaction"))
    kiosk = services.is_kiosk(tx.pay_using)
    if request.method == "POST":
        action = request.POST.get("action")
        if tx.status != Transaction.Status.PENDING:
            return _result(request, tx, redirect=None, late=True, status=409)
        if kiosk or action not in (PAY, DECLINE):
            return render(request, "paycollect_sandbox/payment.html", _payment_context(tx), status=400)
        try:
            tx = services.complete(tx.uuid, services.SUCCESSFUL if action == PAY else services.FAILED)
        except ApiError:
            # Completed meanwhile (control API, another tab): show what happened.
            refreshed = _transaction(tx.uuid)
            assert refreshed is not None
            return _result(request, refreshed, redirect=None, late=True, status=409)
        return _finish(request, tx)
    if tx.status != Transaction.Status.PENDING:
        return _result(request, tx, redirect=services.redirect_target(tx))
    return render(request, "paycollect_sandbox/payment.html", _payment_context(tx))


def _payment_context(tx: Transaction) -> dict[str, Any]:
    fees = None
    if tx.original_amount is not None and tx.direct_order_id is None and tx.total_amount > tx.original_amount:
        fees = tx.total_amount - tx.original_amount
    totals = services.order_totals(tx.direct_order) if tx.direct_order is not None else None
    return {
        "tx": tx,
        "method": method_label(tx.pay_using),
        "payment_for": PAYMENT_FOR_LABELS.get(tx.payment_for, tx.payment_for),
        "kiosk": services.is_kiosk(tx.pay_using),
        "fees": fees,
        "totals": totals,
        "promocode_off": _promocode_off(tx.promocode, tx.currency) if tx.promocode is not None else "",
        "custom_fields": sorted((tx.custom_fields_json or {}).items()),
    }


def _promocode_off(promo: Promocode, currency: str) -> str:
    """What a promocode takes off by its rule, "10%" or "25.00 EGP" (the amount Pay charges has it off)."""
    if promo.kind == Promocode.Kind.PERCENTAGE:
        return f"{promo.value.normalize():f}%"
    return f"{money.text(promo.value)} {promo.currency or currency}"


# --- the direct order's payment link -------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def order_page(request: HttpRequest, payment_id: str) -> HttpResponse:
    order = DirectOrder.objects.select_related("community").filter(payment_id=payment_id).first()
    if order is None:
        return _not_found(request, gettext("Unknown direct order"))
    methods = [str(m) for m in order.payment_methods]
    context: dict[str, Any] = {
        "order": order,
        "totals": services.order_totals(order),
        "methods": [(method, method_label(method)) for method in methods],
        "paid": services.order_is_paid(order),
        "fields": _field_rows(order, {}),
        "errors": [],
        "selected_method": methods[0] if methods else "",
    }
    if request.method == "GET" or context["paid"]:
        return render(
            request, "paycollect_sandbox/order.html", context, status=200 if request.method == "GET" else 409
        )
    action = request.POST.get("action")
    method = request.POST.get("pay_using", "")
    answers, errors = _read_answers(order, request.POST, strict=action == PAY)
    if method not in methods:
        errors.append(gettext("Choose a payment method."))
    if action not in (PAY, DECLINE):
        errors.append(gettext("Choose Pay or Decline."))
    if errors:
        context.update(fields=_field_rows(order, request.POST), errors=errors, selected_method=method)
        return render(request, "paycollect_sandbox/order.html", context, status=400)
    try:
        tx = services.start_order_payment(order, method, answers)
        if action == PAY and services.is_kiosk(method):
            # The kiosk page shows the bill reference and waits for _control/.../complete.
            return HttpResponseRedirect(reverse("paycollect_sandbox:payment_page", args=[tx.uuid]))
        tx = services.complete(tx.uuid, services.SUCCESSFUL if action == PAY else services.FAILED)
    except ApiError as exc:
        messages = [m for item in exc.errors for value in item.values() for m in value] or [exc.message]
        context.update(errors=messages, paid=services.order_is_paid(order))
        return render(request, "paycollect_sandbox/order.html", context, status=409)
    return _finish(request, tx)


def _field_rows(order: DirectOrder, posted: Any) -> list[dict[str, Any]]:
    rows = []
    for index, definition in enumerate(order.custom_fields):
        name = f"cf_{index}"
        choices = [c for c in (definition.get("field_choices") or "").split(",") if c]
        rows.append(
            {
                "name": name,
                "label": definition["field_label"],
                "type": definition["field_type"],
                "required": bool(definition.get("required")),
                "choices": choices,
                "value": posted.get(name, "") if posted else "",
            }
        )
    return rows


def _read_answers(order: DirectOrder, posted: Any, strict: bool) -> tuple[dict[str, Any], list[str]]:
    """Typed answers keyed by label (NUMBER -> Decimal, CHECKBOX -> bool); a decline skips the checks."""
    answers: dict[str, Any] = {}
    errors: list[str] = []
    for index, definition in enumerate(order.custom_fields):
        label = definition["field_label"]
        kind = definition["field_type"]
        required = bool(definition.get("required"))
        raw = str(posted.get(f"cf_{index}", "")).strip()
        value: Any
        if kind == "CHECKBOX":
            value = raw in ("on", "true", "1")
            if strict and required and not value:
                errors.append(gettext("%(label)s: must be checked.") % {"label": label})
        elif kind == "NUMBER":
            value = None
            if raw:
                try:
                    value = Decimal(raw)
                    if not value.is_finite():
                        raise InvalidOperation
                except InvalidOperation:
                    value = None
                    if strict:
                        errors.append(gettext("%(label)s: enter a number.") % {"label": label})
            elif strict and required:
                errors.append(gettext("%(label)s: required.") % {"label": label})
        elif kind == "DROPDOWNLIST":
            choices = [c for c in (definition.get("field_choices") or "").split(",") if c]
            value = raw
            if raw and raw not in choices and strict:
                errors.append(
                    gettext("%(label)s: choose one of %(choices)s.")
                    % {"label": label, "choices": get_text_list(choices)}
                )
            elif strict and required and not raw:
                errors.append(gettext("%(label)s: required.") % {"label": label})
        else:
            value = raw
            if strict and required and not raw:
                errors.append(gettext("%(label)s: required.") % {"label": label})
        answers[label] = value
    return answers, errors


# --- the sandbox dashboard --------------------------------------------------------------------------

View = Callable[..., HttpResponse]


def _dashboard_on() -> None:
    if not dashboard_on():
        raise Http404(
            "The sandbox dashboard is off (PAYCOLLECT_SANDBOX['DASHBOARD']; on with DEBUG by default)."
        )


def sees_secrets(request: HttpRequest) -> bool:
    """Whether the visitor sees the sandbox's secrets in full: API keys, basic passwords, callback URLs
    (whose path or query holds the merchant's token). Staff only, whatever DEBUG says."""
    user = getattr(request, "user", None)  # no user at all in the standalone runner: nobody is staff
    return bool(user is not None and user.is_active and user.is_staff)


def dashboard_page(view: View) -> View:
    """Who may use a dashboard page: staff; anyone with DEBUG on or with ``DASHBOARD_PUBLIC`` (the runner),
    secrets hidden from them. Every other visitor gets a 403 page that says to log in as staff."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        _dashboard_on()
        if sees_secrets(request) or settings.DEBUG or get_settings().dashboard_public:
            return view(request, *args, **kwargs)
        return render(
            request, "paycollect_sandbox/staff_only.html", {"login_url": _login_url(request)}, status=403
        )

    return guarded


def _login_url(request: HttpRequest) -> str:
    """The admin's login page, back to this page afterwards (when GET), or nothing without the admin."""
    try:
        login = reverse("admin:login")
    except NoReverseMatch:
        return ""
    if request.method != "GET":
        return login
    return f"{login}?{urlencode({'next': request.get_full_path()})}"


@require_http_methods(["GET"])
@dashboard_page
def dashboard(request: HttpRequest) -> HttpResponse:
    saved = request.GET.get("saved", "")
    return _render_dashboard(request, saved=int(saved) if saved.isdigit() else None)


def _render_dashboard(
    request: HttpRequest, *, saved: int | None = None, errors: dict[int, list[str]] | None = None
) -> HttpResponse:
    secrets = sees_secrets(request)
    shown_url = redact_url if secrets else mask_url
    communities = [
        {
            "community": community,
            "api_payments": [
                {"api_payment": p, "callback_url": p.callback_url if secrets else mask_url(p.callback_url)}
                for p in community.api_payments.all()
            ],
        }
        for community in Community.objects.order_by("id").prefetch_related("api_payments")
    ]
    context = {
        "communities": communities,
        "secrets": secrets,
        "transactions": Transaction.objects.select_related("community", "series").order_by("-id")[:50],
        "deliveries": [
            {"delivery": d, "url": shown_url(d.url)}
            for d in CallbackDelivery.objects.select_related("transaction").order_by("-id")[:50]
        ],
        "now": now(),
        "control_api": get_settings().control_api,
        "saved": saved,
        "errors": errors or {},
    }
    return render(request, "paycollect_sandbox/dashboard.html", context, status=400 if errors else 200)


@require_http_methods(["POST"])
@dashboard_page
def api_payment_settings(request: HttpRequest, pk: int) -> HttpResponse:
    """The dashboard's form for an API payment's redirect and callback URLs (the spec's dashboard setting)."""
    urls = {name: request.POST.get(name, "").strip() for name in ("redirect_url", "callback_url")}
    with writing():
        api_payment = ApiPayment.objects.filter(pk=pk).first()
        if api_payment is None:
            return _not_found(request, gettext("Unknown API payment"))
        if urls["callback_url"] and urls["callback_url"] == mask_url(api_payment.callback_url):
            # The masked URL the form showed a visitor who is not staff came back unchanged: keep the URL.
            urls["callback_url"] = api_payment.callback_url
        problems = [
            gettext("%(field)s: enter an http:// or https:// address, or nothing.") % {"field": label}
            for name, label in (("redirect_url", _("Redirect URL")), ("callback_url", _("Callback URL")))
            if urls[name] and not _is_web_url(urls[name])
        ]
        if problems:
            return _render_dashboard(request, errors={api_payment.pk: problems})
        api_payment.redirect_url = urls["redirect_url"]
        api_payment.callback_url = urls["callback_url"]
        api_payment.requires_member_id = request.POST.get("requires_member_id") == "on"
        api_payment.save()
    # Back to the dashboard, which says what was saved, at the form that saved it.
    target = reverse("paycollect_sandbox:dashboard")
    return HttpResponseRedirect(f"{target}?saved={api_payment.pk}#api-payment-{api_payment.pk}")


def _is_web_url(value: str) -> bool:
    try:
        URLValidator(schemes=["http", "https"])(value)
    except ValidationError:
        return False
    return True


@require_http_methods(["GET"])
@dashboard_page
def outbox(request: HttpRequest) -> HttpResponse:
    messages = [
        {"message": message, "channel": CHANNEL_LABELS.get(message.channel, message.channel)}
        for message in OutboxMessage.objects.select_related("direct_order").order_by("-id")[:200]
    ]
    return render(request, "paycollect_sandbox/outbox.html", {"messages": messages})


@require_http_methods(["GET"])
@dashboard_page
def journal_page(request: HttpRequest) -> HttpResponse:
    entries = list(reversed(journal.entries(limit=200)))
    return render(request, "paycollect_sandbox/journal.html", {"entries": entries})


# --- the demo merchant -----------------------------------------------------------------------------------


@require_http_methods(["GET"])
def merchant_return(request: HttpRequest) -> HttpResponse:
    # The customer's browser lands here, whoever they are: it shows only the parameters it arrived with.
    _dashboard_on()
    return render(request, "paycollect_sandbox/merchant_return.html", {"params": sorted(request.GET.items())})


@csrf_exempt
@require_http_methods(["GET", "POST"])
def merchant_callback(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        # The sandbox's own callbacks arrive here without a login, as a merchant's callback URL takes them.
        _dashboard_on()
        with writing():
            MerchantInboxItem.objects.create(
                received_at=timezone.now(), body=request.body.decode("utf-8", errors="replace")[:20000]
            )
        return HttpResponse("ok", content_type="text/plain")
    return _merchant_inbox(request)


@dashboard_page
def _merchant_inbox(request: HttpRequest) -> HttpResponse:
    items = []
    for item in MerchantInboxItem.objects.order_by("-id")[:100]:
        try:
            parsed = loads(item.body)
        except ValueError:
            parsed = item.body
        items.append({"received_at": item.received_at, "body": parsed})
    return render(request, "paycollect_sandbox/merchant_inbox.html", {"items": items})
