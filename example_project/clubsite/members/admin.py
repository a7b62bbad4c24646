from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .models import Membership


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("reference", "name", "plan", "billing", "pay_using", "amount", "status", "paid_until")
    list_filter = ("status", "plan", "billing", "pay_using")
    search_fields = ("name", "email")
    readonly_fields = (
        "public_id",
        "user",
        "price",
        "promocode",
        "promocode_id",
        "discount",
        "amount",
        "total_with_fees",
        "status",
        "paid_at",
        "paid_until",
        "renewals",
        "renewal_cancelled_at",
        "payments_link",
        "created_at",
    )

    @admin.display(description=_("payments"))
    def payments_link(self, obj: Membership) -> SafeString:
        # The payment app's admin searches transactions by exact merchant reference.
        url = reverse("admin:paycollect_transaction_changelist") + "?" + urlencode({"q": obj.reference})
        return format_html(
            '<a href="{}">{}</a>',
            url,
            gettext("transactions of %(reference)s") % {"reference": obj.reference},
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memberships are made by the checkout, with their payment
