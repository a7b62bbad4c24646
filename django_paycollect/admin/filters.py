"""The admin's list filters. Their choices are known without reading the table (the spec's statuses, the
client's operations and error classes, the communities known here): no ``SELECT DISTINCT`` over millions of
rows to list what a column holds. The dashboard's links use their parameters."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from ..client import OPERATIONS, errors
from ..conf import paycollect_settings
from ..models import ApiCall, ReceivedCallback, Transaction
from ..services.callback_ledger import stuck_filter
from .forms import community_choices, currency_choices


class FixedChoicesFilter(admin.SimpleListFilter):
    """A filter on ``field`` whose choices are known without reading the table; "other" (unless
    ``offer_other`` is false) is every value not among them."""

    field = ""
    offer_other = True

    def choices_of(self, request: HttpRequest) -> list[tuple[str, Any]]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        choices = self.choices_of(request)
        return [*choices, ("__other__", _("Other"))] if self.offer_other else choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        if value == "__other__":
            return queryset.exclude(
                **{f"{self.field}__in": [key for key, _label in self.choices_of(request)]}
            )
        return queryset.filter(**{self.field: value})


class CommunityFilter(FixedChoicesFilter):
    """By community: the settings' community and every Community row (no DISTINCT over the table)."""

    title = _("community")
    parameter_name = "community_id__exact"
    field = "community_id"

    def choices_of(self, request: HttpRequest) -> list[tuple[str, Any]]:
        return community_choices(with_key_only=False)


class RefundCommunityFilter(CommunityFilter):
    """Refunds by their transaction's community."""

    parameter_name = "community"
    field = "transaction__community_id"
    offer_other = False


class CurrencyFilter(FixedChoicesFilter):
    """By currency, from the spec's list."""

    title = _("currency")
    parameter_name = field = "currency"
    offer_other = False

    def choices_of(self, request: HttpRequest) -> list[tuple[str, Any]]:
        return currency_choices()


class OperationFilter(FixedChoicesFilter):
    """By operation: the client's ten operations, in words."""

    title = _("operation")
    parameter_name = "operation__exact"
    field = "operation"

    def choices_of(self, request: HttpRequest) -> list[tuple[str, Any]]:
        return [(name, ApiCall.OPERATION_LABELS.get(name, name)) for name in OPERATIONS]


def _error_classes(cls: type = errors.PayCollectError) -> set[str]:
    return {cls.__name__}.union(*map(_error_classes, cls.__subclasses__()))


class ErrorClassFilter(FixedChoicesFilter):
    """By error class: the client's error classes ("other": anything else, such as a decryption error)."""

    title = _("error class")
    parameter_name = "error_class__exact"
    field = "error_class"

    def choices_of(self, request: HttpRequest) -> list[tuple[str, Any]]:
        return [("", _("None (succeeded)")), *((name, name) for name in sorted(_error_classes()))]

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        # "" cannot be a filter value (it means "all"): "none" stands for it.
        return [("none" if key == "" else key, label) for key, label in super().lookups(request, model_admin)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "none":
            return queryset.filter(error_class="")
        return super().queryset(request, queryset)


class ClaimedStatusFilter(FixedChoicesFilter):
    """By the status a callback claimed: the spec's statuses, and "other" for anything else."""

    title = _("claimed status")
    parameter_name = "claimed_status__exact"
    field = "claimed_status"

    def choices_of(self, request: HttpRequest) -> list[tuple[str, Any]]:
        return [(status, status) for status in Transaction.KNOWN_SERVICE_STATUSES]


class CallbackTokenFilter(FixedChoicesFilter):
    """By which of ``CALLBACK_TOKENS`` a callback carried (its position, never the token)."""

    title = _("callback token")
    parameter_name = "token_index__exact"
    field = "token_index"
    offer_other = False

    def choices_of(self, request: HttpRequest) -> list[tuple[str, Any]]:
        tokens = paycollect_settings.texts("CALLBACK_TOKENS")
        return [(str(index), _("token #%(n)d") % {"n": index + 1}) for index in range(len(tokens))]


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
            return queryset.filter(stuck_filter())
        if self.value() == "yes":
            return queryset.filter(state__in=ReceivedCallback.WAITING_STATES)
        return queryset


class YesNoFilter(admin.SimpleListFilter):
    """Two choices: "no" lists the rows matching ``when_no``, "yes" every other row."""

    when_no: dict[str, Any] = {}
    labels: tuple[Any, Any] = (_("Yes"), _("No"))

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("yes", self.labels[0]), ("no", self.labels[1])]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.exclude(**self.when_no)
        if self.value() == "no":
            return queryset.filter(**self.when_no)
        return queryset


class CallbackValidityFilter(YesNoFilter):
    title = _("valid")
    parameter_name = "valid"
    when_no = {"state": ReceivedCallback.INVALID}
    labels = (_("Yes"), _("No (refused as invalid)"))


class MalformedHintsFilter(YesNoFilter):
    title = _("malformed hints")
    parameter_name = "malformed_hints"
    when_no = {"hint_errors": {}}
    labels = (_("Yes (stored as not sent)"), _("No"))
