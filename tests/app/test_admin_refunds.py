"""The admin's refund page and refunds settled by hand, used as a merchant uses them (see ``test_admin``):
the amount asked per transaction, what cannot be refunded and why, amounts typed against an old remainder,
and refunds of unknown outcome."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from django_paycollect.models import ApiCall, Refund, Transaction
from tests.support.admin import (
    amount_input,
    live,
    local_transaction,
    logged_in,
    messages_of,
    offered,
    post_action,
    refund_page,
    sent,
    staff,
    text_of,
    url,
)

# --- the refund page ------------------------------------------------------------------------------------


@live
def test_refund_page_defaults_to_the_refundable_amount_and_allows_a_partial_refund(
    paycollect_in_process, paid_transaction, client, django_user_model, atomic_requests
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
    [request] = sent(paycollect_in_process, "refund")
    assert Decimal(str(request["body"]["refund_amount"])) == Decimal("30.00")
    assert f"Refund: 1 succeeded ({txn.uuid} (30.00 EGP))" in text_of(response)

    _page_url, again = refund_page(client, [txn])
    assert amount_input(again, txn) == "70.00"


@pytest.mark.django_db(transaction=True)
def test_refund_above_the_remainder_is_refused_and_nothing_is_sent(client, django_user_model):
    # The service layer refuses it before any call (tests/app/test_state_conflict.py): what is the admin's
    # own is how the page says so. A row of our own, so nothing could be sent anywhere.
    txn = local_transaction(uuid="paid-0001")
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page_url, _page = refund_page(client, [txn])

    response = client.post(page_url, {f"amount_{txn.pk}": "100.01", f"shown_{txn.pk}": "100.00"})

    assert response.status_code == 200
    assert "At most 100.00 EGP can still be refunded." in response.content.decode()
    assert not Refund.objects.exists()
    assert not ApiCall.objects.exists()  # every call is recorded before it is sent
    txn.refresh_from_db()
    assert txn.refunded_amount == Decimal("0.00")


@live
def test_a_refund_without_a_clear_answer_is_reported_unknown_and_still_counted(
    paycollect_in_process, paid_transaction, client, django_user_model
):
    txn = paid_transaction
    # The service does the refund, then the answer is lost.
    paycollect_in_process.control.fault("refund", "drop_after")
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


# --- settling refunds of unknown outcome by hand ----------------------------------------------------


def test_unknown_refunds_are_settled_by_hand_only_with_the_refund_permission(
    paycollect_in_process, client, django_user_model, paid_transaction
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
