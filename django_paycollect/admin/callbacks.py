"""Received callbacks: their bodies, why they wait or failed, and verifying them again."""

from __future__ import annotations

from contextlib import suppress
from functools import partial

from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.timesince import timesince, timeuntil
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .. import services, tasks
from ..client.money import loads_json, too_deep
from ..models import ReceivedCallback
from ..models.fields import json_safe
from ..services.callback_ledger import requeue_after
from .common import (
    Outcomes,
    PayCollectAdmin,
    change_url,
    code_block,
    json_display,
    link,
    listed,
    permission,
    pretty_json,
)
from .filters import (
    CallbackTokenFilter,
    CallbackValidityFilter,
    CallbackWaitingFilter,
    ClaimedStatusFilter,
    MalformedHintsFilter,
)

#: Stored callback bodies longer than this are shown as they arrived, not re-indented.
PRETTY_BODY_CHARS = 32 * 1024


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
        ClaimedStatusFilter,
        ("received_at", admin.DateFieldListFilter),
        CallbackTokenFilter,
    )
    sortable_by = ("received_at", "transaction_uuid")
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
        return link(change_url(obj.transaction), obj.transaction) if obj.transaction else "—"

    @admin.display(description=_("duplicate of"))
    def duplicate_of_link(self, obj: ReceivedCallback) -> SafeString | str:
        if obj.duplicate_of_id is None:
            return "—"
        url = reverse("admin:paycollect_receivedcallback_change", args=[obj.duplicate_of_id])
        return link(url, gettext("callback #%(pk)s") % {"pk": obj.duplicate_of_id})

    headers_display = json_display("headers", _("headers"))

    @admin.display(description=_("body"))
    def body_display(self, obj: ReceivedCallback) -> SafeString:
        # Pretty when it parses and is of a callback's size and shape; otherwise as it arrived. Any
        # stored body renders: NaN, lone surrogates, nesting past the recursion limit, megabytes
        # (indenting thousands of nested levels would make a page of hundreds of megabytes).
        if len(obj.body) <= PRETTY_BODY_CHARS:
            with suppress(ValueError, TypeError, RecursionError):
                document = loads_json(obj.body)
                if not too_deep(document):
                    return pretty_json(json_safe(document))
        return code_block(obj.body or "—")

    custom_fields_display = json_display("custom_fields", _("custom fields"))
    hint_errors_display = json_display("hint_errors", _("malformed hints (stored as not sent)"))

    @admin.display(description=_("traceback"))
    def traceback_display(self, obj: ReceivedCallback) -> SafeString:
        return code_block(obj.traceback or "—")

    @admin.display(description=_("waiting for verification"), ordering="next_attempt_at")
    def waiting_display(self, obj: ReceivedCallback) -> str:
        since = obj.waiting_since
        if since is None:
            return "—"
        now = timezone.now()
        if since > now:
            return gettext("retry due in %(time)s") % {"time": timeuntil(since, now)}
        age = timesince(since, now)
        if obj.state == ReceivedCallback.RECEIVED or since < now - requeue_after():
            return gettext("%(age)s (stuck: the sweep queues it again)") % {"age": age}
        return age

    has_reprocess_permission = permission("reprocess_receivedcallback")

    @admin.action(description=_("Verify again (reprocess)"), permissions=["reprocess"])
    def reprocess(self, request: HttpRequest, queryset: QuerySet[ReceivedCallback]) -> None:
        outcomes = Outcomes(gettext("Reprocess"))
        queued: list[str] = []
        for callback in queryset.select_related(None).only("pk", "state"):
            label = f"#{callback.pk}"
            if services.reprocess_callback(callback.pk) is None:
                state = callback.get_state_display()
                outcomes.failed.append(
                    (label, gettext("it is %(state)s: nothing to verify") % {"state": state})
                )
                continue
            # The changelist is non-atomic, so the task is sent now (and, eager, runs now).
            transaction.on_commit(partial(tasks.hand_on, callback.pk, force=True))
            after = ReceivedCallback.objects.only("state", "error").get(pk=callback.pk)
            if after.state == ReceivedCallback.PROCESSED:
                outcomes.succeeded.append(label)
            elif after.state == ReceivedCallback.FAILED:
                outcomes.failed.append((label, after.error))
            else:
                queued.append(label)
        if queued:
            outcomes.notes.append(
                gettext("Reprocess: queued for verification: %(which)s.") % {"which": listed(queued)}
            )
        outcomes.report(request)
