"""How the client talks HTTP: the spec's operations (method, path, credentials), one request with its
retries, secrets kept out of reprs, logs and recorded bodies, and the answer read into an envelope.

Reads are retried after network failures and 429/502/503/504; state-changing calls only when the request
provably never left this machine (the service has no idempotency keys).
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Self, TypeVar
from urllib.parse import quote, urlencode, urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter

from .. import __version__
from .envelope import CallInfo, Envelope, interpret
from .errors import ConnectError, OutcomeUnknownError, PayCollectError
from .money import dumps_json
from .redaction import credential_texts, redact
from .types import Logo

logger = logging.getLogger("django_paycollect.client")

T = TypeVar("T")

Auth = Literal["none", "key", "key_if_set", "key_and_basic"]
#: Statuses after which a read is asked again.
RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class Operation:
    """One operation of the spec: its HTTP method and path, credentials, and whether it changes state."""

    name: str
    method: str
    path: str
    auth: Auth
    changes_state: bool


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        # Credentials of prepare amount and create community are not shown: the key is sent when set.
        Operation("prepare_amount", "POST", "/api/v1/payments/prepare-amount/", "key_if_set", False),
        Operation("pay", "POST", "/api/v1/payments/pay/variable-amount", "key", True),
        Operation(
            "get_transaction",
            "GET",
            "/api/v1/communities/{community_id}/transactions/{transaction_uuid}/",
            "key",
            False,
        ),
        Operation("capture", "POST", "/api/payments/capture-payment/", "key", True),
        Operation("refund", "POST", "/api/payments/refund-transaction/", "key", True),
        Operation("cancel_recurring", "POST", "/api/payments/cancel-recurring-payment/", "key", True),
        Operation("validate_promocode", "POST", "/api/promocodes/validate/", "none", False),
        Operation("create_community", "POST", "/api/communities/create_community", "key_if_set", True),
        Operation("dashboard_statistics", "GET", "/api/core/dashboard/statistics", "key_and_basic", False),
        Operation("create_direct_order", "POST", "/api/orders/create-direct-order/", "key", True),
    )
}


class _Secret:
    """Holds a secret so that no repr, log line or traceback shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"


def _keep_headers(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """Authentication is our headers alone; passing this as ``auth`` keeps netrc out."""
    return request


def _was_sent(exc: requests.RequestException) -> bool:
    """Whether the request may have reached the service. When in doubt: yes."""
    never_sent = (
        requests.exceptions.ConnectTimeout,  # no connection
        requests.exceptions.SSLError,  # no TLS session: nothing was written
        requests.exceptions.ProxyError,
        requests.exceptions.InvalidURL,
        requests.exceptions.InvalidSchema,
        requests.exceptions.MissingSchema,
        requests.exceptions.InvalidHeader,
    )
    if isinstance(exc, never_sent):
        return False
    if isinstance(exc, requests.exceptions.ConnectionError):
        reason: Any = exc.args[0] if exc.args else None
        if isinstance(reason, urllib3.exceptions.MaxRetryError):
            reason = reason.reason
        # Refused or unresolvable (NameResolutionError is a NewConnectionError): never sent.
        return not isinstance(
            reason, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)
        )
    return True  # read timeouts, resets after sending, broken chunked bodies


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if re.fullmatch(r"[0-9]{1,9}", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Transport:
    """The HTTP side of :class:`~django_paycollect.client.PayCollectClient` (see there for the arguments)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        basic_credentials: tuple[str, str] | str | None = None,
        timeout: tuple[float, float] = (5.0, 30.0),
        max_network_retries: int = 2,
        session: requests.Session | None = None,
        promocode_method: Literal["POST", "GET"] = "POST",
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        max_retry_after: float = 30.0,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("base_url must be an http:// or https:// URL")
        if parts.query or parts.fragment:
            raise ValueError("base_url must not carry a query or a fragment")
        if max_network_retries < 0:
            raise ValueError("max_network_retries must be 0 or more")
        if promocode_method not in ("POST", "GET"):
            raise ValueError("promocode_method must be POST or GET")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_network_retries = max_network_retries
        self.promocode_method = promocode_method
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self._api_key = _Secret(api_key) if api_key else None
        if isinstance(basic_credentials, tuple):
            username, password = basic_credentials
            basic_credentials = f"{username}:{password}"
        self._basic = _Secret(basic_credentials) if basic_credentials else None
        # What _scrub removes: the key, the joined credentials and the password alone.
        self._secret_texts = tuple(_Secret(t) for t in credential_texts(api_key, basic_credentials))
        self.session = session or self._new_session(self.base_url)
        self.user_agent = f"django-paycollect/{__version__} python-requests/{requests.__version__}"
        # Tests replace this to avoid waiting; nothing else should.
        self._sleep: Callable[[float], None] = time.sleep

    def __repr__(self) -> str:
        shown = "<secret>" if self._api_key else None
        return f"{type(self).__name__}({self.base_url!r}, api_key={shown})"

    @staticmethod
    def _new_session(base_url: str) -> requests.Session:
        session = requests.Session()
        # urllib3 must never retry on its own: this class alone decides what may be resent.
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=16, max_retries=0)
        session.mount("https://", adapter)
        session.mount("http://", adapter)
        # The environment's proxy and CA bundle, read once for the one host this session talks to:
        # requests would read the whole environment again on every request: a third of a fetch's
        # instructions with 35 variables set.
        session.proxies = requests.utils.get_environ_proxies(base_url)
        session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        session.trust_env = False
        return session

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- plumbing ---------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        scrubbed: str = redact(text, [secret.reveal() for secret in self._secret_texts], fields=())
        return scrubbed

    def _headers(self, op: Operation) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if op.auth in ("key", "key_and_basic") and self._api_key is None:
            raise PayCollectError(f"{op.name} needs an API key: pass api_key to PayCollectClient")
        if op.auth == "key_and_basic" and self._basic is None:
            raise PayCollectError(f"{op.name} needs basic_credentials=(username, password)")
        if op.auth != "none" and self._api_key is not None:
            headers["x-api-key"] = self._api_key.reveal()
        if op.auth == "key_and_basic" and self._basic is not None:
            headers["Authorization"] = f"Basic {self._basic.reveal()}"
        return headers

    def _delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before trying again, or None when the service asked for too long a wait."""
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        # Capped exponential backoff with full jitter, so that many workers do not retry in step.
        return random.uniform(0, min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1)))  # noqa: S311

    def _call(
        self,
        op: Operation,
        result_from: Callable[[dict[str, Any]], T],
        *,
        path_params: Mapping[str, str] | None = None,
        json_body: Mapping[str, Any] | None = None,
        query: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        recorded_form: Mapping[str, Any] | None = None,
        logo: Logo | None = None,
        method: str | None = None,
    ) -> Envelope[T]:
        method = method or op.method
        path = op.path.format(**{k: quote(v, safe="") for k, v in (path_params or {}).items()})
        url = self.base_url + path
        shown_path = path + ("?" + urlencode(query, quote_via=quote) if query else "")
        headers = self._headers(op)
        body: Any = json_body if json_body is not None else form
        # A form field holding JSON text (bank settings) is recorded from its object, secrets masked.
        recorded_body = redact(recorded_form if recorded_form is not None else body)
        if logo is not None:
            recorded_body = {**(recorded_body or {}), "logo": f"<{logo.filename}, {len(logo.content)} bytes>"}
        data: bytes | Mapping[str, str] | None = form
        if json_body is not None:
            headers["Content-Type"] = "application/json"
            data = dumps_json(json_body).encode()
        files: dict[str, Any] | None = (
            {"logo": (logo.filename, logo.content, logo.content_type)} if logo is not None else None
        )

        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1

            def info(http_status: int | None = None) -> CallInfo:
                return CallInfo(
                    operation=op.name,
                    method=method,
                    path=shown_path,
                    request_body=recorded_body,
                    attempts=attempt,  # noqa: B023  (read while this attempt is current)
                    duration=time.monotonic() - started,
                    http_status=http_status,
                )

            try:
                response = self.session.request(
                    method,
                    url,
                    params=query,
                    data=data,
                    files=files,
                    headers=headers,
                    timeout=self.timeout,
                    allow_redirects=False,
                    # An explicit (no-op) auth stops requests from applying ~/.netrc credentials.
                    auth=_keep_headers,
                )
            except requests.RequestException as exc:
                sent = _was_sent(exc)
                retryable = not sent or not op.changes_state
                detail = self._scrub(f"{type(exc).__name__}: {exc}")[:300]
                if retryable and attempt <= self.max_network_retries:
                    self._log_retry(op, method, path, attempt, detail)
                    self._sleep(self._delay(attempt, None) or 0.0)
                    continue
                call = info()
                self._log(op, method, path, None, call, detail)
                error_cls = OutcomeUnknownError if sent else ConnectError
                what = "sent, no answer" if sent else "not sent"
                raise error_cls(
                    f"{op.name}: {what} ({detail})", call=call, outcome_unknown=sent and op.changes_state
                ) from None

            status = response.status_code
            retry_after = _retry_after(response.headers.get("Retry-After"))
            if status in RETRY_STATUSES and not op.changes_state and attempt <= self.max_network_retries:
                delay = self._delay(attempt, retry_after)
                if delay is not None:
                    self._log_retry(op, method, path, attempt, f"HTTP {status}")
                    self._sleep(delay)
                    continue
            call = info(status)
            try:
                envelope = interpret(
                    http_status=status,
                    body=response.content,
                    content_type=response.headers.get("Content-Type", ""),
                    result_from=result_from,
                    scrub=self._scrub,
                    changes_state=op.changes_state,
                    retry_after=retry_after,
                    call=call,
                    location=response.headers.get("Location", ""),
                )
            except PayCollectError as exc:
                self._log(op, method, path, status, call, type(exc).__name__)
                raise
            self._log(op, method, path, status, call, None)
            return envelope

    @staticmethod
    def _log(
        op: Operation, method: str, path: str, status: int | None, call: CallInfo, error: str | None
    ) -> None:
        # Path only: it holds ids, never keys; bodies (billing data) are never logged.
        logger.log(
            logging.WARNING if error else logging.INFO,
            "%s %s %s -> %s in %.0f ms, %d attempt(s)%s",
            op.name,
            method,
            path,
            status if status is not None else "no answer",
            call.duration * 1000,
            call.attempts,
            f": {error}" if error else "",
            extra={
                "paycollect_operation": op.name,
                "paycollect_status": status,
                "paycollect_duration_ms": round(call.duration * 1000),
            },
        )

    @staticmethod
    def _log_retry(op: Operation, method: str, path: str, attempt: int, why: str) -> None:
        logger.warning("%s %s %s: attempt %d failed (%s), trying again", op.name, method, path, attempt, why)
