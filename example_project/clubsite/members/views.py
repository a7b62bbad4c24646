"""The club's pages. Every payment goes through ``django_paycollect.services``; nothing here calls the
service's client, and nothing here marks a membership paid (the signal receivers do, see receivers.py).

Views that start a payment or create an order are marked ``transaction.non_atomic_requests``: the
service layer refuses to call the service inside a database transaction, where a rollback would
forget what the service did.

The payment app's errors: ``ServiceUnavailable`` tells the member to try again; every other
``ServiceLayerError`` is a refusal whose messages the member reads. A configuration error
(``PayCollectConfigurationError``, an ``ImproperlyConfigured`` outside that contract) is not caught: it is the
site's fault, not the member's, so Django logs it with its traceback and shows the error page.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import requests
from django.apps import apps
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db import transaction
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_POST, require_safe

from django_paycollect import services
from django_paycollect.conf import paycollect_settings
from django_paycollect.exceptions import NotFound, PaymentRefused, ServiceLayerError, ServiceUnavailable
from django_paycollect.forms import BillingDataForm, refusal_errors
from django_paycollect.intake import returns
from django_paycollect.intake.parsing import service_id_of
from django_paycollect.models import DirectOrder, Transaction
from django_paycollect.problem_messages import PROMOCODE_UNKNOWN

from .forms import InvoiceForm, JoinForm
from .models import CURRENCY, PRICES, RENEWAL_DAYS, ZERO, Billing, Membership, PayUsing, Plan, price_of
from .receivers import membership_of

logger = logging.getLogger("clubsite.members")

#: Memberships started in this browser (their public ids), so their pages open without an account.
SESSION_KEY = "clubsite_memberships"
#: Demo: the renewal counts this browser waits for after moving the sandbox clock, by membership.
RENEWING_KEY = "clubsite_renewing"
#: How often the status pages ask for news, and the no-script reload.
POLL_MS = 1500
REFRESH_SECONDS = 3


# --- helpers ------------------------------------------------------------------------------------------


def _remember(request: HttpRequest, membership: Membership) -> None:
    known = list(request.session.get(SESSION_KEY, []))
    if str(membership.public_id) not in known:
        request.session[SESSION_KEY] = [*known[-19:], str(membership.public_id)]


def _may_see(request: HttpRequest, membership: Membership) -> bool:
    """Whether this visitor may see the membership: this browser started it, it is the signed-in user's, or
    a staff member asks. Never because of its e-mail, which anyone can type on the join form."""
    return (
        request.user.is_staff
        or str(membership.public_id) in request.session.get(SESSION_KEY, [])
        or (membership.user_id is not None and membership.user_id == request.user.pk)
    )


def _owned_membership(request: HttpRequest, public_id: UUID) -> Membership:
    """The membership, if this visitor may see it (:func:`_may_see`); otherwise 404."""
    membership = get_object_or_404(Membership, public_id=public_id)
    if not _may_see(request, membership):
        raise Http404("No such membership.")
    return membership


def _refusal_messages(error: ServiceLayerError) -> list[str]:
    """The refusal's messages, without the field paths (a customer reads them)."""
    return list(error.messages)


def _refuses_billing_data(error: ServiceLayerError) -> bool:
    return hasattr(error, "error_dict") and any(
        path.startswith("billing_data.") for path in error.message_dict
    )


def _add_refusal(form: Any, error: ServiceLayerError, field_map: dict[str, str] | None = None) -> None:
    """Put the service's field errors on the form's fields where they match, the rest on top."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, list(error.messages))
        return
    for path, items in error.message_dict.items():
        name = (field_map or {}).get(path, path)
        if name in form.fields:
            form.add_error(name, items)
        else:
            form.add_error(None, [f"{path}: {message}" for message in items])


def sandbox_mounted() -> bool:
    return apps.is_installed("django_paycollect.sandbox")


def sandbox_control_on() -> bool:
    """Demo only: the mounted sandbox's control API answers (it stands in for the kiosk network and the
    service's clock). Off with DEBUG off unless the settings ask for it."""
    return sandbox_mounted() and bool(settings.PAYCOLLECT_SANDBOX.get("CONTROL_API"))


def _sandbox_control(
    request: HttpRequest, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """POST ``body`` (GET without one) to the mounted sandbox's control API; its answer's data, or None (and a
    message) when it answers an error."""
    url = f"{paycollect_settings.BASE_URL}/_control/{path}"
    answer = requests.get(url, timeout=30) if body is None else requests.post(url, json=body, timeout=30)
    if answer.status_code >= 300:
        messages.error(request, gettext("The sandbox answered %(status)s.") % {"status": answer.status_code})
        return None
    data: dict[str, Any] = answer.json().get("data") or {}
    return data


def site_url(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


# --- home and checkout -------------------------------------------------------------------------------

FAVICON = Path(__file__).resolve().parent / "static" / "members" / "favicon.svg"


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for on every page without an icon of its own (the payment app's
    and the sandbox's pages, the admin): the club's icon, served whether DEBUG is on or off."""
    return HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")


@require_safe
@login_required(login_url="members:login")
@require_safe
def checkout(request: HttpRequest) -> HttpResponse:
    """The single-page checkout: everything after this page is the REST API, called by checkout.js."""
    context = {
        "plans": list(Plan),
        "billings": list(Billing),
        "methods": list(PayUsing),
        "api_root": reverse("paycollect_api:payment-list").removesuffix("payments/"),
        "poll_ms": POLL_MS,
    }
    return render(request, "members/checkout.html", context)


def home(request: HttpRequest) -> HttpResponse:
    mine = Membership.objects.filter(public_id__in=request.session.get(SESSION_KEY, []))
    if request.user.is_authenticated:
        mine = mine | Membership.objects.filter(user=request.user)
    plans = [(plan, PRICES[plan]) for plan in Plan]
    return render(request, "members/home.html", {"plans": plans, "mine": mine, "currency": CURRENCY})


def join(request: HttpRequest) -> HttpResponse:
    """The checkout form: plan, billing, method, promocode and the payer's details, checked with the payment
    app's rules first. Creates the membership (or updates this browser's unpaid one); no payment yet."""
    initial = {"plan": request.GET.get("plan")} if request.GET.get("plan") in Plan.values else {}
    form = JoinForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        membership = _new_membership(request, form)
        if membership is not None:
            _remember(request, membership)
            return redirect(membership)
    prices = [(Plan(plan).label, by[Billing.YEARLY], by[Billing.MONTHLY]) for plan, by in PRICES.items()]
    return render(request, "members/join.html", {"form": form, "prices": prices, "currency": CURRENCY})


def _new_membership(request: HttpRequest, form: JoinForm) -> Membership | None:
    data = form.cleaned_data
    price = price_of(data["plan"], data["billing"])
    discount, promocode_id = ZERO, None
    if data["promocode"]:
        try:
            checked = services.validate_promocode(
                data["promocode"], amount=price, phone_number=data["phone_number"]
            )
        except ServiceUnavailable:
            logger.exception("promocode %s could not be checked", data["promocode"])
            form.add_error(
                "promocode", gettext("The promocode could not be checked now. Try again, or leave it empty.")
            )
            return None
        except NotFound:  # the service does not know it at all
            form.add_error("promocode", PROMOCODE_UNKNOWN)
            return None
        except PaymentRefused as error:
            # Each problem once, on its field, in the app's words: the phone the service checks the promocode
            # against on the phone's field, every other refusal (unknown, expired, not for this amount) on
            # the promocode's.
            for path, texts in refusal_errors(error).items():
                form.add_error("phone_number" if path == "phone_number" else "promocode", list(texts))
            return None
        discount = min(checked.value or ZERO, price)
        promocode_id = checked.promocode_id
    amount = price - discount
    total: Decimal | None = None
    if paycollect_settings.FEES_IN_BILL:
        # The service's fees are added to the bill: show them before the member pays.
        try:
            total = services.prepare_amount(amount, currency=CURRENCY, payment_method=data["pay_using"])
        except ServiceUnavailable:
            logger.exception("fees could not be computed")
            form.add_error(
                None, gettext("The payment service cannot be reached now. Please try again in a minute.")
            )
            return None
        except ServiceLayerError as error:
            _add_refusal(form, error)
            return None
    fields = {
        "plan": data["plan"],
        "billing": data["billing"],
        "pay_using": data["pay_using"],
        "name": data["name"],
        "email": data["email"],
        "phone": data["phone_number"],
        "price": price,
        "promocode": data["promocode"] if promocode_id else "",
        "promocode_id": promocode_id,
        "discount": discount,
        "amount": amount,
        "total_with_fees": total,
    }
    if request.user.is_authenticated:
        # Tied to the account that joined (and to this browser, by the session): never to the e-mail typed.
        fields["user"] = request.user
    # The same e-mail and plan sent again from this browser (the back button, a second try) updates the
    # unpaid membership it started, so no forgotten memberships pile up.
    mine = Membership.objects.filter(
        public_id__in=request.session.get(SESSION_KEY, []), email__iexact=data["email"], plan=data["plan"]
    )
    unpaid = next((membership for membership in mine if _changeable(membership)), None)
    if unpaid is not None:
        Membership.objects.filter(pk=unpaid.pk).update(**fields)
        unpaid.refresh_from_db()
        return unpaid
    return Membership.objects.create(**fields)


def _changeable(membership: Membership) -> bool:
    """Whether the membership's details may still change: not paid, and no payment under way."""
    if membership.status not in (Membership.NEW, Membership.FAILED):
        return False
    payment = membership.latest_payment()
    return payment is None or payment.status not in Transaction.OPEN_STATUSES


def details(request: HttpRequest, public_id: UUID) -> HttpResponse:
    """Correct the payer's name, e-mail or mobile of an unpaid membership (before paying, or after the
    payment service refused them)."""
    membership = _owned_membership(request, public_id)
    if not _changeable(membership):
        messages.info(
            request, gettext("These details can no longer change: the payment is under way or done.")
        )
        return redirect(membership)
    form = BillingDataForm(request.POST or None, initial=_billing_initial(membership))
    if request.method == "POST" and form.is_valid():
        data = form.billing_data()
        Membership.objects.filter(pk=membership.pk).update(
            name=data["name"], email=data["email"], phone=data["phone_number"]
        )
        messages.success(request, gettext("Your details are updated. Check your order, then pay."))
        return redirect(membership)
    return _details_page(request, membership, form)


def _billing_initial(membership: Membership) -> dict[str, str]:
    return {"name": membership.name, "email": membership.email, "phone_number": membership.phone}


def _details_page(request: HttpRequest, membership: Membership, form: BillingDataForm) -> HttpResponse:
    return render(request, "members/details.html", {"membership": membership, "form": form})


@require_POST
@transaction.non_atomic_requests
def pay(request: HttpRequest, public_id: UUID) -> HttpResponse:
    """Start (or resume) the membership's payment, then send the member to the payment page.

    The merchant reference is the membership's: a double click, a reload or a second tab gets the
    payment already open, never a second one.
    """
    membership = _owned_membership(request, public_id)
    if membership.status == Membership.PAID:
        messages.info(request, gettext("This membership is already paid."))
        return redirect(membership)
    try:
        txn = services.start_payment(
            amount=membership.amount,
            currency=CURRENCY,
            billing_data={
                "name": membership.name,
                "email": membership.email,
                "phone_number": membership.phone,
            },
            merchant_reference=membership.reference,
            merchant_object=membership,
            pay_using=membership.pay_using,
            recurring=membership.recurring_terms(),
            promocode_id=membership.promocode_id,
            # Shown to the member on the payment page: in the member's language.
            custom_fields=[
                {"field_label": gettext("Plan"), "field_value": membership.get_plan_display()},
                {"field_label": gettext("Membership"), "field_value": membership.reference},
            ],
        )
    except ServiceUnavailable:
        logger.exception("%s: the payment could not be started", membership.reference)
        messages.error(
            request, gettext("The payment service cannot be reached now. Nothing was charged; try again.")
        )
        return redirect(membership)
    except ServiceLayerError as error:
        if _refuses_billing_data(error):
            # The payment service refused the payer's details: show them, with its words on each field.
            form = BillingDataForm(_billing_initial(membership))
            form.is_valid()
            form.add_service_errors(error)
            messages.error(
                request, gettext("The payment service did not accept these details: please correct them.")
            )
            return _details_page(request, membership, form)
        for message in _refusal_messages(error):
            messages.error(
                request, gettext("The payment could not be started: %(reason)s") % {"reason": message}
            )
        return redirect(membership)
    Membership.objects.filter(pk=membership.pk, status__in=[Membership.NEW, Membership.FAILED]).update(
        status=Membership.PENDING
    )
    if txn.outcome_unknown and not txn.iframe_url:
        messages.warning(
            request,
            gettext(
                "We could not confirm that your payment was started. Please do not pay again: "
                "this page shows the payment as soon as the service confirms it."
            ),
        )
        return redirect(membership)
    if membership.pay_using == PayUsing.CARD and txn.iframe_url and txn.status == Transaction.PENDING:
        return HttpResponseRedirect(txn.iframe_url)
    return redirect(membership)  # kiosk: the page shows the bill reference


@never_cache
@require_safe
def membership_page(request: HttpRequest, public_id: UUID) -> HttpResponse:
    membership = _owned_membership(request, public_id)
    return render(request, "members/membership.html", _membership_context(request, membership))


@never_cache
@require_safe
def membership_status(request: HttpRequest, public_id: UUID) -> JsonResponse:
    """What the page's script polls: the status and the re-rendered status panel."""
    membership = _owned_membership(request, public_id)
    context = _membership_context(request, membership)
    html = render_to_string("members/_membership_status.html", context, request=request)
    final = membership.is_final and not context["renewing"]
    return JsonResponse({"status": membership.status, "final": final, "html": html})


def _renewing(request: HttpRequest, membership: Membership) -> bool:
    """Whether this browser moved the sandbox clock for the membership and waits for the renewal."""
    expected = request.session.get(RENEWING_KEY, {}).get(str(membership.public_id), 0)
    return bool(membership.renewals < expected)


def _membership_context(request: HttpRequest, membership: Membership) -> dict[str, Any]:
    payment = membership.latest_payment()
    changes = list(payment.status_changes.all()) if payment is not None else []
    renewing = _renewing(request, membership)
    return {
        "membership": membership,
        "payment": payment,
        "changes": changes,
        "payments_count": membership.payments().count(),
        "currency": CURRENCY,
        "monthly": membership.billing == Billing.MONTHLY,
        "live": membership.status == Membership.PENDING or renewing,
        "renewing": renewing,
        "can_change_details": _changeable(membership),
        "status_url": reverse("members:membership_status", args=[membership.public_id]),
        "poll_ms": POLL_MS,
        "refresh_seconds": REFRESH_SECONDS,
        "can_simulate_kiosk": (
            sandbox_control_on()
            and payment is not None
            and payment.pay_using == PayUsing.KIOSK
            and payment.status == Transaction.PENDING
        ),
        "can_move_clock": _can_move_clock(membership),
        "renewal_days": RENEWAL_DAYS,
    }


def _can_move_clock(membership: Membership) -> bool:
    """Demo only: a paid monthly membership whose renewals still run, with the sandbox's control API on."""
    return (
        sandbox_control_on()
        and membership.monthly
        and membership.status == Membership.PAID
        and membership.renewal_cancelled_at is None
    )


@require_POST
def simulate_kiosk_payment(request: HttpRequest, public_id: UUID) -> HttpResponse:
    """Demo only: tell the sandbox the bill was paid at a kiosk (what a real kiosk network does).

    The site then hears of it the way it would in production: the service's callback.
    """
    membership = _owned_membership(request, public_id)
    payment = membership.latest_payment()
    if not sandbox_control_on() or payment is None:
        raise Http404("Only with the sandbox.")
    if payment.uuid and payment.status == Transaction.PENDING:
        outcome = "FAILED" if request.POST.get("outcome") == "FAILED" else "SUCCESSFUL"
        _sandbox_control(request, f"transactions/{payment.uuid}/complete", {"outcome": outcome})
    return redirect(membership)


@require_POST
def move_sandbox_clock(request: HttpRequest, public_id: UUID) -> HttpResponse:
    """Demo only: move the sandbox's clock a renewal period forward, as time would.

    The service charges a recurring series by itself when a renewal falls due; the sandbox does it when its
    clock passes the date. The site hears of the charge the way it would in production: the renewal's
    callback, verified by fetching it, then the app's recurring_charge_succeeded signal (receivers.py). The
    page polls until the renewal shows.
    """
    membership = _owned_membership(request, public_id)
    first = membership.payments().filter(status=Transaction.SUCCESSFUL).first()
    if not _can_move_clock(membership) or first is None:
        raise Http404("Only with the sandbox, for a paid monthly membership.")
    moved = _sandbox_control(request, "clock/advance", {"days": RENEWAL_DAYS})
    if moved is None:
        return redirect(membership)
    # Every series that fell due was charged; this membership's renewals are those of its first payment.
    renewals = 0
    for uuid in moved.get("renewals") or []:
        charged = _sandbox_control(request, f"transactions/{uuid}") or {}
        recurring = (charged.get("transaction") or {}).get("recurring") or {}
        renewals += recurring.get("parent_transaction") == first.uuid
    if renewals:
        waiting = dict(request.session.get(RENEWING_KEY, {}))
        waiting[str(membership.public_id)] = membership.renewals + renewals
        request.session[RENEWING_KEY] = waiting
    messages.info(
        request,
        ngettext(
            "The sandbox clock moved %(days)s days forward: the service charged %(count)s renewal of this "
            "membership.",
            "The sandbox clock moved %(days)s days forward: the service charged %(count)s renewals of this "
            "membership.",
            renewals,
        )
        % {"days": RENEWAL_DAYS, "count": renewals},
    )
    return redirect(membership)


# --- where the payment app sends the customer back ------------------------------------------------------


@never_cache
@require_safe
def payment_success(request: HttpRequest) -> HttpResponse:
    return _payment_result(request, "members/payment_success.html")


@never_cache
@require_safe
def payment_failure(request: HttpRequest) -> HttpResponse:
    return _payment_result(request, "members/payment_failure.html")


def _payment_result(request: HttpRequest, template: str) -> HttpResponse:
    """PAYCOLLECT's SUCCESS_URL and FAILURE_URL. The uuid in the query (or the service's numeric id, for a
    return that carried only that) is the visitor's claim: details are shown only for a membership started
    in this browser (or to staff), never by uuid or id alone. Anyone may open either URL, so each says what
    it says only of a transaction in that state (as the service said): the success page thanks for a
    SUCCESSFUL one, the failure page says the payment failed only for a FAILED one; otherwise both say the
    payment is not confirmed yet, never that it went through or that nothing was charged. The status is all
    they tell of a transaction the visitor does not own: what the payment app's return tells too."""
    if any("\x00" in name or "\x00" in value for name, values in request.GET.lists() for value in values):
        # PostgreSQL takes no text holding NUL as a query's value: the lookup below would be a 500.
        return HttpResponseBadRequest(
            gettext(
                "This link holds a NUL character, which no payment's link has: check the link you followed."
            ),
            content_type="text/plain; charset=utf-8",
        )
    uuid = request.GET.get("transaction_uuid", "")
    service_id = service_id_of(request.GET.get("transaction_id"))
    if not uuid and service_id is not None:
        # The app's one reading of a numeric id: the uuid of the one transaction of ours it names (none when
        # several environments stored the same id), as its return view resolves it.
        uuid = returns.uuid_for_service_id(service_id) or ""
    txn = Transaction.objects.filter(uuid=uuid).first() if uuid else None
    membership = membership_of(txn)
    if membership is not None and not _may_see(request, membership):
        membership = None
    order = txn.direct_order if txn is not None and request.user.is_staff else None
    context: dict[str, Any] = {
        "membership": membership,
        "order": order,
        "currency": CURRENCY,
        "failed": txn is not None and txn.status == Transaction.FAILED,
        "paid": txn is not None and txn.status == Transaction.SUCCESSFUL,
    }
    if membership is not None:
        context.update(_membership_context(request, membership))
    return render(request, template, context)


# --- invoices (direct orders), for staff ---------------------------------------------------------------


@staff_member_required
@require_safe
def invoice_list(request: HttpRequest) -> HttpResponse:
    orders = DirectOrder.objects.order_by("-created_at")[:50]
    return render(request, "members/invoice_list.html", {"orders": [(o, _paid_payment(o)) for o in orders]})


@staff_member_required
@transaction.non_atomic_requests
def invoice_new(request: HttpRequest) -> HttpResponse:
    form = InvoiceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        reference = f"invoice-{form.cleaned_data['form_token']}"
        existing = DirectOrder.objects.filter(merchant_reference=reference).first()
        if existing is not None:
            return redirect("members:invoice", pk=existing.pk)  # a second click
        if not cache.add(f"clubsite:{reference}", True, timeout=600):
            messages.info(request, gettext("This invoice is being sent already."))
            return redirect("members:invoices")
        order = _send_invoice(request, form, reference)
        if order is not None:
            return redirect("members:invoice", pk=order.pk)
        cache.delete(f"clubsite:{reference}")
    return render(request, "members/invoice_new.html", {"form": form, "currency": CURRENCY})


def _send_invoice(request: HttpRequest, form: InvoiceForm, reference: str) -> DirectOrder | None:
    data = form.cleaned_data
    token = paycollect_settings.CALLBACK_TOKENS[0]
    try:
        order = services.create_direct_order(
            user=request.user,
            name=data["name"],
            amount=data["amount"],
            currency=CURRENCY,
            payment_methods=data["payment_methods"],
            customer_name=data["customer_name"],
            customer_email=data["customer_email"],
            customer_mobile=data["customer_mobile"],
            customer_title=data["customer_title"],
            discount_amount=data["discount_amount"],
            vat_percentage=data["vat_percentage"],
            order_description=data["order_description"],
            custom_fields=form.custom_field_definitions(),
            tags=form.tag_list(),
            send_by_email=data["send_by_email"],
            send_by_sms=data["send_by_sms"],
            # Where the service sends the customer and its callback: the payment app's views.
            redirect_url=site_url(reverse("paycollect:return")),
            callback_url=site_url(reverse("paycollect:callback", args=[token])),
            merchant_reference=reference,
        )
    except ServiceUnavailable:
        logger.exception("invoice %s could not be sent", reference)
        form.add_error(
            None, gettext("The payment service cannot be reached now. Nothing was sent; try again.")
        )
        return None
    except ServiceLayerError as error:
        _add_refusal(form, error)
        return None
    if order.state == DirectOrder.UNKNOWN:
        messages.warning(
            request,
            gettext(
                "The service did not answer: the invoice may or may not have been created. "
                "Do not send it again; check the service's dashboard."
            ),
        )
    return order


def _paid_payment(order: DirectOrder) -> Transaction | None:
    return order.transactions.filter(status=Transaction.SUCCESSFUL).first()


def _answers(txn: Transaction) -> list[tuple[str, str]]:
    """The customer's answers to the order's custom fields, as the service reported them."""
    fields: Any = txn.custom_fields or {}
    if isinstance(fields, list):  # [{"field_label": ..., "field_value": ...}]
        fields = {
            item.get("field_label"): item.get("field_value") for item in fields if isinstance(item, dict)
        }
    shown = {True: gettext("yes"), False: gettext("no"), None: "—"}
    return [
        (str(label), shown[value] if isinstance(value, bool) or value is None else str(value))
        for label, value in fields.items()
    ]


def _invoice_context(order: DirectOrder) -> dict[str, Any]:
    paid = _paid_payment(order)
    return {
        "order": order,
        "paid": paid,
        "payments": [(txn, _answers(txn)) for txn in order.transactions.order_by("-created_at")],
        "outbox_url": reverse("paycollect_sandbox:outbox") if sandbox_mounted() else "",
        "live": order.state == DirectOrder.CREATED and paid is None,
        "status_url": reverse("members:invoice_status", args=[order.pk]),
        "poll_ms": POLL_MS,
        "refresh_seconds": REFRESH_SECONDS,
        "currency": CURRENCY,
    }


@staff_member_required
@never_cache
@require_safe
def invoice_page(request: HttpRequest, pk: int) -> HttpResponse:
    order = get_object_or_404(DirectOrder, pk=pk)
    return render(request, "members/invoice.html", _invoice_context(order))


@staff_member_required
@never_cache
@require_safe
def invoice_status(request: HttpRequest, pk: int) -> JsonResponse:
    order = get_object_or_404(DirectOrder, pk=pk)
    context = _invoice_context(order)
    html = render_to_string("members/_invoice_status.html", context, request=request)
    return JsonResponse({"paid": context["paid"] is not None, "final": not context["live"], "html": html})
