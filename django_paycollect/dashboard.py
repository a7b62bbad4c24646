"""The payments dashboard in the admin: a thin caller of :mod:`django_paycollect.reporting`.

It is the changelist of :class:`~django_paycollect.models.Dashboard` (a model without a table), so it is
listed in the app's section of the admin index for users holding ``paycollect.view_dashboard`` and for
nobody else. The figures come from ``reporting.report``; the charts from :mod:`django_paycollect.charts`.
Also here: the list filters the dashboard's links need.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils import timezone
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from . import charts, reporting, services
from .client import CURRENCIES
from .conf import paycollect_settings
from .exceptions import ServiceLayerError
from .forms import community_choices
from .models import Dashboard, ReceivedCallback, Transaction

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin
else:

    class ModelAdmin(admin.ModelAdmin):
        def __class_getitem__(cls, _item: Any) -> type:
            return cls


PERMISSION = "paycollect.view_dashboard"
#: Status names short enough for a chart's row labels (the tables use the models' longer labels).
SHORT_STATUS_LABELS: dict[str, Any] = {
    Transaction.NEW: _("new"),
    Transaction.PENDING: _("pending"),
    Transaction.SUCCESSFUL: _("successful"),
    Transaction.FAILED: _("failed"),
    Transaction.REJECTED: _("rejected"),
    Transaction.ABANDONED: _("abandoned"),
}


def currency_choices() -> list[tuple[str, str]]:
    default = str(paycollect_settings.DEFAULT_CURRENCY)
    codes = [default, *(code for code in CURRENCIES if code != default)]
    return [(code, code) for code in codes]


class DashboardForm(forms.Form):
    """What the dashboard shows: a community, a currency and a period (a GET form: links can be shared)."""

    community = forms.ChoiceField(label=_("Community"))
    currency = forms.ChoiceField(label=_("Currency"))
    days = forms.TypedChoiceField(
        label=_("Period"),
        coerce=int,
        choices=lambda: [
            (days, ngettext("last %(days)d day", "last %(days)d days", days) % {"days": days})
            for days in reporting.PERIODS
        ],  # worded when shown, in the language of the request
    )

    def __init__(self, data: Any = None) -> None:
        communities = community_choices(with_key_only=False)
        currencies = currency_choices()
        initial = {
            "community": communities[0][0] if communities else "",
            "currency": currencies[0][0],
            "days": reporting.DEFAULT_PERIOD,
        }
        # Whatever is missing from the query string takes its default.
        super().__init__({**initial, **(data.dict() if data is not None else {})}, initial=initial)
        for name, choices in (("community", communities), ("currency", currencies)):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices


class DashboardAdmin(ModelAdmin[Dashboard]):
    """Only a page: nothing to add, change or delete, and no list of rows."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm(PERMISSION)

    def get_model_perms(self, request: HttpRequest) -> dict[str, bool]:
        # What the admin index offers: a link to view, never one to add or change.
        return {"view": self.has_view_permission(request)}

    def get_urls(self) -> list[URLPattern]:
        # Named as a changelist, so the admin index links to it.
        view = self.admin_site.admin_view(self.dashboard_view)
        return [path("", view, name=f"{self.opts.app_label}_{self.opts.model_name}_changelist")]

    # The statistics button calls the service: outside atomic, like every admin view that does.
    @transaction.non_atomic_requests
    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = DashboardForm(request.GET)
        if request.method == "POST":
            return self._fetch_statistics(request, form)
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "title": gettext("Payments dashboard"),
            "opts": self.opts,
            "form": form,
            "report": None,
        }
        if form.is_valid():
            found = reporting.report(
                form.cleaned_data["community"], form.cleaned_data["currency"], form.cleaned_data["days"]
            )
            context.update(self._figures(request, found))
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/paycollect/dashboard.html", context)

    def _fetch_statistics(self, request: HttpRequest, form: DashboardForm) -> HttpResponse:
        """A new snapshot of the service's statistics for the community shown; then the page again."""
        if form.is_valid():
            community = form.cleaned_data["community"]
            try:
                services.fetch_statistics(community)
            except ServiceLayerError as error:
                messages.error(
                    request,
                    gettext("Fetching the statistics of %(community)s failed: %(reason)s")
                    % {"community": community, "reason": " ".join(error.messages)},
                )
            else:
                messages.success(
                    request,
                    gettext("The statistics of %(community)s were fetched.") % {"community": community},
                )
        return HttpResponseRedirect(request.get_full_path())

    # --- what the template shows

    def _figures(self, request: HttpRequest, found: reporting.Report) -> dict[str, Any]:
        span = found.period
        community_filter = {"community_id__exact": found.community_id, "currency": found.currency}
        started = {"created_at__gte": span.start.isoformat(), "created_at__lte": span.end.isoformat()}
        status_rows = [
            {
                "line": line,
                "url": self._changelist(
                    request,
                    "paycollect.transaction",
                    {**community_filter, **started, "status__exact": line.status},
                ),
            }
            for line in found.by_status
        ]
        attention = [
            {"item": item, "url": self._changelist(request, item.model, item.query) if item.count else None}
            for item in found.attention
        ]
        housekeeping = [
            {
                "job": job,
                "interval": reporting.duration_text(job.interval),
                "age": reporting.duration_text(job.idle_for),
                "warning": job.warning() if job.late else "",
            }
            for job in found.housekeeping
        ]
        return {
            "report": found,
            "daily_chart": charts.daily_chart(found.days, found.currency),
            "days_table": list(reversed(found.days)),
            "status_rows": status_rows,
            "status_chart": self._status_chart(found),
            "callbacks_chart": self._callbacks_chart(found.callbacks),
            "verification": [
                (gettext("median (p50)") if p == 50 else f"p{p}", reporting.duration_text(value))
                for p, value in found.callbacks.verification_time.items()
            ],
            "oldest_stuck": reporting.duration_text(found.callbacks.oldest_stuck_age),
            "attention": attention,
            "housekeeping": housekeeping,
            "late_jobs": [row for row in housekeeping if row["warning"]],
            "late_after_intervals": reporting.LATE_AFTER_INTERVALS,
            "statistics": self._statistics(request, found),
            "started_all_url": self._changelist(
                request, "paycollect.transaction", {**community_filter, **started}
            ),
            "generated_at": timezone.localtime(span.end) if timezone.is_aware(span.end) else span.end,
        }

    def _changelist(self, request: HttpRequest, model: str, query: dict[str, str]) -> str | None:
        """The admin changelist listing exactly these, when this user may see it."""
        app_label, model_name = model.split(".")
        registered = next(
            (
                model_admin
                for klass, model_admin in self.admin_site._registry.items()
                if klass._meta.app_label == app_label and klass._meta.model_name == model_name
            ),
            None,
        )
        if registered is None or not registered.has_view_or_change_permission(request):
            return None
        try:
            url = reverse(f"{self.admin_site.name}:{app_label}_{model_name}_changelist")
        except NoReverseMatch:  # pragma: no cover (registered models have one)
            return None
        return f"{url}?{urlencode(query)}" if query else url

    def _status_chart(self, found: reporting.Report) -> charts.BarsChart:
        rows = [
            charts.Row(
                str(SHORT_STATUS_LABELS.get(line.status, line.status)),
                Decimal(line.started.count),
                f"{line.started.count}",
                "successful" if line.status == Transaction.SUCCESSFUL else line.status.lower(),
            )
            for line in found.by_status
        ]
        return charts.bars_chart(
            "paycollect-chart-status",
            gettext("Payments started in the period, by status"),
            gettext("Number of payments started in the period in each status they are in now: %(counts)s.")
            % {"counts": ", ".join(f"{row.label} {row.text}" for row in rows)},
            gettext("Payments"),
            rows,
        )

    def _callbacks_chart(self, health: reporting.CallbackHealth) -> charts.BarsChart:
        labels = dict(ReceivedCallback.STATE_CHOICES)
        rows = [
            charts.Row(str(labels[state]), Decimal(count), str(count), state)
            for state, count in (
                (ReceivedCallback.PROCESSED, health.verified),
                (ReceivedCallback.FAILED, health.failed),
                (ReceivedCallback.DUPLICATE, health.duplicates),
                (ReceivedCallback.INVALID, health.invalid),
            )
        ]
        return charts.bars_chart(
            "paycollect-chart-callbacks",
            gettext("Callbacks received in the period, by state"),
            gettext("%(received)d callbacks received in the period: %(counts)s.")
            % {"received": health.received, "counts": ", ".join(f"{row.label} {row.text}" for row in rows)},
            gettext("Callbacks"),
            rows,
        )

    def _statistics(self, request: HttpRequest, found: reporting.Report) -> dict[str, Any]:
        comparison = found.statistics
        snapshot = comparison.snapshot
        ledger = comparison.ledger
        currency = found.currency

        def amount(value: Decimal | None) -> str:
            return "—" if value is None else f"{value} {currency}"

        def signed(value: Decimal | int | None, unit: str = "") -> str:
            if value is None:
                return "—"
            text = f"+{value}" if value > 0 else f"{value}"
            return f"{text} {unit}".strip()

        rows: list[tuple[str, str, str, str]] = []
        if snapshot is not None:
            rows = [
                (
                    gettext("Transactions (every currency; ours: accepted by the service)"),
                    "—"
                    if snapshot.total_number_of_transactions is None
                    else str(snapshot.total_number_of_transactions),
                    str(ledger.transactions),
                    signed(comparison.transactions_difference),
                ),
                (
                    gettext("Total collected, against ours before refunds"),
                    amount(snapshot.total_collected_transactions),
                    amount(ledger.collected),
                    signed(comparison.collected_difference, currency),
                ),
                (
                    gettext("Total collected, against ours after refunds"),
                    amount(snapshot.total_collected_transactions),
                    amount(ledger.collected_net),
                    signed(comparison.collected_net_difference, currency),
                ),
                (gettext("Collected this week"), amount(snapshot.weekly_collected_transactions), "—", "—"),
                (gettext("Balance"), amount(snapshot.balance), "—", "—"),
                (gettext("Total settled"), amount(snapshot.total_settled), "—", "—"),
            ]
        others = [code for code in ledger.currencies if code != currency]
        return {
            "snapshot": snapshot,
            "age": reporting.duration_text(found.period.end - snapshot.taken_at) if snapshot else "",
            "rows": rows,
            "other_currencies": others,
            "snapshots_url": self._changelist(
                request, "paycollect.statisticssnapshot", {"community_id__exact": found.community_id}
            ),
        }


# --- list filters the dashboard's links use -------------------------------------------------------------


class CurrencyListFilter(admin.SimpleListFilter):
    """By currency, from the spec's list: no query over the table to list them."""

    title = _("currency")
    parameter_name = "currency"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return currency_choices()

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(currency=value) if value else queryset


class RefundCommunityListFilter(admin.SimpleListFilter):
    """Refunds by their transaction's community (the communities known here: no DISTINCT over the table)."""

    title = _("community")
    parameter_name = "community"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return community_choices(with_key_only=False)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(transaction__community_id=value) if value else queryset
