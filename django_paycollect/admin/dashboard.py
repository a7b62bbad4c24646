"""The payments dashboard in the admin: a thin caller of :mod:`django_paycollect.reporting`.

It is the changelist of :class:`~django_paycollect.models.Dashboard` (a model without a table), so it is
listed in the app's section of the admin index for users holding ``paycollect.view_dashboard`` and for
nobody else. Its links open the changelists with the parameters of :mod:`.filters`.
"""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from typing import Any
from urllib.parse import urlencode

from django.apps import apps
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import reporting, services
from ..amounts import amount_label, amount_text, signed_for_language
from ..models import Dashboard, ReceivedCallback, Transaction
from ..reporting import exports
from ..reporting.health import LATE_AFTER_INTERVALS
from ..reporting.report import duration_text
from . import charts
from .common import REPORTED_ERRORS, ModelAdmin, error_text
from .exports import download, may_export
from .forms import DashboardForm

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


@admin.register(Dashboard)
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
        export = self.admin_site.admin_view(self.export_view)
        info = self.opts.app_label, self.opts.model_name
        return [
            path("", view, name="{}_{}_changelist".format(*info)),
            path("export/", export, name="{}_{}_export".format(*info)),
        ]

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

    def export_view(self, request: HttpRequest) -> HttpResponseBase:
        """One export (``?export=transactions|refunds|renewals&format=csv|xlsx``) of the community, the
        currency and the period the dashboard shows: its days, both included, by completion time, the days
        the dashboard's figures count money by."""
        if not (self.has_view_permission(request) and may_export(request)):
            raise PermissionDenied
        form = DashboardForm(request.GET)
        export = exports.EXPORTS.get(request.GET.get("export", ""))
        file_format = request.GET.get("format", "csv")
        if not form.is_valid() or export is None or file_format not in exports.FORMATS:
            return HttpResponseBadRequest(
                gettext(
                    "Export: choose a community, a currency, a period, one of "
                    "the exports and a format from the dashboard."
                )
            )
        span = reporting.period(form.cleaned_data["days"])
        period = exports.ExportPeriod(span.first_day, span.last_day)
        queryset = exports.selection(
            export,
            period=period,
            community_id=form.cleaned_data["community"],
            currency=form.cleaned_data["currency"],
        )
        response = download(request, export, queryset, file_format, period)
        if response is None:  # the reason is in a message, shown on the dashboard
            return HttpResponseRedirect(self._dashboard_url(request))
        return response

    def _dashboard_url(self, request: HttpRequest) -> str:
        query = {key: request.GET[key] for key in ("community", "currency", "days") if key in request.GET}
        url = reverse(f"{self.admin_site.name}:paycollect_dashboard_changelist")
        return f"{url}?{urlencode(query)}" if query else url

    def _export_links(self, request: HttpRequest, found: reporting.Report) -> list[dict[str, Any]]:
        """The dashboard's exports of what it shows, for a user who may export."""
        if not may_export(request):
            return []
        url = reverse(f"{self.admin_site.name}:paycollect_dashboard_export")
        scope = {"community": found.community_id, "currency": found.currency, "days": found.period.days}
        labels = {
            "transactions": gettext("Payments collected"),
            "refunds": gettext("Refunds completed"),
            "renewals": gettext("Renewal charges"),
        }
        return [
            {
                "name": name,
                "label": labels[name],
                "formats": [
                    (
                        file_format.upper(),
                        f"{url}?{urlencode({**scope, 'export': name, 'format': file_format})}",
                    )
                    for file_format in exports.FORMATS
                ],
            }
            for name in exports.EXPORTS
        ]

    def _fetch_statistics(self, request: HttpRequest, form: DashboardForm) -> HttpResponse:
        """A new snapshot of the service's statistics for the community shown; then the page again."""
        if form.is_valid():
            community = form.cleaned_data["community"]
            try:
                services.fetch_statistics(community)
            except REPORTED_ERRORS as error:
                messages.error(
                    request,
                    gettext("Fetching the statistics of %(community)s failed: %(reason)s")
                    % {"community": community, "reason": error_text(error)},
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
        transactions = partial(self._changelist, request, "paycollect.transaction")
        status_rows = [
            {"line": line, "url": transactions({**community_filter, **started, "status__exact": line.status})}
            for line in found.by_status
        ]
        attention = [
            {"item": item, "url": self._changelist(request, item.model, item.query) if item.count else None}
            for item in found.attention
        ]
        housekeeping = [
            {
                "job": job,
                "interval": duration_text(job.interval),
                "age": duration_text(job.idle_for),
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
                (gettext("median (p50)") if p == 50 else f"p{p}", duration_text(value))
                for p, value in found.callbacks.verification_time.items()
            ],
            "oldest_stuck": duration_text(found.callbacks.oldest_stuck_age),
            "attention": attention,
            "housekeeping": housekeeping,
            "late_jobs": [row for row in housekeeping if row["warning"]],
            # Never run is no stopped beat: one calm line, not a warning (reporting.housekeeping_not_run_yet).
            "jobs_not_run": reporting.housekeeping_not_run_yet(found.housekeeping),
            "jobs_how_to_start": reporting.housekeeping_how_to_start(),
            "late_after_intervals": LATE_AFTER_INTERVALS,
            # Django's task framework has no beat: the jobs are the commands its timers or cron run.
            "jobs_without_beat": reporting.housekeeping_without_beat(),
            "statistics": self._statistics(request, found),
            "started_all_url": transactions({**community_filter, **started}),
            "generated_at": timezone.localtime(span.end) if timezone.is_aware(span.end) else span.end,
            "exports": self._export_links(request, found),
        }

    def _changelist(self, request: HttpRequest, model: str, query: dict[str, str]) -> str | None:
        """The admin changelist listing exactly these, when this user may see it."""
        app_label, model_name = model.split(".")
        klass = apps.get_model(app_label, model_name)
        if not self.admin_site.is_registered(klass):
            return None
        if not self.admin_site.get_model_admin(klass).has_view_or_change_permission(request):
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
                charts.number_text(line.started.count),
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
            charts.Row(str(labels[state]), Decimal(count), charts.number_text(count), state)
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
            return "—" if value is None else f"{amount_label(value)} {currency}"

        def signed(value: Decimal | int | None, unit: str = "") -> str:
            if value is None:
                return "—"
            if isinstance(value, int):
                return f"{charts.number_text(value, plus=True)} {unit}".strip()
            text = amount_text(value)
            return f"{signed_for_language(f'+{text}' if value > 0 else text)} {unit}".strip()

        rows: list[tuple[str, str, str, str]] = []
        if snapshot is not None:
            rows = [
                (
                    gettext("Transactions (every currency; ours: accepted by the service)"),
                    "—"
                    if snapshot.total_number_of_transactions is None
                    else charts.number_text(snapshot.total_number_of_transactions),
                    charts.number_text(ledger.transactions),
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
            "age": duration_text(found.period.end - snapshot.taken_at) if snapshot else "",
            "rows": rows,
            "other_currencies": others,
            "snapshots_url": self._changelist(
                request, "paycollect.statisticssnapshot", {"community_id__exact": found.community_id}
            ),
        }
