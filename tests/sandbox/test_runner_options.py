"""The standalone runner's options that set up a merchant's site, as the quick start starts it: its details
written to a JSON file, and the seeded API payment's redirect and callback URLs set from the command line
(what the service's merchant dashboard does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import requests

RETURN = "http://127.0.0.1:8000/payments/return/"
CALLBACK = "http://127.0.0.1:8000/payments/callback/dev-callback-token-0123456789/"


def test_the_runner_sets_the_api_payment_s_urls_from_the_command_line(tmp_path: Path) -> None:
    info = tmp_path / "sandbox.json"
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    command = [sys.executable, "-m", "django_paycollect.sandbox", "--port", "0", "--quiet"]
    command += ["--db", str(tmp_path / "sandbox.sqlite3"), "--info-file", str(info)]
    command += ["--redirect-url", RETURN, "--callback-url", CALLBACK]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL)  # noqa: S603
    try:
        deadline = time.monotonic() + 60
        while not info.exists():
            assert process.poll() is None, "the sandbox exited"
            assert time.monotonic() < deadline, "the sandbox did not start"
            time.sleep(0.1)
        details = json.loads(info.read_text())
        assert details["variable_amount_id"] == 1
        answer = requests.get(
            f"{details['base_url']}/_control/api-payments/{details['variable_amount_id']}", timeout=10
        )
        payment = answer.json()["data"]
        assert (payment["redirect_url"], payment["callback_url"]) == (RETURN, CALLBACK)
    finally:
        process.terminate()
        process.wait(timeout=15)
