"""Calling the client: every call recorded as an ApiCall, the error contract, and the guarded write."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from django.core.exceptions import NON_FIELD_ERRORS
from django.db.models import Model, Q

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
)
from ..client.redaction import SECRET_FIELDS
from ..conf import paycollect_settings
from ..exceptions import (
    CredentialsRefused,
    NotFound,
    PayCollectConfigurationError,
    PaymentRefused,
    ServiceLayerError,
    ServiceUnavailable,
)
from ..models import ApiCall
from ..models.fields import json_safe
from ..problem_messages import service_field_errors
from ..secrecy import mask_personal_data, our_secrets, scrub
from .common import atomic, primary, require_autocommit
from .config import CommunityConfig, get_client

C = TypeVar("C")
R = TypeVar("R")
T = TypeVar("T")


#: Celery task id of the task calling the service layer, stored on each ApiCall (set by tasks).
current_task_id: contextvars.ContextVar[str] = contextvars.ContextVar("paycollect_task_id", default="")


def _record(
    operation: str,
    config: CommunityConfig | None,
    *,
    envelope: Envelope[Any] | None = None,
    error: PayCollectError | None = None,
    links: Mapping[str, Model | None] | None = None,
    save: bool = True,
) -> ApiCall:
    call = envelope.call if envelope is not None else (error.call if error is not None else None)
    op = OPERATIONS[operation]
    hide = partial(scrub, secrets=our_secrets(config), fields=SECRET_FIELDS)
    body: Any = None
    if call is not None and paycollect_settings.STORE_REQUEST_BODIES:
        body = hide(json_safe(mask_personal_data(call.request_body)))
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
        message=hide(answer.message) if answer is not None else "",
        errors=hide(json_safe(errors)),
        data=hide(json_safe(answer.data)) if answer is not None else None,
        count=answer.count if answer is not None else None,
        next=answer.next or "" if answer is not None else "",
        previous=answer.previous or "" if answer is not None else "",
        error_class=type(error).__name__ if error is not None else "",
        error_message=hide(str(error)) if error is not None else "",
        body_excerpt=error.body_excerpt if error is not None else "",
        outcome_unknown=bool(error is not None and error.outcome_unknown),
        duration_ms=round(call.duration * 1000) if call else None,
        attempts=call.attempts if call else 0,
        task_id=current_task_id.get(),
        **(links or {}),
    )
    if save:
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
    save_success: bool = True,
) -> Sent[T]:
    """Call the client once; record the ApiCall whatever happens; return the envelope or the error. With
    ``save_success=False`` a success's ApiCall is returned unsaved, for the commit that applies the answer."""
    try:
        envelope = call()
    except PayCollectError as exc:
        return Sent(None, exc, _record(operation, config, error=exc, links=links))
    return Sent(envelope, None, _record(operation, config, envelope=envelope, links=links, save=save_success))


#: Client errors that say "not now": the request never left, or a read got no usable answer.
_UNAVAILABLE = (ConnectError, OutcomeUnknownError, ServerError, RateLimitError, UnexpectedResponseError)


def contract_error(
    error: PayCollectError, *, record: Any = None, operation: str = "", config: CommunityConfig | None = None
) -> ServiceLayerError | PayCollectConfigurationError:
    """The service layer's error for a client error (see :mod:`django_paycollect.exceptions`).

    One table for every operation: a request that never left, or a read without a usable answer, is
    :class:`ServiceUnavailable`; the service's refusal (400, a failure envelope) is :class:`PaymentRefused`
    naming the fields (a field of ``operation`` that we know told in our words, in the reader's language:
    :func:`~django_paycollect.problem_messages.service_field_errors`), a 404 :class:`NotFound`; credentials
    the service refuses, or a client missing them, are :class:`PayCollectConfigurationError` (outside the
    contract: the site's fault), :class:`CredentialsRefused` naming what to fix when ``config`` says whose
    they are. ``record`` is the row the operation left. Raise it ``from error``, so the
    client's error (the service's own words) stays readable as ``__cause__``.
    """
    if isinstance(error, _UNAVAILABLE):
        retry_after = error.retry_after if isinstance(error, RateLimitError) else None
        return ServiceUnavailable(str(error), retry_after=retry_after, record=record)
    if isinstance(error, ValidationError) and error.field_errors:
        return PaymentRefused(service_field_errors(operation, error.field_errors), record=record)
    if isinstance(error, NotFoundError):
        return NotFound(str(error), record=record)
    # The service refused our credentials, or the client has none for this operation (nothing sent).
    unconfigured = error.call is None and not isinstance(error, ValidationError)
    if isinstance(error, AuthenticationError) and config is not None:
        basic = operation in OPERATIONS and OPERATIONS[operation].auth == "key_and_basic"
        return CredentialsRefused(
            config.community_id,
            source=config.source,
            http_status=error.http_status,
            basic=basic,
            record=record,
        )
    if isinstance(error, AuthenticationError) or unconfigured:
        misconfigured = PayCollectConfigurationError(str(error))
        misconfigured.record = record
        return misconfigured
    # Always a dict, so callers can read ``message_dict``; errors of no field go under "__all__".
    return PaymentRefused({NON_FIELD_ERRORS: [str(error)]}, record=record)


def broken_answer(operation: str, missing: str) -> ServiceUnavailable:
    """What every read raises when its answer lacks the field it is for: no usable answer (as an HTML page
    instead of the envelope), not the customer's input refused."""
    return ServiceUnavailable(f"{operation}: the service's answer has no {missing}")


def recorded_read(
    operation: str,
    config: CommunityConfig,
    call: Callable[[], Envelope[T]],
    *,
    links: Mapping[str, Model | None] | None = None,
    save_success: bool = True,
) -> tuple[Envelope[T], ApiCall]:
    """A read: call once (the client retries reads itself), record it, raise the contract's error.
    ``save_success``: see :func:`_invoke`."""
    sent = _invoke(operation, config, call, links=links, save_success=save_success)
    if sent.error is not None:
        raise contract_error(sent.error, operation=operation, config=config) from sent.error
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
    require_autocommit(operation)
    with atomic():
        claimed = claim()
        community = config(claimed)
    client = get_client(community)
    sent = _invoke(operation, community, lambda: send(client, claimed), links=links(claimed))
    with atomic():
        row = record(claimed, sent)
    if sent.error is not None and not sent.unknown:
        raise contract_error(sent.error, record=row, operation=operation, config=community) from sent.error
    return row


#: Operations that change state at the service: never sent twice.
STATE_CHANGING = tuple(name for name, op in OPERATIONS.items() if op.changes_state)


def sent_by_task(task_id: str) -> ApiCall | None:
    """The first state-changing call a Celery task (by its id) made that may have taken effect at the
    service: it succeeded, or its outcome is unknown (a refusal, or a request that never left, did nothing
    there). A broker may deliver one message twice (a worker lost, a visibility timeout): the second
    delivery asks this first, and returns what that call left instead of sending again."""
    if not task_id:
        return None
    calls = primary(ApiCall).filter(task_id=task_id, operation__in=STATE_CHANGING)
    return calls.filter(Q(error_class="") | Q(outcome_unknown=True)).order_by("pk").first()
