"""The sandbox served in the test's own process and thread: the service's answers without a socket.

The middle tier of the tests. The sandbox is mounted in the test project (as ``docs/sandbox.md`` shows a
project doing) on the test database, and every ``requests`` session of the process sends what it addresses to
:data:`BASE` through :class:`InProcessTransport` instead of a connection: the app's client, the sandbox's
control API, a payment page submitted like a browser, the sandbox's callbacks to the app. A request is the
same WSGI environ a server would build, through Django's handler and the project's middleware, and its answer
the same status, headers, cookies and bytes; only the socket is missing. So a test that needs "the service
answered X" pays for the answer, not for a server process, a loopback connection and a reset over HTTP.

What a socket adds is left to the end-to-end tier (``paycollect_live``: the standalone runner in its own
process, over real HTTP), and emulated here only as the client would see it: a connection the sandbox
resets (``kind="reset"``, ``"drop_after"``) is a :class:`requests.ConnectionError`, and a latency longer than
the call's read timeout a :class:`requests.ReadTimeout` after the work is done (the server works on after the
client gave up), without the wait. Callbacks are not sent by a thread:
:meth:`InProcessSandbox.deliver_callbacks` sends the due ones, in the test's thread, when the test says so.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import requests
from django.test.client import ClientHandler
from requests.adapters import BaseAdapter
from urllib3 import HTTPHeaderDict, HTTPResponse

from django_paycollect.client import PayCollectClient
from django_paycollect.sandbox import callbacks, faults
from django_paycollect.sandbox.testing import Sandbox

#: Where the in-process server answers: Django's test host, so ALLOWED_HOSTS and the test client agree.
HOST = "testserver"
BASE = f"http://{HOST}"
#: Where the sandbox is mounted, and the URLconf that mounts it there (with the admin its pages link to).
#: Every other path is the test project's own (``ROOT_URLCONF``: the app's URLs, the REST API's in its tests).
PREFIX = "/sandbox/"
SANDBOX_URLCONF = "tests.sandbox.urls"
#: The sandbox's settings in this tier: control API on, callbacks sent only when the test asks.
SANDBOX_SETTINGS = {"CONTROL_API": True, "CALLBACK_WORKER": False}

_latency = threading.local()


class InProcessTransport(BaseAdapter):
    """A ``requests`` transport that hands each request to Django's handler in this thread."""

    def __init__(self) -> None:
        super().__init__()
        # CSRF checks on, as for any client that is not Django's test client: the sandbox's operations and the
        # app's callback view must be exempt by themselves.
        self.handler = _Handler(enforce_csrf_checks=True)
        self.requests: list[requests.PreparedRequest] = []
        #: Seconds the app's clients would have waited between attempts.
        self.backoff: list[float] = []

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        self.requests.append(request)
        environ = _environ(request)
        read_timeout = timeout[1] if isinstance(timeout, tuple) else timeout
        _latency.read_timeout = read_timeout
        _latency.late = False
        try:
            answer = self.handler(environ)
        finally:
            late, _latency.late = _latency.late, False
            _latency.read_timeout = None
        body = b"".join(answer.streaming_content) if answer.streaming else answer.content
        fault = environ.get(faults.ENVIRON_CONNECTION_FAULT)
        if fault:
            reset = ConnectionResetError(104, "Connection reset by peer")
            raise requests.ConnectionError(reset, request=request)
        if late:
            late_answer = f"no answer within the read timeout ({read_timeout} s)"
            raise requests.ReadTimeout(late_answer, request=request)
        headers = HTTPHeaderDict()
        for name, value in answer.items():
            headers.add(name, value)
        for cookie in answer.cookies.values():
            headers.add("Set-Cookie", cookie.output(header=""))
        return _response(request, answer.status_code, headers, body)

    def close(self) -> None:
        pass


class _Handler(ClientHandler):
    """Django's handler without the test client's conveniences, routing ``/sandbox/`` to the sandbox."""

    def get_response(self, request: Any) -> Any:
        if request.path_info.startswith(PREFIX):
            request.urlconf = SANDBOX_URLCONF
        return super().get_response(request)


def _environ(request: requests.PreparedRequest) -> dict[str, Any]:
    url = urlsplit(str(request.url))
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif not isinstance(body, bytes):  # a generator or a file: what a chunked upload sends
        body = b"".join(chunk.encode("utf-8") if isinstance(chunk, str) else chunk for chunk in body)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": str(request.method),
        "SCRIPT_NAME": "",
        # PEP 3333: the path unquoted, its bytes as latin-1, as a server hands it on.
        "PATH_INFO": unquote_to_bytes(url.path or "/").decode("iso-8859-1"),
        "QUERY_STRING": url.query,
        "SERVER_NAME": url.hostname or HOST,
        "SERVER_PORT": str(url.port or (443 if url.scheme == "https" else 80)),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": url.scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        # The sandbox's own server: a view may ask for the connection to be reset (see the sandbox's faults).
        faults.ENVIRON_SERVER: True,
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = value
        elif key != "CONTENT_LENGTH":
            environ[f"HTTP_{key}"] = value
    return environ


def _response(request: requests.PreparedRequest, status: int, headers: HTTPHeaderDict, body: bytes) -> Any:
    # requests reads cookies from the wrapped http.client response's headers (``_original_response.msg``).
    original = HTTPResponse(body=io.BytesIO(), msg=headers, preload_content=False)  # type: ignore[arg-type]
    raw = HTTPResponse(
        status=status,
        reason=HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else None,
        body=io.BytesIO(body),
        headers=headers,
        original_response=original,  # type: ignore[arg-type]
        preload_content=False,
        request_method=request.method,
        decode_content=False,
    )
    return requests.adapters.HTTPAdapter().build_response(request, raw)


def _sleep_latency(fault: faults.ActiveFault) -> None:
    """A latency the caller would not wait for is noted, not slept: the answer becomes a read timeout."""
    limit = getattr(_latency, "read_timeout", None)
    if fault.latency_ms and limit is not None and fault.latency_ms / 1000 >= limit:
        _latency.late = True
        return
    _real_sleep_latency(fault)


_real_sleep_latency = faults.sleep_latency


@contextmanager
def serving(monkeypatch: Any) -> Iterator[InProcessTransport]:
    """Every ``requests`` session of this process sends what it addresses to :data:`BASE` in-process."""
    transport = InProcessTransport()
    get_adapter = requests.Session.get_adapter

    def adapter(self: requests.Session, url: str) -> BaseAdapter:
        if url.startswith(f"{BASE}/") or url == BASE:
            return transport
        return get_adapter(self, url)

    monkeypatch.setattr(requests.Session, "get_adapter", adapter)
    monkeypatch.setattr(faults, "sleep_latency", _sleep_latency)
    # The client's backoff between attempts is noted, not waited: the time it would take tests nothing here
    # (the client's own tests check the delays it chooses).
    make_client = PayCollectClient.__init__

    def client(self: PayCollectClient, *args: Any, **kwargs: Any) -> None:
        make_client(self, *args, **kwargs)
        self._sleep = transport.backoff.append

    monkeypatch.setattr(PayCollectClient, "__init__", client)
    yield transport


class InProcessSandbox(Sandbox):
    """The handle tests get in this tier: a :class:`Sandbox` (credentials, ``control``, ``client``,
    ``submit_payment_page``), plus the callbacks this tier sends only when asked."""

    def deliver_callbacks(self) -> int:
        """Send every callback that is due now, in this thread; returns how many were attempted."""
        due = callbacks.CallbackDelivery.objects.filter(
            status=callbacks.CallbackDelivery.Status.PENDING, next_attempt_at__isnull=False
        ).count()
        callbacks.deliver_due()
        return due
