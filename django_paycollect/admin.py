"""The admin: a merchant's view of payments, and its actions.

Actions are thin callers of :mod:`django_paycollect.services`: they never call the client, write
ApiCall rows or set a status themselves. The state-changing services refuse to run inside
``transaction.atomic`` (a rollback after the call would forget what the service did), so every
view that calls one is marked ``transaction.non_atomic_requests`` (it then stays outside atomic
even under ``ATOMIC_REQUESTS``), and the direct order add form does not go through
``changeform_view``, which always runs in atomic.

Money records are read-only here: they change only through the service layer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode, urlsplit

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import flatten_fieldsets
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.forms import Form
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince, timeuntil
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from . import services, tasks
from .client.money import too_deep
from .dashboard import CurrencyListFilter, DashboardAdmin, RefundCommunityListFilter
from .exceptions import PaymentRefused, ServiceLayerError
from .forms import CommunityForm, DirectOrderForm, RefundForm, refusal_errors, stored_secret_text
from .ids import canonical_uuid, looks_like_uuid
from .models import (
    ZERO,
    ApiCall,
    Community,
    Dashboard,
    DirectOrder,
    ReceivedCallback,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
    TransactionStatusChange,
    json_safe,
)

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin, TabularInline
else:
    # django-stubs declares these generic; Django's own classes cannot be subscripted at run time.
    class ModelAdmin(admin.ModelAdmin):
        def __class_getitem__(cls, _item: Any) -> type:
            return cls

    class TabularInline(admin.TabularInline):
        def __class_getitem__(cls, _item: Any) -> type:
            return cls


_M = TypeVar("_M", bound=Model)

#: How many transactions one refund page handles (one amount field each).
REFUND_PAGE_LIMIT = 50
#: How many objects one message names.
LISTED_ITEMS = 20
#: Stored callback bodies longer than this are shown as they arrived, not re-indented.
PRETTY_BODY_CHARS = 32 * 1024


class Outcomes:
    """What one action did to each selected object, reported as messages once at the end."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.succeeded: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.unknown: list[str] = []
        self.notes: list[str] = []

    def refused(self, label: str, error: ServiceLayerError) -> None:
        """An object the service layer did not act on, and why (the error contract's messages)."""
        self.failed.append((label, " ".join(error.messages)))

    def report(self, request: HttpRequest) -> None:
        if self.succeeded:
            messages.success(
                request,
                gettext("%(title)s: %(count)d succeeded (%(which)s).")
                % {"title": self.title, "count": len(self.succeeded), "which": _listed(self.succeeded)},
            )
        if self.unknown:
            messages.warning(
                request,
                gettext(
                    "%(title)s: outcome unknown for %(count)d (recorded, never resent; "
                    "reconciliation will fetch the truth): %(which)s."
                )
                % {"title": self.title, "count": len(self.unknown), "which": _listed(self.unknown)},
            )
        for note in self.notes:
            messages.warning(request, note)
        if self.failed:
            listed = _listed([f"{label}: {why}" for label, why in self.failed], separator="; ")
            messages.error(
                request,
                gettext("%(title)s: %(count)d failed. %(which)s")
                % {"title": self.title, "count": len(self.failed), "which": listed},
            )


def _listed(items: Sequence[str], separator: str = ", ") -> str:
    text = separator.join(items[:LISTED_ITEMS])
    if len(items) > LISTED_ITEMS:
        text += " " + gettext("(and %(more)d more)") % {"more": len(items) - LISTED_ITEMS}
    return text


def _link(url: str, text: Any) -> SafeString:
    return format_html('<a href="{}">{}</a>', url, text)


def _external_link(url: str) -> SafeString | str:
    # The link comes from the service: only http(s) becomes clickable, so no javascript: URL runs here.
    if urlsplit(url).scheme not in ("http", "https"):
        return url
    return format_html('<a href="{}" target="_blank" rel="noopener noreferrer">{}</a>', url, url)


def displayable(text: str) -> str:
    """``text`` as a page can carry it: a lone surrogate (from a ``"\\ud800"`` escape in a stored body)
    cannot be encoded as UTF-8, so it is shown as its escape instead of failing the whole page."""
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def _pretty_json(value: Any) -> SafeString:
    if value in (None, "", [], {}):
        return format_html("{}", "—")
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return format_html("<pre>{}</pre>", displayable(text))


def json_display(field: str, description: Any) -> Callable[[Any, Any], SafeString]:
    """A read-only admin column showing a JSON field pretty-printed (one definition for every model)."""

    @admin.display(description=description)
    def display(model_admin: Any, obj: Any) -> SafeString:
        return _pretty_json(getattr(obj, field))

    return display


def _change_url(obj: Model) -> str:
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])


def holding_of(txn: Transaction) -> Decimal:
    """Refunds pending or of unknown outcome (needs ``Transaction.objects.with_refundable()``)."""
    # Quantized: SQLite hands sums back as 5 rather than 5.00, and the amounts are compared as text.
    holding: Decimal = getattr(txn, "holding", None) or ZERO
    return Decimal(holding).quantize(ZERO)


def refund_refusal(txn: Transaction) -> str | None:
    """Why the refund page offers no amount for ``txn`` (the service would refuse it), or None."""
    if txn.status != Transaction.SUCCESSFUL:
        return gettext("Only a successful transaction can be refunded (status %(status)s).") % {
            "status": txn.status
        }
    if txn.refundable_amount <= 0:
        return gettext("Nothing is left to refund (pending refunds count).")
    return None


# --- shared pieces ---------------------------------------------------------------------------------


class DeferringChangeList(ChangeList):
    """Leaves the model admin's ``changelist_defer`` columns (large JSON) out of changelist queries."""

    def get_queryset(self, request: HttpRequest, *args: Any, **kwargs: Any) -> QuerySet[Any]:
        queryset = super().get_queryset(request, *args, **kwargs)
        deferred: Sequence[str] = getattr(self.model_admin, "changelist_defer", ())
        return queryset.defer(*deferred) if deferred else queryset


class PayCollectAdmin(ModelAdmin[_M]):
    """Read-only by default; changelists count no full result and skip large columns."""

    show_full_result_count = False
    changelist_defer: Sequence[str] = ()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return DeferringChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[_M], search_term: str
    ) -> tuple[QuerySet[_M], bool]:
        # A uuid pasted in capitals or without dashes finds what is stored in the canonical form
        # (as well as anything stored exactly as typed).
        found, duplicates = super().get_search_results(request, queryset, search_term)
        canonical = canonical_uuid(search_term.strip()) if looks_like_uuid(search_term) else search_term
        if canonical != search_term:
            also, more = super().get_search_results(request, queryset, canonical)
            found, duplicates = found | also, duplicates or more
        return found, duplicates

    # Actions run in the changelist view: it must stay out of atomic, even under ATOMIC_REQUESTS.
    @transaction.non_atomic_requests
    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(request, extra_context)

    def _has_perm(self, request: HttpRequest, codename: str) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.{codename}")


class ReadOnlyInline(TabularInline[_M, Any]):
    """Rows shown inside their parent's page, visible to whoever may view the parent."""

    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        parent = self.parent_model._meta
        return any(
            request.user.has_perm(f"{parent.app_label}.{get_permission_codename(action, parent)}")
            for action in ("view", "change")
        )


def cancel_refusal(series: RecurringSeries) -> str | None:
    """Why cancelling ``series`` would be refused before anything is sent, or None."""
    if series.cancel_state in (RecurringSeries.CANCEL_DONE, RecurringSeries.CANCEL_PENDING):
        return gettext("Series already %(state)s.") % {"state": series.get_cancel_state_display()}
    return None


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
        cancel_series(request, series, outcomes)
        outcomes.report(request)
        return None  # back to the changelist
    parents = {
        txn.uuid: txn
        for txn in Transaction.objects.filter(uuid__in=[one.parent_uuid for one in series]).only(
            "pk", "uuid", "customer_name", "customer_email", "total_amount", "currency"
        )
    }
    rows = [
        {
            "series": one,
            "parent": parents.get(one.parent_uuid),
            "url": _change_url(one),
            "refusal": cancel_refusal(one),
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


def cancel_series(request: HttpRequest, series: Iterable[RecurringSeries], outcomes: Outcomes) -> None:
    for one in series:
        label = one.parent_uuid
        try:
            result = services.cancel_recurring(one, user=request.user)
        except ServiceLayerError as error:
            outcomes.refused(label, error)
            continue
        if result.cancel_state == RecurringSeries.CANCEL_UNKNOWN:
            outcomes.unknown.append(label)
        else:
            outcomes.succeeded.append(label)


# --- transactions ------------------------------------------------------------------------------------


class TransactionStatusChangeInline(ReadOnlyInline[TransactionStatusChange]):
    model = TransactionStatusChange
    fields = readonly_fields = ("at", "from_status", "to_status", "service_status", "source")
    show_change_link = False
    verbose_name_plural = _("status changes")


class RefundInline(ReadOnlyInline[Refund]):
    model = Refund
    fields = readonly_fields = (
        "created_at",
        "amount",
        "state",
        "requested_by",
        "service_message",
        "error",
        "completed_at",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Refund]:
        return super().get_queryset(request).select_related("requested_by")


@admin.register(Transaction)
class TransactionAdmin(PayCollectAdmin[Transaction]):
    list_display = (
        "uuid_display",
        "merchant_reference",
        "customer_email",
        "amount",
        "status_display",
        "refunded_amount",
        "capture_state_display",
        "outcome_unknown",
        "created_at",
    )
    list_display_links = ("uuid_display",)
    list_filter = (
        "status",
        "community_id",
        CurrencyListFilter,
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
    actions = ("sync", "capture", "refund", "cancel_recurring")
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
                    "original_amount",
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
                    "refunded_amount",
                    "capture_state_display",
                    "captured_amount",
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
        # Exact matches use the indexes; a "contains" search would scan every row.
        emails = {term, term.lower()}
        matches = Q(uuid=term) | Q(merchant_reference=term) | Q(customer_email__in=emails)
        return queryset.filter(matches), False

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
        return f"{obj.total_amount} {obj.currency}"

    @admin.display(description=_("status"), ordering="status")
    def status_display(self, obj: Transaction) -> str:
        if obj.status_unrecognised:
            return gettext("%(status)s — ⚠ the service says “%(reported)s” (unrecognised)") % {
                "status": obj.get_status_display(),
                "reported": obj.service_status,
            }
        return str(obj.get_status_display())

    @admin.display(description=_("captured"), ordering="capture_state")
    def capture_state_display(self, obj: Transaction) -> str:
        return str(obj.get_capture_state_display())

    # --- detail

    @admin.display(description=_("still refundable"))
    def refundable_now(self, obj: Transaction) -> str:
        annotated = Transaction.objects.with_refundable().get(pk=obj.pk)
        return f"{max(annotated.refundable_amount, ZERO)} {obj.currency}"

    @admin.display(description=_("direct order"))
    def direct_order_link(self, obj: Transaction) -> SafeString | str:
        if obj.direct_order_id is None:
            return "—"
        url = reverse("admin:paycollect_directorder_change", args=[obj.direct_order_id])
        return _link(url, gettext("direct order #%(pk)s") % {"pk": obj.direct_order_id})

    @admin.display(description=_("recurring series"))
    def series_link(self, obj: Transaction) -> SafeString | str:
        series_id = obj.series_id
        if series_id is None:
            series_id = (
                RecurringSeries.objects.filter(parent_transaction=obj).values_list("pk", flat=True).first()
            )
        if series_id is None:
            return "—"
        return _link(reverse("admin:paycollect_recurringseries_change", args=[series_id]), gettext("series"))

    @admin.display(description=_("API calls"))
    def api_calls_link(self, obj: Transaction) -> SafeString:
        count = obj.api_calls.count()
        url = (
            reverse("admin:paycollect_apicall_changelist")
            + "?"
            + urlencode({"transaction__id__exact": obj.pk})
        )
        return _link(url, ngettext("%(count)d call", "%(count)d calls", count) % {"count": count})

    raw_display = json_display("raw", _("last fetched object"))

    custom_fields_display = json_display("custom_fields", _("custom fields"))
    hint_errors_display = json_display("hint_errors", _("malformed hints (stored as not sent)"))

    # --- actions

    def has_sync_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, "sync_transaction")

    def has_capture_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, "capture_transaction")

    def has_refund_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, "refund_transaction")

    def has_cancel_recurring_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, "cancel_recurringseries")

    @admin.action(description=_("Sync from the service"), permissions=["sync"])
    def sync(self, request: HttpRequest, queryset: QuerySet[Transaction]) -> None:
        outcomes = Outcomes(gettext("Sync from the service"))
        for txn in queryset:
            label = str(txn)
            if not txn.uuid:
                outcomes.failed.append((label, gettext("never accepted by the service: nothing to fetch")))
                continue
            try:
                synced = services.sync_transaction(txn, source="admin")
            except ServiceLayerError as error:
                outcomes.refused(label, error)
                continue
            outcomes.succeeded.append(label)
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
            label = str(txn)
            try:
                captured = services.capture(txn, user=request.user)
            except ServiceLayerError as error:
                outcomes.refused(label, error)
                continue
            if captured.capture_state == Transaction.CAPTURE_UNKNOWN:
                outcomes.unknown.append(label)
            else:
                outcomes.succeeded.append(label)
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
        refusals = {txn: refund_refusal(txn) for txn in candidates}
        refundable = {txn: txn.refundable_amount for txn in candidates if refusals[txn] is None}
        form = RefundForm(refundable, request.POST if request.method == "POST" else None)
        if (
            request.method == "POST"
            and form.is_valid()
            and self._unchanged_since_shown(request, form, refundable)
        ):
            outcomes = Outcomes(gettext("Refund"))
            for txn in candidates:
                refusal = refusals[txn]
                if refusal is not None:
                    outcomes.failed.append((str(txn), refusal))
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
        label = f"{txn} ({amount} {txn.currency})"
        try:
            done = services.refund(txn, amount, user=request.user, expected_refundable=shown)
        except ServiceLayerError as error:
            outcomes.refused(label, error)
            return
        if done.state == Refund.UNKNOWN:
            outcomes.unknown.append(label)
        else:
            outcomes.succeeded.append(label)


# --- recurring series ------------------------------------------------------------------------------


class ChargeInline(ReadOnlyInline[Transaction]):
    model = Transaction
    fk_name = "series"
    fields = readonly_fields = (
        "uuid",
        "transaction_order",
        "status",
        "total_amount",
        "currency",
        "created_at",
    )
    verbose_name_plural = _("charges")


@admin.register(RecurringSeries)
class RecurringSeriesAdmin(PayCollectAdmin[RecurringSeries]):
    list_display = (
        "parent_uuid",
        "community_id",
        "active",
        "cancel_state",
        "recurring_count",
        "minimum_days_between_payments",
        "expiry_date",
        "cancelled_at",
        "cancelled_by",
        "created_at",
    )
    list_select_related = ("cancelled_by",)
    list_filter = ("active", "cancel_state", "community_id")
    search_fields = ("=parent_uuid",)
    changelist_defer = ("raw",)
    actions = ("cancel",)
    inlines = (ChargeInline,)
    fields = readonly_fields = (
        "parent_uuid",
        "parent_transaction_link",
        "community_id",
        "active",
        "cancel_state",
        "recurring_count",
        "minimum_days_between_payments",
        "expiry_date",
        "cancelled_at",
        "cancelled_by",
        "last_synced_at",
        "created_at",
        "raw_display",
    )

    @admin.display(description=_("parent transaction"))
    def parent_transaction_link(self, obj: RecurringSeries) -> SafeString | str:
        if obj.parent_transaction_id is None:
            return obj.parent_uuid
        return _link(
            reverse("admin:paycollect_transaction_change", args=[obj.parent_transaction_id]), obj.parent_uuid
        )

    raw_display = json_display("raw", _("as the service last said"))

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, "cancel_recurringseries")

    @admin.action(description=_("Cancel the series (stop future charges)…"), permissions=["cancel"])
    def cancel(self, request: HttpRequest, queryset: QuerySet[RecurringSeries]) -> HttpResponse | None:
        return confirm_cancel_recurring(self, request, queryset, list(queryset), [])


# --- direct orders ---------------------------------------------------------------------------------


class OrderTransactionInline(ReadOnlyInline[Transaction]):
    model = Transaction
    fk_name = "direct_order"
    fields = readonly_fields = ("uuid", "status", "total_amount", "currency", "created_at")
    verbose_name_plural = _("payments of this order")


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
    list_filter = ("state", "community_id", ("created_at", admin.DateFieldListFilter))
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
                    "discount_amount",
                    "vat_percentage",
                    "payment_methods",
                    "merchant_reference",
                    "created_by",
                    "created_at",
                )
            },
        ),
        _DIRECT_ORDER_CUSTOMER,
        (_("Custom fields and tags"), {"fields": ("custom_fields_display", "tags_display")}),
        *_DIRECT_ORDER_OPTIONS,
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
        return f"{obj.amount} {obj.currency}"

    @admin.display(description=_("payment link"))
    def payment_link_display(self, obj: DirectOrder) -> SafeString | str:
        return _external_link(obj.payment_link) if obj.payment_link else "—"

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
            try:
                order = services.create_direct_order(user=request.user, **form.service_fields())
            except PaymentRefused as refused:
                form.add_service_errors(refusal_errors(refused))
            except ServiceLayerError as error:
                form.add_error(None, error.messages)
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
                    _external_link(order.payment_link),
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
        return HttpResponseRedirect(_change_url(order))

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


# --- the dashboard (its own module; listed in the app's section of the index) -----------------------

admin.site.register(Dashboard, DashboardAdmin)


# --- communities ---------------------------------------------------------------------------------


@admin.register(Community)
class CommunityAdmin(ModelAdmin[Community]):
    form = CommunityForm
    list_display = (
        "community_id",
        "name",
        "variable_amount_id",
        "api_key_display",
        "basic_credentials_display",
    )
    search_fields = ("community_id", "name")
    actions = ("fetch_statistics",)
    fieldsets = (
        (None, {"fields": ("community_id", "name", "variable_amount_id")}),
        (
            _("Credentials (write-only)"),
            {"fields": ("api_key", "clear_api_key", "basic_credentials", "clear_basic_credentials")},
        ),
    )

    @admin.display(description=_("API key"))
    def api_key_display(self, obj: Community) -> str:
        return stored_secret_text(obj.api_key_last4, obj.api_key_encrypted)

    @admin.display(description=_("basic credentials"))
    def basic_credentials_display(self, obj: Community) -> str:
        return stored_secret_text(obj.basic_credentials_last4, obj.basic_credentials_encrypted)

    @admin.action(description=_("Fetch statistics"), permissions=["view"])
    def fetch_statistics(self, request: HttpRequest, queryset: QuerySet[Community]) -> None:
        outcomes = Outcomes(gettext("Fetch statistics"))
        for community in queryset:
            try:
                snapshot = services.fetch_statistics(community.community_id)
            except ServiceLayerError as error:
                outcomes.refused(community.community_id, error)
                continue
            outcomes.succeeded.append(community.community_id)
            messages.info(
                request,
                gettext(
                    "%(community)s: balance %(balance)s, total settled %(settled)s, %(count)s transactions, "
                    "collected %(collected)s, collected this week %(weekly)s."
                )
                % {
                    "community": community,
                    "balance": snapshot.balance,
                    "settled": snapshot.total_settled,
                    "count": snapshot.total_number_of_transactions,
                    "collected": snapshot.total_collected_transactions,
                    "weekly": snapshot.weekly_collected_transactions,
                },
            )
        outcomes.report(request)


# --- records: API calls, refunds, statistics ----------------------------------------------------------


@admin.register(ApiCall)
class ApiCallAdmin(PayCollectAdmin[ApiCall]):
    list_display = (
        "created_at",
        "operation",
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
        "operation",
        "error_class",
        "outcome_unknown",
        "community_id",
        ("created_at", admin.DateFieldListFilter),
    )
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
        "operation",
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
        return format_html_join(", ", '<a href="{}">{}</a>', ((_change_url(r), r) for r in related))


@admin.register(Refund)
class RefundAdmin(PayCollectAdmin[Refund]):
    list_display = ("created_at", "transaction", "amount", "state", "requested_by", "completed_at", "error")
    list_select_related = ("transaction", "requested_by")
    list_filter = ("state", RefundCommunityListFilter, ("created_at", admin.DateFieldListFilter))
    search_fields = ("=transaction__uuid",)
    search_help_text = _("An exact transaction uuid.")
    changelist_defer = ("transaction__raw", "transaction__custom_fields")
    fields = readonly_fields = (
        "transaction_link",
        "amount",
        "state",
        "requested_by",
        "service_message",
        "error",
        "created_at",
        "completed_at",
    )

    @admin.display(description=_("transaction"))
    def transaction_link(self, obj: Refund) -> SafeString:
        return _link(_change_url(obj.transaction), obj.transaction)

    # --- settling by hand what fetching cannot tell (the spec's transaction shows no refunds)

    actions = ("settle_succeeded", "settle_failed")

    def has_refund_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, "refund_transaction")

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
            try:
                services.resolve_refund(refund, succeeded=succeeded, user=request.user)
            except ServiceLayerError as error:
                outcomes.refused(str(refund), error)
                continue
            outcomes.succeeded.append(str(refund))
        outcomes.report(request)


@admin.register(StatisticsSnapshot)
class StatisticsSnapshotAdmin(PayCollectAdmin[StatisticsSnapshot]):
    list_display = (
        "community_id",
        "taken_at",
        "balance",
        "total_settled",
        "total_number_of_transactions",
        "total_collected_transactions",
        "weekly_collected_transactions",
    )
    list_filter = ("community_id", ("taken_at", admin.DateFieldListFilter))
    changelist_defer = ("raw",)
    fields = readonly_fields = (
        "community_id",
        "taken_at",
        "balance",
        "total_settled",
        "total_number_of_transactions",
        "total_collected_transactions",
        "weekly_collected_transactions",
        "raw_display",
    )

    raw_display = json_display("raw", _("as the service answered"))


# --- received callbacks --------------------------------------------------------------------------------


class CallbackWaitingFilter(admin.SimpleListFilter):
    title = _("waiting for verification")
    parameter_name = "waiting"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("stuck", _("Stuck (received, or overdue by CALLBACK_REQUEUE_AFTER)")),
            ("yes", _("Waiting (received or queued)")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "stuck":
            return queryset.filter(services.stuck_filter())
        if self.value() == "yes":
            return queryset.filter(state__in=ReceivedCallback.WAITING_STATES)
        return queryset


class CallbackValidityFilter(admin.SimpleListFilter):
    title = _("valid")
    parameter_name = "valid"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", _("Yes")), ("no", _("No (refused as invalid)"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.exclude(state=ReceivedCallback.INVALID)
        if self.value() == "no":
            return queryset.filter(state=ReceivedCallback.INVALID)
        return queryset


class MalformedHintsFilter(admin.SimpleListFilter):
    title = _("malformed hints")
    parameter_name = "malformed_hints"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", _("Yes (stored as not sent)")), ("no", _("No"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.exclude(hint_errors={})
        if self.value() == "no":
            return queryset.filter(hint_errors={})
        return queryset


@admin.register(ReceivedCallback)
class ReceivedCallbackAdmin(PayCollectAdmin[ReceivedCallback]):
    """Every callback POST as it arrived (read-only). What it claims is shown apart from what
    verification found: the claims are never applied."""

    list_display = (
        "received_at",
        "transaction_uuid",
        "claimed_status",
        "state",
        "waiting_display",
        "attempts",
        "transaction_link",
        "remote_addr",
        "processed_at",
    )
    list_select_related = ("transaction",)
    list_filter = (
        "state",
        CallbackWaitingFilter,
        CallbackValidityFilter,
        MalformedHintsFilter,
        "claimed_status",
        ("received_at", admin.DateFieldListFilter),
        "token_index",
    )
    search_fields = ("=transaction_uuid", "=payment_id", "=task_id")
    search_help_text = _("An exact transaction uuid, payment id or Celery task id.")
    changelist_defer = (
        "body",
        "headers",
        "custom_fields",
        "hint_errors",
        "message",
        "outcome",
        "error",
        "traceback",
        "invalid_reason",
        "transaction__raw",
        "transaction__custom_fields",
    )
    actions = ("reprocess",)
    fieldsets = (
        (
            _("As received"),
            {
                "fields": (
                    "received_at",
                    "state",
                    "invalid_reason",
                    "token_display",
                    "remote_addr",
                    "headers_display",
                    "body_display",
                )
            },
        ),
        (
            _("What it claims (never applied)"),
            {
                "fields": (
                    "transaction_uuid",
                    "claimed_status",
                    "total_amount",
                    "total_amount_piasters",
                    "payment_id",
                    "merchant_id",
                    "member_id",
                    "is_sub_payment",
                    "parent_transaction",
                    "message",
                    "custom_fields_display",
                    "hint_errors_display",
                )
            },
        ),
        (
            _("Verification"),
            {
                "fields": (
                    "transaction_link",
                    "duplicate_of_link",
                    "waiting_display",
                    "queued_at",
                    "next_attempt_at",
                    "attempts",
                    "task_id",
                    "processed_at",
                    "outcome",
                    "error",
                    "traceback_display",
                )
            },
        ),
    )
    readonly_fields = tuple(flatten_fieldsets(fieldsets))

    @admin.display(description=_("token"))
    def token_display(self, obj: ReceivedCallback) -> str:
        # The position in CALLBACK_TOKENS only: the token itself is never stored.
        if obj.token_index is None:
            return "—"
        return gettext("CALLBACK_TOKENS[%(index)d]") % {"index": obj.token_index}

    @admin.display(description=_("transaction"))
    def transaction_link(self, obj: ReceivedCallback) -> SafeString | str:
        return _link(_change_url(obj.transaction), obj.transaction) if obj.transaction else "—"

    @admin.display(description=_("duplicate of"))
    def duplicate_of_link(self, obj: ReceivedCallback) -> SafeString | str:
        if obj.duplicate_of_id is None:
            return "—"
        url = reverse("admin:paycollect_receivedcallback_change", args=[obj.duplicate_of_id])
        return _link(url, gettext("callback #%(pk)s") % {"pk": obj.duplicate_of_id})

    headers_display = json_display("headers", _("headers"))

    @admin.display(description=_("body"))
    def body_display(self, obj: ReceivedCallback) -> SafeString:
        # Pretty when it parses and is of a callback's size and shape; otherwise as it arrived. Any
        # stored body renders: NaN, lone surrogates, nesting past the recursion limit, megabytes
        # (indenting thousands of nested levels would make a page of hundreds of megabytes).
        as_sent = format_html("<pre>{}</pre>", displayable(obj.body) or "—")
        if len(obj.body) > PRETTY_BODY_CHARS:
            return as_sent
        try:
            document = json.loads(obj.body, parse_float=Decimal)
            if too_deep(document):
                return as_sent
            return _pretty_json(json_safe(document))
        except (ValueError, TypeError, RecursionError):
            return as_sent

    custom_fields_display = json_display("custom_fields", _("custom fields"))
    hint_errors_display = json_display("hint_errors", _("malformed hints (stored as not sent)"))

    @admin.display(description=_("traceback"))
    def traceback_display(self, obj: ReceivedCallback) -> SafeString:
        return format_html("<pre>{}</pre>", displayable(obj.traceback) or "—")

    @admin.display(description=_("waiting for verification"), ordering="next_attempt_at")
    def waiting_display(self, obj: ReceivedCallback) -> str:
        since = obj.waiting_since
        if since is None:
            return "—"
        now = timezone.now()
        if since > now:
            return gettext("retry due in %(time)s") % {"time": timeuntil(since, now)}
        age = timesince(since, now)
        if obj.state == ReceivedCallback.RECEIVED or since < now - services.requeue_after():
            return gettext("%(age)s (stuck: the sweep queues it again)") % {"age": age}
        return age

    def has_reprocess_permission(self, request: HttpRequest) -> bool:
        return self._has_perm(request, "reprocess_receivedcallback")

    @admin.action(description=_("Verify again (reprocess)"), permissions=["reprocess"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[ReceivedCallback]) -> None:
        outcomes = Outcomes(gettext("Reprocess"))
        queued: list[str] = []
        for callback in queryset.select_related(None).only("pk", "state"):
            label = f"#{callback.pk}"
            if services.reprocess_callback(callback.pk) is None:
                outcomes.failed.append(
                    (
                        label,
                        gettext("it is %(state)s: nothing to verify")
                        % {"state": callback.get_state_display()},
                    )
                )
                continue
            # The changelist is non-atomic, so the task is sent now (and, eager, runs now).
            transaction.on_commit(partial(tasks.queue_verification, callback.pk, force=True))
            after = ReceivedCallback.objects.only("state", "error").get(pk=callback.pk)
            if after.state == ReceivedCallback.PROCESSED:
                outcomes.succeeded.append(label)
            elif after.state == ReceivedCallback.FAILED:
                outcomes.failed.append((label, after.error))
            else:
                queued.append(label)
        if queued:
            outcomes.notes.append(
                gettext("Reprocess: queued for verification: %(which)s.") % {"which": _listed(queued)}
            )
        outcomes.report(request)
