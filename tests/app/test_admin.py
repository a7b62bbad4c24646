"""The admin, used as a merchant uses it: through the Django test client, logged in as staff.

Every action is posted to its changelist (``action`` + ``_selected_action``) by a user with the
permission (it works: the database, the messages and the sandbox's journal show it) and by one
without it (it is not offered, and posting it anyway changes nothing and sends nothing).
Tests that reach the service use the sandbox served in process (``paycollect_in_process``) and run outside a
test transaction, since the state-changing services refuse to run inside ``transaction.atomic``.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import resolve
from django.utils import timezone

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
from tests.support.admin import (
    live,
    local_transaction,
    logged_in,
    make_records,
    messages_of,
    offered,
    post_action,
    refund_page,
    sent,
    staff,
    start_pending,
    text_of,
    url,
)

# --- registration -------------------------------------------------------------------------------------


def test_every_model_is_registered():
    for model in (Transaction, RecurringSeries, DirectOrder, Community, ApiCall, Refund, StatisticsSnapshot):
        assert admin.site.is_registered(model)


@pytest.mark.django_db
def test_a_superuser_is_offered_every_action(admin_client):
    exports = {"export_csv", "export_xlsx"}
    assert offered(admin_client, "transaction") == {"sync", "capture", "refund", "cancel_recurring", *exports}
    assert offered(admin_client, "recurringseries") == {"cancel", *exports}
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
def test_sync_applies_what_the_service_says(paycollect_in_process, client, django_user_model):
    sb = paycollect_in_process
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
def test_sync_posted_without_permission_does_nothing(paycollect_in_process, client, django_user_model):
    sb = paycollect_in_process
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
    paycollect_in_process, paid_transaction, client, django_user_model, atomic_requests
):
    not_paid = local_transaction(uuid="not-paid-0001", status=Transaction.PENDING)
    logged_in(client, staff(django_user_model, "view_transaction", "capture_transaction"))

    response = post_action(client, "transaction", "capture", [paid_transaction, not_paid])

    paid_transaction.refresh_from_db()
    assert paid_transaction.capture_state == Transaction.CAPTURE_DONE
    assert paid_transaction.captured_amount == Decimal("100.00")
    assert len(sent(paycollect_in_process, "capture")) == 1
    text = text_of(response)
    assert f"Capture: 1 succeeded ({paid_transaction.uuid})" in text
    assert "Capture: 1 failed. not-paid-0001: Only a successful transaction can be captured" in text
    levels = [level for level, _text in messages_of(response)]
    assert levels == ["success", "error"]


@live
def test_capture_refused_by_the_service_says_why(
    paycollect_in_process, paid_transaction, client, django_user_model
):
    paycollect_in_process.control.fault("capture", "status", status=400)
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
    paycollect_in_process, paid_transaction, client, django_user_model
):
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    assert "capture" not in offered(client, "transaction")

    response = post_action(client, "transaction", "capture", [paid_transaction])

    assert "No action selected." in text_of(response)
    paid_transaction.refresh_from_db()
    assert paid_transaction.capture_state == Transaction.CAPTURE_NONE
    assert sent(paycollect_in_process, "capture") == []


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
def test_fetch_statistics_reports_the_numbers(paycollect_in_process, admin_client):
    # The settings' community needs no key in its row: the settings supply it.
    configured = Community.objects.create(community_id=paycollect_in_process.community_id, name="Main")
    without_key = Community.objects.create(community_id="no-key-here")

    response = post_action(admin_client, "community", "fetch_statistics", [configured, without_key])

    snapshot = StatisticsSnapshot.objects.get()
    assert snapshot.community_id == paycollect_in_process.community_id
    text = text_of(response)
    assert f"Main: balance {snapshot.balance}" in text
    assert "Fetch statistics: 1 succeeded" in text
    assert "Fetch statistics: 1 failed. no-key-here:" in text


# --- read-only records, lists -------------------------------------------------------------------------


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
    paycollect_in_process, paid_transaction, recurring_transaction, admin_client, settings
):
    sb = paycollect_in_process
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
