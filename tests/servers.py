"""Helpers of the tests that start real servers: free loopback ports, the gunicorn command line and the
test project served by gunicorn."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

ROOT = Path(__file__).resolve().parents[1]


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


@contextmanager
def served_test_project(
    directory: Path, *, workers: int, paycollect: dict[str, Any], migrate: bool = True
) -> Iterator[str]:
    """The test project (``tests.wsgi``) in gunicorn with ``workers`` processes on ``directory``'s
    ``site.sqlite3``, ``PAYCOLLECT`` as given; its URL once it answers. ``migrate=False``: the file is a
    copy of a migrated database already."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "PAYCOLLECT_TEST_POSTGRES", "PROMETHEUS_MULTIPROC_DIR"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="tests.served_settings",
        PAYCOLLECT_SERVED_DB=str(directory / "site.sqlite3"),
        PAYCOLLECT_SERVED_PAYCOLLECT=json.dumps(paycollect),
        PYTHONPATH=str(ROOT),
    )
    if migrate:
        command = [sys.executable, "-m", "django", "migrate", "--noinput", "--skip-checks", "-v", "0"]
        subprocess.run(command, cwd=ROOT, env=env, check=True)  # noqa: S603
    with gunicorn_serving(
        "tests.wsgi:application",
        "-w",
        str(workers),
        cwd=ROOT,
        env=env,
        log=directory / "gunicorn.log",
        probe="/paycollect/return/status/",
    ) as url:
        yield url


@contextmanager
def gunicorn_serving(
    app: str, *options: str, cwd: Path, env: dict[str, str], log: Path, probe: str
) -> Iterator[str]:
    """``app`` in gunicorn on a free port, its output in ``log``; its URL once ``probe`` answers at all, and
    the server stopped after."""
    port = free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(  # noqa: S603 (our own projects)
            gunicorn_command(app, port, *options), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(f"{url}{probe}", timeout=10)
                break
            except requests.RequestException:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"gunicorn did not start:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
