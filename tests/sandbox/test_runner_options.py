"""The standalone runner's options that set up a merchant's site, as the quick start starts it: its details
written to a JSON file, and the seeded API payment's redirect and callback URLs set from the command line
(what the service's merchant dashboard does), kept by ``_control/reset`` (a test's fixture resets the sandbox
before each test: it must still send its callbacks to the site)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests

RETURN = "http://127.0.0.1:8000/payments/return/"
CALLBACK = "http://127.0.0.1:8000/payments/callback/dev-callback-token-0123456789/"


def start_runner(tmp_path: Path, *options: str) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """The runner on a free port with ``options``; its details once it serves."""
    info = tmp_path / "sandbox.json"
    info.unlink(missing_ok=True)  # a former run's
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    command = [sys.executable, "-m", "django_paycollect.sandbox", "--port", "0", "--quiet"]
    command += ["--db", str(tmp_path / "sandbox.sqlite3"), "--info-file", str(info), *options]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL)  # noqa: S603
    deadline = time.monotonic() + 60
    while not info.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError("the sandbox did not start")
        time.sleep(0.1)
    return process, json.loads(info.read_text())


def urls(details: dict[str, Any]) -> tuple[str, str]:
    """The seeded API payment's redirect and callback URLs, as the control API reads them."""
    answer = requests.get(
        f"{details['base_url']}/_control/api-payments/{details['variable_amount_id']}", timeout=10
    )
    payment = answer.json()["data"]
    return payment["redirect_url"], payment["callback_url"]


def reset(details: dict[str, Any]) -> None:
    requests.post(f"{details['base_url']}/_control/reset", timeout=30).raise_for_status()


def test_the_runner_sets_the_api_payment_s_urls_from_the_command_line_and_a_reset_keeps_them(
    tmp_path: Path,
) -> None:
    process, details = start_runner(tmp_path, "--redirect-url", RETURN, "--callback-url", CALLBACK)
    try:
        assert details["variable_amount_id"] == 1
        assert urls(details) == (RETURN, CALLBACK)
        reset(details)
        assert urls(details) == (RETURN, CALLBACK)
        reset(details)
        assert urls(details) == (RETURN, CALLBACK)
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_without_the_options_a_reset_points_the_api_payment_at_the_demo_merchant(tmp_path: Path) -> None:
    process, details = start_runner(tmp_path, "--callback-url", CALLBACK)
    process.terminate()
    process.wait(timeout=15)
    # Started again without the option: the URLs it was started with this time are the demo merchant's.
    process, details = start_runner(tmp_path)
    try:
        reset(details)
        base = details["base_url"]
        assert urls(details) == (f"{base}/_sandbox/merchant/return/", f"{base}/_sandbox/merchant/callback/")
    finally:
        process.terminate()
        process.wait(timeout=15)
