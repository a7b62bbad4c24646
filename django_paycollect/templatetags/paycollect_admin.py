"""Template tags of the admin pages: ``{% load paycollect_admin %}``."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template
from django.db import DatabaseError
from django.urls import NoReverseMatch, reverse

from .. import reporting
from ..amounts import amount_label

register = template.Library()


@register.filter
def amount(value: Any) -> Any:
    """``{{ value|amount }}``: an amount as the app writes amounts (``12.50``) in every language, its sign
    kept in place right to left. A template would localize it (``12,50`` in Arabic): a spelling the amount
    boxes refuse, and that the refund page's check of the remainder it showed misread."""
    return amount_label(value) if isinstance(value, Decimal) else value


@register.inclusion_tag("admin/paycollect/late_jobs.html", takes_context=True)
def paycollect_late_jobs(context: Any) -> dict[str, Any]:
    """The periodic jobs that are late (``reporting.housekeeping``: they ran, then stopped), for users who may
    see the dashboard: the admin index shows them, so a stopped beat is seen before callbacks are overdue.
    Jobs that have never run are no warning here (the dashboard says so in one calm line). One query."""
    user = getattr(context.get("request"), "user", None)
    if user is None or not user.has_perm("paycollect.view_dashboard"):
        return {"late": []}
    try:
        late = [job for job in reporting.housekeeping() if job.late]
    except DatabaseError:  # not migrated yet
        return {"late": []}
    try:
        dashboard = reverse("admin:paycollect_dashboard_changelist") + "#paycollect-housekeeping"
    except NoReverseMatch:  # pragma: no cover (the dashboard is registered with the admin)
        dashboard = ""
    return {"late": [{"job": job.job, "warning": job.warning()} for job in late], "dashboard": dashboard}
