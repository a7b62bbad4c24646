"""Callbacks verified against the service, applied once, never trusted; and verified again by a person.

End-to-end tests point the sandbox's callback URL at pytest-django's ``live_server``, pay on the
sandbox's hosted page, and wait for the callback to arrive over real HTTP and be verified (Celery
runs eagerly, so verification runs inside the callback request). The other tests POST with the
Django test client to a live sandbox. Then redeliveries, the command and the admin's *Verify again*.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from django_paycollect import services
from django_paycollect.models import DirectOrder, FetchMark, ReceivedCallback, RecurringSeries, Transaction
from django_paycollect.secrecy import our_secrets
from django_paycollect.services.callback_ledger import callback_failed, callback_waiting
from tests.support.callbacks import URL, UUID, body_for, committed, live, post, processed_callback, wait_until
from tests.support.payments import CALLBACK_TOKEN

# --- end to end, from the sandbox ------------------------------------------------------------------


@live
def test_a_payment_on_the_hosted_page_is_verified_from_its_callback(
    paycollect_live, callbacks_to_us, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00", merchant_reference="order-e2e")
    assert sb.submit_payment_page(txn.iframe_url, "pay").status_code == 302

    callback = processed_callback(txn.uuid)
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert callback.transaction == txn
    assert callback.claimed_status == "SUCCESSFUL"
    assert callback.total_amount == Decimal("100.00")
    assert callback.total_amount_piasters == 10000
    assert callback.merchant_id == sb.community_id
    assert callback.token_index == 0
    assert callback.remote_addr == "127.0.0.1"
    assert callback.headers["user-agent"] == "paycollect-sandbox"
    assert callback.headers["content-type"] == "application/json"
    assert json.loads(callback.body)["transaction_uuid"] == txn.uuid
    assert "service says SUCCESSFUL" in callback.outcome
    assert signal_log.count_once_sent("payment_succeeded", 1) == 1
    assert txn.status_changes.get(to_status="SUCCESSFUL").source == "callback"
    # The sandbox got a 2xx: delivered at the first attempt.
    (delivery,) = sb.control.wait_for_callbacks(transaction_uuid=txn.uuid)
    assert delivery["attempts"] == 1
    assert delivery["attempt_log"][0]["http_status"] == 200
    assert json.loads(delivery["attempt_log"][0]["response_excerpt"]) == {"received": True}


@live
def test_a_declined_payment_is_failed_from_its_callback(paycollect_live, callbacks_to_us, pay, signal_log):
    txn = pay("100.00")
    paycollect_live.submit_payment_page(txn.iframe_url, "decline")
    processed_callback(txn.uuid)
    txn.refresh_from_db()
    assert txn.status == Transaction.FAILED
    assert signal_log.names().count("payment_failed") == 1


@live
def test_the_spec_examples_transaction_id_key_is_understood(paycollect_live, callbacks_to_us, pay):
    paycollect_live.control.set_config(callback_uuid_key="transaction_id")
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    callback = processed_callback(txn.uuid)
    assert "transaction_uuid" not in json.loads(callback.body)
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL


@live
def test_a_recurring_renewal_arrives_as_a_new_uuid_and_joins_its_series(
    paycollect_live, recurring_transaction, live_server, signal_log
):
    sb = paycollect_live
    sb.control.configure_api_payment(sb.variable_amount_id, callback_url=f"{live_server.url}{URL}")
    (renewal_uuid,) = sb.control.advance_clock(30)

    callback = processed_callback(renewal_uuid)
    assert callback.is_sub_payment is True
    assert callback.parent_transaction == recurring_transaction.uuid
    renewal = Transaction.objects.get(uuid=renewal_uuid)
    assert renewal.status == Transaction.SUCCESSFUL
    assert renewal.series == RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    assert renewal.parent_uuid == recurring_transaction.uuid
    assert renewal.total_amount == Decimal("50.00")
    assert signal_log.count_once_sent("recurring_charge_succeeded", 1) == 1


@live
def test_a_direct_orders_callback_links_its_payment_to_the_order(paycollect_live, live_server, signal_log):
    order = services.create_direct_order(
        name="Summer camp",
        amount=Decimal("200.00"),
        payment_methods=["card"],
        customer_name="Mona Ali",
        customer_email="mona@example.com",
        customer_mobile="+201001234567",
        callback_url=f"{live_server.url}{URL}",
        redirect_url="https://shop.example/paid",
        custom_fields=[
            {"field_label": "Member number", "field_type": "TEXT", "required": True},
            {"field_label": "Seats", "field_type": "NUMBER"},
            {"field_label": "Newsletter", "field_type": "CHECKBOX"},
        ],
    )
    answer = paycollect_live.submit_payment_page(
        order.payment_link, "pay", fields={"Member number": "M-88", "Seats": 2, "Newsletter": True}
    )
    assert answer.status_code == 302

    callback = wait_until(lambda: ReceivedCallback.objects.filter(state=ReceivedCallback.PROCESSED).first())
    assert callback is not None
    assert callback.payment_id == order.payment_id
    assert "Summer camp" in callback.message
    assert callback.custom_fields == {"Member number": "M-88", "Seats": 2, "Newsletter": True}
    txn = callback.transaction
    assert txn.direct_order == order
    assert txn.status == Transaction.SUCCESSFUL
    assert DirectOrder.objects.get(pk=order.pk).transactions.get() == txn
    assert signal_log.count_once_sent("payment_succeeded", 1) == 1


@live
def test_a_duplicated_delivery_from_the_sandbox_is_processed_once(
    paycollect_live, callbacks_to_us, pay, signal_log
):
    sb = paycollect_live
    sb.control.next_callbacks("duplicate")
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    sb.control.wait_for_callbacks(transaction_uuid=txn.uuid, count=2)
    first = processed_callback(txn.uuid)
    duplicate = ReceivedCallback.objects.get(state=ReceivedCallback.DUPLICATE)
    assert duplicate.duplicate_of == first

    (delivered, *_rest) = sb.control.callbacks(txn.uuid)
    sb.control.redeliver(delivered["id"])
    wait_until(lambda: ReceivedCallback.objects.filter(state=ReceivedCallback.DUPLICATE).count() == 2)

    assert ReceivedCallback.objects.filter(transaction_uuid=txn.uuid).count() == 3
    assert signal_log.count_once_sent("payment_succeeded", 1) == 1
    # Verified once: one fetch by the callback, none by the redeliveries.
    assert txn.api_calls.filter(operation="get_transaction").count() == 1


# --- forged callbacks never change a transaction ------------------------------------------------------


@live
def test_a_callback_claiming_success_for_a_pending_payment_changes_nothing(
    client, paycollect_live, pay, signal_log
):
    txn = pay("100.00")
    response = post(client, body_for(txn.uuid, "SUCCESSFUL", merchant_id=paycollect_live.community_id))
    assert response.status_code == 200
    assert response.json() == {"received": True}

    txn.refresh_from_db()
    assert txn.status == Transaction.PENDING
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.PROCESSED
    assert callback.transaction == txn
    assert "service says PENDING" in callback.outcome
    assert "claimed SUCCESSFUL" in callback.outcome
    assert signal_log.count("payment_succeeded") == 0


@live
def test_a_callback_for_a_uuid_the_service_does_not_know_fails_and_creates_nothing(
    client, paycollect_live, signal_log
):
    response = post(client, body_for(UUID, "SUCCESSFUL"))
    assert response.status_code == 200
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.FAILED
    assert callback.error.startswith("NotFoundError")
    assert not Transaction.objects.exists()
    assert signal_log.sent == []


@live
def test_an_amount_claim_is_never_applied(client, paycollect_live, pay, signal_log):
    """The body says 1.00 was paid for a 100.00 payment: the service's amount is what counts."""
    txn = pay("100.00")
    paycollect_live.control.complete(txn.uuid, "SUCCESSFUL")
    post(client, body_for(txn.uuid, total_amount=Decimal("1.00"), total_amount_piasters=100))
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert txn.total_amount == Decimal("100.00")
    assert not txn.amount_mismatch
    assert ReceivedCallback.objects.get().total_amount == Decimal("1.00")


@live
def test_a_renewal_whose_callback_names_a_malformed_parent_joins_the_series_the_service_names(
    client, paycollect_live, recurring_transaction, signal_log
):
    sb = paycollect_live
    (renewal_uuid,) = sb.control.advance_clock(30)  # its own callback goes to the sandbox's demo merchant
    body = body_for(
        renewal_uuid,
        total_amount=Decimal("50.00"),
        total_amount_piasters=5000,
        merchant_id=sb.community_id,
        recurring={"is_sub_payment": True, "parent_transaction": "a1b2c3d4-e5f6-g7h8-i9j0-k1l2m3n4o5p6"},
    )

    assert post(client, body).status_code == 200

    callback = ReceivedCallback.objects.get(transaction_uuid=renewal_uuid)
    assert callback.state == ReceivedCallback.PROCESSED, callback.error
    assert "malformed hints set aside: recurring.parent_transaction" in callback.outcome
    renewal = Transaction.objects.get(uuid=renewal_uuid)
    assert renewal.status == Transaction.SUCCESSFUL
    assert renewal.series == RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    assert renewal.parent_uuid == recurring_transaction.uuid
    assert signal_log.count_once_sent("recurring_charge_succeeded", 1) == 1


@live
def test_a_renewal_whose_callback_names_another_parent_joins_the_series_the_service_names(
    client, paycollect_live, recurring_transaction
):
    sb = paycollect_live
    (renewal_uuid,) = sb.control.advance_clock(30)
    body = body_for(
        renewal_uuid,
        merchant_id=sb.community_id,
        recurring={"is_sub_payment": True, "parent_transaction": UUID},
    )

    assert post(client, body).status_code == 200

    renewal = Transaction.objects.get(uuid=renewal_uuid)
    assert renewal.parent_uuid == recurring_transaction.uuid
    assert not RecurringSeries.objects.filter(parent_uuid=UUID).exists()


@pytest.mark.django_db
def test_an_error_recorded_on_a_callback_holds_neither_our_keys_nor_a_urls_password(
    client, no_worker, settings
):
    post(client, body_for())
    callback = ReceivedCallback.objects.get()
    api_key = settings.PAYCOLLECT["API_KEY"]
    callback_waiting(callback.pk, 5, error=f"the service refused {api_key}")
    assert ReceivedCallback.objects.get().error == "the service refused [redacted]"
    error = ConnectionError(f"redis://:broker-password@127.0.0.1:6379/0 down (sent {api_key})")
    callback_failed(callback.pk, error, f'Traceback ...\n  "x-api-key": "{api_key}"')
    callback.refresh_from_db()
    assert callback.error == "ConnectionError: redis://***@127.0.0.1:6379/0 down (sent [redacted])"
    assert callback.traceback == 'Traceback ...\n  "x-api-key": "[redacted]"'


# --- redeliveries ---------------------------------------------------------------------------------------


@committed
def test_a_new_callback_costs_one_insert_and_a_redelivery_three_queries(
    client, no_worker, django_assert_num_queries, django_assert_max_num_queries
):
    our_secrets()  # the stored communities' keys: read by a process's first callback, then once a minute
    with django_assert_num_queries(1):
        assert post(client, body_for()).status_code == 200
    no_worker.assert_called_once()
    with django_assert_max_num_queries(3):
        assert post(client, body_for()).status_code == 200  # a redelivery
    assert no_worker.call_count == 1


@committed
def test_a_redelivery_is_stored_as_a_duplicate_and_not_queued_again(client, no_worker):
    first = post(client, body_for())
    second = post(client, body_for())
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json() == {"received": True}
    original, duplicate = ReceivedCallback.objects.order_by("pk")
    assert original.state == ReceivedCallback.QUEUED
    assert duplicate.state == ReceivedCallback.DUPLICATE
    assert duplicate.duplicate_of == original
    assert duplicate.dedupe_key is None
    assert duplicate.body == original.body
    no_worker.assert_called_once_with(([original.pk],))
    # Another claimed status for the same uuid is news, not a duplicate.
    post(client, body_for(status="FAILED"))
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.QUEUED).count() == 2


@committed
def test_a_redelivery_gives_a_failed_original_another_chance_once(client, no_worker):
    post(client, body_for())
    original = ReceivedCallback.objects.get()
    ReceivedCallback.objects.filter(pk=original.pk).update(state=ReceivedCallback.FAILED)
    post(client, body_for())
    post(client, body_for())
    original.refresh_from_db()
    assert original.state == ReceivedCallback.QUEUED
    assert [c.args for c in no_worker.call_args_list] == [(([original.pk],),)] * 2
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.DUPLICATE).count() == 2


@live
def test_a_redelivery_verifies_again_an_original_the_service_had_not_confirmed_yet(
    client, paycollect_live, pay, signal_log, settings
):
    """The service sent "SUCCESSFUL" before its own records said so: the first verification found
    PENDING. Its redelivery is the chance to apply the outcome (once, for many redeliveries)."""
    sb = paycollect_live
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_FETCH_INTERVAL": 600}  # the test moves past it
    txn = pay("100.00")
    post(client, body_for(txn.uuid))
    original = ReceivedCallback.objects.get()
    assert original.state == ReceivedCallback.PROCESSED
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.PENDING

    sb.control.complete(txn.uuid, "SUCCESSFUL")
    # Within CALLBACK_FETCH_INTERVAL of the first fetch, a redelivery costs no fetch.
    assert post(client, body_for(txn.uuid)).status_code == 200
    original.refresh_from_db()
    assert (original.state, original.attempts) == (ReceivedCallback.PROCESSED, 1)
    FetchMark.objects.update(claimed_at=timezone.now() - dt.timedelta(minutes=11))  # the interval passes
    for _ in range(3):
        assert post(client, body_for(txn.uuid)).status_code == 200
    original.refresh_from_db()
    assert original.state == ReceivedCallback.PROCESSED
    assert original.attempts == 2  # verified again once: the next redeliveries were throttled
    assert "service says SUCCESSFUL" in original.outcome
    assert Transaction.objects.get(pk=txn.pk).status == Transaction.SUCCESSFUL
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.DUPLICATE).count() == 4
    assert signal_log.count_once_sent("payment_succeeded", 1) == 1
    # Once the transaction is final, redeliveries cost no fetch at all.
    fetches = txn.api_calls.filter(operation="get_transaction").count()
    post(client, body_for(txn.uuid))
    assert txn.api_calls.filter(operation="get_transaction").count() == fetches


# --- re-processing: the command and the admin ----------------------------------------------------------


def stored_callback(uuid: str, state: str, age: dt.timedelta = dt.timedelta(minutes=5)) -> ReceivedCallback:
    return ReceivedCallback.objects.create(
        state=state,
        transaction_uuid=uuid,
        claimed_status="SUCCESSFUL",
        dedupe_key=f"{uuid}|SUCCESSFUL|{state}",
        received_at=timezone.now() - age,
        body="{}",
    )


@live
def test_the_command_processes_callbacks_left_unqueued_and_failed_ones_on_request(
    paycollect_live, pay, capsys, signal_log
):
    sb = paycollect_live
    paid, declined, recent = pay("10.00"), pay("20.00"), pay("30.00")
    sb.control.complete(paid.uuid, "SUCCESSFUL")
    sb.control.complete(declined.uuid, "FAILED")
    left = stored_callback(paid.uuid, ReceivedCallback.RECEIVED)
    failed = stored_callback(declined.uuid, ReceivedCallback.FAILED)
    just_now = stored_callback(recent.uuid, ReceivedCallback.QUEUED, age=dt.timedelta(seconds=5))

    call_command("paycollect_process_callbacks")
    out = capsys.readouterr().out
    assert "1 callback(s) to process" in out
    assert f"callback #{left.pk} ({paid.uuid} claims SUCCESSFUL): processed" in out
    assert "Processed 1 callback(s): 1 processed." in out
    assert Transaction.objects.get(pk=paid.pk).status == Transaction.SUCCESSFUL
    just_now.refresh_from_db()
    assert just_now.state == ReceivedCallback.QUEUED  # its task may be running: left alone

    call_command("paycollect_process_callbacks", "--failed")
    assert "Processed 1 callback(s): 1 processed." in capsys.readouterr().out
    failed.refresh_from_db()
    assert failed.state == ReceivedCallback.PROCESSED
    assert Transaction.objects.get(pk=declined.pk).status == Transaction.FAILED
    assert signal_log.count_once_sent("payment_succeeded", 1) == 1

    call_command("paycollect_process_callbacks", "--ids", str(just_now.pk), str(left.pk), "999999")
    captured = capsys.readouterr()
    assert f"callback #{left.pk} is processed, nothing to verify; skipped" in captured.err
    assert "callback #999999 does not exist; skipped" in captured.err
    assert "Processed 1 callback(s): 1 processed." in captured.out


@live
def test_the_command_reports_a_callback_that_still_fails_and_exits_1(paycollect_live, capsys):
    sb = paycollect_live
    stuck = stored_callback(UUID, ReceivedCallback.FAILED)
    with pytest.raises(CommandError, match="1 callback"):
        call_command("paycollect_process_callbacks", "--failed")
    assert "failed: NotFoundError" in capsys.readouterr().err
    stuck.refresh_from_db()
    assert stuck.state == ReceivedCallback.FAILED
    assert stuck.attempts == 1
    fetches = len(sb.control.journal("fetch_transaction"))
    call_command("paycollect_process_callbacks", "--dry-run", "--failed")
    assert "would be processed" in capsys.readouterr().out
    assert len(sb.control.journal("fetch_transaction")) == fetches


@pytest.mark.django_db
def test_the_command_refuses_an_age_of_zero():
    with pytest.raises(CommandError, match="more than zero"):
        call_command("paycollect_process_callbacks", "--older-than", "0s")
    call_command("paycollect_process_callbacks", "--older-than", "0s", "--failed")  # ignored with --failed


def staff(django_user_model: Any, *codenames: str) -> Any:
    user = django_user_model.objects.create_user(username="staff", password="pw", is_staff=True)
    perms = Permission.objects.filter(content_type__app_label="paycollect", codename__in=codenames)
    user.user_permissions.add(*perms)
    return user


ADMIN = "/admin/paycollect/receivedcallback/"


@live
def test_the_admin_reprocess_action_verifies_a_failed_callback_again(
    client, django_user_model, paycollect_live, pay, signal_log
):
    sb = paycollect_live
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    sb.control.fault("fetch_transaction", "status", status=503, times=None)
    post(client, body_for(txn.uuid))
    callback = ReceivedCallback.objects.get()
    assert callback.state == ReceivedCallback.FAILED
    assert callback.error.startswith("ServerError")
    invalid = ReceivedCallback.objects.create(state=ReceivedCallback.INVALID, body="nope")
    sb.control.clear_faults()

    client.force_login(staff(django_user_model, "view_receivedcallback", "reprocess_receivedcallback"))
    page = client.get(ADMIN)
    assert "reprocess" in {name for name, _ in page.context["action_form"].fields["action"].choices}
    detail = client.get(f"{ADMIN}{callback.pk}/change/")
    assert detail.status_code == 200
    assert "ServerError" in detail.content.decode()
    assert CALLBACK_TOKEN not in detail.content.decode()
    assert "CALLBACK_TOKENS[0]" in detail.content.decode()

    response = client.post(ADMIN, {"action": "reprocess", "_selected_action": [callback.pk, invalid.pk]})
    assert response.status_code == 302
    text = " | ".join(str(m) for m in get_messages(response.wsgi_request))
    assert f"Reprocess: 1 succeeded (#{callback.pk})" in text
    assert f"#{invalid.pk}: it is invalid: nothing to verify" in text
    callback.refresh_from_db()
    assert callback.state == ReceivedCallback.PROCESSED
    assert callback.attempts == 2
    assert callback.error == ""
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert signal_log.count_once_sent("payment_succeeded", 1) == 1


@live
def test_without_the_permission_the_reprocess_action_is_hidden_and_refused(
    client, django_user_model, paycollect_live
):
    callback = stored_callback(UUID, ReceivedCallback.FAILED)
    client.force_login(staff(django_user_model, "view_receivedcallback"))
    page = client.get(ADMIN)
    assert page.status_code == 200
    assert page.context["action_form"] is None  # no action at all is offered
    response = client.post(ADMIN, {"action": "reprocess", "_selected_action": [callback.pk]})
    assert response.status_code in (200, 302)
    callback.refresh_from_db()
    assert callback.state == ReceivedCallback.FAILED
    assert callback.attempts == 0
    assert not paycollect_live.control.journal("fetch_transaction")


@pytest.mark.django_db
def test_the_admin_filters_by_state_and_validity_and_searches_by_uuid(client, django_user_model):
    good = stored_callback(UUID, ReceivedCallback.PROCESSED)
    bad = ReceivedCallback.objects.create(
        state=ReceivedCallback.INVALID, invalid_reason="the body is not JSON"
    )
    client.force_login(staff(django_user_model, "view_receivedcallback"))

    def shown(query: str) -> set[int]:
        response = client.get(f"{ADMIN}?{query}")
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    assert shown("valid=yes") == {good.pk}
    assert shown("valid=no") == {bad.pk}
    assert shown("state__exact=processed") == {good.pk}
    assert shown(f"q={UUID}") == {good.pk}
    assert client.get(f"{ADMIN}{bad.pk}/change/").status_code == 200
    nested = ReceivedCallback.objects.create(state=ReceivedCallback.INVALID, body="[" * 30_000 + "]" * 30_000)
    assert client.get(f"{ADMIN}{nested.pk}/change/").status_code == 200
    assert client.get(f"{ADMIN}add/").status_code == 403


@pytest.mark.django_db
def test_the_admin_lists_and_shows_callbacks_with_malformed_hints(client, django_user_model, no_worker):
    body = body_for(
        recurring={"is_sub_payment": True, "parent_transaction": "a1b2c3d4-e5f6-g7h8-i9j0-k1l2m3n4o5p6"}
    )
    assert post(client, body).status_code == 200
    flagged = ReceivedCallback.objects.get()
    clean = stored_callback(UUID.replace("3f", "4f"), ReceivedCallback.PROCESSED)
    client.force_login(staff(django_user_model, "view_receivedcallback"))

    def shown(query: str) -> set[int]:
        response = client.get(f"{ADMIN}?{query}")
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    assert shown("malformed_hints=yes") == {flagged.pk}
    assert shown("malformed_hints=no") == {clean.pk}
    page = client.get(f"{ADMIN}{flagged.pk}/change/").content.decode()
    assert "malformed hints (stored as not sent)" in page.lower()
    assert "recurring.parent_transaction" in page
    assert "Not a transaction uuid." in page
