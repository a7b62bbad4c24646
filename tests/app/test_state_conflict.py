"""Refusals the state of a row decides are StateConflict (error_code "conflict"), a sibling of PaymentRefused
(bad input) under the contract's root: a caller (the REST API's 409) tells them apart without reading a
message, and both are ValidationErrors naming their fields, so a form shows either."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from django_paycollect import services
from django_paycollect.exceptions import PaymentRefused, ServiceLayerError, StateConflict
from django_paycollect.models import RecurringSeries, Refund

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_refund_over_what_is_left_is_a_conflict_and_a_malformed_amount_is_not(
    paycollect_in_process, paid_transaction
):
    services.refund(paid_transaction, Decimal("70.00"))
    with pytest.raises(StateConflict) as over:
        services.refund(paid_transaction, Decimal("40.00"))
    assert not isinstance(over.value, PaymentRefused)
    assert isinstance(over.value, ServiceLayerError)
    assert isinstance(over.value, ValidationError)
    assert over.value.error_code == "conflict"
    assert over.value.message_dict == {"amount": ["At most 30.00 EGP can still be refunded."]}
    with pytest.raises(StateConflict):
        services.refund(paid_transaction, Decimal("5.00"), expected_refundable=Decimal("100.00"))
    with pytest.raises(PaymentRefused) as malformed:
        services.refund(paid_transaction, Decimal("-1.00"))
    assert not isinstance(malformed.value, StateConflict)
    assert Refund.objects.count() == 1


def test_capturing_an_unpaid_payment_or_twice_is_a_conflict(paycollect_in_process, pay, paid_transaction):
    with pytest.raises(StateConflict):
        services.capture(pay("20.00", merchant_reference="unpaid"))
    services.capture(paid_transaction)
    with pytest.raises(StateConflict):
        services.capture(paid_transaction)
    with pytest.raises(StateConflict):
        services.refund(pay("20.00", merchant_reference="unpaid-2"))


def test_cancelling_a_cancelled_series_is_a_conflict(paycollect_in_process, recurring_transaction):
    series = RecurringSeries.objects.get(parent_uuid=recurring_transaction.uuid)
    services.cancel_recurring(series)
    with pytest.raises(StateConflict):
        services.cancel_recurring(series)


def test_a_payment_started_for_a_user_is_theirs(paycollect_in_process, pay, django_user_model):
    user = django_user_model.objects.create_user("payer", "payer@example.com", None)
    txn = pay("10.00", merchant_reference="owned", owner=user)
    assert txn.owner == user
    assert pay("10.00", merchant_reference="anonymous").owner is None
