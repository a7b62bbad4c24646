"""Helpers of the tests that start real servers: free loopback ports and the gunicorn command line."""

from __future__ import annotations

import socket
import sys


def free_port() -> int:
    """A loopback port nothing listens on (free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def gunicorn_command(app: str, port: int, *options: str) -> list[str]:
    """``python -m gunicorn <app>`` on ``127.0.0.1:<port>``. Recent gunicorns open a control socket at one
    path per user; several servers at once (tests, other runs on the machine) must not share it."""
    from gunicorn.config import Config

    command = [sys.executable, "-m", "gunicorn", app, "-b", f"127.0.0.1:{port}", *options]
    if "control_socket_disable" in Config().settings:
        command.append("--no-control-socket")
    return command
