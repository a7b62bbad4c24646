"""One exception hierarchy for everything the client can report.

::

    PayCollectError
    ├── ApiError                    an answer came back from the service (or something in front of it)
    │   ├── ValidationError         400, or an envelope whose status.code says failure (also local checks)
    │   ├── AuthenticationError     401/403 answered with an envelope
    │   ├── NotFoundError           404
    │   ├── RateLimitError          429
    │   ├── ServerError             5xx answered with an envelope
    │   └── UnexpectedResponseError not an envelope: an HTML firewall page, an HTML 502, bad or empty JSON
    ├── ConnectError                the request was never sent
    └── OutcomeUnknownError         the request was sent and no answer came back

``outcome_unknown`` is true when a state-changing call may have taken effect at the service even
though we got no usable answer; such a call is never resent, and reconciliation fetches the truth.
No exception ever holds an API key or credential: the client scrubs them from every excerpt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .envelope import CallInfo, Envelope

__all__ = [
    "ApiError",
    "AuthenticationError",
    "ConnectError",
    "NotFoundError",
    "OutcomeUnknownError",
    "PayCollectError",
    "Problem",
    "RateLimitError",
    "ServerError",
    "UnexpectedResponseError",
    "ValidationError",
]

NON_FIELD_ERRORS = "__all__"


@dataclass(frozen=True)
class Problem:
    """One problem the client's own checks found in a field: what a program (or a translation) reads.

    ``code`` is stable (``"phone_no_plus"``, ``"one_of"``; the list is
    :data:`django_paycollect.client.validation.MESSAGES`), ``params`` are the values its message names
    (``{"choices": ("EGP", "USD")}``), and ``message`` is the message in English. The Django app words
    each code in the active language (``django_paycollect.problem_messages``).
    """

    code: str
    message: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


class PayCollectError(Exception):
    """Root of every error raised by :mod:`django_paycollect.client`."""

    #: HTTP status of the answer, when one came back.
    http_status: int | None = None
    #: The parsed envelope, when the answer was one.
    envelope: Envelope[Any] | None = None
    #: At most a few hundred characters of the raw answer, secrets scrubbed.
    body_excerpt: str = ""
    #: True when a state-changing call may have taken effect although no usable answer came back.
    outcome_unknown: bool = False

    def __init__(
        self,
        message: str,
        *,
        http_status: int | None = None,
        envelope: Envelope[Any] | None = None,
        body_excerpt: str = "",
        call: CallInfo | None = None,
        outcome_unknown: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.http_status = http_status
        self.envelope = envelope
        self.body_excerpt = body_excerpt
        #: What was sent, how often and how long it took (None when nothing was sent).
        self.call = call
        if outcome_unknown is not None:
            self.outcome_unknown = outcome_unknown

    def __str__(self) -> str:
        if self.http_status is not None:
            return f"{self.message} (HTTP {self.http_status})"
        return self.message


class ApiError(PayCollectError):
    """The service, or something in front of it, answered with an error."""


class ValidationError(ApiError):
    """The request was refused as invalid, by the service (400) or by the client's own checks.

    ``field_errors`` maps dotted field paths to messages (``"billing_data.phone_number"``);
    ``errors`` keeps the service's raw list. ``sent`` is False for the client's own checks, and then
    ``problems`` holds the same field paths with a :class:`Problem` (stable code and parameters) for
    each message; the service's own refusals have only their words.
    """

    def __init__(
        self,
        message: str,
        *,
        field_errors: dict[str, list[str]] | None = None,
        errors: list[Any] | None = None,
        sent: bool = True,
        problems: Mapping[str, list[Problem]] | None = None,
        **kwargs: Any,
    ) -> None:
        self.problems = {path: list(items) for path, items in (problems or {}).items()}
        if field_errors is None and self.problems:
            field_errors = {path: [p.message for p in items] for path, items in self.problems.items()}
        self.field_errors: dict[str, list[str]] = dict(field_errors or {})
        self.errors: list[Any] = list(errors or [])
        self.sent = sent
        if self.field_errors:
            details = "; ".join(f"{path}: {' '.join(msgs)}" for path, msgs in self.field_errors.items())
            message = f"{message}: {details}"
        super().__init__(message, **kwargs)


class AuthenticationError(ApiError):
    """The service refused the credentials (401 or 403 answered with an envelope)."""


class NotFoundError(ApiError):
    """The service does not know the thing asked for (404)."""


class RateLimitError(ApiError):
    """Too many requests (429). ``retry_after`` is the wait the service asked for, in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(ApiError):
    """The service failed (5xx with an envelope)."""


class UnexpectedResponseError(ApiError):
    """The answer was not the service's envelope.

    Typically an HTML challenge page from a firewall in front of the service (403), an HTML
    gateway error (502), or malformed or empty JSON. It says nothing about the API key.
    """


class ConnectError(PayCollectError):
    """The request was never sent (DNS failure, connection refused, connect timeout, TLS handshake)."""


class OutcomeUnknownError(PayCollectError):
    """The request was sent and no answer came back (read timeout, connection reset after sending).

    For a state-changing call the service may have acted on it: never resend; fetch to find out.
    """

    outcome_unknown = True
