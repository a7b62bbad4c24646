"""Records kept for people: API calls (envelopes), refunds, statistics snapshots."""

from __future__ import annotations

from functools import partial

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import services
from ..models import ApiCall, Refund, StatisticsSnapshot
from .common import Outcomes, PayCollectAdmin, amount_display, change_url, json_display, link, permission
from .exports import EXPORT_ACTIONS, ExportActions
from .filters import CommunityFilter, ErrorClassFilter, OperationFilter, RefundCommunityFilter


@admin.register(ApiCall)
class ApiCallAdmin(PayCollectAdmin[ApiCall]):
    list_display = (
        "created_at",
        "operation_display",
        "community_id",
        "method",
        "path",
        "http_status",
        "code",
        "error_class",
        "outcome_unknown",
        "duration_ms",
        "attempts",
        "transaction",
    )
    list_select_related = ("transaction",)
    list_filter = (
        OperationFilter,
        ErrorClassFilter,
        "outcome_unknown",
        CommunityFilter,
        ("created_at", admin.DateFieldListFilter),
    )
    sortable_by = ("created_at",)
    search_fields = ("=transaction__uuid", "=task_id")
    search_help_text = _("An exact transaction uuid or Celery task id.")
    changelist_defer = (
        "request_body",
        "data",
        "errors",
        "body_excerpt",
        "message",
        "error_message",
        "transaction__raw",
        "transaction__custom_fields",
    )
    fields = readonly_fields = (
        "created_at",
        "operation_display",
        "community_id",
        "method",
        "path",
        "sent",
        "http_status",
        "code",
        "message",
        "errors_display",
        "error_class",
        "error_message",
        "body_excerpt",
        "outcome_unknown",
        "duration_ms",
        "attempts",
        "task_id",
        "related_links",
        "request_body_display",
        "data_display",
        "count",
        "next",
        "previous",
    )

    @admin.display(description=_("operation"), ordering="operation")
    def operation_display(self, obj: ApiCall) -> str:
        return obj.get_operation_display()

    request_body_display = json_display(
        "request_body", _("request body (secrets removed, personal data masked)")
    )
    data_display = json_display("data", _("data"))
    errors_display = json_display("errors", _("errors"))

    @admin.display(description=_("concerns"))
    def related_links(self, obj: ApiCall) -> SafeString | str:
        related = [r for r in (obj.transaction, obj.direct_order, obj.refund, obj.series) if r is not None]
        if not related:
            return "—"
        return format_html_join(", ", '<a href="{}">{}</a>', ((change_url(r), r) for r in related))


@admin.register(Refund)
class RefundAdmin(ExportActions, PayCollectAdmin[Refund]):
    list_display = (
        "created_at",
        "transaction",
        "amount_shown",
        "state",
        "requested_by",
        "completed_at",
        "error",
    )
    list_select_related = ("transaction", "requested_by")
    list_filter = ("state", RefundCommunityFilter, ("created_at", admin.DateFieldListFilter))
    sortable_by = ("created_at",)
    search_fields = ("=transaction__uuid",)
    search_help_text = _("An exact transaction uuid.")
    changelist_defer = ("transaction__raw", "transaction__custom_fields")
    fields = readonly_fields = (
        "transaction_link",
        "amount_shown",
        "state",
        "requested_by",
        "service_message",
        "error",
        "created_at",
        "completed_at",
    )

    amount_shown = amount_display(Refund, "amount")

    @admin.display(description=_("transaction"))
    def transaction_link(self, obj: Refund) -> SafeString:
        return link(change_url(obj.transaction), obj.transaction)

    # --- settling by hand what fetching cannot tell (the spec's transaction shows no refunds)

    actions = ("settle_succeeded", "settle_failed", *EXPORT_ACTIONS)
    export_name = "refunds"

    has_refund_permission = permission("refund_transaction")

    @admin.action(
        description=_("Settle by hand: the refund happened (checked on the service's dashboard)"),
        permissions=["refund"],
    )
    def settle_succeeded(self, request: HttpRequest, queryset: QuerySet[Refund]) -> None:
        self._settle(request, queryset, succeeded=True)

    @admin.action(description=_("Settle by hand: the refund did not happen"), permissions=["refund"])
    def settle_failed(self, request: HttpRequest, queryset: QuerySet[Refund]) -> None:
        self._settle(request, queryset, succeeded=False)

    def _settle(self, request: HttpRequest, queryset: QuerySet[Refund], *, succeeded: bool) -> None:
        outcomes = Outcomes(gettext("Settle refund"))
        for refund in queryset.select_related("transaction"):
            outcomes.attempt(
                str(refund), partial(services.resolve_refund, refund, succeeded=succeeded, user=request.user)
            )
        outcomes.report(request)


@admin.register(StatisticsSnapshot)
class StatisticsSnapshotAdmin(PayCollectAdmin[StatisticsSnapshot]):
    list_display = (
        "community_id",
        "taken_at",
        "balance_shown",
        "total_settled_shown",
        "total_number_of_transactions",
        "total_collected_shown",
        "weekly_collected_shown",
    )
    list_filter = (CommunityFilter, ("taken_at", admin.DateFieldListFilter))
    sortable_by = ("taken_at",)
    changelist_defer = ("raw",)
    fields = readonly_fields = (*list_display, "raw_display")

    balance_shown = amount_display(StatisticsSnapshot, "balance")
    total_settled_shown = amount_display(StatisticsSnapshot, "total_settled")
    total_collected_shown = amount_display(StatisticsSnapshot, "total_collected_transactions")
    weekly_collected_shown = amount_display(StatisticsSnapshot, "weekly_collected_transactions")

    raw_display = json_display("raw", _("as the service answered"))
