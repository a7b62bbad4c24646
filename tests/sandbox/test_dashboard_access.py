"""The sandbox dashboard is never open by accident: off with DEBUG off unless asked, then for staff only;
nobody but staff sees a secret on it; a system check reports it reachable with DEBUG off; the example
project turns it on only where its control API may be on."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client
from pytest_django.fixtures import Settings

from django_paycollect.sandbox import seed
from django_paycollect.sandbox.journal import mask_url
from django_paycollect.sandbox.models import ApiPayment, MerchantInboxItem
from django_paycollect.sandbox.testing import Sandbox
from tests.example_project import run_example

from .test_control_api_check import MOUNTED, sandbox_checks

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.sandbox.urls")]

TOKEN = "merchant-callback-token-5f0c9e2a7b1d4c3e"
CALLBACK_URL = f"https://merchant.example/paycollect/callback/{TOKEN}/?order=7"
#: Every page of the dashboard a browser opens.
PAGES = ["/sandbox/_sandbox/", "/sandbox/_sandbox/outbox/", "/sandbox/_sandbox/journal/"]
INBOX = "/sandbox/_sandbox/merchant/callback/"


@pytest.fixture
def identity(settings: Settings) -> dict[str, Any]:
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False}
    identity = seed.seed(None, "http://testserver/sandbox")
    ApiPayment.objects.filter(pk=identity["variable_amount_id"]).update(callback_url=CALLBACK_URL)
    return identity


def secrets_of(identity: dict[str, Any]) -> list[str]:
    return [identity["api_key"], identity["basic_password"], TOKEN]


def settings_form(identity: dict[str, Any], **changes: str) -> tuple[str, dict[str, str]]:
    pk = identity["variable_amount_id"]
    return f"/sandbox/_sandbox/api-payments/{pk}/", {
        "redirect_url": "https://merchant.example/return",
        "callback_url": "https://attacker.example/c",
        **changes,
    }


def test_with_debug_off_the_dashboard_is_off_unless_the_settings_ask(
    client: Client, admin_client: Client, identity: dict[str, Any]
) -> None:
    for browser in (client, admin_client):
        for path in [*PAGES, INBOX]:
            assert browser.get(path).status_code == 404, path
        path, form = settings_form(identity)
        assert browser.post(path, form).status_code == 404
        assert browser.post(INBOX, b"{}", content_type="application/json").status_code == 404
    assert ApiPayment.objects.get(pk=identity["variable_amount_id"]).callback_url == CALLBACK_URL


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "not-staff"])
def test_with_debug_off_visitors_who_are_not_staff_are_refused(
    client: Client, identity: dict[str, Any], settings: Settings, signed_in: bool
) -> None:
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "DASHBOARD": True}
    if signed_in:
        client.force_login(get_user_model().objects.create_user("member", password="member-password-123"))
    for path in [*PAGES, INBOX]:
        refused = client.get(path)
        assert refused.status_code == 403, path
        page = refused.content.decode()
        assert "The sandbox dashboard is for staff" in page
        assert f'href="/admin/login/?next={path.replace("/", "%2F")}"' in page
        for secret in secrets_of(identity):
            assert secret not in page

    path, form = settings_form(identity)
    assert client.post(path, form).status_code == 403
    assert ApiPayment.objects.get(pk=identity["variable_amount_id"]).callback_url == CALLBACK_URL


def test_staff_see_the_credentials_in_full_and_save_the_urls(
    admin_client: Client, identity: dict[str, Any], settings: Settings
) -> None:
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "DASHBOARD": True}
    page = admin_client.get("/sandbox/_sandbox/").content.decode()
    # What a developer copies into PAYCOLLECT: the key, the basic credentials; and the callback URL as set.
    assert identity["api_key"] in page
    assert f"{identity['basic_username']}:{identity['basic_password']}" in page
    assert f'value="{CALLBACK_URL.replace("&", "&amp;")}"' in page
    assert 'id="secrets-hidden"' not in page
    for path in [*PAGES[1:], INBOX]:
        assert admin_client.get(path).status_code == 200, path

    path, form = settings_form(identity, callback_url="https://merchant.example/new")
    assert admin_client.post(path, form).status_code == 302
    assert (
        ApiPayment.objects.get(pk=identity["variable_amount_id"]).callback_url
        == "https://merchant.example/new"
    )


def test_with_debug_on_anyone_may_use_it_but_only_staff_see_secrets(
    client: Client, identity: dict[str, Any], settings: Settings
) -> None:
    settings.DEBUG = True  # DASHBOARD left unset: on with DEBUG
    page = client.get("/sandbox/_sandbox/").content.decode()
    for secret in secrets_of(identity):
        assert secret not in page
    assert 'id="secrets-hidden"' in page
    assert identity["basic_username"] in page  # a name, not a secret
    masked = mask_url(CALLBACK_URL)
    assert masked == "https://merchant.example/[redacted]"
    assert f'value="{masked}"' in page

    # The form sent back as shown (only the redirect URL changed) keeps the callback URL it never showed.
    path, form = settings_form(identity, callback_url=masked)
    assert client.post(path, form).status_code == 302
    api_payment = ApiPayment.objects.get(pk=identity["variable_amount_id"])
    assert (api_payment.redirect_url, api_payment.callback_url) == (
        "https://merchant.example/return",
        CALLBACK_URL,
    )


def test_the_demo_merchant_takes_callbacks_and_customers_without_a_login(
    client: Client, identity: dict[str, Any], settings: Settings
) -> None:
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "DASHBOARD": True}
    # The sandbox's own callbacks, and the customers it redirects, arrive without logging in.
    assert (
        client.post(
            INBOX, b'{"transaction_status": "SUCCESSFUL"}', content_type="application/json"
        ).status_code
        == 200
    )
    assert MerchantInboxItem.objects.count() == 1
    assert client.get("/sandbox/_sandbox/merchant/return/?transaction_status=SUCCESSFUL").status_code == 200
    # What came in is the dashboard's to show: staff only.
    assert client.get(INBOX).status_code == 403


@pytest.mark.parametrize(
    ("debug", "sandbox", "urls", "expected"),
    [
        (False, {}, MOUNTED, []),  # off with DEBUG off unless asked
        (False, {"DASHBOARD": True}, MOUNTED, ["paycollect_sandbox.W002"]),
        (
            False,
            {"DASHBOARD": True, "STAGING": True},
            MOUNTED,
            [],
        ),  # staff only on an acknowledged staging site
        (False, {"DASHBOARD": True, "DASHBOARD_PUBLIC": True}, MOUNTED, ["paycollect_sandbox.E002"]),
        (
            False,
            {"DASHBOARD": True, "DASHBOARD_PUBLIC": True, "STAGING": True},
            MOUNTED,
            ["paycollect_sandbox.W003"],
        ),
        (False, {"DASHBOARD": False, "DASHBOARD_PUBLIC": True}, MOUNTED, []),
        (True, {"DASHBOARD": True, "DASHBOARD_PUBLIC": True}, MOUNTED, []),
        (False, {"DASHBOARD": True}, {"ROOT_URLCONF": "tests.urls"}, []),  # not mounted: not reachable
    ],
)
def test_a_dashboard_reachable_without_debug_is_reported(
    debug: bool, sandbox: dict[str, Any], urls: dict[str, str], expected: list[str]
) -> None:
    assert sandbox_checks(DEBUG=debug, PAYCOLLECT_SANDBOX=sandbox, **urls) == expected


#: Run in the example project: what its dashboard answers a visitor who is not logged in.
ASK_DASHBOARD = """
import django, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
django.setup()
from django.test import Client
print(Client(HTTP_HOST="127.0.0.1").get("/sandbox/_sandbox/").status_code)
"""


def test_the_example_turns_the_dashboard_on_only_where_the_control_api_may_be_on(tmp_path: Any) -> None:
    never = {"CLUBSITE_DB": str(tmp_path / "never.sqlite3")}
    live_like = run_example("-c", ASK_DASHBOARD, CLUBSITE_DEBUG="0", **never)
    assert live_like.stdout.strip() == "404", live_like.stderr
    staging = run_example("-c", ASK_DASHBOARD, CLUBSITE_DEBUG="0", CLUBSITE_SANDBOX_CONTROL_API="1", **never)
    assert staging.stdout.strip() == "403", staging.stderr  # on, for staff only
    checked = run_example(
        "example_project/manage.py", "check", CLUBSITE_DEBUG="0", CLUBSITE_SANDBOX_CONTROL_API="1"
    )
    assert checked.returncode == 0, checked.stderr
    assert "paycollect_sandbox.W002" not in checked.stdout + checked.stderr  # acknowledged as staging


def test_the_runners_dashboard_is_open_on_its_loopback_port_with_its_secrets_hidden(
    paycollect_sandbox: Sandbox,
) -> None:
    """The standalone runner has no users: whoever reaches it uses the dashboard, secrets hidden (its banner
    and its control API hand the credentials out)."""
    page = requests.get(f"{paycollect_sandbox.base_url}/_sandbox/", timeout=10)
    assert page.status_code == 200
    assert 'id="secrets-hidden"' in page.text
    assert paycollect_sandbox.api_key not in page.text
    assert paycollect_sandbox.basic_password not in page.text
