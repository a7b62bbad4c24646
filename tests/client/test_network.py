"""Real network failures on loopback, no mock: refused, silent, and closed-after-reading servers.

The client's own pooled session and urllib3 are exercised as in production, so these tests show
that "was it sent?" is judged correctly from what requests really raises.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal

import pytest

from django_paycollect.client import ConnectError, OutcomeUnknownError, PayCollectClient

from .support import API_KEY, BILLING, COMMUNITY, TX_UUID, envelope

#: What the server does with one connection once it has read a whole request.
Behaviour = Callable[[socket.socket], None]


def silent(conn: socket.socket) -> None:
    """Keep the connection open and never answer (closed when the server stops)."""


def close(conn: socket.socket) -> None:
    conn.close()


def reset(conn: socket.socket) -> None:
    """Close with RST instead of FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def answer(body: dict[str, object], status: int = 200) -> Behaviour:
    def send(conn: socket.socket) -> None:
        payload = json.dumps(body).encode()
        head = (
            f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        ).encode()
        conn.sendall(head + payload)
        conn.close()

    return send


class LoopbackServer:
    """A one-thread TCP server on 127.0.0.1 that records every request it reads.

    Connection ``n`` gets ``behaviours[n]`` (the last one repeats).
    """

    def __init__(self, *behaviours: Behaviour) -> None:
        self.behaviours = behaviours
        self.requests: list[bytes] = []
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="loopback-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self._open:
            conn.close()
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._open.append(conn)
            request = self._read_request(conn)
            if request is None:
                continue
            self.requests.append(request)
            behaviour = self.behaviours[min(len(self.requests), len(self.behaviours)) - 1]
            with contextlib.suppress(OSError):
                behaviour(conn)

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes | None:
        conn.settimeout(2)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return None
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                body += chunk
        except OSError:
            return None
        return head + b"\r\n\r\n" + body

    def wait_for(self, count: int, timeout: float = 2.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.01)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: Read timeout where the server is meant to stay silent; answers are waited for much longer.
SHORT_READ = 0.3
LONG_READ = 5.0


def loopback_client(
    base_url: str, *, read_timeout: float = LONG_READ, **kwargs: object
) -> tuple[PayCollectClient, list[float]]:
    made = PayCollectClient(base_url, api_key=API_KEY, timeout=(1.0, read_timeout), **kwargs)  # type: ignore[arg-type]
    sleeps: list[float] = []
    made._sleep = sleeps.append
    return made, sleeps


@pytest.fixture
def servers() -> Iterator[list[LoopbackServer]]:
    started: list[LoopbackServer] = []
    yield started
    for server in started:
        server.__exit__(None, None, None)


def serve(servers: list[LoopbackServer], *behaviours: Behaviour) -> LoopbackServer:
    server = LoopbackServer(*behaviours).__enter__()
    servers.append(server)
    return server


# --- connection refused: never sent -------------------------------------------------------


def test_refused_write_is_a_connect_error_after_all_attempts(closed_port):
    made, sleeps = loopback_client(f"http://127.0.0.1:{closed_port}")

    with made, pytest.raises(ConnectError) as caught:
        made.refund(transaction_uuid=TX_UUID, refund_amount=Decimal("10"))

    assert caught.value.outcome_unknown is False
    assert caught.value.call is not None
    assert caught.value.call.attempts == 3
    assert len(sleeps) == 2
    assert API_KEY not in str(caught.value)


def test_refused_read_is_a_connect_error(closed_port):
    made, sleeps = loopback_client(f"http://127.0.0.1:{closed_port}", max_network_retries=1)

    with made, pytest.raises(ConnectError) as caught:
        made.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID)

    assert caught.value.call is not None
    assert caught.value.call.attempts == 2
    assert len(sleeps) == 1


# --- read timeout: sent, no answer --------------------------------------------------------


def test_silent_server_makes_a_write_outcome_unknown_and_it_is_sent_once(servers):
    server = serve(servers, silent)
    made, sleeps = loopback_client(server.base_url, read_timeout=SHORT_READ)

    started = time.monotonic()
    with made, pytest.raises(OutcomeUnknownError) as caught:
        made.refund(transaction_uuid=TX_UUID, refund_amount=Decimal("40.25"))
    elapsed = time.monotonic() - started

    server.wait_for(1)
    time.sleep(0.1)  # a second request, if any, would have arrived by now
    assert len(server.requests) == 1
    assert server.requests[0].startswith(b"POST /api/payments/refund-transaction/ HTTP/1.1\r\n")
    assert server.requests[0].endswith(
        f'{{"transaction_uuid": "{TX_UUID}", "refund_amount": 40.25}}'.encode()
    )
    assert caught.value.outcome_unknown is True
    assert sleeps == []
    assert elapsed < 2.0  # the read timeout, not forever


def test_silent_server_makes_a_read_retry_and_then_give_up(servers):
    server = serve(servers, silent)
    made, sleeps = loopback_client(server.base_url, read_timeout=SHORT_READ)

    with made, pytest.raises(OutcomeUnknownError) as caught:
        made.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID)

    server.wait_for(3)
    assert len(server.requests) == 3
    assert all(r.startswith(f"GET /api/v1/communities/{COMMUNITY}/".encode()) for r in server.requests)
    assert len(sleeps) == 2
    assert caught.value.outcome_unknown is False


def test_a_read_that_timed_out_once_gets_the_second_answer(servers):
    server = serve(servers, silent, answer(envelope({"id": 5501, "status": "SUCCESSFUL"})))
    made, sleeps = loopback_client(server.base_url, read_timeout=0.5)

    with made:
        got = made.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID)

    assert got.result.status == "SUCCESSFUL"
    assert len(server.requests) == 2
    assert len(sleeps) == 1


# --- closed after reading the request: sent, no answer ------------------------------------


@pytest.mark.parametrize("hang_up", [close, reset], ids=["fin", "rst"])
def test_server_closing_after_reading_makes_a_write_outcome_unknown_sent_once(servers, hang_up):
    server = serve(servers, hang_up)
    made, sleeps = loopback_client(server.base_url)

    with made, pytest.raises(OutcomeUnknownError) as caught:
        made.pay(
            community_id=COMMUNITY,
            amount=Decimal("102.85"),
            original_amount=Decimal("100"),
            variable_amount_id=12,
            billing_data=BILLING,
        )

    time.sleep(0.1)
    assert len(server.requests) == 1
    assert server.requests[0].startswith(b"POST /api/v1/payments/pay/variable-amount HTTP/1.1\r\n")
    assert caught.value.outcome_unknown is True
    assert sleeps == []


@pytest.mark.parametrize("hang_up", [close, reset], ids=["fin", "rst"])
def test_server_closing_after_reading_makes_a_read_retry(servers, hang_up):
    server = serve(
        servers, hang_up, answer(envelope({"total_amount": 102.85, "total_amount_currency": "EGP"}))
    )
    made, sleeps = loopback_client(server.base_url)

    with made:
        got = made.prepare_amount(community_id=COMMUNITY, amount=Decimal("100"))

    assert got.result.total_amount == Decimal("102.85")
    assert len(server.requests) == 2
    assert len(sleeps) == 1


# --- a real answer over the wire ----------------------------------------------------------


def test_a_real_exchange_sends_the_exact_bytes(servers):
    server = serve(servers, answer(envelope({"message": "captured"}, code=201), status=201))
    made, _ = loopback_client(server.base_url)

    with made:
        got = made.capture(transaction_uuid=TX_UUID)

    assert got.http_status == 201
    assert got.result.message == "captured"
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /api/payments/capture-payment/ HTTP/1.1"
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    assert headers["x-api-key"] == API_KEY
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"].startswith("django-paycollect/")
    assert "authorization" not in headers
    assert body == f'{{"transaction_uuid": "{TX_UUID}"}}'.encode()


# --- the environment's proxy --------------------------------------------------------------


@pytest.fixture
def proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
    ):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def test_the_environment_s_proxy_is_used_as_read_when_the_client_was_made(servers, proxy_environment):
    proxy = serve(servers, answer(envelope({"id": 5501, "status": "PENDING"})))
    proxy_environment.setenv("HTTP_PROXY", proxy.base_url)
    made, _ = loopback_client("http://pay.example.test")
    # Read once, not again for every request: requests would scan the whole environment each time.
    proxy_environment.setenv("HTTP_PROXY", "http://127.0.0.1:9")

    with made:
        got = made.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID)

    assert got.result.status == "PENDING"
    first_line = proxy.requests[0].split(b"\r\n")[0].decode()
    assert (
        first_line
        == f"GET http://pay.example.test/api/v1/communities/{COMMUNITY}/transactions/{TX_UUID}/ HTTP/1.1"
    )


def test_no_proxy_and_the_ca_bundle_of_the_environment_are_honoured(servers, proxy_environment, closed_port):
    server = serve(servers, answer(envelope({"id": 5501, "status": "PENDING"})))
    proxy_environment.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port}")
    proxy_environment.setenv("NO_PROXY", "127.0.0.1")
    proxy_environment.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/our-ca.pem")
    made, _ = loopback_client(server.base_url)

    with made:
        made.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID)

    assert server.requests[0].startswith(f"GET /api/v1/communities/{COMMUNITY}/".encode())
    assert made.session.verify == "/etc/ssl/certs/our-ca.pem"
