"""The service layer against the sandbox served in process: each operation, its ApiCall, state and signals."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.db import transaction as db_transaction

from django_paycollect import services
from django_paycollect.client import Logo
from django_paycollect.exceptions import PaymentRefused, ServiceUsageError, StateConflict
from django_paycollect.models import (
    ApiCall,
    DirectOrder,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
    TransactionStatusChange,
)
from django_paycollect.services.callback_ledger import verify_callback
from django_paycollect.services.status import apply_status
from tests.support.payments import BILLING, complete

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


# --- prepare amount and start payment -------------------------------------------------------


def test_prepare_amount_adds_the_services_fees_and_records_the_call(paycollect_in_process):
    total = services.prepare_amount(Decimal("100.00"))
    assert isinstance(total, Decimal)
    assert total > Decimal("100.00")
    call = ApiCall.objects.get(operation="prepare_amount")
    assert call.http_status == 200
    assert call.error_class == ""
    assert call.data["total_amount"] == str(total)


def test_start_payment_returns_a_pending_transaction_with_its_page(paycollect_in_process, pay, signal_log):
    txn = pay("100.00", merchant_reference="order-1")
    assert txn.status == Transaction.PENDING
    assert txn.uuid
    assert txn.service_id
    assert txn.iframe_url.startswith(paycollect_in_process.base_url)
    assert txn.total_amount == Decimal("100.00")
    assert txn.total_amount_piasters == 10000
    assert list(txn.status_changes.values_list("from_status", "to_status")) == [("NEW", "PENDING")]
    assert signal_log.names() == ["transaction_status_changed"]
    call = ApiCall.objects.get(operation="pay")
    assert call.transaction == txn
    assert call.code == 200
    assert call.data["transaction_uuid"] == txn.uuid
    # PII is masked in what we store; the service got the real values.
    assert call.request_body["billing_data"] == {
        "name": "M*** A***",
        "email": "m***@example.com",
        "phone_number": "+20***4567",
    }
    assert (
        paycollect_in_process.control.journal("pay")[0]["body"]["billing_data"]["email"] == BILLING["email"]
    )


def test_kiosk_payment_keeps_the_bill_reference(paycollect_in_process, pay):
    txn = pay("80.00", pay_using="kiosk")
    assert txn.bill_reference
    assert txn.kiosk_message
    assert txn.status == Transaction.PENDING


def test_same_merchant_reference_never_charges_twice(paycollect_in_process, pay):
    first = pay("100.00", merchant_reference="cart-42")
    again = pay("100.00", merchant_reference="cart-42")
    assert again.pk == first.pk
    assert len(paycollect_in_process.control.journal("pay")) == 1
    # Once the first one failed, the customer may try again.
    complete(paycollect_in_process, first, "FAILED")
    retry = pay("100.00", merchant_reference="cart-42")
    assert retry.pk != first.pk
    assert len(paycollect_in_process.control.journal("pay")) == 2


def test_fees_in_the_bill_charge_the_prepared_total(paycollect_in_process, pay, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "FEES_IN_BILL": True}
    expected = services.prepare_amount(Decimal("100.00"))
    txn = pay("100.00")
    assert txn.original_amount == Decimal("100.00")
    assert txn.total_amount == expected
    sent = paycollect_in_process.control.journal("pay")[0]["body"]
    assert Decimal(str(sent["amount"])) == expected
    assert Decimal(str(sent["original_amount"])) == Decimal("100.00")


def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored_or_sent(paycollect_in_process, pay):
    with pytest.raises(PaymentRefused) as caught:
        pay("100.00", billing_data={**BILLING, "phone_number": "0100123", "name": "Mona"})
    assert set(caught.value.message_dict) == {"billing_data.phone_number", "billing_data.name"}
    with pytest.raises(PaymentRefused) as caught:
        pay("10.005")
    assert "amount" in caught.value.message_dict
    assert not Transaction.objects.exists()
    assert paycollect_in_process.control.journal("pay") == []


def test_amounts_above_the_maximum_are_refused_naming_the_field_before_anything_is_stored_or_sent(
    paycollect_in_process, pay, paid_transaction, settings
):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "MAX_AMOUNT": Decimal("500.00")}
    too_much = "Enter at most 500.00."
    with pytest.raises(PaymentRefused) as caught:
        pay("500.01")
    assert caught.value.message_dict == {"amount": [too_much]}
    with pytest.raises(PaymentRefused) as caught:
        services.prepare_amount(Decimal("500.01"))
    assert caught.value.message_dict == {"amount": [too_much]}
    with pytest.raises(PaymentRefused) as caught:
        services.validate_promocode("SAVE10", amount=Decimal("500.01"), phone_number="+201001234567")
    assert caught.value.message_dict == {"amount": [too_much]}
    with pytest.raises(PaymentRefused) as caught:
        services.create_direct_order(
            name="Invoice",
            amount=Decimal("9999999999.99"),
            payment_methods=["card"],
            customer_name="Omar Said",
            customer_email="omar@example.com",
            customer_mobile="+201001112222",
        )
    assert set(caught.value.message_dict) == {"amount"}
    with pytest.raises(PaymentRefused) as caught:
        services.refund(paid_transaction, Decimal("600.00"))
    assert set(caught.value.message_dict) == {"amount"}
    assert Transaction.objects.get() == paid_transaction  # nothing stored...
    assert not DirectOrder.objects.exists()
    assert not Refund.objects.exists()
    for operation in ("prepare_amount", "validate_promocode", "direct_order", "refund"):
        assert paycollect_in_process.control.journal(operation) == []  # ... and nothing sent
    assert len(paycollect_in_process.control.journal("pay")) == 1  # the paid transaction's own

    # The maximum itself is accepted.
    assert pay("500.00").status == Transaction.PENDING


def test_a_payment_the_service_refuses_is_rejected_with_its_field_errors(paycollect_in_process, pay):
    with pytest.raises(PaymentRefused) as caught:
        pay("100.00", variable_amount_id=999999)
    assert "variable_amount_id" in caught.value.message_dict
    txn = Transaction.objects.get()
    assert txn.status == Transaction.REJECTED
    assert not txn.outcome_unknown
    assert ApiCall.objects.get(operation="pay").error_class == "ValidationError"


def test_work_done_then_answer_lost_leaves_the_payment_unknown_and_never_resends(paycollect_in_process, pay):
    paycollect_in_process.control.fault("pay", "drop_after")
    txn = pay("100.00", merchant_reference="order-lost")
    assert txn.outcome_unknown
    assert txn.status == Transaction.NEW
    assert not txn.uuid
    assert len(paycollect_in_process.control.journal("pay")) == 1
    call = ApiCall.objects.get(operation="pay")
    assert call.outcome_unknown
    assert call.error_class == "OutcomeUnknownError"
    # Asking again for the same reference returns the unknown one: no second charge.
    assert pay("100.00", merchant_reference="order-lost").pk == txn.pk
    assert len(paycollect_in_process.control.journal("pay")) == 1


def test_state_changing_services_refuse_to_run_inside_atomic(paycollect_in_process, pay, paid_transaction):
    with db_transaction.atomic():
        with pytest.raises(ServiceUsageError, match="atomic"):
            pay("100.00")
        with pytest.raises(ServiceUsageError):
            services.refund(paid_transaction, Decimal("1.00"))
    assert paycollect_in_process.control.journal("refund") == []


# --- sync and the status machine -------------------------------------------------------------


def test_sync_applies_the_fetched_status_and_signals_once(paycollect_in_process, pay, signal_log):
    txn = pay("100.00")
    paycollect_in_process.control.complete(txn.uuid, "SUCCESSFUL")
    txn = services.sync_transaction(txn)
    txn = services.sync_transaction(txn)
    assert txn.status == Transaction.SUCCESSFUL
    assert txn.last_synced_at
    assert txn.raw["status"] == "SUCCESSFUL"
    assert signal_log.count("payment_succeeded") == 1
    assert [s for s in signal_log.names() if s == "transaction_status_changed"] == [
        "transaction_status_changed"
    ] * 2
    assert ApiCall.objects.filter(operation="get_transaction", transaction=txn).count() == 2


def test_status_only_moves_forward(paycollect_in_process, paid_transaction, signal_log):
    with db_transaction.atomic():
        txn = Transaction.objects.select_for_update().get(pk=paid_transaction.pk)
        assert not apply_status(txn, "PENDING", source="test")
        assert not apply_status(txn, "FAILED", source="test")
        txn.save()
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert signal_log.sent == []


def test_a_late_success_after_a_failure_is_recorded(paycollect_in_process, pay, signal_log):
    txn = complete(paycollect_in_process, pay("100.00"), "FAILED")
    with db_transaction.atomic():
        txn = Transaction.objects.select_for_update().get(pk=txn.pk)
        assert apply_status(txn, "SUCCESSFUL", source="test")
        txn.save()
    assert signal_log.names()[-2:] == ["transaction_status_changed", "payment_succeeded"]
    assert signal_log.count("payment_failed") == 1


def test_unknown_status_is_kept_and_flagged_never_applied(paycollect_in_process, paid_transaction):
    with db_transaction.atomic():
        txn = Transaction.objects.select_for_update().get(pk=paid_transaction.pk)
        assert not apply_status(txn, "PARTIALLY_REFUNDED", source="test")
        txn.save()
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert txn.service_status == "PARTIALLY_REFUNDED"
    assert txn.status_unrecognised


def test_amount_mismatch_flags_instead_of_marking_paid(paycollect_in_process, pay, signal_log):
    txn = pay("100.00")
    Transaction.objects.filter(pk=txn.pk).update(total_amount=Decimal("10.00"))  # what we expected to be paid
    paycollect_in_process.control.complete(txn.uuid, "SUCCESSFUL")
    txn = services.sync_transaction(Transaction.objects.get(pk=txn.pk))
    assert txn.amount_mismatch
    assert txn.status == Transaction.PENDING
    assert txn.service_status == "SUCCESSFUL"
    assert signal_log.count("amount_mismatch_detected") == 1
    assert signal_log.count("payment_succeeded") == 0
    mismatch = next(kw for name, kw in signal_log.sent if name == "amount_mismatch_detected")
    assert mismatch["differences"] == {"total_amount": ("10.00", "100.00")}


def test_sync_of_an_unknown_uuid_creates_it_from_the_fetched_object(paycollect_in_process):
    started = paycollect_in_process.client.pay(
        community_id=paycollect_in_process.community_id,
        amount=Decimal("30.00"),
        original_amount=Decimal("30.00"),
        variable_amount_id=paycollect_in_process.variable_amount_id,
        billing_data=BILLING,
    )
    txn = services.sync_transaction(uuid=started.result.transaction_uuid)
    assert txn.total_amount == Decimal("30.00")
    assert txn.status == Transaction.PENDING
    assert ApiCall.objects.get(operation="get_transaction").transaction == txn


def _verification_queries(sb) -> int:
    """Queries (transaction control left out) of verifying a callback of a payment made at the service
    that we never stored: the fetch creates it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_paycollect.models import ReceivedCallback

    started = sb.client.pay(
        community_id=sb.community_id,
        amount=Decimal("30.00"),
        original_amount=Decimal("30.00"),
        variable_amount_id=sb.variable_amount_id,
        billing_data=BILLING,
    )
    uuid = started.result.transaction_uuid
    sb.control.complete(uuid)
    callback = ReceivedCallback.objects.create(
        state=ReceivedCallback.QUEUED, transaction_uuid=uuid, claimed_status="SUCCESSFUL", body="{}"
    )
    with CaptureQueriesContext(connection) as captured:
        verified = verify_callback(callback.pk)
    assert verified.state == ReceivedCallback.PROCESSED
    assert verified.transaction.status == Transaction.SUCCESSFUL
    # The claim's SET LOCAL (PostgreSQL) says how its transaction commits: control, as BEGIN and COMMIT are.
    control = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "SET LOCAL")
    return sum(1 for q in captured.captured_queries if not q["sql"].upper().startswith(control))


def test_verifying_a_callback_of_an_unknown_transaction_takes_ten_queries_whatever_the_history(
    paycollect_live,
):
    # The live sandbox: one served in process would write its own rows on this connection, counted here.
    _verification_queries(paycollect_live)  # warms what is read once per process
    first = _verification_queries(paycollect_live)
    for n in range(50):
        old = Transaction.objects.create(
            uuid=f"00000000-0000-4000-8000-{n:012d}", community_id="c", total_amount=1
        )
        ApiCall.objects.create(operation="get_transaction", method="GET", path="/x", transaction=old)
    assert first <= 10
    assert _verification_queries(paycollect_live) == first


# --- capture, refund, cancel recurring --------------------------------------------------------


def test_capture_once(paycollect_in_process, paid_transaction, signal_log):
    txn = services.capture(paid_transaction)
    assert txn.capture_state == Transaction.CAPTURE_DONE
    assert txn.captured_amount == Decimal("100.00")
    assert signal_log.count("capture_succeeded") == 1
    with pytest.raises(StateConflict):
        services.capture(txn)
    assert len(paycollect_in_process.control.journal("capture")) == 1


def test_capture_of_an_unpaid_transaction_is_refused_before_sending(paycollect_in_process, pay):
    with pytest.raises(StateConflict, match="successful"):
        services.capture(pay("100.00"))
    assert paycollect_in_process.control.journal("capture") == []


def test_partial_then_remaining_refund(paycollect_in_process, paid_transaction, signal_log):
    first = services.refund(paid_transaction, Decimal("30.00"))
    assert first.state == Refund.SUCCEEDED
    assert first.service_message
    with pytest.raises(StateConflict) as caught:
        services.refund(paid_transaction, Decimal("70.01"))
    assert "70.00" in caught.value.message_dict["amount"][0]
    rest = services.refund(paid_transaction)  # default: all that is still refundable
    assert rest.amount == Decimal("70.00")
    assert rest.state == Refund.SUCCEEDED
    paid_transaction.refresh_from_db()
    assert paid_transaction.refunded_amount == Decimal("100.00")
    sent = [Decimal(str(e["body"]["refund_amount"])) for e in paycollect_in_process.control.journal("refund")]
    assert sent == [Decimal("30.00"), Decimal("70.00")]
    assert signal_log.count("refund_succeeded") == 2
    assert ApiCall.objects.filter(operation="refund", refund__isnull=False).count() == 2


def test_refund_with_an_unknown_outcome_is_never_resent_and_still_counts(
    paycollect_in_process, paid_transaction
):
    paycollect_in_process.control.fault("refund", "drop_after")
    unknown = services.refund(paid_transaction, Decimal("60.00"))
    assert unknown.state == Refund.UNKNOWN
    assert len(paycollect_in_process.control.journal("refund")) == 1
    with pytest.raises(StateConflict, match=r"40\.00"):
        services.refund(paid_transaction, Decimal("50.00"))
    assert len(paycollect_in_process.control.journal("refund")) == 1


def test_a_refund_the_service_refuses_is_failed_and_signalled(
    paycollect_in_process, paid_transaction, signal_log
):
    # Someone refunded at the service directly; our books do not know yet.
    paycollect_in_process.client.refund(
        transaction_uuid=paid_transaction.uuid, refund_amount=Decimal("90.00")
    )
    with pytest.raises(PaymentRefused) as caught:
        services.refund(paid_transaction, Decimal("50.00"))
    # The service's words, on its field; the refund it left is the refusal's record.
    assert "refund_amount" in caught.value.message_dict
    failed = caught.value.record
    assert failed == Refund.objects.get()
    assert failed.state == Refund.FAILED
    assert failed.error
    assert signal_log.count("refund_failed") == 1
    paid_transaction.refresh_from_db()
    assert paid_transaction.refunded_amount == Decimal("0.00")


def test_refund_input_is_checked(paycollect_in_process, paid_transaction):
    with pytest.raises(PaymentRefused) as caught:
        services.refund(paid_transaction, Decimal("1.005"))
    assert "amount" in caught.value.message_dict
    assert not Refund.objects.exists()


def test_renewals_join_their_series_and_cancel_stops_them(
    paycollect_in_process, recurring_transaction, signal_log
):
    series = RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    assert series.parent_transaction == recurring_transaction
    assert series.active
    assert series.minimum_days_between_payments == 30
    renewals = paycollect_in_process.control.advance_clock(31)
    assert len(renewals) == 1
    charge = services.sync_transaction(uuid=renewals[0])
    assert charge.series == series
    assert charge.parent_uuid == recurring_transaction.uuid
    assert charge.status == Transaction.SUCCESSFUL
    assert charge.transaction_order == 2
    assert signal_log.count("recurring_charge_succeeded") == 1

    series = services.cancel_recurring(series)
    assert series.cancel_state == RecurringSeries.CANCEL_DONE
    assert not series.active
    assert series.cancelled_at
    assert signal_log.count("recurring_series_cancelled") == 1
    assert paycollect_in_process.control.advance_clock(62) == []
    with pytest.raises(StateConflict):
        services.cancel_recurring(series)
    assert len(paycollect_in_process.control.journal("cancel_recurring")) == 1


# --- direct orders, promocodes, communities, statistics ----------------------------------------


def test_direct_order_is_created_with_its_payment_link(paycollect_in_process, signal_log):
    order = services.create_direct_order(
        name="Invoice 7",
        amount=Decimal("500.00"),
        payment_methods=["card", "kiosk"],
        customer_name="Omar Said",
        customer_email="omar@example.com",
        customer_mobile="+201001112222",
        discount_amount=Decimal("50.00"),
        vat_percentage=Decimal("14.00"),
        custom_fields=[{"field_label": "Size", "field_type": "DROPDOWNLIST", "field_choices": "S,M,L"}],
        tags=[{"id": 1, "name": "invoices"}],
        send_by_email=True,
    )
    assert order.state == DirectOrder.CREATED
    assert order.payment_id
    assert order.payment_link.startswith(paycollect_in_process.base_url)
    assert signal_log.count("direct_order_created") == 1
    sent = paycollect_in_process.control.journal("direct_order")[0]["body"]
    assert sent["tags"] == [{"id": 1, "name": "invoices"}]
    assert sent["custom_fields"][0]["field_choices"] == "S,M,L"
    stored = ApiCall.objects.get(operation="create_direct_order")
    assert stored.direct_order == order
    assert stored.request_body["customer_email"] == "o***@example.com"


def test_direct_order_input_errors_name_the_field(paycollect_in_process):
    order = {
        "name": "Invoice",
        "amount": Decimal("100.00"),
        "payment_methods": ["card"],
        "customer_name": "Omar Said",
        "customer_email": "omar@example.com",
        "customer_mobile": "+201001112222",
    }
    with pytest.raises(PaymentRefused) as caught:
        services.create_direct_order(**{**order, "customer_name": "Omar", "customer_mobile": "01001112222"})
    assert set(caught.value.message_dict) == {"customer_name", "customer_mobile"}
    # Cross-field rules run once every field is valid (DRF's order).
    with pytest.raises(PaymentRefused) as caught:
        services.create_direct_order(**order, discount_amount=Decimal("100.00"))
    assert set(caught.value.message_dict) == {"discount_amount"}
    assert not DirectOrder.objects.exists()
    assert paycollect_in_process.control.journal("direct_order") == []


def test_promocode_valid_and_unknown(paycollect_in_process):
    valid = services.validate_promocode("SAVE10", amount=Decimal("100.00"), phone_number="+201001234567")
    assert valid.promocode_id
    assert valid.value is not None
    for name in ("EXPIRED20", "NO-SUCH-CODE"):
        with pytest.raises(PaymentRefused):
            services.validate_promocode(name, amount=Decimal("100.00"), phone_number="+201001234567")
    assert ApiCall.objects.filter(operation="validate_promocode").count() == 3


def test_create_community_with_a_png_and_refused_with_text(paycollect_in_process):
    services.create_community(name="Second Club", logo=Logo("logo.png", PNG), app_modules=["Event"])
    assert any(c["name"] == "Second Club" for c in paycollect_in_process.control.communities())
    with pytest.raises(PaymentRefused) as caught:
        services.create_community(name="Third Club", logo=Logo("logo.txt", b"not an image"))
    assert "logo" in caught.value.message_dict
    assert ApiCall.objects.filter(operation="create_community", sent=False).count() == 1


def test_statistics_snapshot_matches_the_ledger(paycollect_in_process, paid_transaction):
    snapshot = services.fetch_statistics()
    assert isinstance(snapshot, StatisticsSnapshot)
    assert snapshot.total_number_of_transactions >= 1
    assert snapshot.total_collected_transactions == Decimal("100.00")


# --- what is stored -----------------------------------------------------------------------------


def test_no_secret_in_any_api_call_row_or_log_record(
    paycollect_in_process, recurring_transaction, caplog, settings
):
    caplog.set_level("DEBUG")
    services.refund(recurring_transaction, Decimal("10.00"))
    services.capture(recurring_transaction)
    services.fetch_statistics()
    services.cancel_recurring(RecurringSeries.objects.get())
    paycollect_in_process.control.fault(
        "refund", "html", status=403, body=f"<html>{paycollect_in_process.api_key}</html>"
    )
    services.refund(recurring_transaction, Decimal("5.00"))
    secrets = [
        paycollect_in_process.api_key,
        paycollect_in_process.basic_password,
        settings.PAYCOLLECT["CALLBACK_TOKENS"][0],
    ]
    stored = json.dumps(list(ApiCall.objects.values()), default=str)
    logged = "\n".join(r.getMessage() + repr(r.__dict__) for r in caplog.records)
    assert ApiCall.objects.count() >= 7
    for secret in secrets:
        assert secret not in stored
        assert secret not in logged


def test_every_status_change_is_recorded(paycollect_in_process, paid_transaction):
    changes = list(
        TransactionStatusChange.objects.filter(transaction=paid_transaction).values_list(
            "to_status", "source"
        )
    )
    assert changes == [("PENDING", "pay"), ("SUCCESSFUL", "sync")]


def test_expiry_dates_are_sent_as_the_spec_writes_them(paycollect_in_process, pay):
    pay("20.00", recurring={"expiry_date": dt.date(2031, 5, 1), "minimum_days_between_payments": 7})
    body = paycollect_in_process.control.journal("pay")[0]["body"]
    assert body["is_recurring"] is True
    assert body["expiry_date"] == "2031-05-01"
    assert body["minimum_days_between_payments"] == 7


def test_refund_refused_when_the_refundable_amount_changed_since_shown(
    paycollect_in_process, paid_transaction
):
    services.refund(paid_transaction, Decimal("10.00"))
    with pytest.raises(StateConflict, match=r"changed from 100\.00 to 90\.00"):
        services.refund(paid_transaction, Decimal("10.00"), expected_refundable=Decimal("100.00"))
    done = services.refund(paid_transaction, Decimal("10.00"), expected_refundable=Decimal("90.00"))
    assert done.state == Refund.SUCCEEDED
    assert len(paycollect_in_process.control.journal("refund")) == 2


def test_anonymous_users_are_recorded_as_nobody(paycollect_in_process, paid_transaction):
    from django.contrib.auth.models import AnonymousUser

    done = services.refund(paid_transaction, Decimal("1.00"), user=AnonymousUser())
    assert done.requested_by is None
    txn = services.capture(paid_transaction, user=AnonymousUser())
    assert txn.captured_by is None
