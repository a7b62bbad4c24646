"""The admin's recurring series and direct orders, used as a merchant uses them (see ``test_admin``):
cancelling a series after a confirmation, and the direct order add form that creates the order on the
service."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry

from django_paycollect.models import ApiCall, DirectOrder, RecurringSeries
from tests.support.admin import (
    live,
    logged_in,
    messages_of,
    post_action,
    sent,
    series_of,
    staff,
    text_of,
    url,
)
from tests.support.payments import CALLBACK_TOKEN

# --- cancel recurring -------------------------------------------------------------------------------


@live
def test_cancel_recurring_from_the_transactions_asks_for_confirmation_first(
    paycollect_in_process, recurring_transaction, paid_transaction, client, django_user_model
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
    assert sent(paycollect_in_process, "cancel_recurring") == []
    assert series_of(recurring_transaction).cancel_state == RecurringSeries.CANCEL_NONE

    response = post_action(client, "transaction", "cancel_recurring", selected, post="yes")

    assert response.status_code == 302
    series.refresh_from_db()
    assert series.cancel_state == RecurringSeries.CANCEL_DONE
    assert not series.active
    assert series.cancelled_by == user
    assert len(sent(paycollect_in_process, "cancel_recurring")) == 1
    text = text_of(response)
    assert f"Cancel recurring: 1 succeeded ({series.parent_uuid})" in text
    assert f"Cancel recurring: 1 failed. {paid_transaction.uuid}: not part of a recurring series" in text


@live
def test_cancel_from_the_series_admin_once(
    paycollect_in_process, recurring_transaction, client, django_user_model
):
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
    assert len(sent(paycollect_in_process, "cancel_recurring")) == 1


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
    paycollect_in_process, client, django_user_model, atomic_requests
):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    form_page = client.get(url("directorder", "add"))
    assert form_page.status_code == 200
    html = form_page.content.decode()
    assert 'name="customer_mobile"' in html
    assert 'name="_addanother"' not in html
    assert 'name="_continue"' not in html

    response = client.post(
        url("directorder", "add"), {**ORDER_FORM, "community_id": paycollect_in_process.community_id}
    )

    order = DirectOrder.objects.get()
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert response["Location"] == url("directorder", "change", order.pk)
    assert order.state == DirectOrder.CREATED
    assert order.payment_link.startswith("http")
    assert order.allow_recurring_payments
    [request] = sent(paycollect_in_process, "direct_order")
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
    paycollect_in_process, client, django_user_model
):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    data = {
        **ORDER_FORM,
        "community_id": paycollect_in_process.community_id,
        "customer_name": "Mona",
        "customer_mobile": "01001234567",
    }

    response = client.post(url("directorder", "add"), data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["customer_name"] == ["Enter a first and a last name, separated by a space."]
    assert errors["customer_mobile"] == ["Start with + and the country code, for example +201001234567."]
    assert not DirectOrder.objects.exists()
    assert sent(paycollect_in_process, "direct_order") == []


@pytest.mark.django_db
def test_direct_order_amounts_above_the_maximum_are_refused_on_the_form(client, django_user_model, settings):
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    data = {**ORDER_FORM, "amount": "9999999999.99", "customer_mobile": "+2010012345678901"}

    response = client.post(url("directorder", "add"), data)

    errors = response.context["adminform"].form.errors
    assert errors["amount"] == ["Enter at most 1000000.00."]
    assert errors["customer_mobile"] == [
        "This number is too long: at most 15 digits after the +, country code included."
    ]
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": Decimal("100.00")}
    response = client.post(url("directorder", "add"), {**data, "amount": "100.01", "discount_amount": ""})
    errors = response.context["adminform"].form.errors
    assert errors["amount"] == ["Enter at most 100.00."]
    assert not DirectOrder.objects.exists()
    assert not ApiCall.objects.exists()


@live
def test_direct_order_without_a_clear_answer_is_kept_and_flagged(
    paycollect_in_process, client, django_user_model
):
    paycollect_in_process.control.fault("direct_order", "drop_after")
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))

    response = client.post(
        url("directorder", "add"), {**ORDER_FORM, "community_id": paycollect_in_process.community_id}
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


@live
def test_a_direct_order_left_without_urls_returns_its_customer_and_its_callback_to_this_site(
    paycollect_in_process, client, django_user_model
):
    # Without a redirect URL the service keeps the customer on its own result page, and without a callback
    # URL the site never hears of the payment: blank, they are this site's return and callback views.
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    form = {
        **ORDER_FORM,
        "community_id": paycollect_in_process.community_id,
        "redirect_url": "",
        "callback_url": "",
    }
    response = client.post(url("directorder", "add"), form, headers={"host": "shop.example"})

    assert response.status_code == 302, response.context["adminform"].form.errors
    [request] = sent(paycollect_in_process, "direct_order")
    assert request["body"]["redirect_url"] == "http://shop.example/paycollect/return/"
    assert request["body"]["callback_url"] == f"http://shop.example/paycollect/callback/{CALLBACK_TOKEN}/"
    # The token is a secret: the order's page shows the callback URL without it.
    page = client.get(response["Location"], headers={"host": "shop.example"}).content.decode()
    assert "http://shop.example/paycollect/callback/[redacted]/" in page
    assert CALLBACK_TOKEN not in page
