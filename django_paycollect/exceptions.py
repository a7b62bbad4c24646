"""The service layer's error contract (four siblings under :class:`ServiceLayerError`, each with a stable
``error_code``), and the other exceptions of the Django side: :class:`PayCollectConfigurationError`, the
site's fault and outside the contract on purpose, and :class:`ServiceUsageError`, the caller's bug. What each
means and when it is raised: docs/services.md, the error contract. Their ``messages`` are worded when read,
in the language active then (:func:`lazy_text`); :func:`describe_error` keeps a record in English.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.utils import translation
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from .client import PayCollectError

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

__all__ = [
    "CredentialsRefused",
    "NotFound",
    "PayCollectConfigurationError",
    "PaymentRefused",
    "Refusal",
    "ServiceLayerError",
    "ServiceUnavailable",
    "ServiceUsageError",
    "StateConflict",
    "describe_error",
    "lazy_text",
]

#: What a person is told when the service could not be asked (the client's words name hosts and settings).
UNAVAILABLE_TEXT = _("The payment service cannot be reached; nothing was done. Try again in a moment.")


def _formatted(message: Any, params: Mapping[str, Any]) -> str:
    return str(message) % params if params else str(message)


_lazy_formatted = lazy(_formatted, str)


def lazy_text(message: StrOrPromise, **params: Any) -> StrOrPromise:
    """``message`` (marked with ``gettext_lazy``) formatted with ``params`` when it is read, in the language
    active then: a refusal raised in a task reads in English in its record and in Arabic on an Arabic page.
    Formatting it at once would fix it in the language of whoever raised it."""
    return _lazy_formatted(message, params)


class ServiceLayerError(Exception):
    """Root of what the service layer raises when an operation did not do what it was asked.

    ``messages`` is always a list of texts for people (Django's ``ValidationError`` API), ``error_code`` a
    stable name for machines (a REST API's error code), and ``record`` the row a state-changing operation
    left in its failed state (None when nothing was stored). The client's error behind it, if any, is
    ``__cause__``.
    """

    error_code: ClassVar[str] = "error"

    def __init__(self, *args: Any, record: Any = None) -> None:
        super().__init__(*args)
        self.record = record

    @property
    def messages(self) -> list[str]:
        return [str(self)]


class PaymentRefused(ValidationError, ServiceLayerError):
    """The input was refused, before or by the service; ``message_dict`` names the fields.

    Refused before sending (our checks), nothing was stored. Refused by the service's answer, the row
    the operation left (a REJECTED transaction or direct order, a failed capture, refund or cancellation)
    is ``record``: it may be asked again.
    """

    error_code = "refused"

    def __init__(self, message: Any, code: str | None = None, params: Any = None, *, record: Any = None):
        super().__init__(message, code, params)
        self.record = record


class StateConflict(ValidationError, ServiceLayerError):
    """Refused by our checks because of the state of what it acts on, not because the input is malformed:
    a capture or refund of a transaction that is not successful, a refund over what is still refundable (or
    after what is refundable changed), a capture or cancellation already done or under way. Nothing was
    stored or sent; the same request may succeed once the state changes (a REST API's 409).
    ``message_dict`` names the fields.
    """

    error_code = "conflict"


@dataclass(frozen=True)
class Refusal:
    """Why an operation is refused before anything is sent, because of the state of what it acts on: the
    field it is about and the message, worded when read (``str()``). A model says it (``refund_refusal``), the
    service layer raises it as a :class:`StateConflict`, the admin shows it."""

    field: str
    message: StrOrPromise

    def __str__(self) -> str:
        return str(self.message)

    def conflict(self) -> StateConflict:
        return StateConflict({self.field: [self.message]})


class NotFound(ServiceLayerError):
    """The service does not know what was asked for: a transaction (by uuid) or a promocode. Names no
    field: a caller that asked for one knows which."""

    error_code = "not_found"


class ServiceUnavailable(ServiceLayerError):
    """The service could not be asked, or gave no usable answer to a read: nothing changed there.

    Raised for a read that met a connection failure, a timeout, a 5xx, a 429, a page that is not the
    service's envelope or one without what the spec says it carries, and for a state-changing call whose
    request never left this machine (its row is ``record``, in its failed state, so it may be asked again).
    ``retry_after`` is the wait a 429 asked for, in seconds, or None. A state-changing call that was sent
    and got no usable answer does not raise: it returns its row with the outcome unknown.
    """

    error_code = "service_unavailable"

    def __init__(self, message: str, *, retry_after: float | None = None, record: Any = None) -> None:
        super().__init__(message, record=record)
        self.retry_after = retry_after

    @property
    def messages(self) -> list[str]:
        # What went wrong is the client's, in its words (``str()``, ``__cause__``, the ApiCall): for people,
        # that nothing was done and it may work later.
        return [str(UNAVAILABLE_TEXT)]


class PayCollectConfigurationError(ImproperlyConfigured):
    """A setting is missing or wrong, a stored key cannot be decrypted, or the service refuses our
    credentials: the site's fault, outside :class:`ServiceLayerError` on purpose (never told a customer as
    "try again later"). ``messages``, ``error_code`` and ``record`` read as the contract's."""

    error_code: ClassVar[str] = "configuration"
    record: Any = None

    @property
    def messages(self) -> list[str]:
        return [str(self)]


#: What the service's refusal of our credentials (HTTP 401 or 403) says to fix, by where they come from and
#: whether the operation sends the basic credentials too. Names settings and the community, never a secret.
CREDENTIALS_REFUSED = {
    ("settings", False): _(
        "The payment service refused the credentials of community %(community)s with an HTTP %(status)s "
        "answer: check "
        'PAYCOLLECT["API_KEY"], and that PAYCOLLECT["COMMUNITY_ID"] is the community this key belongs to '
        "(manage.py paycollect_check_credentials tries them)."
    ),
    ("settings", True): _(
        "The payment service refused the credentials of community %(community)s with an HTTP %(status)s "
        "answer: check "
        'PAYCOLLECT["API_KEY"] and PAYCOLLECT["BASIC_CREDENTIALS"], and that PAYCOLLECT["COMMUNITY_ID"] is '
        "the community they belong to (manage.py paycollect_check_credentials tries them)."
    ),
    ("community", False): _(
        "The payment service refused the credentials of community %(community)s with an HTTP %(status)s "
        "answer: check "
        "the API key of its row in the admin (Payment collection, Communities, %(community)s), and that "
        "the key belongs to this community (manage.py paycollect_check_credentials tries them)."
    ),
    ("community", True): _(
        "The payment service refused the credentials of community %(community)s with an HTTP %(status)s "
        "answer: check "
        "the API key and the basic credentials of its row in the admin (Payment collection, Communities, "
        "%(community)s), and that they belong to this community (manage.py paycollect_check_credentials "
        "tries them)."
    ),
}


class CredentialsRefused(PayCollectConfigurationError):
    """The service refused the credentials of a community (HTTP 401 or 403): the message names what to fix,
    the setting (``PAYCOLLECT["API_KEY"]`` ...) or the community's row in the admin, and the community id,
    never the secret. ``source`` is ``"settings"`` or ``"community"`` (a Community row), ``basic`` whether
    the refused operation sent the basic credentials too; the client's error is ``__cause__``."""

    error_code = "credentials_refused"

    def __init__(
        self,
        community_id: str,
        *,
        source: str,
        http_status: int | None,
        basic: bool = False,
        record: Any = None,
    ) -> None:
        message = lazy_text(
            CREDENTIALS_REFUSED[(source, basic)], community=repr(str(community_id)), status=http_status
        )
        super().__init__(message)
        self.message = message
        self.community_id = community_id
        self.source = source
        self.http_status = http_status
        self.basic = basic
        self.record = record


class ServiceUsageError(RuntimeError):
    """The service layer was called in a way that would put money at risk (e.g. inside atomic)."""


def describe_error(error: BaseException) -> str:
    """``"<class>: <text>"`` for a record kept for people (a callback's error, a reconciliation finding):
    the client's error behind a contract error when there is one (``ServerError: ... (HTTP 503)``). In
    English, whatever the language of the request or task that met it: it is a record, not a message."""
    cause = error.__cause__
    # A CredentialsRefused says what to fix, rather than the client's "authentication failed (HTTP 401)".
    ours = isinstance(error, (ServiceLayerError, PayCollectConfigurationError))
    if ours and isinstance(cause, PayCollectError) and not isinstance(error, CredentialsRefused):
        return f"{type(cause).__name__}: {cause}"
    with translation.override(None):
        text = " ".join(error.messages) if isinstance(error, (PaymentRefused, StateConflict)) else str(error)
    return f"{type(error).__name__}: {text}"
