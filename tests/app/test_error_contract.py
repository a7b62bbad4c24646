"""The service layer's one error contract: every client error maps to one of four exceptions, and every
state-changing operation returns its row (succeeded or unknown) or raises with the row it left."""

from __future__ import annotations

import socket
from decimal import Decimal

import pytest

from django_paycollect import services
from django_paycollect.client import (
    AuthenticationError,
    CallInfo,
    ConnectError,
    NotFoundError,
    OutcomeUnknownError,
    PayCollectError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
)
from django_paycollect.exceptions import (
    NotFound,
    PayCollectConfigurationError,
    PaymentRefused,
    ServiceLayerError,
    ServiceUnavailable,
    describe_error,
)
from django_paycollect.models import ApiCall, Community, Refund, Transaction

CALL = CallInfo("get_transaction", "GET", "/x/", None, 1, 0.1, 503)


@pytest.mark.parametrize(
    ("error", "expected", "code"),
    [
        (ConnectError("not sent", call=CALL), ServiceUnavailable, "service_unavailable"),
        (OutcomeUnknownError("no answer", call=CALL), ServiceUnavailable, "service_unavailable"),
        (ServerError("failed", http_status=503, call=CALL), ServiceUnavailable, "service_unavailable"),
        (
            UnexpectedResponseError("html", http_status=502, call=CALL),
            ServiceUnavailable,
            "service_unavailable",
        ),
        (RateLimitError("slow down", retry_after=7.0, call=CALL), ServiceUnavailable, "service_unavailable"),
        (ValidationError("bad", field_errors={"amount": ["too big"]}, call=CALL), PaymentRefused, "refused"),
        (ValidationError("bad", call=CALL), PaymentRefused, "refused"),
        (NotFoundError("no such", http_status=404, call=CALL), NotFound, "not_found"),
        (
            AuthenticationError("key", http_status=401, call=CALL),
            PayCollectConfigurationError,
            "configuration",
        ),
        (
            PayCollectError("dashboard_statistics needs basic_credentials"),
            PayCollectConfigurationError,
            "configuration",
        ),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_every_client_error_has_one_place_in_the_contract(error, expected, code):
    row = object()
    mapped = services.contract_error(error, record=row)
    assert type(mapped) is expected
    assert isinstance(mapped, ServiceLayerError)
    assert mapped.error_code == code
    assert mapped.record is row
    assert mapped.messages
    assert all(isinstance(text, str) for text in mapped.messages)
    # The client's words: its message, or the service's field messages; a service out of reach says so to
    # people (the client's words name hosts and settings) and keeps them in str() and the record.
    shown = " ".join(mapped.messages)
    if expected is ServiceUnavailable:
        assert shown == "The payment service cannot be reached; nothing was done. Try again in a moment."
        shown = str(mapped)
    assert str(error) in shown or shown in str(error)


def test_a_refusal_keeps_the_services_field_messages_and_a_429_its_wait():
    refused = services.contract_error(ValidationError("bad", field_errors={"amount": ["too big"]}, call=CALL))
    assert isinstance(refused, PaymentRefused)
    assert refused.message_dict == {"amount": ["too big"]}
    unnamed = services.contract_error(ValidationError("bad", call=CALL))
    assert isinstance(unnamed, PaymentRefused)
    assert list(unnamed.message_dict) == ["__all__"]
    waiting = services.contract_error(RateLimitError("slow down", retry_after=7.0, call=CALL))
    assert isinstance(waiting, ServiceUnavailable)
    assert waiting.retry_after == 7.0


def test_describe_error_names_the_clients_error_behind_a_contract_error():
    cause = ServerError("failed", http_status=503, call=CALL)
    with pytest.raises(ServiceUnavailable) as caught:
        raise services.contract_error(cause) from cause
    assert describe_error(caught.value) == "ServerError: failed (HTTP 503)"
    refused = PaymentRefused({"amount": ["At most 10.00 EGP."]})
    assert describe_error(refused) == "PaymentRefused: At most 10.00 EGP."
    assert describe_error(RuntimeError("bug")) == "RuntimeError: bug"


# --- against the live sandbox ------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.django_db(transaction=True)
def test_a_refund_never_sent_is_unavailable_and_leaves_a_failed_refund(
    paycollect_live, paid_transaction, settings
):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASE_URL": f"http://127.0.0.1:{_closed_port()}"}
    with pytest.raises(ServiceUnavailable) as caught:
        services.refund(paid_transaction, Decimal("10.00"))
    assert isinstance(caught.value.__cause__, ConnectError)
    failed = caught.value.record
    assert failed == Refund.objects.get()
    assert failed.state == Refund.FAILED
    call = ApiCall.objects.get(operation="refund")
    assert call.sent is False  # it never left this machine
    assert services.sent_by_task("") is None
    paid_transaction.refresh_from_db()
    assert paid_transaction.refundable_amount == Decimal("100.00")  # a failed refund holds nothing
    assert paycollect_live.control.journal("refund") == []


@pytest.mark.django_db(transaction=True)
def test_credentials_the_service_refuses_are_a_configuration_error(
    paycollect_live, paid_transaction, settings
):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": "not-the-key-0123456789"}
    with pytest.raises(PayCollectConfigurationError) as caught:
        services.capture(paid_transaction)
    assert isinstance(caught.value.__cause__, AuthenticationError)
    assert caught.value.record.capture_state == Transaction.CAPTURE_FAILED
    with pytest.raises(PayCollectConfigurationError):
        services.sync_transaction(paid_transaction)
    # Fixed, the capture may be asked again: nothing was done at the service.
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": paycollect_live.api_key}
    assert services.capture(paid_transaction).capture_state == Transaction.CAPTURE_DONE


@pytest.mark.django_db(transaction=True)
def test_a_uuid_the_service_does_not_know_is_not_found(paycollect_live):
    with pytest.raises(NotFound) as caught:
        services.sync_transaction(uuid="0b0b0b0b-1111-4222-8333-444455556666")
    assert isinstance(caught.value, PaymentRefused)
    assert isinstance(caught.value.__cause__, NotFoundError)
    assert not Transaction.objects.exists()


@pytest.mark.django_db
def test_a_stored_key_that_cannot_be_decrypted_is_a_configuration_error(settings):
    settings.PAYCOLLECT = {"BASE_URL": "http://127.0.0.1:9", "COMMUNITY_ID": "c-default", "API_KEY": "k"}
    Community.objects.create(community_id="c-broken", api_key_encrypted="pcx1:00000000:bm90IGEga2V5")
    with pytest.raises(PayCollectConfigurationError, match="cannot be decrypted") as caught:
        services.fetch_statistics("c-broken")
    assert caught.value.error_code == "configuration"
    assert not ApiCall.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_only_a_call_that_may_have_taken_effect_stops_a_redelivered_task(paycollect_live, paid_transaction):
    # Refunded at the service directly: our books do not know, so the service refuses the next one.
    paycollect_live.client.refund(transaction_uuid=paid_transaction.uuid, refund_amount=Decimal("95.00"))
    token = services.current_task_id.set("t-contract")
    try:
        with pytest.raises(PaymentRefused):
            services.refund(paid_transaction, Decimal("50.00"))
        assert services.sent_by_task("t-contract") is None  # refused: it did nothing there
        done = services.refund(paid_transaction, Decimal("5.00"))
    finally:
        services.current_task_id.reset(token)
    assert done.state == Refund.SUCCEEDED
    assert services.sent_by_task("t-contract") == ApiCall.objects.get(refund=done)
    assert services.sent_by_task("another-task") is None
