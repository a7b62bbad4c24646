"""Pieces every page of the admin shares: outcome messages, links, JSON display, the base classes."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_permission_codename
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext, ngettext

from ..amounts import amount_text
from ..exceptions import PayCollectConfigurationError, ServiceLayerError, ServiceUnavailable
from .changelists import CappedCountPaginator, NulInQuery, ScalableChangeList, exact_search

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin as ModelAdmin
    from django.contrib.admin import TabularInline as TabularInline
else:
    # django-stubs declares these generic; Django's own classes cannot be subscripted at run time.
    class ModelAdmin(admin.ModelAdmin):
        def __class_getitem__(cls, _item: Any) -> type:
            return cls

    class TabularInline(admin.TabularInline):
        def __class_getitem__(cls, _item: Any) -> type:
            return cls


_M = TypeVar("_M", bound=Model)
_T = TypeVar("_T")

#: How many objects one message names.
LISTED_ITEMS = 20
#: Identifiers and amounts kept whole in a right-to-left admin (an Arabic one).
ADMIN_CSS = "paycollect/admin.css"
#: What the admin reports to staff instead of raising: the error contract, and a misconfiguration.
REPORTED_ERRORS = (ServiceLayerError, PayCollectConfigurationError)


def error_text(error: ServiceLayerError | PayCollectConfigurationError) -> str:
    """What staff read about one of :data:`REPORTED_ERRORS`, in the request's language: its messages, saying
    which is a misconfiguration, and the client's error by name for a service that could not be asked."""
    why = " ".join(error.messages)
    if isinstance(error, PayCollectConfigurationError):
        return gettext("The payments configuration is wrong: %(why)s (see manage.py check)") % {"why": why}
    if isinstance(error, ServiceUnavailable) and error.__cause__ is not None:
        why = f"{why} ({type(error.__cause__).__name__})"
    return why


class Outcomes:
    """What one action did to each selected object, reported as messages once at the end."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.succeeded: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.unknown: list[str] = []
        self.notes: list[str] = []

    def attempt(
        self, label: str, call: Callable[[], _T], unknown: Callable[[_T], bool] = lambda _result: False
    ) -> _T | None:
        """``call()``'s outcome under ``label``: refused (None, and why: :func:`error_text`), of unknown
        outcome, or succeeded."""
        try:
            result = call()
        except REPORTED_ERRORS as error:
            self.failed.append((label, error_text(error)))
            return None
        (self.unknown if unknown(result) else self.succeeded).append(label)
        return result

    def report(self, request: HttpRequest) -> None:
        if self.succeeded:
            count = len(self.succeeded)
            messages.success(
                request,
                ngettext(
                    "%(title)s: %(count)d succeeded (%(which)s).",
                    "%(title)s: %(count)d succeeded (%(which)s).",
                    count,
                )
                % {"title": self.title, "count": count, "which": listed(self.succeeded)},
            )
        if self.unknown:
            count = len(self.unknown)
            messages.warning(
                request,
                ngettext(
                    "%(title)s: outcome unknown for %(count)d (recorded, never resent; "
                    "reconciliation will fetch the truth): %(which)s.",
                    "%(title)s: outcome unknown for %(count)d (recorded, never resent; "
                    "reconciliation will fetch the truth): %(which)s.",
                    count,
                )
                % {"title": self.title, "count": count, "which": listed(self.unknown)},
            )
        for note in self.notes:
            messages.warning(request, note)
        if self.failed:
            count = len(self.failed)
            which = listed([f"{label}: {why}" for label, why in self.failed], separator="; ")
            messages.error(
                request,
                ngettext(
                    "%(title)s: %(count)d failed. %(which)s", "%(title)s: %(count)d failed. %(which)s", count
                )
                % {"title": self.title, "count": count, "which": which},
            )


def listed(items: Sequence[str], separator: str = ", ") -> str:
    """``items`` for a message: the first ``LISTED_ITEMS``, then how many more."""
    text = separator.join(items[:LISTED_ITEMS])
    if len(items) > LISTED_ITEMS:
        text += " " + gettext("(and %(more)d more)") % {"more": len(items) - LISTED_ITEMS}
    return text


def link(url: str, text: Any) -> SafeString:
    """A link within the admin."""
    return format_html('<a href="{}">{}</a>', url, text)


def displayable(text: str) -> str:
    """``text`` as a page can carry it: a lone surrogate (from a ``"\\ud800"`` escape in a stored body)
    cannot be encoded as UTF-8, so it is shown as its escape instead of failing the whole page."""
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def code_block(text: str) -> SafeString:
    """JSON, a body as it arrived or a traceback, in a ``<pre dir="ltr">``: left to right in a right-to-left
    admin (an Arabic one), where its lines would start at the right and its brackets and punctuation be
    reordered (paycollect/admin.css aligns it to the left there)."""
    return format_html('<pre dir="ltr">{}</pre>', displayable(text))


def pretty_json(value: Any) -> SafeString:
    """A JSON value indented in a code block, or a dash for an empty one."""
    if value in (None, "", [], {}):
        return format_html("{}", "—")
    return code_block(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str))


def json_display(field: str, description: Any) -> Callable[[Any, Any], SafeString]:
    """A read-only admin column showing a JSON field pretty-printed (one definition for every model)."""

    @admin.display(description=description)
    def display(model_admin: Any, obj: Any) -> SafeString:
        return pretty_json(getattr(obj, field))

    return display


def amount_display(model: type[Model], field: str) -> Callable[[Any, Any], str | None]:
    """A read-only column or field showing a model's amount as the app writes amounts (``12.50``) in every
    language: Django would localize it (``12,50`` in an Arabic admin), a spelling the amount boxes refuse."""

    @admin.display(description=getattr(model._meta.get_field(field), "verbose_name", field), ordering=field)
    def display(model_admin: Any, obj: Any) -> str | None:
        value = getattr(obj, field)
        return None if value is None else amount_text(value)

    return display


def change_url(obj: Model) -> str:
    """The admin's page of ``obj``."""
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])


class PayCollectAdmin(ModelAdmin[_M]):
    """Read-only by default; changelists count at most ``COUNT_LIMIT`` rows, filter on fixed choices,
    search exact identifiers, sort on indexed columns and skip large columns (see ``changelists``)."""

    show_full_result_count = False
    paginator = CappedCountPaginator
    changelist_defer: Sequence[str] = ()

    class Media:
        css = {"all": [ADMIN_CSS]}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return ScalableChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[_M], search_term: str
    ) -> tuple[QuerySet[_M], bool]:
        # Exact matches only (a uuid in any spelling finds its canonical form): indexes serve them.
        if not search_term.strip():
            return queryset, False
        return exact_search(queryset, self.get_search_fields(request), search_term), False

    # Actions run in the changelist view: it must stay out of atomic, even under ATOMIC_REQUESTS.
    @transaction.non_atomic_requests
    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            return super().changelist_view(request, extra_context)
        except NulInQuery as refused:  # a 400 in words rather than Django's bare "Bad Request (400)"
            return HttpResponseBadRequest(str(refused), content_type="text/plain; charset=utf-8")

    def _has_perm(self, request: HttpRequest, codename: str) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.{codename}")


def permission(codename: str) -> Callable[[PayCollectAdmin[Any], HttpRequest], bool]:
    """An action's ``has_<name>_permission``: whether the user holds the app's ``codename``."""
    return lambda model_admin, request: model_admin._has_perm(request, codename)


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
