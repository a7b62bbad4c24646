"""The app's admin reads fully in Arabic.

A superuser opens every page of the app's admin with ``LANGUAGE_CODE = "ar"``: the index, each changelist
with each choice of each of its filters, each change page of a populated object, the add pages and their
errors, each action's confirmation page and the messages actions leave, and the dashboard. The text of each
page (its text nodes, and what buttons, titles and placeholders show) must hold none of the English of the
app's catalogue (a message left untranslated shows its English as it is) and none of the labels Django makes
of a field, column, filter or action that has none of its own ("Created at", "Uuid display"). Django's own
admin messages that its Arabic catalogue does not translate yet (a newer Django's new words) are Django's
English, not the app's: they are taken out of the text before it is searched.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import django
import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.contrib.contenttypes.models import ContentType
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.text import capfirst

import django_paycollect
from django_paycollect.models import (
    ApiCall,
    Community,
    DirectOrder,
    ReceivedCallback,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
    TransactionStatusChange,
)
from tests.catalogues import msgids, pieces_of
from tests.support.admin import url

CATALOGUE = Path(django_paycollect.__file__).parent / "locale" / "ar" / "LC_MESSAGES" / "django.po"
#: What is not a word's edge: a msgid inside an identifier (``pay_using``, ``/payments/pay/``) is no message.
_EDGE = r"\w/.\-@"


@cache
def english_of_the_catalogue() -> frozenset[str]:
    """Each msgid of the app's catalogue (every one, translated or not: the .po file) cut at its placeholders
    and tags: the pieces a page shows as they are when the message is not translated."""
    pieces = set()
    for msgid in msgids(CATALOGUE):
        pieces |= {piece for piece in pieces_of(msgid) if len(piece) >= 2 and re.search("[A-Za-z]{2}", piece)}
    return frozenset(pieces)


@cache
def default_labels() -> frozenset[str]:
    """The labels Django makes of names when nothing else is given: every field of the app's models, every
    column, field, filter and action of its model admins ("Created at", "Uuid display", "Settle failed")."""
    labels = set()
    for model in registered():
        model_admin = admin.site.get_model_admin(model)
        names = {field.name for field in model._meta.get_fields()}
        names |= {name for name in model_admin.list_display if isinstance(name, str)}
        names |= set(model_admin.readonly_fields) | set(model_admin.fields or ())
        names |= set(flatten_fieldsets(model_admin.fieldsets or ()))
        names |= {name for name in model_admin.list_filter if isinstance(name, str)}
        names |= {action for action in (model_admin.actions or ()) if isinstance(action, str)}
        labels |= {capfirst(name.replace("_", " ")) for name in names}
    return frozenset(label for label in labels if len(label) >= 2)


@cache
def djangos_own_untranslated() -> tuple[str, ...]:
    """Pieces (two words or more) of Django's own admin and core messages that read in English with Arabic
    active: what this Django's Arabic catalogue does not translate yet. Longest first."""
    django_root = Path(django.__file__).parent
    pieces = set()
    with translation.override("ar"):
        for po in (
            django_root / "contrib" / "admin" / "locale" / "en" / "LC_MESSAGES" / "django.po",
            django_root / "conf" / "locale" / "en" / "LC_MESSAGES" / "django.po",
        ):
            for msgid in msgids(po):
                if translation.gettext(msgid) == msgid:
                    pieces |= {piece for piece in pieces_of(msgid) if " " in piece}
    return tuple(sorted(pieces, key=len, reverse=True))


class _Text(HTMLParser):
    """What a person reads on a page: text nodes and the words of buttons, titles and placeholders. Scripts,
    styles and ``<pre>`` (stored bodies and JSON, shown as they are) are left out."""

    SKIPPED = {"script", "style", "pre", "textarea"}
    SHOWN_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIPPED:
            self.skipping += 1
        values = dict(attrs)
        shown = {name for name in values if name in self.SHOWN_ATTRIBUTES}
        if tag == "input" and values.get("type") in ("submit", "button"):
            shown.add("value")
        self.parts += [values[name] or "" for name in sorted(shown)]

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIPPED and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def text_of(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split())


@cache
def _english_patterns() -> tuple[re.Pattern[str], tuple[tuple[str, re.Pattern[str]], ...]]:
    """One pattern of every piece (a page's text is searched once), and one of each (to name what matched).
    Compiled once: there are more pieces than the ``re`` module's cache keeps."""
    pieces = sorted(english_of_the_catalogue() | default_labels(), key=len, reverse=True)
    each = tuple((piece, re.compile(rf"(?<![{_EDGE}]){re.escape(piece)}(?![{_EDGE}])")) for piece in pieces)
    anyone = re.compile(rf"(?<![{_EDGE}])(?:{'|'.join(map(re.escape, pieces))})(?![{_EDGE}])")
    return anyone, each


def english_in(text: str) -> list[str]:
    anyone, each = _english_patterns()
    # Where a piece stands, the scan finds a match there or before it: no match, no piece.
    if not anyone.search(text):
        return []
    return sorted(piece for piece, pattern in each if pattern.search(text))


def assert_reads_in_arabic(response: Any) -> None:
    assert response.status_code == 200, (response.status_code, response.wsgi_request.get_full_path())
    html = response.content.decode()
    assert '<html lang="ar" dir="rtl">' in html, response.wsgi_request.get_full_path()
    text = text_of(html)
    for django_s_own in djangos_own_untranslated():
        text = text.replace(django_s_own, " ")
    messages = " ".join(str(message) for message in get_messages(response.wsgi_request))
    english = english_in(f"{text} {messages}")
    assert not english, f"{response.wsgi_request.get_full_path()}: untranslated {english}\n{text}"


# --- the objects every page shows ---------------------------------------------------------------------


@pytest.fixture
def arabic(settings: Any) -> None:
    settings.LANGUAGE_CODE = "ar"


@pytest.fixture
def admin_user(django_user_model: Any) -> Any:
    # Named in Arabic: an English username on every page would read as a word left untranslated.
    return django_user_model.objects.create_superuser("مدير", "manager@example.com", "pw")


@pytest.fixture
def admin_client(client: Any, admin_user: Any) -> Any:
    client.force_login(admin_user)
    return client


@pytest.fixture
def populated(admin_user: Any) -> dict[str, Any]:
    """One of each thing the admin shows, in each state that words itself differently."""
    now = timezone.now()
    Community.objects.create(
        community_id="c-2", name="نادي الجزيرة", api_key="key-0123456789", basic_credentials="user:secret-99"
    )
    common = {
        "community_id": "tests-community",
        "customer_name": "منى علي",
        "customer_email": "mona@example.com",
    }
    paid = Transaction.objects.create(
        uuid="3f1c2a9e-8b7d-4c6e-9f00-0123456789ab",
        service_id=42,
        status=Transaction.SUCCESSFUL,
        service_status="SUCCESSFUL",
        total_amount=Decimal("150.00"),
        original_amount=Decimal("145.00"),
        total_amount_piasters=15000,
        refunded_amount=Decimal("10.00"),
        pay_using="card",
        merchant_reference="r-1",
        capture_state=Transaction.CAPTURE_DONE,
        captured_amount=Decimal("150.00"),
        captured_at=now,
        captured_by=admin_user,
        raw={"status": "SUCCESSFUL"},
        custom_fields=[{"field_label": "المقاس", "field_value": "M"}],
        content_type=ContentType.objects.get_for_model(Community),
        object_id="1",
        succeeded_at=now,
        owner=admin_user,
        **common,
    )
    TransactionStatusChange.objects.create(
        transaction=paid, from_status="NEW", to_status="PENDING", source=TransactionStatusChange.Source.PAY
    )
    TransactionStatusChange.objects.create(
        transaction=paid,
        from_status="PENDING",
        to_status="SUCCESSFUL",
        service_status="SUCCESSFUL",
        source=TransactionStatusChange.Source.CALLBACK,
    )
    Refund.objects.create(transaction=paid, amount=Decimal("10.00"), state=Refund.SUCCEEDED, completed_at=now)
    unknown_refund = Refund.objects.create(
        transaction=paid, amount=Decimal("5.00"), state=Refund.UNKNOWN, requested_by=admin_user
    )
    not_started = Transaction.objects.create(total_amount=Decimal("20.00"), **common)
    odd = Transaction.objects.create(
        uuid="9a8b7c6d-0000-4000-8000-00000000000f",
        status=Transaction.PENDING,
        service_status="VOIDED",
        status_unrecognised=True,
        amount_mismatch=True,
        outcome_unknown=True,
        capture_state=Transaction.CAPTURE_UNKNOWN,
        total_amount=Decimal("99.50"),
        currency="USD",
        **common,
    )
    parent = Transaction.objects.create(
        uuid="11111111-2222-4333-8444-555555555555",
        status=Transaction.SUCCESSFUL,
        total_amount=Decimal("300.00"),
        parent_uuid="11111111-2222-4333-8444-555555555555",
        **common,
    )
    series = RecurringSeries.objects.create(
        parent_uuid=parent.uuid,
        parent_transaction=parent,
        community_id="tests-community",
        expiry_date=dt.date(2030, 1, 1),
        minimum_days_between_payments=30,
        recurring_count=2,
    )
    cancelled = RecurringSeries.objects.create(
        parent_uuid="66666666-7777-4888-8999-000000000000",
        community_id="tests-community",
        active=False,
        cancel_state=RecurringSeries.CANCEL_DONE,
        cancelled_at=now,
        cancelled_by=admin_user,
    )
    Transaction.objects.create(
        uuid="22222222-2222-4333-8444-555555555555",
        status=Transaction.SUCCESSFUL,
        total_amount=Decimal("300.00"),
        parent_uuid=parent.uuid,
        series=series,
        transaction_order=2,
        **common,
    )
    order = DirectOrder.objects.create(
        community_id="tests-community",
        state=DirectOrder.CREATED,
        name="اشتراك المسبح",
        amount=Decimal("500.00"),
        discount_amount=Decimal("50.00"),
        vat_percentage=Decimal("14.00"),
        payment_methods=["card", "kiosk"],
        customer_name="عمر حسن",
        customer_email="omar@example.com",
        customer_mobile="+201112223334",
        custom_fields=[{"field_label": "المقاس", "field_type": "DROPDOWNLIST", "field_choices": "S, M"}],
        tags=[{"id": 1, "name": "صيف"}],
        payment_id="ord-1",
        payment_link="https://pay.example/ord-1",
        created_by=admin_user,
    )
    Transaction.objects.create(
        uuid="33333333-2222-4333-8444-555555555555",
        direct_order=order,
        total_amount=Decimal("450.00"),
        **common,
    )
    DirectOrder.objects.create(
        community_id="tests-community",
        state=DirectOrder.UNKNOWN,
        name="طلب غير مؤكد",
        amount=Decimal("10.00"),
        payment_methods=["card"],
        customer_name="عمر حسن",
        customer_email="omar@example.com",
        customer_mobile="+201112223334",
    )
    ApiCall.objects.create(
        operation="pay",
        community_id="tests-community",
        method="POST",
        path="/api/v1/payments/pay/variable-amount",
        request_body={"amount": "150.00"},
        http_status=200,
        code=200,
        data={"transaction_uuid": paid.uuid},
        duration_ms=120,
        attempts=1,
        transaction=paid,
    )
    ApiCall.objects.create(
        operation="refund",
        community_id="tests-community",
        method="POST",
        path="/api/payments/refund-transaction/",
        error_class="OutcomeUnknownError",
        outcome_unknown=True,
        attempts=1,
        transaction=paid,
        refund=unknown_refund,
    )
    StatisticsSnapshot.objects.create(
        community_id="tests-community",
        balance=Decimal("1000.00"),
        total_settled=Decimal("800.00"),
        total_number_of_transactions=12,
        total_collected_transactions=Decimal("1500.00"),
        weekly_collected_transactions=Decimal("300.00"),
        raw={"balance": 1000},
    )
    processed = ReceivedCallback.objects.create(
        state=ReceivedCallback.PROCESSED,
        token_index=0,
        remote_addr="127.0.0.1",
        headers={"Content-Type": "application/json"},
        body='{"transaction_uuid": "3f1c2a9e-8b7d-4c6e-9f00-0123456789ab", "status": "SUCCESSFUL"}',
        transaction_uuid=paid.uuid,
        claimed_status="SUCCESSFUL",
        payment_id="42",
        total_amount=Decimal("150.00"),
        is_sub_payment=False,
        dedupe_key=f"{paid.uuid}|SUCCESSFUL",
        transaction=paid,
        attempts=1,
        processed_at=now,
    )
    ReceivedCallback.objects.create(
        state=ReceivedCallback.DUPLICATE,
        transaction_uuid=paid.uuid,
        claimed_status="SUCCESSFUL",
        duplicate_of=processed,
        hint_errors={"recurring.parent_transaction": ["ليس معرّفًا فريدًا"]},
    )
    ReceivedCallback.objects.create(
        state=ReceivedCallback.RECEIVED, transaction_uuid=odd.uuid, claimed_status="PENDING"
    )
    ReceivedCallback.objects.create(
        state=ReceivedCallback.QUEUED, next_attempt_at=now + dt.timedelta(minutes=5)
    )
    ReceivedCallback.objects.create(state=ReceivedCallback.INVALID, body="not json")
    return {
        "paid": paid,
        "not_started": not_started,
        "odd": odd,
        "parent": parent,
        "series": series,
        "cancelled": cancelled,
        "order": order,
        "processed": processed,
    }


def registered() -> list[type]:
    models = apps.get_app_config("paycollect").get_models()
    return [model for model in models if admin.site.is_registered(model)]


pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("arabic", "populated")]


# --- the pages ----------------------------------------------------------------------------------------


def test_the_index_and_the_app_s_index_read_in_arabic(admin_client):
    assert_reads_in_arabic(admin_client.get(reverse("admin:index")))
    assert_reads_in_arabic(admin_client.get(reverse("admin:app_list", args=["paycollect"])))


@pytest.mark.parametrize("model", registered(), ids=lambda model: model._meta.model_name)
def test_every_changelist_with_every_choice_of_every_filter_reads_in_arabic(admin_client, model):
    changelist = url(model._meta.model_name)
    response = admin_client.get(changelist)
    assert_reads_in_arabic(response)
    if model._meta.model_name == "dashboard":
        return
    assert "/static/paycollect/admin.css" in response.content.decode()
    seen = 1
    cl = response.context["cl"]
    for spec in cl.filter_specs:
        for choice in spec.choices(cl):
            assert_reads_in_arabic(admin_client.get(changelist + choice["query_string"]))
            seen += 1
    # A search that finds nothing, and one that finds a row.
    assert_reads_in_arabic(admin_client.get(changelist, {"q": "nothing-like-this"}))
    assert seen > len(cl.filter_specs)


@pytest.mark.parametrize(
    "model",
    [model for model in registered() if model._meta.model_name != "dashboard"],  # a page, not objects
    ids=lambda model: model._meta.model_name,
)
def test_every_change_page_of_every_object_and_its_history_read_in_arabic(admin_client, model):
    objects = list(model._default_manager.all())
    assert objects, model
    for obj in objects:
        name = model._meta.model_name
        change = admin_client.get(url(name, "change", obj.pk))
        assert_reads_in_arabic(change)
        # Identifiers and amounts are kept whole in right-to-left cells and fields (paycollect/admin.css).
        assert "/static/paycollect/admin.css" in change.content.decode()
        assert_reads_in_arabic(admin_client.get(url(name, "history", obj.pk)))


def test_the_add_pages_and_their_errors_read_in_arabic(admin_client):
    assert_reads_in_arabic(admin_client.get(url("directorder", "add")))
    assert_reads_in_arabic(admin_client.get(url("community", "add")))
    # Every field refused: required ones missing, the spec's rules broken, lines that do not parse.
    refused = admin_client.post(
        url("directorder", "add"),
        {
            "community_id": "tests-community",
            "name": "",
            "amount": "10.001",
            "currency": "EGP",
            "payment_methods": "card, cheque",
            "customer_name": "منى",
            "customer_email": "mona",
            "customer_mobile": "0100",
            "custom_fields": "المقاس | DROPDOWNLIST | maybe",
            "tags": "بلا فاصل",
            "allow_recurring_payments": "on",
            "redirect_url": "not a url",
        },
    )
    assert refused.context["adminform"].form.errors
    assert_reads_in_arabic(refused)
    community = Community.objects.get(community_id="c-2")
    refused = admin_client.post(
        url("community", "change", community.pk),
        {
            "community_id": "c-2",
            "name": "نادي",
            "api_key": "new-key-0123456789",
            "clear_api_key": "on",
            "basic_credentials": "no-colon",
        },
    )
    assert refused.context["adminform"].form.errors
    assert_reads_in_arabic(refused)


def test_the_delete_confirmation_of_a_community_reads_in_arabic(admin_client):
    community = Community.objects.get(community_id="c-2")
    assert_reads_in_arabic(admin_client.get(url("community", "delete", community.pk)))
    response = admin_client.post(
        url("community"), {"action": "delete_selected", "_selected_action": [community.pk]}
    )
    assert_reads_in_arabic(response)


def test_the_refund_page_its_refusals_and_its_errors_read_in_arabic(admin_client, populated):
    paid, not_started = populated["paid"], populated["not_started"]
    ids = f"{paid.pk},{not_started.pk}"
    page = admin_client.get(url("transaction", "refund") + "?" + urlencode({"ids": ids}))
    assert_reads_in_arabic(page)
    assert "75.00" not in text_of(page.content.decode())  # 150 - 10 refunded - 5 unknown = 135
    # What is refundable changed since the page was shown: said by the amount's field.
    stale = admin_client.post(
        url("transaction", "refund") + "?" + urlencode({"ids": ids}),
        {f"amount_{paid.pk}": "1.00", f"shown_{paid.pk}": "140.00"},
    )
    assert stale.context["form"].errors
    assert_reads_in_arabic(stale)
    # Chosen from the changelist: the action goes to the page.
    chosen = admin_client.post(
        url("transaction"), {"action": "refund", "_selected_action": [paid.pk]}, follow=True
    )
    assert_reads_in_arabic(chosen)


def test_cancelling_series_asks_first_in_arabic(admin_client, populated):
    series, cancelled = populated["series"], populated["cancelled"]
    from_series = admin_client.post(
        url("recurringseries"), {"action": "cancel", "_selected_action": [series.pk, cancelled.pk]}
    )
    assert from_series.templates[0].name == "admin/paycollect/cancel_recurring_confirmation.html"
    assert_reads_in_arabic(from_series)
    parent, not_started = populated["parent"], populated["not_started"]
    from_transactions = admin_client.post(
        url("transaction"), {"action": "cancel_recurring", "_selected_action": [parent.pk, not_started.pk]}
    )
    assert_reads_in_arabic(from_transactions)
    # Nothing that can be cancelled: the page says so, and why.
    nothing = admin_client.post(
        url("recurringseries"), {"action": "cancel", "_selected_action": [cancelled.pk]}
    )
    assert_reads_in_arabic(nothing)


def test_the_messages_actions_leave_read_in_arabic(admin_client, populated):
    # Left alone before anything is asked of the service: never accepted by it, already verified, and
    # a transaction that belongs to no series.
    synced = admin_client.post(
        url("transaction"), {"action": "sync", "_selected_action": [populated["not_started"].pk]}, follow=True
    )
    assert 'class="error"' in synced.content.decode()
    assert_reads_in_arabic(synced)
    reprocessed = admin_client.post(
        url("receivedcallback"),
        {"action": "reprocess", "_selected_action": [populated["processed"].pk]},
        follow=True,
    )
    assert_reads_in_arabic(reprocessed)
    confirmed = admin_client.post(
        url("transaction"),
        {"action": "cancel_recurring", "_selected_action": [populated["not_started"].pk], "post": "yes"},
        follow=True,
    )
    assert_reads_in_arabic(confirmed)


def test_the_dashboard_for_each_community_currency_and_period_reads_in_arabic(admin_client):
    dashboard = url("dashboard")
    for query in (
        {},
        {"community": "c-2", "currency": "USD", "days": 7},
        {"community": "tests-community", "currency": "EGP", "days": 90},
        {"days": "not-a-number"},
    ):
        assert_reads_in_arabic(admin_client.get(dashboard, query))


def test_the_check_finds_a_message_left_in_english_and_a_label_django_made():
    # The test above fails on what a page would show untranslated (what it does to a missing entry).
    assert "Refund through the service" in english_in("المعاملات Refund through the service حفظ")
    assert "Created at" in english_in("وقت Created at")
    assert "Uuid display" in english_in("عرض Uuid display")
    # Identifiers that hold a message's word are not messages: a path, a field of the spec, an address.
    assert english_in("/api/v1/payments/pay/variable-amount pay_using mona@example.com SUCCESSFUL") == []


@pytest.mark.django_db(transaction=True)
def test_the_service_layer_s_refusals_reach_the_admin_in_arabic(admin_client, populated, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_NETWORK_RETRIES": 0}  # BASE_URL: a closed port

    def messages_after(model, action, objects):
        response = admin_client.post(
            url(model), {"action": action, "_selected_action": [obj.pk for obj in objects]}, follow=True
        )
        assert_reads_in_arabic(response)
        return [str(message) for message in response.context["messages"]]

    paid, odd = populated["paid"], populated["odd"]
    # Refused by the state, before anything is sent.
    assert messages_after("transaction", "capture", [odd]) == [
        f"تحصيل المبلغ المحجوز: فشل عنصر واحد. {odd.uuid}: "
        "لا يُحصَّل المبلغ المحجوز إلا لمعاملة ناجحة (الحالة PENDING)."
    ]
    settled = Refund.objects.get(state=Refund.SUCCEEDED)
    [message] = messages_after("refund", "settle_succeeded", [settled])
    assert message.startswith("تسوية الاسترداد: فشل عنصر واحد.")
    assert message.endswith(
        "لا يُسوّى يدويًا إلا استرداد نتيجته غير معروفة أو معلّق منذ مدة طويلة (الحالة: نجحت)."
    )
    # The service out of reach: nothing was done, in Arabic, and which of the client's errors it was.
    assert messages_after("transaction", "sync", [paid]) == [
        f"المزامنة من الخدمة: فشل عنصر واحد. {paid.uuid}: "
        "يتعذّر الوصول إلى خدمة الدفع؛ لم يُنفَّذ شيء. حاول مرة أخرى بعد قليل. (ConnectError)"
    ]
    [fetched] = messages_after("community", "fetch_statistics", Community.objects.filter(community_id="c-2"))
    assert fetched.startswith("جلب الإحصاءات: فشل عنصر واحد.")
    dashboard = admin_client.post(url("dashboard") + "?community=c-2", follow=True)
    assert_reads_in_arabic(dashboard)
