"""Communities (their keys are stored encrypted)."""

from __future__ import annotations

from functools import partial

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import services
from ..models import Community
from .common import ADMIN_CSS, ModelAdmin, Outcomes
from .forms import CommunityForm, stored_secret_text


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

    class Media:
        css = {"all": [ADMIN_CSS]}

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
            snapshot = outcomes.attempt(
                community.community_id, partial(services.fetch_statistics, community.community_id)
            )
            if snapshot is None:
                continue
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
