"""Transactions: their history, refunds, capture, sync, and the refund page."""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import flatten_fieldsets
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from .. import services
from ..amounts import amount_text
from ..models import RecurringSeries, Refund, Transaction, TransactionStatusChange
from ..models.fields import ZERO
from .changelists import exact_search
from .common import Outcomes, PayCollectAdmin, ReadOnlyInline, amount_display, json_display, link, permission
from .exports import EXPORT_ACTIONS, ExportActions
from .filters import CommunityFilter, CurrencyFilter
from .forms import RefundForm
from .recurring import confirm_cancel_recurring

#: How many transactions one refund page handles (one amount field each).
REFUND_PAGE_LIMIT = 50


def holding_of(txn: Transaction) -> Decimal:
    """Refunds pending or of unknown outcome (needs ``Transaction.objects.with_refundable()``)."""
    # Quantized: SQLite hands sums back as 5 rather than 5.00, and the amounts are compared as text.
    holding: Decimal = getattr(txn, "holding", None) or ZERO
    return Decimal(holding).quantize(ZERO)


class TransactionStatusChangeInline(ReadOnlyInline[TransactionStatusChange]):
    model = TransactionStatusChange
    fields = readonly_fields = ("at", "from_status", "to_status", "service_status", "source")
    show_change_link = False
    verbose_name_plural = _("status changes")


class RefundInline(ReadOnlyInline[Refund]):
    model = Refund
    fields = readonly_fields = (
        "created_at",
        "amount_shown",
        "state",
        "requested_by",
        "service_message",
        "error",
        "completed_at",
    )

    amount_shown = amount_display(Refund, "amount")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Refund]:
        return super().get_queryset(request).select_related("requested_by")


@admin.register(Transaction)
class TransactionAdmin(ExportActions, PayCollectAdmin[Transaction]):
    list_display = (
        "uuid_display",
        "merchant_reference",
        "customer_email",
        "amount",
        "status_display",
        "refunded_amount_shown",
        "capture_state_display",
        "outcome_unknown",
        "created_at",
    )
    list_display_links = ("uuid_display",)
    # Columns with an index that reads them in order (see changelists.ScalableChangeList).
    sortable_by = ("uuid_display", "amount", "created_at")
    list_filter = (
        "status",
        CommunityFilter,
        CurrencyFilter,
        ("created_at", admin.DateFieldListFilter),
        "outcome_unknown",
        "amount_mismatch",
        "status_unrecognised",
        "capture_state",
    )
    # Searched by exact value, so the indexes on these columns serve the search (see get_search_results).
    search_fields = ("uuid", "merchant_reference", "customer_email")
    search_help_text = _("An exact transaction uuid, merchant reference or customer e-mail.")
    changelist_defer = ("raw", "custom_fields", "kiosk_message", "last_error")
    actions = ("sync", "capture", "refund", "cancel_recurring", *EXPORT_ACTIONS)
    export_name = "transactions"
    inlines = (TransactionStatusChangeInline, RefundInline)
    fieldsets = (
        (
            _("Payment"),
            {
                "fields": (
                    "uuid",
                    "service_id",
                    "community_id",
                    "status_display",
                    "service_status",
                    "amount",
                    "original_amount_shown",
                    "total_amount_piasters",
                    "payment_for",
                    "pay_using",
                    "variable_amount_id",
                    "member_id",
                    "created_at",
                    "succeeded_at",
                )
            },
        ),
        (
            _("Customer and merchant"),
            {
                "fields": (
                    "customer_name",
                    "customer_email",
                    "customer_phone",
                    "merchant_reference",
                    "content_type",
                    "object_id",
                )
            },
        ),
        (
            _("After payment"),
            {
                "fields": (
                    "refundable_now",
                    "refunded_amount_shown",
                    "capture_state_display",
                    "captured_amount_shown",
                    "captured_at",
                )
            },
        ),
        (_("Problems"), {"fields": ("outcome_unknown", "amount_mismatch", "last_error")}),
        (
            _("Related"),
            {
                "fields": (
                    "iframe_url",
                    "bill_reference",
                    "kiosk_message",
                    "direct_order_link",
                    "series_link",
                    "parent_uuid",
                    "transaction_order",
                    "api_calls_link",
                )
            },
        ),
        (
            _("As the service last said"),
            {"fields": ("last_synced_at", "raw_display", "custom_fields_display", "updated_at")},
        ),
    )
    readonly_fields = tuple(flatten_fieldsets(fieldsets))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Transaction], search_term: str
    ) -> tuple[QuerySet[Transaction], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        # Exact matches use the indexes; a "contains" search would scan every row. An e-mail address
        # typed in capitals finds the one stored in lower case too.
        return exact_search(queryset, self.search_fields, term, extra=Q(customer_email=term.lower())), False

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        refund = self.admin_site.admin_view(self.refund_view)
        # Before the default URLs: "<path:object_id>/" would take "refund/" otherwise.
        return [path("refund/", refund, name="{}_{}_refund".format(*info)), *super().get_urls()]

    # --- columns

    @admin.display(description=_("transaction uuid"), ordering="uuid")
    def uuid_display(self, obj: Transaction) -> str:
        return obj.uuid or gettext("#%(pk)s (not started)") % {"pk": obj.pk}

    @admin.display(description=_("amount"), ordering="total_amount")
    def amount(self, obj: Transaction) -> str:
        return f"{amount_text(obj.total_amount)} {obj.currency}"

    original_amount_shown = amount_display(Transaction, "original_amount")
    refunded_amount_shown = amount_display(Transaction, "refunded_amount")
    captured_amount_shown = amount_display(Transaction, "captured_amount")

    @admin.display(description=_("status"), ordering="status")
    def status_display(self, obj: Transaction) -> str:
        if obj.status_unrecognised:
            return gettext("%(status)s — ⚠ the service says “%(reported)s” (unrecognised)") % {
                "status": obj.get_status_display(),
                "reported": obj.service_status,
            }
        return str(obj.get_status_display())

    @admin.display(description=_("capture"), ordering="capture_state")
    def capture_state_display(self, obj: Transaction) -> str:
        return str(obj.get_capture_state_display())

    # --- detail

    @admin.display(description=_("still refundable"))
    def refundable_now(self, obj: Transaction) -> str:
        annotated = Transaction.objects.with_refundable().get(pk=obj.pk)
        return f"{amount_text(max(annotated.refundable_amount, ZERO))} {obj.currency}"

    @admin.display(description=_("direct order"))
    def direct_order_link(self, obj: Transaction) -> SafeString | str:
        if obj.direct_order_id is None:
            return "—"
        url = reverse("admin:paycollect_directorder_change", args=[obj.direct_order_id])
        return link(url, gettext("direct order #%(pk)s") % {"pk": obj.direct_order_id})

    @admin.display(description=_("recurring series"))
    def series_link(self, obj: Transaction) -> SafeString | str:
        series_id = obj.series_id
        if series_id is None:
            series_id = (
                RecurringSeries.objects.filter(parent_transaction=obj).values_list("pk", flat=True).first()
            )
        if series_id is None:
            return "—"
        return link(reverse("admin:paycollect_recurringseries_change", args=[series_id]), gettext("series"))

    @admin.display(description=_("API calls"))
    def api_calls_link(self, obj: Transaction) -> SafeString:
        count = obj.api_calls.count()
        url = reverse("admin:paycollect_apicall_changelist") + f"?transaction__id__exact={obj.pk}"
        return link(url, ngettext("%(count)d call", "%(count)d calls", count) % {"count": count})

    raw_display = json_display("raw", _("last fetched object"))
    custom_fields_display = json_display("custom_fields", _("custom fields"))

    # --- actions

    has_sync_permission = permission("sync_transaction")
    has_capture_permission = permission("capture_transaction")
    has_refund_permission = permission("refund_transaction")
    has_cancel_recurring_permission = permission("cancel_recurringseries")

    @admin.action(description=_("Sync from the service"), permissions=["sync"])
    def sync(self, request: HttpRequest, queryset: QuerySet[Transaction]) -> None:
        outcomes = Outcomes(gettext("Sync from the service"))
        for txn in queryset:
            label = str(txn)
            if not txn.uuid:
                outcomes.failed.append((label, gettext("never accepted by the service: nothing to fetch")))
                continue
            synced = outcomes.attempt(label, partial(services.sync_transaction, txn, source="admin"))
            if synced is None:
                continue
            if synced.amount_mismatch:
                outcomes.notes.append(
                    gettext(
                        "%(uuid)s: the service's amount, currency or community differs from ours; "
                        "its status was not applied."
                    )
                    % {"uuid": label}
                )
            if synced.status_unrecognised:
                outcomes.notes.append(
                    gettext("%(uuid)s: the service reports an unrecognised status “%(status)s”.")
                    % {"uuid": label, "status": synced.service_status}
                )
        outcomes.report(request)

    @admin.action(description=_("Capture"), permissions=["capture"])
    def capture(self, request: HttpRequest, queryset: QuerySet[Transaction]) -> None:
        outcomes = Outcomes(gettext("Capture"))
        for txn in queryset:
            outcomes.attempt(
                str(txn),
                partial(services.capture, txn, user=request.user),
                lambda captured: captured.capture_state == Transaction.CAPTURE_UNKNOWN,
            )
        outcomes.report(request)

    @admin.action(description=_("Refund…"), permissions=["refund"])
    def refund(self, request: HttpRequest, queryset: QuerySet[Transaction]) -> HttpResponse | None:
        pks = list(queryset.values_list("pk", flat=True)[: REFUND_PAGE_LIMIT + 1])
        if len(pks) > REFUND_PAGE_LIMIT:
            messages.error(
                request,
                gettext("Refund: select at most %(limit)d transactions at a time.")
                % {"limit": REFUND_PAGE_LIMIT},
            )
            return None
        query = {"ids": ",".join(str(pk) for pk in pks)}
        preserved = self.get_preserved_filters(request)
        url = reverse("admin:paycollect_transaction_refund") + "?" + urlencode(query)
        return HttpResponseRedirect(f"{url}&{preserved}" if preserved else url)

    @admin.action(description=_("Cancel the recurring series…"), permissions=["cancel_recurring"])
    def cancel_recurring(self, request: HttpRequest, queryset: QuerySet[Transaction]) -> HttpResponse | None:
        series: dict[int, RecurringSeries] = {}
        unrelated: list[str] = []
        for txn in queryset.select_related("series", "series_as_parent"):
            found = txn.series or getattr(txn, "series_as_parent", None)
            if found is None:
                unrelated.append(str(txn))
            else:
                series.setdefault(found.pk, found)
        return confirm_cancel_recurring(self, request, queryset, list(series.values()), unrelated)

    # --- the refund page

    @transaction.non_atomic_requests
    def refund_view(self, request: HttpRequest) -> HttpResponse:
        """Asks an amount per transaction (default: what is still refundable), then refunds each."""
        if not (self.has_refund_permission(request) and self.has_view_or_change_permission(request)):
            raise PermissionDenied
        changelist = add_preserved_filters(
            {"preserved_filters": self.get_preserved_filters(request), "opts": self.opts},
            reverse("admin:paycollect_transaction_changelist"),
        )
        ids = [pk for pk in request.GET.get("ids", "").split(",") if pk.strip().isdigit()][:REFUND_PAGE_LIMIT]
        candidates = list(Transaction.objects.filter(pk__in=ids).with_refundable().order_by("pk"))
        if not candidates:
            messages.error(request, gettext("Refund: no transaction selected."))
            return HttpResponseRedirect(changelist)
        refusals = {txn: txn.refund_refusal() for txn in candidates}
        refundable = {txn: txn.refundable_amount for txn in candidates if refusals[txn] is None}
        posted = request.method == "POST"
        form = RefundForm(refundable, request.POST if posted else None)
        if posted and form.is_valid() and self._unchanged_since_shown(request, form, refundable):
            outcomes = Outcomes(gettext("Refund"))
            for txn in candidates:
                refusal = refusals[txn]
                if refusal is not None:
                    outcomes.failed.append((str(txn), str(refusal)))
                    continue
                self._refund_one(request, txn, form.amount_for(txn), refundable[txn], outcomes)
            outcomes.report(request)
            return HttpResponseRedirect(changelist)
        rows = [
            {
                "transaction": txn,
                "holding": holding_of(txn),
                "remainder": refundable.get(txn),
                "field": form[form.field_name(txn)] if txn in refundable else None,
                "refusal": refusals[txn],
            }
            for txn in candidates
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Refund transactions"),
            "opts": self.opts,
            "form": form,
            "rows": rows,
            "can_refund": bool(refundable),
            "changelist_url": changelist,
            "media": self.media + form.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/paycollect/transaction/refund.html", context)

    def _unchanged_since_shown(
        self, request: HttpRequest, form: RefundForm, refundable: dict[Transaction, Decimal]
    ) -> bool:
        """Refuse amounts typed against a remainder that has changed since (second click, other refund)."""
        unchanged = True
        for txn, now in refundable.items():
            shown = request.POST.get(f"shown_{txn.pk}", "")
            if shown != str(now):
                unchanged = False
                form.add_error(
                    form.field_name(txn),
                    gettext(
                        "Since this page was shown, what is still refundable changed from %(shown)s to "
                        "%(now)s %(currency)s (another refund?). Check the amount and submit again."
                    )
                    % {"shown": shown or "?", "now": now, "currency": txn.currency},
                )
        return unchanged

    def _refund_one(
        self, request: HttpRequest, txn: Transaction, amount: Decimal, shown: Decimal, outcomes: Outcomes
    ) -> None:
        # ``shown`` was checked against the form above; the service checks it again under its lock,
        # where two clicks within milliseconds are told apart.
        outcomes.attempt(
            f"{txn} ({amount_text(amount)} {txn.currency})",
            partial(services.refund, txn, amount, user=request.user, expected_refundable=shown),
            lambda done: done.state == Refund.UNKNOWN,
        )
