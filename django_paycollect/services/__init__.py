"""The service layer: the only code that calls the client, records envelopes, changes state and sends signals.

Views, admin actions, Celery tasks and management commands call these functions and nothing
else. The rules they keep:

* every call of the client is recorded as an :class:`~django_paycollect.models.ApiCall`, whatever
  its outcome, secrets never stored and PII masked;
* state changes happen under a row lock (``select_for_update``), through a status machine that
  only moves forward, and signals are sent once per real change, after the commit;
* state-changing calls (pay, direct order, capture, refund, cancel recurring, create community)
  are never resent: an ambiguous failure is recorded as "outcome unknown" and reconciliation
  fetches the truth. They run through one helper (:func:`guarded_write`) and refuse to run inside
  ``transaction.atomic``, where a rollback after the call would forget what the service did;
* one error contract for every function (:mod:`django_paycollect.exceptions`): it returns, or
  raises ``PaymentRefused``, ``NotFound``, ``ServiceUnavailable`` or
  ``PayCollectConfigurationError`` (:func:`contract_error` maps the client's errors).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Generic, TypeVar, overload

from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import NON_FIELD_ERRORS
from django.db import IntegrityError, router, transaction
from django.db.models import Model, Q
from django.utils import timezone
from django.utils.translation import gettext
from rest_framework import serializers as drf_serializers

from .. import signals
from ..client import (
    OPERATIONS,
    AuthenticationError,
    ConnectError,
    Envelope,
    NotFoundError,
    OutcomeUnknownError,
    PayCollectClient,
    PayCollectError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
    field_errors_from,
    to_piasters,
)
from ..client import Transaction as FetchedTransaction
from ..client.money import CENT
from ..client.types import (
    DashboardStatistics,
    DirectOrderCreated,
    OperationMessage,
    PaymentStarted,
    PromocodeValidated,
)
from ..conf import paycollect_settings
from ..crypto import DecryptionError
from ..exceptions import (
    NotFound,
    PayCollectConfigurationError,
    PaymentRefused,
    ServiceLayerError,
    ServiceUnavailable,
    ServiceUsageError,
    StateConflict,
)
from ..ids import canonical_uuid
from ..models import (
    ApiCall,
    Community,
    DirectOrder,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
    TransactionStatusChange,
    json_safe,
)
from ..serializers import DirectOrderSerializer, RefundSerializer, StartPaymentSerializer
from ..validators import max_amount

logger = logging.getLogger("django_paycollect.services")

T = TypeVar("T")
R = TypeVar("R")
C = TypeVar("C")

#: Celery task id of the task calling the service layer, stored on each ApiCall (set by tasks).
current_task_id: contextvars.ContextVar[str] = contextvars.ContextVar("paycollect_task_id", default="")


# --- configuration and clients ----------------------------------------------------------


@dataclass(frozen=True)
class CommunityConfig:
    """Credentials of one community: from a Community row, or from PAYCOLLECT for the default one."""

    community_id: str
    api_key: str
    basic_credentials: str
    variable_amount_id: int | None

    def __repr__(self) -> str:  # never show the secrets
        return f"CommunityConfig({self.community_id!r})"


def community_config(community_id: str | None = None) -> CommunityConfig:
    default_id = paycollect_settings.COMMUNITY_ID
    wanted = community_id or default_id
    if not wanted:
        raise PayCollectConfigurationError("settings.PAYCOLLECT['COMMUNITY_ID'] is required")
    row = Community.objects.filter(community_id=wanted).first()
    if row is not None and row.api_key_encrypted:
        try:
            return CommunityConfig(wanted, row.api_key, row.basic_credentials, row.variable_amount_id)
        except DecryptionError:
            raise PayCollectConfigurationError(
                gettext("The stored API key cannot be decrypted (see system check paycollect.E005).")
            ) from None
    if wanted == default_id:
        basic = paycollect_settings.BASIC_CREDENTIALS or ""
        if isinstance(basic, (tuple, list)):
            basic = ":".join(basic)
        return CommunityConfig(
            wanted,
            paycollect_settings.require("API_KEY"),
            basic,
            paycollect_settings.VARIABLE_AMOUNT_ID or (row.variable_amount_id if row else None),
        )
    raise PayCollectConfigurationError(
        f"community {wanted} has no Community row with an API key and is not PAYCOLLECT['COMMUNITY_ID']"
    )


_clients = threading.local()


def get_client(
    config: CommunityConfig | None,
    *,
    timeout: tuple[float, float] | None = None,
    max_network_retries: int | None = None,
) -> PayCollectClient:
    """A client for the community, one per thread and configuration so connections are pooled.

    Without a community (``None``: creating a community needs no key), a client without credentials.
    """
    timeout = tuple(timeout or paycollect_settings.TIMEOUT)
    retries = paycollect_settings.MAX_NETWORK_RETRIES if max_network_retries is None else max_network_retries
    api_key = config.api_key if config else ""
    basic_credentials = config.basic_credentials if config else ""
    fingerprint = hashlib.sha256(
        "\x00".join(
            map(
                str,
                (
                    paycollect_settings.require("BASE_URL"),
                    api_key,
                    basic_credentials,
                    timeout,
                    retries,
                    paycollect_settings.PROMOCODE_METHOD,
                ),
            )
        ).encode()
    ).hexdigest()
    cache: dict[str, PayCollectClient] = getattr(_clients, "cache", None) or {}
    _clients.cache = cache
    client = cache.get(fingerprint)
    if client is None and len(cache) >= 32:
        # Settings changed many times (tests, key rotation): drop the old pools.
        for stale in cache.values():
            stale.close()
        cache.clear()
    if client is None:
        client = PayCollectClient(
            paycollect_settings.BASE_URL,
            api_key=api_key or None,
            basic_credentials=basic_credentials or None,
            timeout=timeout,
            max_network_retries=retries,
            promocode_method=paycollect_settings.PROMOCODE_METHOD,
        )
        cache[fingerprint] = client
    return client


# --- recording API calls ------------------------------------------------------------------

_PII_KEYS = {
    "name": "name",  # billing_data.name only (see _mask_body)
    "email": "email",
    "phone_number": "phone",
    "customer_name": "name",
    "customer_email": "email",
    "customer_mobile": "phone",
    "cc_email": "email",
    "phone": "phone",
    "address": "text",
}


def mask(value: Any, kind: str) -> Any:
    """``Mona Ali`` -> ``M*** A***``; ``mona@example.com`` -> ``m***@example.com``; phones keep 4 digits."""
    if not isinstance(value, str) or not value:
        return value
    if kind == "email" and "@" in value:
        local, _, domain = value.partition("@")
        return f"{local[:1]}***@{domain}"
    if kind == "phone":
        return f"{value[:3]}***{value[-4:]}" if len(value) > 8 else "***"
    if kind == "name":
        return " ".join(f"{part[:1]}***" for part in value.split())
    return "***"


def _mask_body(body: Any, *, inside_billing: bool = False) -> Any:
    if isinstance(body, Mapping):
        out = {}
        for key, value in body.items():
            kind = _PII_KEYS.get(key)
            if key == "name" and not inside_billing:
                kind = None  # an order's or a community's name is not personal data
            if key == "billing_data":
                out[key] = _mask_body(value, inside_billing=True)
            elif kind:
                out[key] = mask(value, kind)
            else:
                out[key] = _mask_body(value)
        return out
    if isinstance(body, list):
        return [_mask_body(item) for item in body]
    return body


def _without(value: Any, secrets: tuple[str, ...]) -> Any:
    """Remove secret values wherever they appear, in case the service echoes one back."""
    if isinstance(value, str):
        for secret in secrets:
            if secret and secret in value:
                value = value.replace(secret, "***")
        return value
    if isinstance(value, Mapping):
        return {k: _without(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_without(v, secrets) for v in value]
    return value


def _secrets(config: CommunityConfig | None) -> tuple[str, ...]:
    values = [config.api_key, config.basic_credentials] if config else []
    values += [str(t) for t in paycollect_settings.CALLBACK_TOKENS or []]
    echoed = paycollect_settings.CALLBACK_SECRET or []
    values += [echoed] if isinstance(echoed, str) else [str(v) for v in echoed]
    return tuple(v for v in values if v)


def _record(
    operation: str,
    config: CommunityConfig | None,
    *,
    envelope: Envelope[Any] | None = None,
    error: PayCollectError | None = None,
    links: Mapping[str, Model | None] | None = None,
) -> ApiCall:
    call = envelope.call if envelope is not None else (error.call if error is not None else None)
    op = OPERATIONS[operation]
    secrets = _secrets(config)
    body: Any = None
    if call is not None and paycollect_settings.STORE_REQUEST_BODIES:
        body = call.request_body
        if paycollect_settings.REDACT_PII:
            body = _mask_body(body)
        body = _without(json_safe(body), secrets)
    answer = envelope if envelope is not None else (error.envelope if error is not None else None)
    errors: Any = answer.errors if answer is not None else []
    if isinstance(error, ValidationError) and not error.sent:
        errors = [error.field_errors]
    row = ApiCall(
        operation=operation,
        community_id=config.community_id if config else "",
        method=call.method if call else op.method,
        path=(call.path if call else op.path)[:500],
        request_body=body,
        # Whether it may have reached the service: a ConnectError never left this machine.
        sent=call is not None and not isinstance(error, ConnectError),
        http_status=call.http_status if call else None,
        code=answer.code if answer is not None else None,
        message=_without(answer.message, secrets) if answer is not None else "",
        errors=_without(json_safe(errors), secrets),
        data=_without(json_safe(answer.data), secrets) if answer is not None else None,
        count=answer.count if answer is not None else None,
        next=answer.next or "" if answer is not None else "",
        previous=answer.previous or "" if answer is not None else "",
        error_class=type(error).__name__ if error is not None else "",
        error_message=_without(str(error), secrets) if error is not None else "",
        body_excerpt=error.body_excerpt if error is not None else "",
        outcome_unknown=bool(error is not None and error.outcome_unknown),
        duration_ms=round(call.duration * 1000) if call else None,
        attempts=call.attempts if call else 0,
        task_id=current_task_id.get(),
        **{name: obj for name, obj in (links or {}).items()},
    )
    row.save()
    return row


@dataclass(frozen=True)
class Sent(Generic[T]):
    """What one call of the client came to: its envelope or the client's error, and its ApiCall row."""

    envelope: Envelope[T] | None
    error: PayCollectError | None
    call: ApiCall

    @property
    def unknown(self) -> bool:
        """Sent, and no usable answer came back: a state-changing call may have taken effect."""
        return self.error is not None and self.error.outcome_unknown

    @property
    def error_text(self) -> str:
        return str(self.error)[:2000] if self.error is not None else ""


def _invoke(
    operation: str,
    config: CommunityConfig | None,
    call: Callable[[], Envelope[T]],
    *,
    links: Mapping[str, Model | None] | None = None,
) -> Sent[T]:
    """Call the client once; record the ApiCall whatever happens; return the envelope or the error."""
    try:
        envelope = call()
    except PayCollectError as exc:
        return Sent(None, exc, _record(operation, config, error=exc, links=links))
    return Sent(envelope, None, _record(operation, config, envelope=envelope, links=links))


#: Client errors that say "not now": the request never left, or a read got no usable answer.
_UNAVAILABLE = (ConnectError, OutcomeUnknownError, ServerError, RateLimitError, UnexpectedResponseError)


def contract_error(error: PayCollectError, *, record: Any = None) -> ServiceLayerError:
    """The service layer's error for a client error (see :mod:`django_paycollect.exceptions`).

    One table for every operation: a request that never left, or a read without a usable answer, is
    :class:`ServiceUnavailable`; the service's refusal (400, a failure envelope) is :class:`PaymentRefused`
    naming the fields, a 404 :class:`NotFound`; credentials the service refuses, or a client missing
    them, are :class:`PayCollectConfigurationError`. ``record`` is the row the operation left. Raise it
    ``from error``, so the client's error stays readable as ``__cause__``.
    """
    if isinstance(error, _UNAVAILABLE):
        retry_after = error.retry_after if isinstance(error, RateLimitError) else None
        return ServiceUnavailable(str(error), retry_after=retry_after, record=record)
    if isinstance(error, ValidationError) and error.field_errors:
        return PaymentRefused(error.field_errors, record=record)
    if isinstance(error, NotFoundError):
        return NotFound({NON_FIELD_ERRORS: [str(error)]}, record=record)
    # The service refused our credentials, or the client has none for this operation (nothing sent).
    unconfigured = error.call is None and not isinstance(error, ValidationError)
    if isinstance(error, AuthenticationError) or unconfigured:
        refused = PayCollectConfigurationError(str(error))
        refused.record = record
        return refused
    # Always a dict, so callers can read ``message_dict``; errors of no field go under "__all__".
    return PaymentRefused({NON_FIELD_ERRORS: [str(error)]}, record=record)


def _read(
    operation: str,
    config: CommunityConfig,
    call: Callable[[], Envelope[T]],
    *,
    links: Mapping[str, Model | None] | None = None,
) -> tuple[Envelope[T], ApiCall]:
    """A read: call once (the client retries reads itself), record it, raise the contract's error."""
    sent = _invoke(operation, config, call, links=links)
    if sent.error is not None:
        raise contract_error(sent.error) from sent.error
    assert sent.envelope is not None
    return sent.envelope, sent.call


def guarded_write(
    operation: str,
    *,
    config: Callable[[C], CommunityConfig | None],
    claim: Callable[[], C],
    send: Callable[[PayCollectClient, C], Envelope[T]],
    links: Callable[[C], Mapping[str, Model | None]],
    record: Callable[[C, Sent[T]], R],
) -> R:
    """The one shape of every state-changing operation (pay, direct order, capture, refund, cancel
    recurring, create community), so that none sends twice or forgets what it sent:

    1. ``claim()``, in a database transaction committed before anything is sent: lock the row, check the
       operation may start (raising :class:`PaymentRefused`) and mark it pending, or return the row just
       created. A second caller is then refused under the lock instead of sending again.
       ``config(claimed)``, the community's credentials, is read in the same transaction: when they are
       missing, the claim is rolled back rather than left pending.
    2. ``send(client, claimed)``: the request, once, with no lock held and no transaction open, recorded
       as an ApiCall whatever happens (``links(claimed)`` are its foreign keys).
    3. ``record(claimed, sent)``, in another transaction: lock the row again (:func:`locked`) and record
       what the call came to, queueing the signals for after the commit. Returns the operation's row.

    Then the contract: succeeded, or sent without a usable answer (outcome unknown), the row is
    returned, its state saying which; refused by the service, or never sent, the contract's error is
    raised (:func:`contract_error`) with the row as ``record``.
    """
    _require_autocommit(operation)
    with transaction.atomic():
        claimed = claim()
        community = config(claimed)
    client = get_client(community)
    sent = _invoke(operation, community, lambda: send(client, claimed), links=links(claimed))
    with transaction.atomic():
        row = record(claimed, sent)
    if sent.error is not None and not sent.unknown:
        raise contract_error(sent.error, record=row) from sent.error
    return row


#: Operations that change state at the service: never sent twice.
STATE_CHANGING = tuple(name for name, op in OPERATIONS.items() if op.changes_state)


def sent_by_task(task_id: str) -> ApiCall | None:
    """The first state-changing call a Celery task (by its id) made that may have taken effect at the
    service: it succeeded, or its outcome is unknown.

    A broker may deliver one message twice (a worker lost, a visibility timeout): the second delivery
    asks this first, and returns what that call left instead of sending again. A call the service
    refused, or that never left this machine, did nothing there and does not count.
    """
    if not task_id:
        return None
    calls = ApiCall.objects.filter(task_id=task_id, operation__in=STATE_CHANGING)
    # Succeeded or of unknown outcome; a refusal, or a request that never left, did nothing there.
    return calls.filter(Q(error_class="") | Q(outcome_unknown=True)).order_by("pk").first()


def _validated(
    serializer_class: type[drf_serializers.Serializer[Any]], data: Mapping[str, Any]
) -> dict[str, Any]:
    serializer = serializer_class(data=dict(data))
    if not serializer.is_valid():
        raise PaymentRefused(field_errors_from([serializer.errors]))
    return dict(serializer.validated_data)


@overload
def money_argument(value: Any, field: str, *, maximum: bool = ...) -> Decimal: ...
@overload
def money_argument(value: Any, field: str, *, required: bool, maximum: bool = ...) -> Decimal | None: ...
def money_argument(value: Any, field: str, *, required: bool = True, maximum: bool = True) -> Decimal | None:
    """The one check of every amount given to the service layer: an exact Decimal of at most two decimals,
    and (``maximum``) not above ``PAYCOLLECT["MAX_AMOUNT"]``.

    Accepts a ``Decimal``, an ``int`` or exact decimal text (``"12.50"``, what tasks receive) and
    returns it as a two-decimal ``Decimal``. Refuses, with a :class:`PaymentRefused` naming ``field``
    and saying what is wrong, before any row is written or any request sent: floats (``10.5`` is a
    binary approximation, and ``0.1 + 0.2`` is not 0.30), booleans, NaN, infinities, more than two
    decimals (never rounded away), anything that is not a number, and amounts above the maximum. None
    is refused when ``required``.
    """
    if value is None:
        if required:
            raise PaymentRefused({field: ["This field is required."]})
        return None
    if isinstance(value, float):
        problem = (
            f"Pass amounts as Decimal (e.g. Decimal('12.50')) or decimal text, not the float {value!r}: "
            "a float cannot hold most amounts exactly."
        )
    elif isinstance(value, bool) or not isinstance(value, (Decimal, int, str)):
        problem = f"Pass amounts as Decimal (e.g. Decimal('12.50')), not {type(value).__name__}."
    else:
        try:
            amount = (
                value
                if isinstance(value, Decimal)
                else Decimal(value.strip() if isinstance(value, str) else value)
            )
        except InvalidOperation:
            amount = None
        if amount is None:
            problem = f"{str(value)[:40]!r} is not a decimal amount."
        elif amount.is_nan():
            problem = "NaN (not a number) is not an amount."
        elif amount.is_infinite():
            problem = "An infinite value is not an amount."
        else:
            try:
                cents = amount.quantize(CENT)
            except InvalidOperation:
                cents = None
            if cents is None:
                problem = f"{amount} is too large to be an amount."
            elif cents != amount:
                problem = f"{amount} has more than two decimals; amounts are exact to 0.01, never rounded."
            elif maximum and cents > (limit := max_amount()):
                problem = gettext("Must be at most %(limit)s (PAYCOLLECT['MAX_AMOUNT']), not %(value)s.") % {
                    "limit": limit,
                    "value": cents,
                }
            else:
                return cents
    raise PaymentRefused({field: [problem]})


def _user(user: Any) -> Any:
    """The user to record, or None for anonymous users and callers without one (tasks, commands)."""
    return user if getattr(user, "pk", None) else None


def _require_autocommit(operation: str) -> None:
    if transaction.get_connection(router.db_for_write(Transaction)).in_atomic_block:
        raise ServiceUsageError(
            f"{operation} changes money at the service and must not run inside transaction.atomic "
            "(a rollback would forget what the service did). Call it from a view marked "
            "transaction.non_atomic_requests, or from its Celery task."
        )


def _after_commit(signal: Any, *, sender: type[Model] = Transaction, **kwargs: Any) -> None:
    def send() -> None:
        for receiver, result in signal.send_robust(sender=sender, **kwargs):
            if isinstance(result, Exception):
                logger.error("receiver %r of a paycollect signal failed", receiver, exc_info=result)

    transaction.on_commit(send)


# --- the status machine -------------------------------------------------------------------

_RANK = {
    Transaction.NEW: 0,
    Transaction.PENDING: 1,
    Transaction.FAILED: 2,
    Transaction.REJECTED: 2,
    Transaction.ABANDONED: 2,
    Transaction.SUCCESSFUL: 3,
}


def apply_status(txn: Transaction, reported: str, *, source: str) -> bool:
    """Move ``txn`` (locked by the caller) to the status the service reported, if that is forward.

    An unknown status is kept in ``service_status`` and flagged, never applied and never dropped.
    SUCCESSFUL is final: no late or forged message moves it back. FAILED may still become
    SUCCESSFUL, so a late payment after a failed attempt is recorded, not lost.
    Returns True when the status changed; the signals follow after the commit.
    """
    txn.service_status = reported
    txn.status_unrecognised = reported not in Transaction.KNOWN_SERVICE_STATUSES
    if txn.status_unrecognised:
        logger.warning("transaction %s: unrecognised status %r kept, not applied", txn.uuid, reported)
        return False
    before = txn.status
    if _RANK[reported] <= _RANK[before]:
        return False  # same or backward: a late, duplicated or forged message
    txn.status = reported
    TransactionStatusChange.objects.create(
        transaction=txn, from_status=before, to_status=reported, service_status=reported, source=source
    )
    _after_commit(
        signals.transaction_status_changed,
        transaction=txn,
        from_status=before,
        to_status=reported,
        source=source,
    )
    if reported == Transaction.SUCCESSFUL:
        txn.succeeded_at = timezone.now()  # the day the money came in, for the dashboard's figures
        _after_commit(signals.payment_succeeded, transaction=txn)
        if txn.series_id and txn.parent_uuid and txn.parent_uuid != txn.uuid:
            _after_commit(signals.recurring_charge_succeeded, transaction=txn, series=txn.series)
    elif reported == Transaction.FAILED:
        _after_commit(signals.payment_failed, transaction=txn)
    return True


def _set_local_status(txn: Transaction, status: str, *, source: str) -> None:
    before = txn.status
    if before == status:
        return
    txn.status = status
    TransactionStatusChange.objects.create(
        transaction=txn, from_status=before, to_status=status, source=source
    )
    _after_commit(
        signals.transaction_status_changed,
        transaction=txn,
        from_status=before,
        to_status=status,
        source=source,
    )


M = TypeVar("M", bound=Model)


def savepoint_if_atomic(model: type[Model]) -> AbstractContextManager[Any]:
    """For an INSERT that may meet a unique violation: outside atomic it commits alone and the violation
    harms nothing; inside an outer atomic block a savepoint keeps that block usable after it."""
    connection = transaction.get_connection(router.db_for_write(model))
    return transaction.atomic() if connection.in_atomic_block else nullcontext()


def locked(model: type[M], pk: int) -> M:
    """The row, locked until the end of the caller's transaction (``select_for_update``)."""
    return model._default_manager.select_for_update().get(pk=pk)


@contextmanager
def _locked(model: type[M], pk: int) -> Iterator[M]:
    with transaction.atomic():
        yield locked(model, pk)


# --- operations -----------------------------------------------------------------------------


def prepare_amount(
    amount: Decimal,
    *,
    currency: str | None = None,
    payment_method: str | None = None,
    community_id: str | None = None,
) -> Decimal:
    """The total with the service's fees for ``amount`` (what Pay must charge when fees are in the bill)."""
    amount = money_argument(amount, "amount")
    config = community_config(community_id)
    client = get_client(config)
    envelope, _ = _read(
        "prepare_amount",
        config,
        lambda: client.prepare_amount(
            community_id=config.community_id,
            amount=amount,
            currency=currency,
            selected_payment_method=payment_method,
        ),
    )
    total = envelope.result.total_amount
    if total is None:
        raise PaymentRefused({"total_amount": ["The service's answer has no total_amount."]})
    return total


def start_payment(
    *,
    amount: Decimal,
    billing_data: Mapping[str, str],
    merchant_reference: str = "",
    merchant_object: Model | None = None,
    currency: str | None = None,
    pay_using: str | None = None,
    community_id: str | None = None,
    variable_amount_id: int | None = None,
    membership_id: str | None = None,
    recurring: Mapping[str, Any] | None = None,
    promocode_id: int | None = None,
    custom_fields: list[Mapping[str, Any]] | None = None,
    language: str | None = None,
    owner: Any = None,
) -> Transaction:
    """Start a payment and return its Transaction, with ``iframe_url`` (or a kiosk ``bill_reference``).

    When ``merchant_reference`` already has an open (NEW or PENDING) transaction, that one is
    returned and nothing is charged again. When fees are added in the bill, prepare amount is
    called first and ``amount`` is the cost without fees. ``recurring`` is
    ``{"expiry_date": date, "minimum_days_between_payments": n}``. ``owner`` is the user the payment
    belongs to (the REST API shows a user only their own payments); an existing open transaction is
    returned whoever owns it, so the caller compares.
    Raises :class:`PaymentRefused` (naming the fields) when the input or the service refuses it;
    after an ambiguous failure the transaction is returned with ``outcome_unknown`` set.
    """
    _require_autocommit("start_payment")
    data = _validated(
        StartPaymentSerializer,
        {
            "amount": money_argument(amount, "amount"),
            "currency": currency or paycollect_settings.DEFAULT_CURRENCY,
            "pay_using": pay_using or paycollect_settings.DEFAULT_PAY_USING,
            "billing_data": dict(billing_data),
            "merchant_reference": merchant_reference,
            "community_id": community_id,
            "variable_amount_id": variable_amount_id,
            "membership_id": membership_id,
            "recurring": dict(recurring) if recurring else None,
            "promocode_id": promocode_id,
            "custom_fields": [dict(f) for f in custom_fields or []],
            "language": language,
        },
    )
    config = community_config(data["community_id"])
    amount_id = data["variable_amount_id"] or config.variable_amount_id
    if not amount_id:
        raise PaymentRefused({"variable_amount_id": ["No variable_amount_id given or configured."]})
    reference = data["merchant_reference"]
    if reference:
        existing = Transaction.objects.open().filter(
            community_id=config.community_id, merchant_reference=reference
        )
        found = existing.first()
        if found is not None:
            return found

    original = data["amount"]
    charged = original
    if paycollect_settings.FEES_IN_BILL:
        charged = prepare_amount(
            original,
            currency=data["currency"],
            payment_method=data["pay_using"],
            community_id=config.community_id,
        )
    billing = data["billing_data"]
    try:
        with transaction.atomic():
            txn = Transaction.objects.create(
                community_id=config.community_id,
                total_amount=charged,
                original_amount=original,
                currency=data["currency"],
                total_amount_piasters=to_piasters(charged),
                payment_for="API_PAYMENT",
                member_id=data["membership_id"] or "",
                custom_fields=json_safe(data["custom_fields"]),
                variable_amount_id=amount_id,
                pay_using=data["pay_using"],
                customer_name=billing["name"],
                customer_email=billing["email"],
                customer_phone=billing["phone_number"],
                merchant_reference=reference,
                promocode_id=data["promocode_id"],
                content_type=ContentType.objects.get_for_model(merchant_object) if merchant_object else None,
                object_id=str(merchant_object.pk) if merchant_object else "",
                owner=_user(owner),
            )
    except IntegrityError:
        # Another request started the same reference a moment ago: return that one.
        return Transaction.objects.open().get(community_id=config.community_id, merchant_reference=reference)

    terms = data["recurring"]

    def record(txn: Transaction, sent: Sent[PaymentStarted]) -> Transaction:
        txn = locked(Transaction, txn.pk)
        if sent.envelope is not None:
            started = sent.envelope.result
            txn.uuid = canonical_uuid(started.transaction_uuid) if started.transaction_uuid else None
            txn.service_id = started.transaction_id
            txn.iframe_url = started.iframe_url or ""
            txn.bill_reference = started.bill_reference or ""
            txn.kiosk_message = started.message or ""
            apply_status(txn, started.transaction_status or Transaction.PENDING, source="pay")
        else:
            txn.last_error = sent.error_text
            if sent.unknown:
                txn.outcome_unknown = True
            else:
                _set_local_status(txn, Transaction.REJECTED, source="pay")
        txn.save()
        return txn

    return guarded_write(
        "pay",
        config=lambda _: config,
        claim=lambda: txn,  # created above: the one open transaction of its reference
        send=lambda client, txn: client.pay(
            community_id=config.community_id,
            amount=charged,
            original_amount=original,
            currency=data["currency"],
            variable_amount_id=amount_id,
            pay_using=data["pay_using"],
            billing_data=billing,
            membership_id=data["membership_id"],
            is_recurring=True if terms else None,
            expiry_date=terms["expiry_date"] if terms else None,
            minimum_days_between_payments=terms["minimum_days_between_payments"] if terms else None,
            promocode_id=data["promocode_id"],
            custom_fields=data["custom_fields"] or None,
            language=data["language"],
        ),
        links=lambda txn: {"transaction": txn},
        record=record,
    )


def sync_transaction(
    txn: Transaction | None = None,
    *,
    uuid: str | None = None,
    community_id: str | None = None,
    source: str = "sync",
    timeout: tuple[float, float] | None = None,
    max_network_retries: int | None = None,
) -> Transaction:
    """Fetch the transaction from the service and apply what it says (never what a message claimed).

    Given only a ``uuid`` we do not store yet (a renewal charge, a payment started elsewhere), the
    transaction is created from the fetched object and linked to its recurring series. When the
    fetched community, amount or currency differs from what we stored, the transaction is flagged
    and ``amount_mismatch_detected`` is sent instead of applying the status.
    Raises :class:`ServiceUnavailable` when the service cannot be read (the caller decides to retry),
    :class:`NotFound` when it does not know the uuid.
    ``timeout`` and ``max_network_retries`` override the settings (a waiting customer: short, none).
    """
    uuid = canonical_uuid(uuid) if uuid else uuid
    if txn is None:
        if not uuid:
            raise ValueError("sync_transaction needs a transaction or a uuid")
        txn = Transaction.objects.filter(uuid=uuid).first()
    return _sync(
        txn,
        uuid,
        community_id=community_id,
        source=source,
        timeout=timeout,
        max_network_retries=max_network_retries,
    )


def _sync(
    txn: Transaction | None,
    uuid: str | None,
    *,
    community_id: str | None,
    source: str,
    timeout: tuple[float, float] | None = None,
    max_network_retries: int | None = None,
) -> Transaction:
    """:func:`sync_transaction` once the stored transaction (or its absence) is known."""
    if txn is not None and not txn.uuid:
        raise ServiceUsageError("this transaction was never accepted by the service: nothing to fetch")
    wanted_uuid = txn.uuid if txn is not None else uuid
    assert wanted_uuid
    config = community_config(txn.community_id if txn is not None else community_id)
    client = get_client(config, timeout=timeout, max_network_retries=max_network_retries)
    sent_at = timezone.now()
    envelope, api_call = _read(
        "get_transaction",
        config,
        lambda: client.get_transaction(community_id=config.community_id, transaction_uuid=wanted_uuid),
        links={"transaction": txn},
    )
    fetched = envelope.result

    with transaction.atomic():
        if txn is None:
            txn = _create_from_fetched(config.community_id, wanted_uuid, fetched)
            api_call.transaction = txn
            api_call.save(update_fields=["transaction"])
        txn = Transaction.objects.select_for_update().get(pk=txn.pk)
        txn.raw = json_safe(envelope.data)
        txn.last_synced_at = timezone.now()
        # What the service said is at least as new as this: it answers every callback queued before.
        txn.fetch_sent_at = max(sent_at, txn.fetch_sent_at or sent_at)
        txn.service_id = fetched.id or txn.service_id
        _link_series(txn, fetched)
        differences = _differences(txn, fetched)
        if differences:
            if not txn.amount_mismatch:
                txn.amount_mismatch = True
                _after_commit(signals.amount_mismatch_detected, transaction=txn, differences=differences)
            txn.service_status = fetched.status or ""
        else:
            if fetched.status:
                apply_status(txn, fetched.status, source=source)
            txn.outcome_unknown = False
        txn.save()
    return txn


def _differences(txn: Transaction, fetched: FetchedTransaction) -> dict[str, tuple[Any, Any]]:
    """What the service says that contradicts what we asked for (the community is in the fetch's path)."""
    differences: dict[str, tuple[Any, Any]] = {}
    amount = fetched.total_amount
    # A promocode lowers the amount by a value only the service knows, so only a higher amount is wrong.
    expected_exactly = txn.promocode_id is None
    if amount is not None and (
        amount > txn.total_amount or (expected_exactly and amount != txn.total_amount)
    ):
        differences["total_amount"] = (str(txn.total_amount), str(amount))
    if fetched.total_amount_currency and fetched.total_amount_currency != txn.currency:
        differences["currency"] = (txn.currency, fetched.total_amount_currency)
    return differences


def _create_from_fetched(community_id: str, uuid: str, fetched: FetchedTransaction) -> Transaction:
    amount = fetched.total_amount if fetched.total_amount is not None else Decimal("0.00")
    txn, _ = Transaction.objects.get_or_create(
        uuid=uuid,
        defaults={
            "community_id": community_id,
            "service_id": fetched.id,
            "total_amount": amount,
            "currency": fetched.total_amount_currency or paycollect_settings.DEFAULT_CURRENCY,
            "total_amount_piasters": fetched.total_amount_piasters,
            "payment_for": fetched.payment_for or "",
            "member_id": fetched.member_id or "",
            "custom_fields": json_safe(fetched.custom_fields_json) or [],
            "status": Transaction.NEW,
        },
    )
    return txn


def _link_series(txn: Transaction, fetched: FetchedTransaction) -> None:
    info = fetched.recurring
    if info is None or not info.parent_transaction:
        return
    parent_uuid = canonical_uuid(info.parent_transaction)
    series, _ = RecurringSeries.objects.select_for_update().get_or_create(
        parent_uuid=parent_uuid, defaults={"community_id": txn.community_id}
    )
    if parent_uuid == txn.uuid:
        series.parent_transaction = txn
    series.expiry_date = info.expiry_date or series.expiry_date
    series.minimum_days_between_payments = (
        info.minimum_days_between_payments or series.minimum_days_between_payments
    )
    if info.recurring_count is not None:
        series.recurring_count = max(series.recurring_count, info.recurring_count)
    if info.active is not None and series.cancel_state != RecurringSeries.CANCEL_DONE:
        series.active = info.active
    series.raw = json_safe(dict(info.extra) | {"type": info.type})
    series.last_synced_at = timezone.now()
    series.save()
    txn.series = series
    txn.parent_uuid = parent_uuid
    txn.transaction_order = info.transaction_order


def capture(txn: Transaction, *, user: Any = None) -> Transaction:
    """Capture a successful transaction. Recorded as pending before the call; never resent.

    Returns the transaction, its ``capture_state`` captured or unknown; refused (by our checks or the
    service), :class:`PaymentRefused`; never sent, :class:`ServiceUnavailable`.
    """
    _require_autocommit("capture")

    def claim() -> Transaction:
        found = locked(Transaction, txn.pk)
        if found.status != Transaction.SUCCESSFUL:
            raise StateConflict(
                {"transaction": [f"Only a successful transaction can be captured ({found.status})."]}
            )
        if found.capture_state in (
            Transaction.CAPTURE_DONE,
            Transaction.CAPTURE_PENDING,
            Transaction.CAPTURE_UNKNOWN,
        ):
            raise StateConflict({"transaction": [f"Capture already {found.get_capture_state_display()}."]})
        found.capture_state = Transaction.CAPTURE_PENDING
        found.save(update_fields=["capture_state", "updated_at"])
        return found

    def record(claimed: Transaction, sent: Sent[OperationMessage]) -> Transaction:
        done = locked(Transaction, claimed.pk)
        if sent.error is None:
            done.capture_state = Transaction.CAPTURE_DONE
            done.captured_amount = done.total_amount
            done.captured_at = timezone.now()
            done.captured_by = _user(user)
            _after_commit(signals.capture_succeeded, transaction=done)
        else:
            done.capture_state = Transaction.CAPTURE_UNKNOWN if sent.unknown else Transaction.CAPTURE_FAILED
            done.last_error = sent.error_text
        done.save()
        return done

    return guarded_write(
        "capture",
        config=lambda claimed: community_config(claimed.community_id),
        claim=claim,
        send=lambda client, claimed: client.capture(transaction_uuid=claimed.uuid or ""),
        links=lambda claimed: {"transaction": claimed},
        record=record,
    )


def refund(
    txn: Transaction,
    amount: Decimal | None = None,
    *,
    user: Any = None,
    expected_refundable: Decimal | None = None,
) -> Refund:
    """Refund ``amount`` (default: all that is still refundable) of a successful transaction.

    Three phases so that no race refunds more than was paid: (1) lock the transaction, check the
    amount against what is still refundable counting pending and unknown refunds, record the
    refund as pending, commit; (2) call the service; (3) lock again and record the result. An
    ambiguous failure leaves the refund "unknown" for reconciliation; it is never resent.
    ``expected_refundable`` is what the caller showed the user: when it changed meanwhile (a
    second click, another refund), the refund is refused under the lock instead of doubled.

    Returns the refund, succeeded or unknown. Refused by our checks, :class:`PaymentRefused` and no
    refund is stored; refused by the service, :class:`PaymentRefused` with the failed refund as
    ``record`` (``refund_failed`` is sent); never sent, :class:`ServiceUnavailable`, the failed refund
    as ``record``.
    """
    _require_autocommit("refund")
    expected_refundable = money_argument(
        expected_refundable, "expected_refundable", required=False, maximum=False
    )
    wanted = _validated(RefundSerializer, {"amount": money_argument(amount, "amount", required=False)})[
        "amount"
    ]

    def claim() -> Refund:
        found = locked(Transaction, txn.pk)
        if found.status != Transaction.SUCCESSFUL:
            raise StateConflict(
                {"transaction": [f"Only a successful transaction can be refunded ({found.status})."]}
            )
        refundable = found.refundable_amount
        if expected_refundable is not None and expected_refundable != refundable:
            raise StateConflict(
                {
                    "amount": [
                        f"What is still refundable changed from {expected_refundable} to {refundable} "
                        f"{found.currency} meanwhile (another refund?); nothing was sent."
                    ]
                }
            )
        if refundable <= 0:
            raise StateConflict({"amount": ["Nothing is left to refund (pending refunds count)."]})
        if wanted is not None and wanted > refundable:
            raise StateConflict({"amount": [f"At most {refundable} {found.currency} can still be refunded."]})
        return Refund.objects.create(
            transaction=found, amount=refundable if wanted is None else wanted, requested_by=_user(user)
        )

    def record(pending: Refund, sent: Sent[OperationMessage]) -> Refund:
        paid = locked(Transaction, txn.pk)  # the transaction first, as every refund path locks them
        done = locked(Refund, pending.pk)
        done.completed_at = timezone.now()
        if sent.envelope is not None:
            done.state = Refund.SUCCEEDED
            done.service_message = sent.envelope.result.message or ""
            paid.refunded_amount += done.amount
            paid.save(update_fields=["refunded_amount", "updated_at"])
            _after_commit(signals.refund_succeeded, sender=Refund, refund=done, transaction=paid)
        elif sent.unknown:
            done.state = Refund.UNKNOWN
            done.error = sent.error_text
        else:
            done.state = Refund.FAILED
            done.error = sent.error_text
            _after_commit(
                signals.refund_failed, sender=Refund, refund=done, transaction=paid, error=done.error
            )
        done.save()
        return done

    return guarded_write(
        "refund",
        config=lambda pending: community_config(pending.transaction.community_id),
        claim=claim,
        send=lambda client, pending: client.refund(
            transaction_uuid=pending.transaction.uuid or "", refund_amount=pending.amount
        ),
        links=lambda pending: {"transaction": pending.transaction, "refund": pending},
        record=record,
    )


def cancel_recurring(series: RecurringSeries, *, user: Any = None) -> RecurringSeries:
    """Stop future charges of a recurring series (past charges are unaffected). Never resent.

    Returns the series, its ``cancel_state`` cancelled or unknown; refused, :class:`PaymentRefused`; never
    sent, :class:`ServiceUnavailable` (a failed or unknown cancellation may be asked again).
    """
    _require_autocommit("cancel_recurring")

    def claim() -> RecurringSeries:
        found = locked(RecurringSeries, series.pk)
        if found.cancel_state in (RecurringSeries.CANCEL_DONE, RecurringSeries.CANCEL_PENDING):
            raise StateConflict({"series": [f"Series already {found.get_cancel_state_display()}."]})
        found.cancel_state = RecurringSeries.CANCEL_PENDING
        found.save(update_fields=["cancel_state"])
        return found

    def record(claimed: RecurringSeries, sent: Sent[OperationMessage]) -> RecurringSeries:
        done = locked(RecurringSeries, claimed.pk)
        if sent.error is None:
            done.cancel_state = RecurringSeries.CANCEL_DONE
            done.active = False
            done.cancelled_at = timezone.now()
            done.cancelled_by = _user(user)
            _after_commit(
                signals.recurring_series_cancelled, sender=RecurringSeries, series=done, user=_user(user)
            )
        else:
            done.cancel_state = (
                RecurringSeries.CANCEL_UNKNOWN if sent.unknown else RecurringSeries.CANCEL_FAILED
            )
        done.save()
        return done

    return guarded_write(
        "cancel_recurring",
        config=lambda claimed: community_config(claimed.community_id),
        claim=claim,
        send=lambda client, claimed: client.cancel_recurring(transaction_uuid=claimed.parent_uuid),
        links=lambda claimed: {"series": claimed, "transaction": claimed.parent_transaction},
        record=record,
    )


def create_direct_order(*, user: Any = None, **fields: Any) -> DirectOrder:
    """Create a direct order on the service; returns it with ``payment_link`` (or flagged unknown).

    ``fields`` are the spec's Direct order fields (see ``DirectOrderSerializer``); ``recurring`` is
    ``{"expiry_date": ..., "minimum_days_between_payments": ...}``. Returns the order, CREATED or
    UNKNOWN; refused, :class:`PaymentRefused` (the REJECTED order as ``record`` when the service refused
    it); never sent, :class:`ServiceUnavailable`.
    """
    _require_autocommit("create_direct_order")
    for name in ("amount", "discount_amount", "vat_percentage"):
        if name in fields:
            fields[name] = money_argument(
                fields[name], name, required=name == "amount", maximum=name != "vat_percentage"
            )
    data = _validated(DirectOrderSerializer, fields)
    config = community_config(data.pop("community_id"))
    terms = data.pop("recurring")
    order = DirectOrder.objects.create(
        community_id=config.community_id,
        name=data["name"],
        amount=data["amount"],
        currency=data["currency"],
        discount_amount=data["discount_amount"],
        discount_currency=data["currency"] if data["discount_amount"] is not None else "",
        vat_percentage=data["vat_percentage"],
        payment_methods=data["payment_methods"],
        customer_name=data["customer_name"],
        customer_email=data["customer_email"],
        customer_mobile=data["customer_mobile"],
        customer_title=data["customer_title"],
        address=data["address"],
        order_description=data["order_description"],
        custom_fields=json_safe(data["custom_fields"]),
        tags=data["tags"],
        allow_recurring_payments=bool(terms),
        expiry_date=terms["expiry_date"] if terms else None,
        minimum_days_between_payments=terms["minimum_days_between_payments"] if terms else None,
        send_by_email=data["send_by_email"],
        cc_email=data["cc_email"],
        send_by_sms=data["send_by_sms"],
        redirect_url=data["redirect_url"],
        callback_url=data["callback_url"],
        paid=data["paid"],
        merchant_reference=data["merchant_reference"],
        created_by=_user(user),
    )

    def send(client: PayCollectClient, order: DirectOrder) -> Envelope[DirectOrderCreated]:
        return client.create_direct_order(
            name=order.name,
            community_id=config.community_id,
            amount=order.amount,
            currency=order.currency,
            payment_methods=order.payment_methods,
            customer_name=order.customer_name,
            customer_email=order.customer_email,
            customer_mobile=order.customer_mobile,
            discount_amount=order.discount_amount,
            allow_recurring_payments=True if terms else None,
            expiry_date=order.expiry_date,
            minimum_days_between_payments=order.minimum_days_between_payments,
            custom_fields=data["custom_fields"] or None,
            order_description=order.order_description or None,
            address=order.address or None,
            customer_title=order.customer_title or None,
            vat_percentage=order.vat_percentage,
            send_by_email=order.send_by_email or None,
            cc_email=order.cc_email or None,
            send_by_sms=order.send_by_sms or None,
            redirect_url=order.redirect_url or None,
            callback_url=order.callback_url or None,
            paid=order.paid or None,
            tags=order.tags or None,
        )

    def record(order: DirectOrder, sent: Sent[DirectOrderCreated]) -> DirectOrder:
        order = locked(DirectOrder, order.pk)
        if sent.envelope is not None:
            created = sent.envelope.result
            order.state = DirectOrder.CREATED
            order.payment_id = created.payment_id or ""
            order.payment_link = created.payment_link or ""
            order.service_message = created.message or ""
            order.raw = json_safe(sent.envelope.data)
            _after_commit(signals.direct_order_created, sender=DirectOrder, direct_order=order)
        else:
            order.state = DirectOrder.UNKNOWN if sent.unknown else DirectOrder.REJECTED
            order.service_message = sent.error_text
        order.save()
        return order

    return guarded_write(
        "create_direct_order",
        config=lambda _: config,
        claim=lambda: order,  # created above, NEW until the service answers
        send=send,
        links=lambda order: {"direct_order": order},
        record=record,
    )


def validate_promocode(
    name: str,
    *,
    amount: Decimal,
    phone_number: str,
    currency: str | None = None,
    payment_for: str = "API_PAYMENT",
    community_id: str | None = None,
    variable_amount_id: int | None = None,
) -> PromocodeValidated:
    """Check a promocode for an amount; pass ``promocode_id`` of the result to :func:`start_payment`."""
    amount = money_argument(amount, "amount")
    config = community_config(community_id)
    client = get_client(config)
    amount_id = variable_amount_id or config.variable_amount_id
    envelope, _ = _read(
        "validate_promocode",
        config,
        lambda: client.validate_promocode(
            name=name,
            community_id=config.community_id,
            phone_number=phone_number,
            amount=amount,
            currency=currency or paycollect_settings.DEFAULT_CURRENCY,
            payment_for=payment_for,
            variable_amount_id=amount_id or "",
        ),
    )
    return envelope.result


def create_community(*, logo: Any, name: str, user: Any = None, **fields: Any) -> ApiCall:
    """Create a community on the service (multipart, with its png or jpg logo). Never resent.

    The service answers with an empty ``data``: its id and keys come from its dashboard, and are
    entered into a Community row afterwards. Returns the call's ApiCall row (there is no other):
    ``outcome_unknown`` set when it was sent and no usable answer came back (reconciliation reports it
    for a person to look up). Refused, :class:`PaymentRefused`; never sent, :class:`ServiceUnavailable`.
    """
    _require_autocommit("create_community")
    return guarded_write(
        "create_community",
        config=lambda _: community_config(None) if paycollect_settings.COMMUNITY_ID else None,
        claim=lambda: None,  # nothing stored before: the ApiCall row is the record
        send=lambda client, _: client.create_community(name=name, logo=logo, **fields),
        links=lambda _: {},
        record=lambda _, sent: sent.call,
    )


def fetch_statistics(community_id: str | None = None) -> StatisticsSnapshot:
    """Read the community's dashboard statistics and keep them as a snapshot."""
    config = community_config(community_id)
    client = get_client(config)
    envelope, _ = _read(
        "dashboard_statistics", config, lambda: client.dashboard_statistics(community_id=config.community_id)
    )
    stats: DashboardStatistics = envelope.result
    return StatisticsSnapshot.objects.create(
        community_id=config.community_id,
        balance=stats.balance,
        total_settled=stats.total_settled,
        total_number_of_transactions=stats.total_number_of_transactions,
        total_collected_transactions=stats.total_collected_transactions,
        weekly_collected_transactions=stats.weekly_collected_transactions,
        raw=json_safe(envelope.data),
    )


# --- reconciliation -----------------------------------------------------------------------------

#: A call still "pending" after this long was left by a process that died; no answer will come.
STALE_IN_FLIGHT = dt.timedelta(minutes=15)


def abandon_unknown_start(txn: Transaction) -> bool:
    """A payment whose start had an unknown outcome and was never confirmed: ABANDONED.

    The service has no lookup by merchant reference, so such a payment can only be confirmed by a
    callback. Without its page URL the customer cannot have paid it; after a while it is closed so
    the reference can be paid again. Returns True when it was abandoned.
    """
    with _locked(Transaction, txn.pk) as locked:
        if locked.uuid or locked.status != Transaction.NEW or not locked.outcome_unknown:
            return False
        _set_local_status(locked, Transaction.ABANDONED, source="reconcile")
        locked.save()
    return True


def settle_unknown_cancel(series: RecurringSeries) -> RecurringSeries:
    """Learn whether a cancellation of unknown outcome took effect, from the parent's ``recurring.active``."""
    parent = series.parent_transaction or Transaction.objects.filter(uuid=series.parent_uuid).first()
    if parent is None:
        return series
    sync_transaction(parent, source="reconcile")
    with _locked(RecurringSeries, series.pk) as locked:
        # PENDING too: a process killed mid-call leaves it so (the caller decides it is old enough).
        if locked.cancel_state not in (RecurringSeries.CANCEL_UNKNOWN, RecurringSeries.CANCEL_PENDING):
            return locked
        if not locked.active:  # _link_series copied the fetched "active"
            locked.cancel_state = RecurringSeries.CANCEL_DONE
            locked.cancelled_at = locked.cancelled_at or timezone.now()
            _after_commit(
                signals.recurring_series_cancelled, sender=RecurringSeries, series=locked, user=None
            )
        else:
            locked.cancel_state = RecurringSeries.CANCEL_FAILED  # still charging: it may be cancelled again
        locked.save()
    return locked


def missed_charges(series: RecurringSeries) -> int:
    """How many charges the service executed that we never heard of (from the parent's recurring_count).

    Their uuids arrive only by callback, so they cannot be fetched; the count is for the report.
    """
    parent = series.parent_transaction or Transaction.objects.filter(uuid=series.parent_uuid).first()
    if parent is None:
        return 0
    sync_transaction(parent, source="reconcile")
    series.refresh_from_db()
    known = series.charges.filter(status=Transaction.SUCCESSFUL).count()
    return max(0, series.recurring_count - known)


def resolve_refund(refund: Refund, *, succeeded: bool, user: Any = None) -> Refund:
    """Settle a refund of unknown outcome by hand, after checking the service's dashboard.

    The spec's transaction shows no refunds, so fetching cannot tell whether it happened. A refund
    still PENDING after :data:`STALE_IN_FLIGHT` was left by a process that died mid-call and is
    settled the same way; a younger one may still be waiting for its answer.
    """
    with _locked(Transaction, refund.transaction_id) as locked:
        done = Refund.objects.select_for_update().get(pk=refund.pk)
        stale = done.state == Refund.PENDING and done.created_at < timezone.now() - STALE_IN_FLIGHT
        if done.state != Refund.UNKNOWN and not stale:
            raise PaymentRefused(
                {
                    "refund": [
                        f"Only a refund of unknown outcome or long pending is settled by hand ({done.state})."
                    ]
                }
            )
        done.completed_at = timezone.now()
        who = getattr(_user(user), "get_username", lambda: "someone")()
        done.error = f"resolved by hand by {who}"
        if succeeded:
            done.state = Refund.SUCCEEDED
            locked.refunded_amount += done.amount
            locked.save(update_fields=["refunded_amount", "updated_at"])
            _after_commit(signals.refund_succeeded, sender=Refund, refund=done, transaction=locked)
        else:
            done.state = Refund.FAILED
            _after_commit(
                signals.refund_failed, sender=Refund, refund=done, transaction=locked, error=done.error
            )
        done.save()
    return done


# The callback ledger, last: it builds on the functions above.
from .callback_ledger import (
    CALLBACK_RETRY_DELAYS as CALLBACK_RETRY_DELAYS,
)
from .callback_ledger import (
    DATABASE_UNAVAILABLE as DATABASE_UNAVAILABLE,
)
from .callback_ledger import (
    REPROCESSABLE_STATES as REPROCESSABLE_STATES,
)
from .callback_ledger import (
    SWEEP_BATCH as SWEEP_BATCH,
)
from .callback_ledger import (
    FetchDeferred as FetchDeferred,
)
from .callback_ledger import (
    StoredCallback as StoredCallback,
)
from .callback_ledger import (
    Sweep as Sweep,
)
from .callback_ledger import (
    Verification as Verification,
)
from .callback_ledger import (
    callback_failed as callback_failed,
)
from .callback_ledger import (
    callback_fetch_due as callback_fetch_due,
)
from .callback_ledger import (
    callback_fetch_interval as callback_fetch_interval,
)
from .callback_ledger import (
    callback_not_queued as callback_not_queued,
)
from .callback_ledger import (
    callback_waiting as callback_waiting,
)
from .callback_ledger import (
    claim_stuck_callbacks as claim_stuck_callbacks,
)
from .callback_ledger import (
    community_of as community_of,
)
from .callback_ledger import (
    dedupe_key as dedupe_key,
)
from .callback_ledger import (
    reprocess_callback as reprocess_callback,
)
from .callback_ledger import (
    requeue_after as requeue_after,
)
from .callback_ledger import (
    requeue_callback as requeue_callback,
)
from .callback_ledger import (
    run_verification as run_verification,
)
from .callback_ledger import (
    store_callback as store_callback,
)
from .callback_ledger import (
    store_invalid_callback as store_invalid_callback,
)
from .callback_ledger import (
    stuck_filter as stuck_filter,
)
from .callback_ledger import (
    verify_callback as verify_callback,
)
