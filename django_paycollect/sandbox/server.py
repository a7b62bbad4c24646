"""The standalone runner's HTTP server: Django's threaded WSGI server, plus connection-level faults.

A view asks for a connection fault by setting ``environ["paycollect_sandbox.connection_fault"]``; once the
application has returned (after the work, or before it for a reset), the handler closes the socket with
SO_LINGER 0, so the client gets a TCP reset and no response at all.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
from typing import Any

from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

from .faults import ENVIRON_CONNECTION_FAULT, ENVIRON_SERVER

logger = logging.getLogger(__name__)

ENVIRON_HANDLER = "paycollect_sandbox.handler"


class _ConnectionDropped(ConnectionAbortedError):
    """Raised out of the WSGI application; wsgiref's handler treats it as the client going away."""


class SandboxRequestHandler(WSGIRequestHandler):
    quiet = False

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):
            # wsgiref writes the headers and the body separately; without this, Nagle's algorithm holds
            # the body back until the client acknowledges the headers (a delayed ACK: milliseconds).
            self._socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_environ(self) -> dict[str, Any]:
        environ: dict[str, Any] = super().get_environ()
        environ[ENVIRON_SERVER] = True
        # So the application wrapper can reach this connection's socket.
        environ[ENVIRON_HANDLER] = self
        return environ

    def log_message(self, format: str, *args: Any) -> None:
        if not self.quiet:
            super().log_message(format, *args)

    def _socket(self) -> socket.socket:
        sock: socket.socket = self.connection  # type: ignore[assignment]  # the stubs type it loosely
        return sock

    def abort_connection(self) -> None:
        with contextlib.suppress(OSError):
            # Linger on, timeout 0: close() sends RST instead of FIN and discards anything unsent.
            self._socket().setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            # The read file keeps the descriptor open; both must go for the close to happen now.
            self.rfile.close()
        finally:
            self._socket().close()


class SandboxServer(ThreadedWSGIServer):
    daemon_threads = True
    # Many test clients connect at once; the default backlog (5) drops connections under load.
    request_queue_size = 128

    def set_app(self, application: Any) -> None:
        def app(environ: dict[str, Any], start_response: Any) -> Any:
            result = application(environ, start_response)
            fault = environ.get(ENVIRON_CONNECTION_FAULT)
            if fault:
                # Close Django's response first so request_finished runs (database connections released).
                close = getattr(result, "close", None)
                if close is not None:
                    close()
                handler = environ.get(ENVIRON_HANDLER)
                if isinstance(handler, SandboxRequestHandler):
                    handler.abort_connection()
                raise _ConnectionDropped(f"connection fault: {fault}")
            return result

        super().set_app(app)


def make_server(host: str, port: int, quiet: bool = False) -> SandboxServer:
    handler = type("Handler", (SandboxRequestHandler,), {"quiet": quiet})
    return SandboxServer((host, port), handler, ipv6=":" in host)
