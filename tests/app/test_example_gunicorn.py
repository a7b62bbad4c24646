"""The callback token stays out of gunicorn's access log: the example project's gunicorn.conf.py writes a
callback's path with the token replaced (``redact_callback_path``), and still logs the request.

gunicorn runs the example project as the deployment docs say (``-c gunicorn.conf.py``, DEBUG off), on an
SQLite file; the service is a closed port (the callbacks are stored; their verification fails at once).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from django_paycollect.client.redaction import REDACTED
from django_paycollect.intake.receive import redact_callback_path
from tests.example_project import ROOT
from tests.servers import free_port, gunicorn_serving
from tests.support.payments import CALLBACK_TOKEN

EXAMPLE = ROOT / "example_project"
TOKEN = "the-club-s-callback-token-1d9e4b7a"
UUID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (f"/paycollect/callback/{CALLBACK_TOKEN}/", f"/paycollect/callback/{REDACTED}/"),
        (f"/paycollect/callback/{CALLBACK_TOKEN}", f"/paycollect/callback/{REDACTED}"),
        ("/paycollect/callback/a-wrong-guess/?x=1", f"/paycollect/callback/{REDACTED}/?x=1"),
        ("/paycollect/callback/%74%65st-token/", f"/paycollect/callback/{REDACTED}/"),  # percent-encoded
        ("/paycollect/return/?transaction_uuid=1", "/paycollect/return/?transaction_uuid=1"),
        ("/paycollect/callback/", "/paycollect/callback/"),
        ("/no-such-page/callback/x/", "/no-such-page/callback/x/"),
        ("*", "*"),
        ("", ""),
    ],
)
def test_redact_callback_path_replaces_the_token_of_a_callback_url_only(path, expected):
    assert redact_callback_path(path) == expected


@dataclass
class Served:
    url: str
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, times: int = 1) -> str:
        """The log, once ``needle`` is in it ``times`` times."""
        deadline = time.monotonic() + 30
        while self.text().count(needle) < times:
            if time.monotonic() > deadline:
                pytest.fail(f"{needle!r} not logged {times} times:\n{self.text()[-3000:]}")
            time.sleep(0.1)
        return self.text()


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory: pytest.TempPathFactory, example_migrated: Path) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("example-gunicorn")
    environ = {
        "CLUBSITE_DEBUG": "0",
        "CLUBSITE_SANDBOX": "0",
        "CLUBSITE_DB": str(directory / "site.sqlite3"),
        "PAYCOLLECT_BASE_URL": f"http://127.0.0.1:{free_port()}",
        "PAYCOLLECT_CALLBACK_TOKENS": TOKEN,
    }
    shutil.copyfile(example_migrated, environ["CLUBSITE_DB"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYCOLLECT_", "CLUBSITE_", "DJANGO_"))}
    env.update(environ, CLUBSITE_SECRET_KEY="example-check-only-not-secret-0123456789")
    log = directory / "gunicorn.log"
    # The deployment docs' command, with a free port and one worker.
    with gunicorn_serving(
        "clubsite.wsgi",
        "-c",
        "gunicorn.conf.py",
        "-w",
        "1",
        cwd=EXAMPLE,
        env=env,
        log=log,
        probe="/no-such-page/",
    ) as url:
        yield Served(url, log)


def callback(served: Served, path: str) -> requests.Response:
    return requests.post(
        f"{served.url}{path}",
        json={"transaction_uuid": UUID, "transaction_status": "SUCCESSFUL"},
        timeout=30,
    )


def test_a_callback_is_logged_by_gunicorn_without_its_token(gunicorn):
    assert callback(gunicorn, f"/payments/callback/{TOKEN}/").status_code == 200
    assert callback(gunicorn, f"/payments/callback/{TOKEN}").status_code == 200
    # The same token with its letters percent-encoded: Django decodes the path, gunicorn logs it as sent.
    encoded = "".join(f"%{ord(c):02X}" if c.isalpha() else c for c in TOKEN)
    assert callback(gunicorn, f"/payments/callback/{encoded}/").status_code == 200
    assert callback(gunicorn, "/payments/callback/a-wrong-guess/").status_code == 404

    log = gunicorn.wait_for('"POST /payments/callback/', times=4)  # the access log's four lines
    assert TOKEN not in log
    assert f'"POST /payments/callback/{REDACTED}/ HTTP/1.1" 404' in log
    assert log.count(f'"POST /payments/callback/{REDACTED}/ HTTP/1.1" 200') == 2, log
    assert f'"POST /payments/callback/{REDACTED} HTTP/1.1" 200' in log
    assert encoded not in log
    assert "a-wrong-guess" not in log


def test_other_requests_are_logged_as_they_were(gunicorn):
    requests.get(f"{gunicorn.url}/join/?plan=family", timeout=30)
    log = gunicorn.wait_for('"GET /join/?plan=family HTTP/1.1" 200')
    assert "/no-such-page/" in log
