"""The example project logs a server error's traceback with DEBUG off, and never a secret: the callback URL's
path holds its token, and Django writes paths (a 500's "Internal Server Error: <path>", runserver's request
lines)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from django.test import override_settings

from django_paycollect.client.redaction import REDACTED
from django_paycollect.models import Community
from django_paycollect.secrecy import SecretsLogFilter, our_secrets
from tests.example_project import run_example

TOKEN = "a-callback-token-of-the-site-7f3c9b"

FAIL_A_CALLBACK = """
import logging, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
import django
django.setup()
from django.test import Client
from django_paycollect.intake import receive

token = os.environ["PAYCOLLECT_CALLBACK_TOKENS"]

def broken(offered):
    raise RuntimeError(f"the token check broke on {offered}")

receive.match_token = broken
client = Client(HTTP_HOST="127.0.0.1", raise_request_exception=False)
answer = client.post(f"/payments/callback/{token}/", data="{}", content_type="application/json")
print("status", answer.status_code)
# What runserver writes for each request (django.core.servers.basehttp.WSGIRequestHandler.log_message).
line = f"POST /payments/callback/{token}/ HTTP/1.1"
logging.getLogger("django.server").info('"%s" %s %s', line, "200", "17")
"""


def test_with_debug_off_a_500_is_logged_with_its_traceback_and_without_the_token(tmp_path):
    done = run_example(
        "-c",
        FAIL_A_CALLBACK,
        CLUBSITE_DEBUG="0",
        CLUBSITE_SANDBOX="0",
        CLUBSITE_DB=str(tmp_path / "site.sqlite3"),
        PAYCOLLECT_CALLBACK_TOKENS=TOKEN,
    )
    assert done.returncode == 0, done.stderr
    assert "status 500" in done.stdout
    log = done.stderr
    assert f"ERROR django.request: Internal Server Error: /payments/callback/{REDACTED}/" in log, log
    assert "Traceback (most recent call last)" in log
    assert f"RuntimeError: the token check broke on {REDACTED}" in log
    assert f'INFO django.server: "POST /payments/callback/{REDACTED}/ HTTP/1.1" 200 17' in log
    assert TOKEN not in log + done.stdout


def filtered(log: Callable[[logging.Logger], None]) -> str:
    """What a handler with the filter writes of the records ``log`` makes."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep()
    handler.addFilter(SecretsLogFilter())
    logger = logging.getLogger("tests.secrets_filter")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        log(logger)
    finally:
        logger.removeHandler(handler)
    return "\n".join(records)


@override_settings(PAYCOLLECT={"CALLBACK_TOKENS": [TOKEN], "CALLBACK_SECRET": "echoed-secret-42"})
def test_the_filter_scrubs_messages_arguments_tracebacks_and_urls_with_passwords():
    def log(logger: logging.Logger) -> None:
        logger.warning("callback to %s refused", f"/paycollect/callback/{TOKEN}/")
        logger.warning("echoed %(secret)s", {"secret": "echoed-secret-42"})
        try:
            raise ConnectionError(f"redis://:broker-password@127.0.0.1:6379/0 down ({TOKEN})")
        except ConnectionError:
            logger.exception("publishing failed")
        logger.warning("nothing secret here: %s", 42)

    text = filtered(log)
    assert TOKEN not in text
    assert "echoed-secret-42" not in text
    assert "broker-password" not in text
    assert f"callback to /paycollect/callback/{REDACTED}/ refused" in text
    assert f"ConnectionError: redis://***@127.0.0.1:6379/0 down ({REDACTED})" in text
    assert "nothing secret here: 42" in text


@pytest.mark.django_db
def test_the_filter_scrubs_the_keys_of_the_default_and_the_stored_communities(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASIC_CREDENTIALS": "club:basic-password-42"}
    community = Community(community_id="community-2")
    community.api_key = "stored-key-0123456789"
    community.save()
    our_secrets()  # as the process's first callback or call reads them (a log record never queries)
    api_key = settings.PAYCOLLECT["API_KEY"]
    text = filtered(
        lambda logger: logger.warning(
            "sent %s, %s and %s", api_key, "stored-key-0123456789", "basic-password-42"
        )
    )
    assert text == f"sent {REDACTED}, {REDACTED} and {REDACTED}"
