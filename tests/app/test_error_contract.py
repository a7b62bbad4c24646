"""The service layer's one error contract: every client error maps to one of its exceptions (or, for our own
configuration, to an error outside it), and every state-changing operation returns its row (succeeded or
unknown) or raises with the row it left."""

from __future__ import annotations

import re
import socket
from decimal import Decimal
from pathlib import Path

import pytest
import responses
from django.contrib.messages import get_messages
from django.core.exceptions import ImproperlyConfigured
from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse

from django_paycollect import exceptions, services
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
    Refusal,
    ServiceLayerError,
    ServiceUnavailable,
    StateConflict,
    describe_error,
)
from django_paycollect.models import ApiCall, Community, RecurringSeries, Refund, Transaction
from django_paycollect.services.calls import contract_error, current_task_id, sent_by_task

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: The contract's kinds, as callers catch them.
KINDS = {PaymentRefused, StateConflict, NotFound, ServiceUnavailable}


def test_the_contract_is_four_siblings_and_a_misconfiguration_is_outside_it():
    contract = {
        kind
        for kind in vars(exceptions).values()
        if isinstance(kind, type) and issubclass(kind, ServiceLayerError) and kind is not ServiceLayerError
    }
    assert contract == KINDS
    # Siblings: catching one never catches another, so a caller tells a conflict or an unknown uuid from bad
    # input by its class; those naming fields are ValidationErrors, so a form shows them on the fields.
    assert all(kind.__bases__[-1] is ServiceLayerError for kind in KINDS)
    assert {kind for kind in KINDS if issubclass(kind, DjangoValidationError)} == {
        PaymentRefused,
        StateConflict,
    }
    assert len({kind.error_code for kind in KINDS}) == len(KINDS)
    # The site's fault, not the customer's: Django's ImproperlyConfigured, never caught as the contract.
    assert issubclass(PayCollectConfigurationError, ImproperlyConfigured)
    assert not issubclass(PayCollectConfigurationError, ServiceLayerError)


def test_the_docs_count_what_the_code_raises():
    page = (DOCS / "services.md").read_text()
    section = page[page.index("## The error contract") :]
    section = section[: section.index("\n## ", 1)]
    table = re.findall(r"^\| \{py:class\}`~django_paycollect\.exceptions\.(\w+)`", section, re.M)
    assert set(table) == {kind.__name__ for kind in KINDS}
    assert len(table) == len(KINDS)
    assert "one of four" in section
    assert "PayCollectConfigurationError" in section  # said, outside the table: not one of them


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
    mapped = contract_error(error, record=row)
    assert type(mapped) is expected
    # A misconfiguration is the site's fault: a caller catching the contract must not hide it.
    assert isinstance(mapped, ServiceLayerError) is (expected is not PayCollectConfigurationError)
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
    refused = contract_error(ValidationError("bad", field_errors={"amount": ["too big"]}, call=CALL))
    assert isinstance(refused, PaymentRefused)
    assert refused.message_dict == {"amount": ["too big"]}
    unnamed = contract_error(ValidationError("bad", call=CALL))
    assert isinstance(unnamed, PaymentRefused)
    assert list(unnamed.message_dict) == ["__all__"]
    waiting = contract_error(RateLimitError("slow down", retry_after=7.0, call=CALL))
    assert isinstance(waiting, ServiceUnavailable)
    assert waiting.retry_after == 7.0


def test_describe_error_names_the_clients_error_behind_a_contract_error():
    cause = ServerError("failed", http_status=503, call=CALL)
    with pytest.raises(ServiceUnavailable) as caught:
        raise contract_error(cause) from cause
    assert describe_error(caught.value) == "ServerError: failed (HTTP 503)"
    refused = PaymentRefused({"amount": ["At most 10.00 EGP."]})
    assert describe_error(refused) == "PaymentRefused: At most 10.00 EGP."
    assert describe_error(RuntimeError("bug")) == "RuntimeError: bug"


# --- against the sandbox -----------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.django_db(transaction=True)
def test_a_refund_never_sent_is_unavailable_and_leaves_a_failed_refund(
    paycollect_in_process, paid_transaction, settings
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
    assert sent_by_task("") is None
    paid_transaction.refresh_from_db()
    assert paid_transaction.refundable_amount == Decimal("100.00")  # a failed refund holds nothing
    assert paycollect_in_process.control.journal("refund") == []


@pytest.mark.django_db(transaction=True)
def test_credentials_the_service_refuses_are_a_configuration_error(
    paycollect_in_process, paid_transaction, settings
):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": "not-the-key-0123456789"}
    with pytest.raises(PayCollectConfigurationError) as caught:
        services.capture(paid_transaction)
    assert isinstance(caught.value.__cause__, AuthenticationError)
    assert caught.value.record.capture_state == Transaction.CAPTURE_FAILED
    with pytest.raises(PayCollectConfigurationError):
        services.sync_transaction(paid_transaction)
    # Fixed, the capture may be asked again: nothing was done at the service.
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": paycollect_in_process.api_key}
    assert services.capture(paid_transaction).capture_state == Transaction.CAPTURE_DONE


@pytest.mark.django_db(transaction=True)
def test_a_uuid_the_service_does_not_know_is_not_found(paycollect_in_process):
    with pytest.raises(NotFound) as caught:
        services.sync_transaction(uuid="0b0b0b0b-1111-4222-8333-444455556666")
    assert not isinstance(caught.value, PaymentRefused)
    assert caught.value.error_code == "not_found"
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
def test_only_a_call_that_may_have_taken_effect_stops_a_redelivered_task(
    paycollect_in_process, paid_transaction
):
    # Refunded at the service directly: our books do not know, so the service refuses the next one.
    paycollect_in_process.client.refund(
        transaction_uuid=paid_transaction.uuid, refund_amount=Decimal("95.00")
    )
    token = current_task_id.set("t-contract")
    try:
        with pytest.raises(PaymentRefused):
            services.refund(paid_transaction, Decimal("50.00"))
        assert sent_by_task("t-contract") is None  # refused: it did nothing there
        done = services.refund(paid_transaction, Decimal("5.00"))
    finally:
        current_task_id.reset(token)
    assert done.state == Refund.SUCCEEDED
    assert sent_by_task("t-contract") == ApiCall.objects.get(refund=done)
    assert sent_by_task("another-task") is None


# --- a broken answer ------------------------------------------------------------------------------


SERVICE = "https://pay.example.test"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("operation", "path", "call", "missing"),
    [
        (
            "prepare_amount",
            "/api/v1/payments/prepare-amount/",
            lambda: services.prepare_amount(Decimal("100.00")),
            "total_amount",
        ),
        (
            "validate_promocode",
            "/api/promocodes/validate/",
            lambda: services.validate_promocode(
                "SAVE10", amount=Decimal("100.00"), phone_number="+201001234567"
            ),
            "promocode_id",
        ),
    ],
    ids=["prepare_amount", "validate_promocode"],
)
def test_an_answer_without_what_the_spec_says_is_no_usable_answer_not_a_refusal(
    settings, operation, path, call, missing
):
    # A success envelope lacking the one field the read is for: nothing the customer typed was refused, and
    # nothing changed at the service, as with an HTML page instead of the envelope.
    settings.PAYCOLLECT = {
        "BASE_URL": SERVICE,
        "COMMUNITY_ID": "c-1",
        "API_KEY": "k" * 24,
        "VARIABLE_AMOUNT_ID": 1,
        "MAX_NETWORK_RETRIES": 0,
    }
    body = {"status": {"code": 200, "message": "success", "errors": []}, "data": {"currency": "EGP"}}
    with responses.RequestsMock() as mock:
        mock.post(SERVICE + path, json=body)
        with pytest.raises(ServiceUnavailable) as caught:
            call()
    assert str(caught.value) == f"{operation}: the service's answer has no {missing}"
    assert caught.value.messages == [
        "The payment service cannot be reached; nothing was done. Try again in a moment."
    ]


# --- refusals of the state ------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_refusal_of_the_state_is_a_named_field_and_message_raised_as_a_conflict():
    unpaid = Transaction(uuid="0b0b0b0b-1111-4222-8333-000000000001", status=Transaction.PENDING)
    refusal = unpaid.refund_refusal(Decimal("10.00"))
    assert isinstance(refusal, Refusal)
    assert (refusal.field, str(refusal.message)) == (
        "transaction",
        "Only a successful transaction can be refunded (status PENDING).",
    )
    conflict = refusal.conflict()
    assert isinstance(conflict, StateConflict)
    assert conflict.message_dict == {"transaction": [str(refusal.message)]}
    assert unpaid.capture_refusal().field == "transaction"
    assert RecurringSeries(cancel_state=RecurringSeries.CANCEL_DONE).cancel_refusal().field == "series"
    assert RecurringSeries().cancel_refusal() is None


# --- a misconfiguration, on each surface ----------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_admin_tells_staff_a_misconfiguration_as_one(admin_client, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": ""}
    paid = Transaction.objects.create(
        community_id=settings.PAYCOLLECT["COMMUNITY_ID"],
        uuid="0b0b0b0b-1111-4222-8333-000000000002",
        status=Transaction.SUCCESSFUL,
        total_amount=Decimal("10.00"),
        currency="EGP",
    )
    answer = admin_client.post(
        reverse("admin:paycollect_transaction_changelist"),
        {"action": "capture", "_selected_action": [paid.pk]},
    )
    assert answer.status_code == 302
    told = [str(m) for m in get_messages(answer.wsgi_request)]
    assert told == [
        f"Capture: 1 failed. {paid}: The payments configuration is wrong: "
        "settings.PAYCOLLECT['API_KEY'] is required (see manage.py check)"
    ]
    paid.refresh_from_db()
    assert paid.capture_state == Transaction.CAPTURE_NONE  # the claim was rolled back: it may be asked again
    assert not ApiCall.objects.exists()
