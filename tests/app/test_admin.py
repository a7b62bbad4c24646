"""The admin, used as a merchant uses it: through the Django test client, logged in as staff.

Every action is posted to its changelist (``action`` + ``_selected_action``) by a user with the
permission (it works: the database, the messages and the sandbox's journal show it) and by one
without it (it is not offered, and posting it anyway changes nothing and sends nothing).
Tests that reach the service use the live sandbox (``paycollect_live``) and run outside a test
transaction, since the state-changing services refuse to run inside ``transaction.atomic``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.handlers.base import BaseHandler
from django.db import connection, connections
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse
from django.utils import timezone

from django_paycollect import services
from django_paycollect.models import (
    ApiCall,
    Community,
    DirectOrder,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
    TransactionStatusChange,
)

live = pytest.mark.django_db(transaction=True)

BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}


# --- helpers ----------------------------------------------------------------------------------------


def url(model, view="changelist", *args):
    return reverse(f"admin:paycollect_{model}_{view}", args=args)


def staff(django_user_model, *codenames, username="staff"):
    """A staff user holding exactly these paycollect permissions."""
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    perms = list(Permission.objects.filter(content_type__app_label="paycollect", codename__in=codenames))
    assert sorted(p.codename for p in perms) == sorted(codenames)
    user.user_permissions.add(*perms)
    return user


def logged_in(client, user):
    client.force_login(user)
    return client


def offered(client, model):
    """The actions the changelist offers this user."""
    response = client.get(url(model))
    assert response.status_code == 200
    form = response.context["action_form"]
    if form is None:
        return set()
    return {name for name, _label in form.fields["action"].choices if name}


def post_action(client, model, action, objects, **extra):
    return client.post(
        url(model), {"action": action, "_selected_action": [obj.pk for obj in objects], **extra}
    )


def messages_of(response):
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def text_of(response):
    return " | ".join(text for _level, text in messages_of(response))


def sent(sb, operation):
    """What the sandbox received for an operation (its request journal)."""
    return sb.control.journal(operation)


def local_transaction(**fields):
    """A transaction row made directly, for tests that must not (and do not) reach the service."""
    values = {
        "community_id": "tests-community",
        "total_amount": Decimal("100.00"),
        "status": Transaction.SUCCESSFUL,
        "customer_email": "mona@example.com",
    }
    values.update(fields)
    return Transaction.objects.create(**values)


def series_of(txn):
    return RecurringSeries.objects.get(Q(parent_uuid=txn.uuid) | Q(pk=txn.series_id))


def start_pending(reference):
    return services.start_payment(amount=Decimal("50.00"), billing_data=BILLING, merchant_reference=reference)


@pytest.fixture
def atomic_requests(monkeypatch):
    """ATOMIC_REQUESTS on, as many merchants run: every view not marked non-atomic runs in atomic."""
    monkeypatch.setitem(connections.settings["default"], "ATOMIC_REQUESTS", True)

    def view(request):
        return None

    # The switch works: an unmarked view would now be wrapped in atomic.
    assert BaseHandler().make_view_atomic(view) is not view


# --- registration -------------------------------------------------------------------------------------


def test_every_model_is_registered():
    for model in (Transaction, RecurringSeries, DirectOrder, Community, ApiCall, Refund, StatisticsSnapshot):
        assert model in admin.site._registry


@pytest.mark.django_db
def test_a_superuser_is_offered_every_action(admin_client):
    assert offered(admin_client, "transaction") == {"sync", "capture", "refund", "cancel_recurring"}
    assert offered(admin_client, "recurringseries") == {"cancel"}
    assert offered(admin_client, "community") >= {"fetch_statistics"}


@pytest.mark.parametrize(
    "name",
    [
        ("transaction", "changelist"),
        ("transaction", "refund"),
        ("recurringseries", "changelist"),
        ("directorder", "add"),
        ("dashboard", "changelist"),
    ],
    ids="-".join,
)
def test_views_calling_the_services_stay_out_of_atomic(name):
    # What Django's handler reads to decide whether to wrap a view in ATOMIC_REQUESTS' atomic block.
    callback = resolve(url(*name)).func
    assert "default" in getattr(callback, "_non_atomic_requests", set())


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("codenames", "actions"),
    [
        ((), set()),
        (("sync_transaction",), {"sync"}),
        (("capture_transaction",), {"capture"}),
        (("refund_transaction",), {"refund"}),
        (("cancel_recurringseries",), {"cancel_recurring"}),
        (("capture_transaction", "refund_transaction"), {"capture", "refund"}),
    ],
)
def test_transaction_actions_are_offered_only_with_their_permission(
    client, django_user_model, codenames, actions
):
    user = staff(django_user_model, "view_transaction", *codenames)
    assert offered(logged_in(client, user), "transaction") == actions


@pytest.mark.django_db
def test_series_cancel_is_offered_only_with_its_permission(client, django_user_model):
    viewer = staff(django_user_model, "view_recurringseries", username="viewer")
    canceller = staff(django_user_model, "view_recurringseries", "cancel_recurringseries", username="c")
    assert offered(logged_in(client, viewer), "recurringseries") == set()
    assert offered(logged_in(client, canceller), "recurringseries") == {"cancel"}


# --- sync -------------------------------------------------------------------------------------------------


@live
def test_sync_applies_what_the_service_says(paycollect_live, client, django_user_model):
    sb = paycollect_live
    pending = start_pending("order-sync-1")
    sb.control.complete(pending.uuid, "SUCCESSFUL")
    never_started = local_transaction(status=Transaction.NEW, community_id=sb.community_id)
    logged_in(client, staff(django_user_model, "view_transaction", "sync_transaction"))

    response = post_action(client, "transaction", "sync", [pending, never_started])

    assert response.status_code == 302
    pending.refresh_from_db()
    assert pending.status == Transaction.SUCCESSFUL
    assert TransactionStatusChange.objects.filter(transaction=pending, source="admin").exists()
    text = text_of(response)
    assert f"Sync from the service: 1 succeeded ({pending.uuid})" in text
    assert "1 failed" in text
    assert "never accepted by the service" in text


@live
def test_sync_posted_without_permission_does_nothing(paycollect_live, client, django_user_model):
    sb = paycollect_live
    pending = start_pending("order-sync-2")
    sb.control.complete(pending.uuid, "SUCCESSFUL")
    fetched_before = len(sent(sb, "fetch_transaction"))
    logged_in(client, staff(django_user_model, "view_transaction", "capture_transaction"))

    response = post_action(client, "transaction", "sync", [pending])

    assert "No action selected." in text_of(response)
    pending.refresh_from_db()
    assert pending.status == Transaction.PENDING
    assert len(sent(sb, "fetch_transaction")) == fetched_before


# --- capture ------------------------------------------------------------------------------------------


@live
def test_capture_reports_each_outcome(
    paycollect_live, paid_transaction, client, django_user_model, atomic_requests
):
    not_paid = local_transaction(uuid="not-paid-0001", status=Transaction.PENDING)
    logged_in(client, staff(django_user_model, "view_transaction", "capture_transaction"))

    response = post_action(client, "transaction", "capture", [paid_transaction, not_paid])

    paid_transaction.refresh_from_db()
    assert paid_transaction.capture_state == Transaction.CAPTURE_DONE
    assert paid_transaction.captured_amount == Decimal("100.00")
    assert len(sent(paycollect_live, "capture")) == 1
    text = text_of(response)
    assert f"Capture: 1 succeeded ({paid_transaction.uuid})" in text
    assert "Capture: 1 failed. not-paid-0001: Only a successful transaction can be captured" in text
    levels = [level for level, _text in messages_of(response)]
    assert levels == ["success", "error"]


@live
def test_capture_refused_by_the_service_says_why(
    paycollect_live, paid_transaction, client, django_user_model
):
    paycollect_live.control.fault("capture", "status", status=400)
    logged_in(client, staff(django_user_model, "view_transaction", "capture_transaction"))

    response = post_action(client, "transaction", "capture", [paid_transaction])

    paid_transaction.refresh_from_db()
    assert paid_transaction.capture_state == Transaction.CAPTURE_FAILED
    [(level, text)] = messages_of(response)
    assert level == "error"
    assert text.startswith(f"Capture: 1 failed. {paid_transaction.uuid}: ")
    assert len(text) > len(f"Capture: 1 failed. {paid_transaction.uuid}: ")


@live
def test_capture_posted_without_permission_sends_nothing(
    paycollect_live, paid_transaction, client, django_user_model
):
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    assert "capture" not in offered(client, "transaction")

    response = post_action(client, "transaction", "capture", [paid_transaction])

    assert "No action selected." in text_of(response)
    paid_transaction.refresh_from_db()
    assert paid_transaction.capture_state == Transaction.CAPTURE_NONE
    assert sent(paycollect_live, "capture") == []


# --- refund ---------------------------------------------------------------------------------------------


def refund_page(client, transactions):
    """Start the refund action from the changelist; return the intermediate page it leads to."""
    response = post_action(client, "transaction", "refund", transactions)
    assert response.status_code == 302
    assert response["Location"].startswith(url("transaction", "refund"))
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert "admin/paycollect/transaction/refund.html" in [t.name for t in page.templates]
    return response["Location"], page


def amount_input(page, txn):
    match = re.search(rf'<input[^>]*name="amount_{txn.pk}"[^>]*>', page.content.decode())
    assert match, f"no amount field for {txn}"
    value = re.search(r'value="([^"]*)"', match.group(0))
    return value.group(1) if value else None


@live
def test_refund_page_defaults_to_the_refundable_amount_and_allows_a_partial_refund(
    paycollect_live, paid_transaction, client, django_user_model, atomic_requests
):
    txn = paid_transaction
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page_url, page = refund_page(client, [txn])
    assert amount_input(page, txn) == "100.00"
    assert b"csrfmiddlewaretoken" in page.content

    response = client.post(page_url, {f"amount_{txn.pk}": "30.00", f"shown_{txn.pk}": "100.00"})

    assert response.status_code == 302
    assert response["Location"] == url("transaction")
    refund = Refund.objects.get(transaction=txn)
    assert (refund.amount, refund.state) == (Decimal("30.00"), Refund.SUCCEEDED)
    assert refund.requested_by is not None
    txn.refresh_from_db()
    assert txn.refunded_amount == Decimal("30.00")
    [request] = sent(paycollect_live, "refund")
    assert Decimal(str(request["body"]["refund_amount"])) == Decimal("30.00")
    assert f"Refund: 1 succeeded ({txn.uuid} (30.00 EGP))" in text_of(response)

    _page_url, again = refund_page(client, [txn])
    assert amount_input(again, txn) == "70.00"


@live
def test_refund_above_the_remainder_is_refused_and_nothing_is_sent(
    paycollect_live, paid_transaction, client, django_user_model
):
    txn = paid_transaction
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page_url, _page = refund_page(client, [txn])

    response = client.post(page_url, {f"amount_{txn.pk}": "100.01", f"shown_{txn.pk}": "100.00"})

    assert response.status_code == 200
    assert "At most 100.00 EGP can still be refunded." in response.content.decode()
    assert not Refund.objects.exists()
    assert sent(paycollect_live, "refund") == []
    txn.refresh_from_db()
    assert txn.refunded_amount == Decimal("0.00")


@live
def test_a_refund_without_a_clear_answer_is_reported_unknown_and_still_counted(
    paycollect_live, paid_transaction, client, django_user_model
):
    txn = paid_transaction
    # The service does the refund, then the answer is lost.
    paycollect_live.control.fault("refund", "drop_after")
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page_url, _page = refund_page(client, [txn])

    response = client.post(page_url, {f"amount_{txn.pk}": "40.00", f"shown_{txn.pk}": "100.00"})

    assert Refund.objects.get().state == Refund.UNKNOWN
    [(level, text)] = messages_of(response)
    assert level == "warning"
    assert text.startswith("Refund: outcome unknown for 1 (recorded, never resent;")
    assert text.endswith(f": {txn.uuid} (40.00 EGP).")
    _page_url, again = refund_page(client, [txn])
    assert amount_input(again, txn) == "60.00"


@pytest.mark.django_db(transaction=True)
def test_refund_page_counts_pending_refunds_and_refuses_an_amount_typed_against_an_old_remainder(
    client, django_user_model
):
    txn = local_transaction(uuid="paid-0001")
    # A refund in flight (recorded, its answer not back yet): its amount is no longer refundable.
    Refund.objects.create(transaction=txn, amount=Decimal("40.00"))
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page_url, page = refund_page(client, [txn])
    assert amount_input(page, txn) == "60.00"

    # A second tab (or a double click) still showing 100.00 as refundable.
    response = client.post(page_url, {f"amount_{txn.pk}": "50.00", f"shown_{txn.pk}": "100.00"})

    assert response.status_code == 200
    assert "changed from 100.00 to 60.00" in response.content.decode()
    assert Refund.objects.count() == 1
    assert not ApiCall.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_refund_page_explains_what_cannot_be_refunded(client, django_user_model):
    pending = local_transaction(uuid="pending-0001", status=Transaction.PENDING)
    failed = local_transaction(uuid="failed-0001", status=Transaction.FAILED, total_amount=Decimal("70.00"))
    refunded = local_transaction(uuid="refunded-0001", refunded_amount=Decimal("100.00"))
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page_url, page = refund_page(client, [pending, failed, refunded])
    html = page.content.decode()
    assert "Only a successful transaction can be refunded (status PENDING)." in html
    assert "Only a successful transaction can be refunded (status FAILED)." in html
    # The "Paid" column says so only for a paid transaction.
    failed_row = re.search(r"<tr>\s*<td><a [^>]*>failed-0001.*?</tr>", html, re.S)[0]
    assert "Not paid (failed)" in failed_row
    assert "70.00" not in failed_row
    assert "Nothing is left to refund" in html
    assert "Refund through the service" not in html  # no submit button: nothing to refund

    response = client.post(page_url, {})

    assert response.status_code == 302
    assert "Refund: 3 failed." in text_of(response)
    assert not Refund.objects.exists()
    assert not ApiCall.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_refund_without_permission_is_not_offered_and_the_page_is_forbidden(client, django_user_model):
    txn = local_transaction(uuid="paid-0002")
    logged_in(client, staff(django_user_model, "view_transaction", "capture_transaction"))
    assert "refund" not in offered(client, "transaction")

    response = post_action(client, "transaction", "refund", [txn])
    assert response["Location"] == url("transaction")
    assert "No action selected." in text_of(response)

    page_url = f"{url('transaction', 'refund')}?ids={txn.pk}"
    assert client.get(page_url).status_code == 403
    assert (
        client.post(page_url, {f"amount_{txn.pk}": "10.00", f"shown_{txn.pk}": "100.00"}).status_code == 403
    )
    assert not Refund.objects.exists()
    assert not ApiCall.objects.exists()


# --- cancel recurring -------------------------------------------------------------------------------


@live
def test_cancel_recurring_from_the_transactions_asks_for_confirmation_first(
    paycollect_live, recurring_transaction, paid_transaction, client, django_user_model
):
    user = staff(django_user_model, "view_transaction", "cancel_recurringseries")
    logged_in(client, user)
    selected = [recurring_transaction, paid_transaction]
    series = series_of(recurring_transaction)

    page = post_action(client, "transaction", "cancel_recurring", selected)

    # Like Django's delete confirmation: the series, what stops and what stays; nothing sent yet.
    assert page.status_code == 200
    assert page.templates[0].name == "admin/paycollect/cancel_recurring_confirmation.html"
    html = page.content.decode()
    assert "Are you sure you want to cancel this recurring series?" in html
    assert "Stops: every future renewal charge." in html
    assert "Stays: the charges already made. They are not refunded" in html
    row = re.search(r'<table id="series-to-cancel">.*?</table>', html, re.S)[0]
    assert series.parent_uuid in row
    assert "Mona Ali" in row
    assert "50.00 EGP" in row
    assert "every 30 days or more" in row
    assert f"{paid_transaction}</td>" in row
    assert "Left alone: not part of a recurring series." in row
    assert sorted(re.findall(r'name="_selected_action" value="(\d+)"', html)) == sorted(
        str(t.pk) for t in selected
    )
    assert 'name="action" value="cancel_recurring"' in html
    assert sent(paycollect_live, "cancel_recurring") == []
    assert series_of(recurring_transaction).cancel_state == RecurringSeries.CANCEL_NONE

    response = post_action(client, "transaction", "cancel_recurring", selected, post="yes")

    assert response.status_code == 302
    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_DONE
    assert not series.active
    assert series.cancelled_by == user
    assert len(sent(paycollect_live, "cancel_recurring")) == 1
    text = text_of(response)
    assert f"Cancel recurring: 1 succeeded ({series.parent_uuid})" in text
    assert f"Cancel recurring: 1 failed. {paid_transaction.uuid}: not part of a recurring series" in text


@live
def test_cancel_from_the_series_admin_once(paycollect_live, recurring_transaction, client, django_user_model):
    series = series_of(recurring_transaction)
    logged_in(client, staff(django_user_model, "view_recurringseries", "cancel_recurringseries"))

    first = post_action(client, "recurringseries", "cancel", [series], post="yes")
    page = post_action(client, "recurringseries", "cancel", [series])
    again = post_action(client, "recurringseries", "cancel", [series], post="yes")

    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_DONE
    assert "Cancel recurring: 1 succeeded" in text_of(first)
    # Asked again: the page says it is done already and offers no confirmation; a forced post is refused.
    html = page.content.decode()
    assert "None of the selected items can be cancelled" in html
    assert "Left alone: Series already cancelled." in html
    assert 'id="confirm-cancel"' not in html
    assert "already cancelled" in text_of(again).lower()
    assert len(sent(paycollect_live, "cancel_recurring")) == 1


@pytest.mark.django_db(transaction=True)
def test_cancel_posted_without_permission_changes_nothing(client, django_user_model):
    series = RecurringSeries.objects.create(parent_uuid="parent-0001", community_id="tests-community")
    logged_in(client, staff(django_user_model, "view_recurringseries"))

    response = post_action(client, "recurringseries", "cancel", [series])

    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_NONE
    assert series.active
    assert not ApiCall.objects.exists()
    assert response.status_code == 200  # no action at all for this user: the list is just shown again


# --- direct orders ------------------------------------------------------------------------------------

ORDER_FORM = {
    "name": "Annual membership",
    "amount": "250.00",
    "currency": "EGP",
    "discount_amount": "25.00",
    "vat_percentage": "14",
    "payment_methods": "Card, Kiosk",
    "merchant_reference": "membership-77",
    "customer_name": "Mona Ali",
    "customer_email": "mona@example.com",
    "customer_mobile": "+201001234567",
    "customer_title": "Dr.",
    "address": "12 Nile St, Cairo",
    "order_description": "Membership for 2025",
    "custom_fields": "Size | DROPDOWNLIST | required | S, M, L\nNotes | TEXT | optional",
    "tags": "7 | VIP",
    "allow_recurring_payments": "on",
    "expiry_date": "2030-12-31",
    "minimum_days_between_payments": "30",
    "send_by_email": "on",
    "cc_email": "billing@example.com",
    "redirect_url": "https://shop.example/thanks",
}


@live
def test_direct_order_add_form_creates_the_order_on_the_service_and_shows_its_link(
    paycollect_live, client, django_user_model, atomic_requests
):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    form_page = client.get(url("directorder", "add"))
    assert form_page.status_code == 200
    html = form_page.content.decode()
    assert 'name="customer_mobile"' in html
    assert 'name="_addanother"' not in html
    assert 'name="_continue"' not in html

    response = client.post(
        url("directorder", "add"), {**ORDER_FORM, "community_id": paycollect_live.community_id}
    )

    order = DirectOrder.objects.get()
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert response["Location"] == url("directorder", "change", order.pk)
    assert order.state == DirectOrder.CREATED
    assert order.payment_link.startswith("http")
    assert order.allow_recurring_payments
    [request] = sent(paycollect_live, "direct_order")
    body = request["body"]
    assert body["custom_fields"] == [
        {"field_label": "Size", "field_type": "DROPDOWNLIST", "required": True, "field_choices": "S,M,L"},
        {"field_label": "Notes", "field_type": "TEXT", "required": False},
    ]
    assert body["tags"] == [{"id": 7, "name": "VIP"}]
    assert body["minimum_days_between_payments"] == 30
    assert LogEntry.objects.filter(object_id=str(order.pk)).exists()

    change_page = client.get(response["Location"]).content.decode()
    assert f'href="{order.payment_link}"' in change_page
    assert 'name="_save"' not in change_page  # read-only after creation


@live
def test_direct_order_refused_by_the_rules_shows_the_errors_on_the_form(
    paycollect_live, client, django_user_model
):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    data = {
        **ORDER_FORM,
        "community_id": paycollect_live.community_id,
        "customer_name": "Mona",
        "customer_mobile": "01001234567",
    }

    response = client.post(url("directorder", "add"), data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["customer_name"] == ["Enter a first and a last name, separated by a space."]
    assert errors["customer_mobile"] == ["Start with + and the country code, for example +201001234567."]
    assert not DirectOrder.objects.exists()
    assert sent(paycollect_live, "direct_order") == []


@pytest.mark.django_db
def test_direct_order_amounts_above_the_maximum_are_refused_on_the_form(client, django_user_model, settings):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    data = {**ORDER_FORM, "amount": "9999999999.99", "customer_mobile": "+2010012345678901"}

    response = client.post(url("directorder", "add"), data)

    errors = response.context["adminform"].form.errors
    assert errors["amount"] == ["Enter at most 1,000,000.00: larger amounts are not accepted here."]
    assert errors["customer_mobile"] == [
        "This number is too long: at most 15 digits after the +, country code included."
    ]
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": Decimal("100.00")}
    response = client.post(url("directorder", "add"), {**data, "amount": "100.01", "discount_amount": ""})
    errors = response.context["adminform"].form.errors
    assert errors["amount"] == ["Enter at most 100.00: larger amounts are not accepted here."]
    assert not DirectOrder.objects.exists()
    assert not ApiCall.objects.exists()


@live
def test_direct_order_without_a_clear_answer_is_kept_and_flagged(paycollect_live, client, django_user_model):
    paycollect_live.control.fault("direct_order", "drop_after")
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))

    response = client.post(
        url("directorder", "add"), {**ORDER_FORM, "community_id": paycollect_live.community_id}
    )

    order = DirectOrder.objects.get()
    assert order.state == DirectOrder.UNKNOWN
    assert response["Location"] == url("directorder", "change", order.pk)
    [(level, text)] = messages_of(response)
    assert level == "warning"
    assert "before creating it again" in text


@pytest.mark.django_db
def test_direct_order_form_checks_its_own_lines_before_anything_is_sent(client, django_user_model):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    data = {
        **ORDER_FORM,
        "custom_fields": "Size | DROPDOWNLIST | maybe | S, M",
        "tags": "VIP",
        "expiry_date": "",
    }

    response = client.post(url("directorder", "add"), data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "Line 1" in str(errors["custom_fields"])
    assert "Line 1: write id | name." in str(errors["tags"])
    assert "Required for a recurring order." in str(errors["expiry_date"])
    assert not DirectOrder.objects.exists()
    assert not ApiCall.objects.exists()


@pytest.mark.django_db
def test_direct_order_add_needs_the_add_permission(client, django_user_model):
    logged_in(client, staff(django_user_model, "view_directorder"))
    assert client.get(url("directorder", "add")).status_code == 403
    assert client.post(url("directorder", "add"), ORDER_FORM).status_code == 403


# --- communities --------------------------------------------------------------------------------------

API_KEY = "sk-live-0123456789abcdefWXYZ"
BASIC = "merchant:very-secret-password-42"


@pytest.mark.django_db
def test_community_keys_are_write_only(admin_client):
    response = admin_client.post(
        url("community", "add"),
        {"community_id": "c-2", "name": "Second shop", "api_key": API_KEY, "basic_credentials": BASIC},
    )
    assert response.status_code == 302
    community = Community.objects.get(community_id="c-2")
    assert community.api_key_encrypted
    assert API_KEY not in community.api_key_encrypted
    assert community.api_key == API_KEY
    assert community.basic_credentials == BASIC
    assert community.api_key_last4 == "WXYZ"

    pages = [
        admin_client.get(url("community", "change", community.pk)),
        admin_client.get(url("community")),
        admin_client.get(url("community", "history", community.pk)),
    ]
    for page in pages:
        html = page.content.decode()
        assert page.status_code == 200
        assert API_KEY not in html
        assert "very-secret-password-42" not in html
    assert "…WXYZ" in pages[0].content.decode()

    # Blank keeps what is stored.
    admin_client.post(
        url("community", "change", community.pk), {"community_id": "c-2", "name": "Renamed", "api_key": ""}
    )
    community.refresh_from_db()
    assert (community.name, community.api_key, community.basic_credentials) == ("Renamed", API_KEY, BASIC)

    # A form shown again with errors does not echo a key just typed either.
    redisplayed = admin_client.post(
        url("community", "change", community.pk),
        {"community_id": "c-2", "variable_amount_id": "not a number", "api_key": "sk-new-key-typed-now-1234"},
    )
    assert redisplayed.status_code == 200
    assert "sk-new-key-typed-now-1234" not in redisplayed.content.decode()

    admin_client.post(
        url("community", "change", community.pk), {"community_id": "c-2", "clear_basic_credentials": "on"}
    )
    community.refresh_from_db()
    assert community.basic_credentials == ""
    assert community.api_key == API_KEY


@pytest.mark.django_db
def test_community_basic_credentials_need_a_colon(admin_client):
    response = admin_client.post(
        url("community", "add"), {"community_id": "c-3", "basic_credentials": "nocolon"}
    )
    assert response.status_code == 200
    assert "username:password" in str(response.context["adminform"].form.errors["basic_credentials"])
    assert not Community.objects.exists()


@live
def test_fetch_statistics_reports_the_numbers(paycollect_live, admin_client):
    # The settings' community needs no key in its row: the settings supply it.
    configured = Community.objects.create(community_id=paycollect_live.community_id, name="Main")
    without_key = Community.objects.create(community_id="no-key-here")

    response = post_action(admin_client, "community", "fetch_statistics", [configured, without_key])

    snapshot = StatisticsSnapshot.objects.get()
    assert snapshot.community_id == paycollect_live.community_id
    text = text_of(response)
    assert f"Main: balance {snapshot.balance}" in text
    assert "Fetch statistics: 1 succeeded" in text
    assert "Fetch statistics: 1 failed. no-key-here:" in text


# --- read-only records, lists -------------------------------------------------------------------------


def make_records(numbers, user):
    """Rows of every model, each with its relations (what could cost a query per row)."""
    for i in numbers:
        series = RecurringSeries.objects.create(
            parent_uuid=f"parent-{i}", community_id="tests-community", cancelled_by=user
        )
        txn = local_transaction(
            uuid=f"uuid-{i}", merchant_reference=f"ref-{i}", series=series, raw={"id": i}, custom_fields=[]
        )
        refund = Refund.objects.create(transaction=txn, amount=Decimal("1.00"), requested_by=user)
        order = DirectOrder.objects.create(
            community_id="tests-community",
            name=f"order {i}",
            amount=Decimal("10.00"),
            customer_name="Mona Ali",
            customer_email="mona@example.com",
            customer_mobile="+201001234567",
            payment_link=f"https://pay.example/{i}",
            created_by=user,
        )
        ApiCall.objects.create(operation="refund", method="POST", path="/x", transaction=txn, refund=refund)
        ApiCall.objects.create(operation="create_direct_order", method="POST", path="/y", direct_order=order)
        StatisticsSnapshot.objects.create(community_id="tests-community", balance=Decimal(i))
        Community.objects.create(community_id=f"c-{i}")


def changelist_queries(client, model):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url(model))
    assert response.status_code == 200
    return len(captured), len(response.context["cl"].result_list)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model",
    ["transaction", "recurringseries", "directorder", "refund", "apicall", "statisticssnapshot", "community"],
)
def test_changelists_do_not_query_per_row(admin_client, admin_user, model):
    make_records(range(3), admin_user)
    few_queries, few_rows = changelist_queries(admin_client, model)
    make_records(range(3, 30), admin_user)
    many_queries, many_rows = changelist_queries(admin_client, model)
    assert many_rows == 10 * few_rows
    assert many_queries == few_queries


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model", ["transaction", "recurringseries", "refund", "apicall", "statisticssnapshot"]
)
def test_money_records_are_read_only(admin_client, admin_user, model):
    make_records(range(1), admin_user)
    obj = {
        "transaction": Transaction,
        "recurringseries": RecurringSeries,
        "refund": Refund,
        "apicall": ApiCall,
        "statisticssnapshot": StatisticsSnapshot,
    }[model].objects.first()
    assert admin_client.get(url(model, "add")).status_code == 403
    assert admin_client.get(url(model, "delete", obj.pk)).status_code == 403
    page = admin_client.get(url(model, "change", obj.pk))
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


@pytest.mark.django_db
def test_direct_orders_are_read_only_after_creation(admin_client, admin_user):
    make_records(range(1), admin_user)
    order = DirectOrder.objects.get()
    page = admin_client.get(url("directorder", "change", order.pk)).content.decode()
    assert 'name="_save"' not in page
    assert 'href="https://pay.example/0"' in page
    assert admin_client.get(url("directorder", "delete", order.pk)).status_code == 403


def results(response):
    return sorted(txn.merchant_reference for txn in response.context["cl"].result_list)


@pytest.mark.django_db
def test_transactions_are_found_by_uuid_reference_and_email(admin_client):
    local_transaction(uuid="aaaa-1", merchant_reference="order-1", customer_email="one@example.com")
    local_transaction(uuid="bbbb-2", merchant_reference="order-2", customer_email="two@example.com")
    changelist = url("transaction")
    assert results(admin_client.get(changelist, {"q": "bbbb-2"})) == ["order-2"]
    assert results(admin_client.get(changelist, {"q": "order-1"})) == ["order-1"]
    assert results(admin_client.get(changelist, {"q": "TWO@example.com"})) == ["order-2"]
    assert results(admin_client.get(changelist, {"q": "nothing"})) == []


@pytest.mark.django_db
def test_transactions_filter_by_status_community_date_and_flags(admin_client):
    local_transaction(merchant_reference="paid")
    local_transaction(
        merchant_reference="odd",
        status=Transaction.PENDING,
        community_id="other",
        outcome_unknown=True,
        amount_mismatch=True,
        created_at=timezone.now() - timedelta(days=40),
    )
    changelist = url("transaction")
    for query, expected in [
        ({"status__exact": "PENDING"}, ["odd"]),
        ({"community_id": "other"}, ["odd"]),
        ({"outcome_unknown__exact": "1"}, ["odd"]),
        ({"amount_mismatch__exact": "1"}, ["odd"]),
        ({"created_at__gte": str(timezone.now() - timedelta(days=7))}, ["paid"]),
    ]:
        response = admin_client.get(changelist, query)
        assert response.status_code == 200, query
        assert results(response) == expected, query


@pytest.mark.django_db
def test_an_unrecognised_status_is_kept_and_flagged(admin_client):
    local_transaction(status=Transaction.PENDING, service_status="ON_HOLD", status_unrecognised=True)
    html = admin_client.get(url("transaction")).content.decode()
    assert "ON_HOLD" in html
    assert "unrecognised" in html


@pytest.mark.django_db
def test_the_transaction_page_shows_its_refunds_status_changes_and_api_calls(admin_client):
    txn = local_transaction(uuid="uuid-page", refunded_amount=Decimal("10.00"))
    Refund.objects.create(transaction=txn, amount=Decimal("10.00"), state=Refund.SUCCEEDED)
    Refund.objects.create(transaction=txn, amount=Decimal("15.00"), state=Refund.UNKNOWN)
    TransactionStatusChange.objects.create(
        transaction=txn, from_status="PENDING", to_status="SUCCESSFUL", source="callback"
    )
    ApiCall.objects.create(operation="get_transaction", method="GET", path="/t", transaction=txn)

    html = admin_client.get(url("transaction", "change", txn.pk)).content.decode()

    assert "75.00 EGP" in html  # still refundable: 100 - 10 refunded - 15 of unknown outcome
    assert "callback" in html
    assert "outcome unknown" in html
    assert f"transaction__id__exact={txn.pk}" in html
    assert "1 call" in html


# --- no secret anywhere ---------------------------------------------------------------------------


@live
def test_no_secret_on_any_admin_page_after_a_full_flow(
    paycollect_live, paid_transaction, recurring_transaction, admin_client, settings
):
    sb = paycollect_live
    admin_client.post(
        url("community", "add"),
        {
            "community_id": sb.community_id,
            "api_key": sb.api_key,
            "basic_credentials": ":".join(sb.basic_credentials),
        },
    )
    post_action(admin_client, "transaction", "capture", [paid_transaction])
    page_url, _page = refund_page(admin_client, [paid_transaction])
    admin_client.post(
        page_url, {f"amount_{paid_transaction.pk}": "5.00", f"shown_{paid_transaction.pk}": "100.00"}
    )
    post_action(admin_client, "transaction", "sync", [recurring_transaction])
    post_action(admin_client, "community", "fetch_statistics", list(Community.objects.all()))
    assert ApiCall.objects.filter(operation="refund").exists()

    secrets = [sb.api_key, sb.basic_password, *settings.PAYCOLLECT.get("CALLBACK_TOKENS", [])]
    models = {
        "transaction": Transaction,
        "recurringseries": RecurringSeries,
        "refund": Refund,
        "apicall": ApiCall,
        "statisticssnapshot": StatisticsSnapshot,
        "community": Community,
        "directorder": DirectOrder,
    }
    pages = [url(name) for name in models]
    pages += [url(name, "change", obj.pk) for name, model in models.items() for obj in model.objects.all()]
    for page in pages:
        response = admin_client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        for secret in secrets:
            assert secret not in html, page


# --- settling refunds of unknown outcome by hand ----------------------------------------------------


def test_unknown_refunds_are_settled_by_hand_only_with_the_refund_permission(
    client, django_user_model, paid_transaction
):
    unknown = Refund.objects.create(
        transaction=paid_transaction, amount=Decimal("40.00"), state=Refund.UNKNOWN
    )
    done = Refund.objects.create(transaction=paid_transaction, amount=Decimal("1.00"), state=Refund.SUCCEEDED)

    logged_in(client, staff(django_user_model, "view_refund", username="viewer"))
    assert "settle_succeeded" not in offered(client, "refund")
    post_action(client, "refund", "settle_succeeded", [unknown])
    unknown.refresh_from_db()
    assert unknown.state == Refund.UNKNOWN

    logged_in(client, staff(django_user_model, "view_refund", "refund_transaction", username="refunder"))
    assert {"settle_succeeded", "settle_failed"} <= set(offered(client, "refund"))
    response = post_action(client, "refund", "settle_succeeded", [unknown, done])
    unknown.refresh_from_db()
    paid_transaction.refresh_from_db()
    assert unknown.state == Refund.SUCCEEDED
    assert "by hand by refunder" in unknown.error
    assert paid_transaction.refunded_amount == Decimal("40.00")
    assert "unknown outcome" in text_of(response)  # the already succeeded one is refused, with why
