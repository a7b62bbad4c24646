"""Test helpers behind the ``paycollect_sandbox`` fixture; usable without pytest too.

Plain Python on purpose (subprocess, requests, http.server): nothing here imports Django, so projects that
are not Django projects (or whose settings differ) can run the sandbox in their tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

if TYPE_CHECKING:
    import requests

    from django_paycollect.client import PayCollectClient


class SandboxError(RuntimeError):
    """The sandbox could not start, or a control call failed."""


# --- the process -------------------------------------------------------------------------------------


@dataclass
class SandboxProcess:
    """A running standalone sandbox (``python -m django_paycollect.sandbox``) on a free loopback port."""

    info: dict[str, Any]
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def base_url(self) -> str:
        return str(self.info["base_url"])

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_sandbox(
    workdir: Path,
    *,
    callback_retry_delays: str = "0.2,0.5,1",
    prefix: str = "",
    startup_timeout: float = 60.0,
    extra_env: Mapping[str, str] | None = None,
) -> SandboxProcess:
    """Start the standalone runner on a temporary SQLite file and wait until it serves."""
    import django_paycollect

    workdir.mkdir(parents=True, exist_ok=True)
    info_file = workdir / "sandbox.json"
    log_path = workdir / "sandbox.log"
    with contextlib.suppress(FileNotFoundError):
        info_file.unlink()
    env = dict(os.environ)
    package_root = str(Path(django_paycollect.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.update(extra_env or {})
    command = [
        sys.executable,
        "-m",
        "django_paycollect.sandbox",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--db",
        str(workdir / "sandbox.sqlite3"),
        "--info-file",
        str(info_file),
        "--callback-retry-delays",
        callback_retry_delays,
        "--quiet",
    ]
    if prefix:
        command += ["--prefix", prefix]
    log = log_path.open("wb")
    try:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir)  # noqa: S603
    finally:
        log.close()
    deadline = time.monotonic() + startup_timeout
    while not info_file.exists():
        if process.poll() is not None:
            raise SandboxError(f"the sandbox exited with status {process.returncode}:\n{_tail(log_path)}")
        if time.monotonic() > deadline:
            process.kill()
            raise SandboxError(f"the sandbox did not start within {startup_timeout:g} s:\n{_tail(log_path)}")
        time.sleep(0.05)
    info = json.loads(info_file.read_text())
    return SandboxProcess(info=info, process=process, log_path=log_path)


def _tail(path: Path) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-40:])
    except OSError:
        return ""


# --- the control API ------------------------------------------------------------------------------------


class SandboxControl:
    """Small wrapper of ``<base_url>/_control/``; every method returns the envelope's ``data``."""

    def __init__(self, base_url: str, session: requests.Session | None = None) -> None:
        import requests

        self.base_url = base_url.rstrip("/")
        self.session = session or requests.Session()

    def call(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, **params: Any
    ) -> dict[str, Any]:
        response = self.session.request(
            method,
            f"{self.base_url}/_control/{path}",
            data=json.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json"} if body is not None else None,
            params={k: v for k, v in params.items() if v is not None} or None,
            timeout=30,
        )
        try:
            envelope = response.json(parse_float=Decimal)
        except ValueError:
            raise SandboxError(
                f"control {method} {path}: {response.status_code} {response.text[:300]}"
            ) from None
        if not 200 <= response.status_code < 300:
            raise SandboxError(f"control {method} {path}: {response.status_code} {envelope['status']}")
        data: dict[str, Any] = envelope["data"]
        return data

    def reset(self) -> dict[str, Any]:
        return self.call("POST", "reset")

    def complete(self, transaction_uuid: str, outcome: str = "SUCCESSFUL") -> dict[str, Any]:
        """Complete a PENDING transaction (kiosk, or card without the page); returns transaction + sandbox."""
        return self.call("POST", f"transactions/{transaction_uuid}/complete", {"outcome": outcome})

    def transaction(self, transaction_uuid: str) -> dict[str, Any]:
        return self.call("GET", f"transactions/{transaction_uuid}")

    def fail_next_renewals(self, transaction_uuid: str, times: int = 1) -> dict[str, Any]:
        return self.call(
            "POST", f"transactions/{transaction_uuid}/renewal-outcome", {"outcome": "FAILED", "times": times}
        )

    def clock(self) -> str:
        """The sandbox clock, ISO 8601."""
        return str(self.call("GET", "clock")["now"])

    def advance_clock(self, days: int) -> list[str]:
        """Move the sandbox clock; returns the uuids of the renewals that ran."""
        renewals: list[str] = self.call("POST", "clock/advance", {"days": days})["renewals"]
        return renewals

    def fault(
        self,
        operation: str,
        kind: str,
        *,
        status: int | None = None,
        body: str | None = None,
        latency_ms: int = 0,
        times: int | None = 1,
        after_work: bool = False,
    ) -> dict[str, Any]:
        """Inject a fault: kind is status, html, latency, reset or drop_after; times=None until cleared."""
        payload: dict[str, Any] = {
            "operation": operation,
            "kind": kind,
            "latency_ms": latency_ms,
            "times": times,
        }
        if status is not None:
            payload["status"] = status
        if body is not None:
            payload["body"] = body
        if after_work:
            payload["after_work"] = True
        return self.call("POST", "faults", payload)

    def faults(self) -> list[dict[str, Any]]:
        """Faults still waiting to apply."""
        items: list[dict[str, Any]] = self.call("GET", "faults")["faults"]
        return items

    def clear_faults(self) -> None:
        self.call("DELETE", "faults")

    def journal(self, operation: str | None = None) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self.call("GET", "requests", operation=operation)["requests"]
        return entries

    def callbacks(self, transaction_uuid: str | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.call("GET", "callbacks", transaction_uuid=transaction_uuid)[
            "callbacks"
        ]
        return items

    def wait_for_callbacks(
        self,
        *,
        transaction_uuid: str | None = None,
        status: str = "DELIVERED",
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[dict[str, Any]]:
        """Poll the delivery log until ``count`` deliveries have ``status``."""
        deadline = time.monotonic() + timeout
        while True:
            matching = [c for c in self.callbacks(transaction_uuid) if c["status"] == status]
            if len(matching) >= count or time.monotonic() > deadline:
                return matching
            time.sleep(0.05)

    def redeliver(self, callback_id: int) -> dict[str, Any]:
        return self.call("POST", f"callbacks/{callback_id}/redeliver")

    def next_callbacks(
        self, action: str, times: int = 1, delay_seconds: float | None = None
    ) -> list[dict[str, Any]]:
        """Plan the next callbacks: "drop", "duplicate" or "delay" (with delay_seconds)."""
        payload: dict[str, Any] = {"action": action, "times": times}
        if delay_seconds is not None:
            payload["delay_seconds"] = delay_seconds
        plan: list[dict[str, Any]] = self.call("POST", "callbacks/next", payload)["plan"]
        return plan

    def configure_api_payment(
        self, variable_amount_id: int, *, redirect_url: str | None = None, callback_url: str | None = None
    ) -> dict[str, Any]:
        payload = {
            k: v for k, v in (("redirect_url", redirect_url), ("callback_url", callback_url)) if v is not None
        }
        return self.call("POST", f"api-payments/{variable_amount_id}", payload)

    def set_config(
        self,
        *,
        callback_uuid_key: str | None = None,
        callback_retry_delays: Sequence[float] | None = None,
        require_original_amount: bool | None = None,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        if callback_uuid_key is not None:
            payload["callback_uuid_key"] = callback_uuid_key
        if callback_retry_delays is not None:
            payload["callback_retry_delays"] = list(callback_retry_delays)
        if require_original_amount is not None:
            payload["require_original_amount"] = require_original_amount
        return self.call("POST", "config", payload)

    def communities(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.call("GET", "communities")["communities"]
        return items

    def outbox(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.call("GET", "outbox")["messages"]
        return items


# --- the handle given to tests --------------------------------------------------------------------------


@dataclass
class Sandbox:
    """What the ``paycollect_sandbox`` fixture yields: a live, freshly reset sandbox and its credentials."""

    base_url: str
    community_id: str
    api_key: str
    variable_amount_id: int
    basic_username: str
    basic_password: str
    member_variable_amount_id: int | None = None
    control: SandboxControl = field(init=False)
    _clients: list[PayCollectClient] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self.control = SandboxControl(self.base_url)

    def __repr__(self) -> str:
        return f"Sandbox({self.base_url!r}, community_id={self.community_id!r})"

    @classmethod
    def from_identity(cls, identity: Mapping[str, Any]) -> Sandbox:
        return cls(
            base_url=str(identity["base_url"]),
            community_id=str(identity["community_id"]),
            api_key=str(identity["api_key"]),
            variable_amount_id=int(identity["variable_amount_id"]),
            basic_username=str(identity["basic_username"]),
            basic_password=str(identity["basic_password"]),
            member_variable_amount_id=identity.get("member_variable_amount_id"),
        )

    @property
    def basic_credentials(self) -> tuple[str, str]:
        return (self.basic_username, self.basic_password)

    @cached_property
    def client(self) -> PayCollectClient:
        """A PayCollectClient for the seeded community (API key and basic credentials set)."""
        return self.make_client()

    def make_client(self, **kwargs: Any) -> PayCollectClient:
        from django_paycollect.client import PayCollectClient

        options: dict[str, Any] = {
            "api_key": self.api_key,
            "basic_credentials": self.basic_credentials,
            "timeout": (3.05, 15.0),
            "max_network_retries": 2,
        }
        options.update(kwargs)
        client = PayCollectClient(self.base_url, **options)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()
        self.control.session.close()

    def submit_payment_page(
        self,
        url: str,
        action: str = "pay",
        fields: Mapping[str, Any] | None = None,
        pay_using: str | None = None,
        session: requests.Session | None = None,
    ) -> requests.Response:
        """Open a hosted payment page (iframe_url or payment_link) and submit its form like a browser.

        ``fields`` maps custom field labels to values (True/False for checkboxes). The response is returned
        without following redirects: its Location is the merchant's redirect URL with the spec's parameters.
        """
        import requests as requests_module

        browser = session or requests_module.Session()
        page = browser.get(url, timeout=15)
        if page.status_code != 200:
            raise SandboxError(f"payment page answered {page.status_code}")
        form = parse_form(page.text)
        if form is None:
            raise SandboxError("the page has no form to submit (a kiosk payment waits for the control API)")
        data = dict(form.values)
        for label, value in (fields or {}).items():
            name = form.labels.get(label)
            if name is None:
                raise SandboxError(f"no field labelled {label!r} on the page (labels: {sorted(form.labels)})")
            if isinstance(value, bool):
                if value:
                    data[name] = "on"
                else:
                    data.pop(name, None)
            else:
                data[name] = str(value)
        if pay_using is not None:
            data["pay_using"] = pay_using
        data["action"] = action
        return browser.post(urljoin(url, form.action), data=data, allow_redirects=False, timeout=15)


@dataclass
class _Form:
    action: str
    values: dict[str, str]
    labels: dict[str, str]


class _FormParser(HTMLParser):
    """Reads the first POST form of a page: field values as a browser would send them, and label -> name."""

    def __init__(self) -> None:
        super().__init__()
        self.form: _Form | None = None
        self._in_form = False
        self._done = False
        self._select: str | None = None
        self._label_for: str | None = None
        self._label_text: list[str] | None = None
        self._label_inner: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if self._done:
            return
        if tag == "form" and a.get("method", "").lower() == "post" and self.form is None:
            self.form = _Form(action=a.get("action", ""), values={}, labels={})
            self._in_form = True
            return
        if not self._in_form or self.form is None:
            return
        if tag == "label":
            self._label_for = a.get("for")
            self._label_text = []
            self._label_inner = None
        elif tag == "input":
            name = a.get("name")
            kind = a.get("type", "text").lower()
            if self._label_text is not None and name:
                self._label_inner = name
            if not name or kind in ("submit", "button"):
                return
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.form.values[name] = a.get("value") or "on"
            else:
                self.form.values[name] = a.get("value", "")
        elif tag == "select":
            self._select = a.get("name")
        elif tag == "option" and self._select and "selected" in a:
            self.form.values[self._select] = a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self._in_form:
            self._in_form = False
            self._done = True
        elif tag == "select":
            self._select = None
        elif tag == "label" and self._label_text is not None and self.form is not None:
            text = " ".join("".join(self._label_text).split()).removesuffix(" *").removesuffix("*").strip()
            name = self._label_for or self._label_inner
            if name and text:
                self.form.labels[text] = name
            self._label_text = None

    def handle_data(self, data: str) -> None:
        if self._label_text is not None:
            self._label_text.append(data)


def parse_form(html: str) -> _Form | None:
    parser = _FormParser()
    parser.feed(html)
    return parser.form


# --- a callback receiver ------------------------------------------------------------------------------


@dataclass
class ReceivedCallback:
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> Any:
        """The JSON body with exact Decimals (callbacks carry amounts as numbers)."""
        return json.loads(self.raw, parse_float=Decimal)


class CallbackReceiver:
    """A merchant's callback endpoint on a loopback port, in a thread. Answers 200 unless told otherwise."""

    def __init__(self) -> None:
        self.received: list[ReceivedCallback] = []
        self._statuses: list[int] = []
        self._lock = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with receiver._lock:
                    status = receiver._statuses.pop(0) if receiver._statuses else 200
                    if 200 <= status < 300:
                        receiver.received.append(ReceivedCallback(self.path, dict(self.headers.items()), raw))
                    else:
                        receiver.refused += 1
                    receiver._lock.notify_all()
                body = b"ok" if 200 <= status < 300 else b"receiver is failing on purpose"
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.refused = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/callback"

    def fail_next(self, *statuses: int) -> None:
        """Answer these statuses to the next callbacks (in order), then 200 again."""
        with self._lock:
            self._statuses.extend(statuses)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedCallback]:
        """Wait until ``count`` callbacks were accepted; returns them (fewer on timeout)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.received) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._lock.wait(remaining)
            return list(self.received)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def callback_receiver() -> Iterator[CallbackReceiver]:
    receiver = CallbackReceiver()
    try:
        yield receiver
    finally:
        receiver.close()
