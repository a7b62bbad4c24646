"""The exports in the admin: actions on the transaction, refund and series changelists, and the dashboard's
links, all thin callers of :mod:`django_paycollect.reporting.exports`. Shown to, and answered for, only users
holding ``paycollect.export_transaction`` and the permission to view the rows exported (an export's
``viewers``): the export permission alone downloads nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ..reporting import exports

PERMISSION = "paycollect.export_transaction"


def may_export(request: HttpRequest, export: exports.Export | None = None) -> bool:
    """The export permission and the permission to view the rows of ``export`` (None: of one export at
    least, for a page that offers them all)."""
    if not request.user.has_perm(PERMISSION):
        return False
    wanted = [export] if export is not None else exports.EXPORTS.values()
    return any(exports.may_view(request.user, one) for one in wanted)


def download(
    request: HttpRequest,
    export: exports.Export,
    queryset: QuerySet[Any],
    file_format: str,
    period: exports.ExportPeriod | None = None,
) -> HttpResponseBase | None:
    """The export of ``queryset`` as a streamed download; None (and a message) when it cannot be made.
    Refused (403) to a user who may not view its rows."""
    if not may_export(request, export):
        raise PermissionDenied
    try:
        pieces = exports.chunks(export, queryset, file_format)
    except exports.ExportError as error:
        messages.error(request, gettext("Export: %(why)s") % {"why": error})
        return None
    name = exports.filename(export, file_format, period)
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return StreamingHttpResponse(pieces, content_type=exports.CONTENT_TYPES[file_format], headers=headers)


def export_action(file_format: str, description: Any) -> Callable[..., HttpResponseBase | None]:
    """The action downloading the changelist's export (``export_rows``) of the selected in ``file_format``."""

    @admin.action(description=description, permissions=["export"])
    def action(model_admin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponseBase | None:
        export = exports.EXPORTS[model_admin.export_name]
        return download(request, export, model_admin.export_rows(queryset), file_format)

    return action


class ExportActions:
    """The two actions of a changelist whose rows (``export_rows``) are one export's."""

    export_name = ""

    def export_rows(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset

    def has_export_permission(self, request: HttpRequest) -> bool:
        return may_export(request, exports.EXPORTS[self.export_name])

    export_csv = export_action("csv", _("Export the selected as CSV"))
    export_xlsx = export_action("xlsx", _("Export the selected as XLSX"))


EXPORT_ACTIONS = ("export_csv", "export_xlsx")
