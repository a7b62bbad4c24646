"""Recurring series: their charges, and cancelling them (also from a transaction's page)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import services
from ..models import RecurringSeries, Transaction
from ..models.orders import RecurringSeriesQuerySet
from ..reporting import exports
from .common import (
    Outcomes,
    PayCollectAdmin,
    ReadOnlyInline,
    amount_display,
    change_url,
    json_display,
    link,
    permission,
)
from .exports import EXPORT_ACTIONS, ExportActions, export_action
from .filters import CommunityFilter


def confirm_cancel_recurring(
    model_admin: PayCollectAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[Any],
    series: Sequence[RecurringSeries],
    unrelated: Sequence[str],
) -> TemplateResponse | None:
    """Like Django's delete confirmation: the series and what stops first; cancel once confirmed.

    ``queryset`` is what was selected in the changelist (transactions or series), posted back as is;
    ``unrelated`` labels selected transactions that belong to no series.
    """
    if request.POST.get("post") == "yes":
        outcomes = Outcomes(gettext("Cancel recurring"))
        outcomes.failed += [(label, gettext("not part of a recurring series")) for label in unrelated]
        for one in series:
            outcomes.attempt(
                one.parent_uuid,
                partial(services.cancel_recurring, one, user=request.user),
                lambda result: result.cancel_state == RecurringSeries.CANCEL_UNKNOWN,
            )
        outcomes.report(request)
        return None  # back to the changelist
    parents = {
        txn.uuid: txn
        for txn in Transaction.objects.filter(uuid__in=[one.parent_uuid for one in series]).only(
            "pk", "uuid", "customer_name", "customer_email", "total_amount", "currency"
        )
    }
    # Each series with what its renewal count reads, in one query (the selection came without it).
    shown = RecurringSeries.objects.with_renewals().in_bulk([one.pk for one in series])
    rows = [
        {
            "series": one,
            "renewals": shown[one.pk].renewal_count if one.pk in shown else one.renewal_count,
            "parent": parents.get(one.parent_uuid),
            "url": change_url(one),
            "refusal": one.cancel_refusal(),
        }
        for one in series
    ]
    cancellable = sum(1 for row in rows if row["refusal"] is None)
    context = {
        **model_admin.admin_site.each_context(request),
        "title": gettext("Cancel recurring series"),
        "subtitle": None,
        "opts": model_admin.opts,
        "rows": rows,
        "unrelated": unrelated,
        "cancellable": cancellable,
        "queryset": queryset,
        "action_name": request.POST.get("action", ""),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "media": model_admin.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/paycollect/cancel_recurring_confirmation.html", context)


class ChargeInline(ReadOnlyInline[Transaction]):
    model = Transaction
    fk_name = "series"
    fields = readonly_fields = (
        "uuid",
        "transaction_order",
        "status",
        "total_amount_shown",
        "currency",
        "created_at",
    )
    verbose_name_plural = _("charges")

    total_amount_shown = amount_display(Transaction, "total_amount")


@admin.register(RecurringSeries)
class RecurringSeriesAdmin(ExportActions, PayCollectAdmin[RecurringSeries]):
    list_display = (
        "parent_uuid",
        "community_id",
        "active",
        "cancel_state",
        "renewals",
        "minimum_days_between_payments",
        "expiry_date",
        "cancelled_at",
        "cancelled_by",
        "created_at",
    )
    list_select_related = ("cancelled_by",)
    list_filter = ("active", "cancel_state", CommunityFilter)
    sortable_by = ("parent_uuid", "created_at")
    search_fields = ("=parent_uuid",)
    changelist_defer = ("raw",)
    actions = ("cancel", *EXPORT_ACTIONS)
    export_name = "renewals"
    inlines = (ChargeInline,)
    fields = readonly_fields = (
        "parent_uuid",
        "parent_transaction_link",
        "community_id",
        "active",
        "cancel_state",
        "renewals",
        "service_charge_count",
        "minimum_days_between_payments",
        "expiry_date",
        "cancelled_at",
        "cancelled_by",
        "last_synced_at",
        "created_at",
        "raw_display",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[RecurringSeries]:
        series = super().get_queryset(request)
        assert isinstance(series, RecurringSeriesQuerySet)
        return series.with_renewals()

    @admin.display(description=_("renewals"))
    def renewals(self, obj: RecurringSeries) -> int:
        return obj.renewal_count

    # The service's own count, for comparing with the charges listed below: it counts the first charge too.
    @admin.display(description=_("charges the service counts (the first included)"))
    def service_charge_count(self, obj: RecurringSeries) -> int:
        return obj.recurring_count

    @admin.display(description=_("parent transaction"))
    def parent_transaction_link(self, obj: RecurringSeries) -> SafeString | str:
        if obj.parent_transaction_id is None:
            return obj.parent_uuid
        return link(
            reverse("admin:paycollect_transaction_change", args=[obj.parent_transaction_id]), obj.parent_uuid
        )

    raw_display = json_display("raw", _("as the service last said"))

    # --- exports: the renewals of the selected series

    def export_rows(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return exports.of_series(queryset)

    export_csv = export_action("csv", _("Export the renewals of the selected series as CSV"))
    export_xlsx = export_action("xlsx", _("Export the renewals of the selected series as XLSX"))

    has_cancel_permission = permission("cancel_recurringseries")

    @admin.action(description=_("Cancel the series (stop future charges)…"), permissions=["cancel"])
    def cancel(self, request: HttpRequest, queryset: QuerySet[RecurringSeries]) -> HttpResponse | None:
        return confirm_cancel_recurring(self, request, queryset, list(queryset), [])
