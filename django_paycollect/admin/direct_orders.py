"""Direct orders: their payments, and the add form that creates one through the service layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import flatten_fieldsets
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import services
from ..amounts import amount_text
from ..exceptions import PaymentRefused
from ..forms import refusal_errors
from ..models import DirectOrder, Transaction
from ..secrecy import scrub
from ..urls import service_urls
from .common import (
    REPORTED_ERRORS,
    PayCollectAdmin,
    ReadOnlyInline,
    amount_display,
    change_url,
    error_text,
    json_display,
)
from .filters import CommunityFilter
from .forms import DirectOrderForm


def external_link(url: str) -> SafeString | str:
    """A link the service gave: only http(s) becomes clickable, so no javascript: URL runs here."""
    if urlsplit(url).scheme not in ("http", "https"):
        return url
    return format_html('<a href="{}" target="_blank" rel="noopener noreferrer">{}</a>', url, url)


class OrderTransactionInline(ReadOnlyInline[Transaction]):
    model = Transaction
    fk_name = "direct_order"
    fields = readonly_fields = ("uuid", "status", "total_amount_shown", "currency", "created_at")
    verbose_name_plural = _("payments of this order")

    total_amount_shown = amount_display(Transaction, "total_amount")


# Sections shared by the direct order's add form and its read-only change page.
_DIRECT_ORDER_CUSTOMER: Any = (
    _("Customer"),
    {
        "fields": (
            "customer_name",
            "customer_email",
            "customer_mobile",
            "customer_title",
            "address",
            "order_description",
        )
    },
)
_DIRECT_ORDER_OPTIONS: Any = (
    (
        _("Recurring"),
        {"fields": ("allow_recurring_payments", "expiry_date", "minimum_days_between_payments", "paid")},
    ),
    (_("Notification"), {"fields": ("send_by_email", "cc_email", "send_by_sms")}),
    (_("URLs"), {"fields": ("redirect_url", "callback_url")}),
)
# On the change page, the callback URL without its token (a secret, never shown).
_DIRECT_ORDER_OPTIONS_SHOWN: Any = (
    *_DIRECT_ORDER_OPTIONS[:-1],
    (_("URLs"), {"fields": ("redirect_url", "callback_url_display")}),
)


@admin.register(DirectOrder)
class DirectOrderAdmin(PayCollectAdmin[DirectOrder]):
    list_display = (
        "name",
        "customer_email",
        "order_amount",
        "state",
        "payment_link_display",
        "payment_id",
        "community_id",
        "created_by",
        "created_at",
    )
    list_select_related = ("created_by",)
    list_filter = ("state", CommunityFilter, ("created_at", admin.DateFieldListFilter))
    sortable_by = ("created_at",)
    search_fields = ("=payment_id", "=merchant_reference", "=customer_email")
    search_help_text = _("An exact order id, merchant reference or customer e-mail.")
    changelist_defer = ("raw", "custom_fields", "tags", "order_description", "service_message")
    inlines = (OrderTransactionInline,)
    fieldsets = (
        (
            _("Order"),
            {
                "fields": (
                    "payment_link_display",
                    "state",
                    "service_message",
                    "payment_id",
                    "community_id",
                    "name",
                    "order_amount",
                    "discount_amount_shown",
                    "vat_percentage_shown",
                    "payment_methods",
                    "merchant_reference",
                    "created_by",
                    "created_at",
                )
            },
        ),
        _DIRECT_ORDER_CUSTOMER,
        (_("Custom fields and tags"), {"fields": ("custom_fields_display", "tags_display")}),
        *_DIRECT_ORDER_OPTIONS_SHOWN,
        (_("As the service answered"), {"fields": ("raw_display",)}),
    )
    readonly_fields = tuple(flatten_fieldsets(fieldsets))
    add_fieldsets: Sequence[tuple[Any, dict[str, Any]]] = (
        (
            None,
            {
                "fields": (
                    "community_id",
                    "name",
                    "amount",
                    "currency",
                    "discount_amount",
                    "vat_percentage",
                    "payment_methods",
                    "merchant_reference",
                )
            },
        ),
        _DIRECT_ORDER_CUSTOMER,
        (_("Custom fields and tags"), {"fields": ("custom_fields", "tags")}),
        *_DIRECT_ORDER_OPTIONS,
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, get_permission_codename("add", self.opts))

    @admin.display(description=_("amount"), ordering="amount")
    def order_amount(self, obj: DirectOrder) -> str:
        return f"{amount_text(obj.amount)} {obj.currency}"

    discount_amount_shown = amount_display(DirectOrder, "discount_amount")
    vat_percentage_shown = amount_display(DirectOrder, "vat_percentage")

    @admin.display(description=_("payment link"))
    def payment_link_display(self, obj: DirectOrder) -> SafeString | str:
        return external_link(obj.payment_link) if obj.payment_link else "—"

    @admin.display(description=_("callback URL"))
    def callback_url_display(self, obj: DirectOrder) -> str:
        return scrub(obj.callback_url) or "—"

    custom_fields_display = json_display("custom_fields", _("custom field definitions"))

    tags_display = json_display("tags", _("tags"))

    raw_display = json_display("raw", _("service's answer"))

    # The order is created on the service, never inside changeform_view's atomic block.
    @transaction.non_atomic_requests
    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = DirectOrderForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            # Left blank, the URLs are this site's return and callback views: the customer comes back to
            # SUCCESS_URL or FAILURE_URL, as after any payment, and the callback is heard.
            fields = form.service_fields()
            fields.update({key: url for key, url in service_urls(request).items() if not fields.get(key)})
            try:
                order = services.create_direct_order(user=request.user, **fields)
            except PaymentRefused as refused:
                form.add_service_errors(refusal_errors(refused))
            except REPORTED_ERRORS as error:
                form.add_error(None, error_text(error))
            else:
                return self._created(request, order)
        return self._render_add_form(request, form, form_url, extra_context)

    def _created(self, request: HttpRequest, order: DirectOrder) -> HttpResponse:
        self.log_addition(request, order, [{"added": {}}])
        if order.state == DirectOrder.CREATED:
            messages.success(
                request,
                format_html(
                    "{} {}",
                    gettext("Direct order created on the service. Payment link:"),
                    external_link(order.payment_link),
                ),
            )
        else:
            messages.warning(
                request,
                gettext(
                    "The service gave no clear answer: the order may exist there. It is recorded with "
                    "its outcome unknown; check the service's dashboard before creating it again."
                ),
            )
        return HttpResponseRedirect(change_url(order))

    def _render_add_form(
        self, request: HttpRequest, form: Form, form_url: str, extra_context: dict[str, Any] | None
    ) -> HttpResponse:
        # The stubs ask for a ModelForm; the admin's helpers use only the Form API.
        admin_form = helpers.AdminForm(form, list(self.add_fieldsets), {}, model_admin=self)  # type: ignore[arg-type]
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Add %(name)s") % {"name": self.opts.verbose_name},
            "subtitle": None,
            "adminform": admin_form,
            "object_id": None,
            "original": None,
            "is_popup": False,
            "to_field": None,
            "media": self.media + admin_form.media,
            "inline_admin_formsets": [],
            "errors": helpers.AdminErrorList(form, []),  # type: ignore[arg-type]
            "preserved_filters": self.get_preserved_filters(request),
            # One button: the view creates the order and then shows it.
            "show_save_and_add_another": False,
            "show_save_and_continue": False,
            **(extra_context or {}),
        }
        return self.render_change_form(request, context, add=True, form_url=form_url)
