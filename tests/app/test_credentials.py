"""Credentials that say what to fix (issue 33): the service's refusal of an API key, basic credentials or a
community (HTTP 401/403) names the setting, or the Community row in the admin, and the community, never the
secret; the REST API answers it as a 503 and logs the words; the admin shows them; and
``paycollect_check_credentials`` tries each configured community's credentials with a harmless read.

Against the sandbox served in this process, with wrong and right credentials."""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import CommandError, call_command
from django.utils import translation

from django_paycollect import services
from django_paycollect.exceptions import CredentialsRefused, describe_error
from django_paycollect.models import ApiCall, Community
from django_paycollect.sandbox import seed
from tests.support.admin import post_action, text_of
from tests.support.payments import complete

pytestmark = pytest.mark.django_db(transaction=True)

WRONG_KEY = "sbx_wrong-key-0123456789abcdef"


def configured(settings, **changes):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, **changes}


def refusal(call) -> CredentialsRefused:
    with pytest.raises(CredentialsRefused) as caught:
        call()
    return caught.value


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text


def test_a_refused_settings_key_names_the_setting_and_the_community(paycollect_in_process, settings, pay):
    configured(settings, API_KEY=WRONG_KEY)
    refused = refusal(lambda: pay("10.00"))
    text = str(refused)
    assert 'PAYCOLLECT["API_KEY"]' in text
    assert repr(paycollect_in_process.community_id) in text
    assert "HTTP 401" in text
    assert_no_secret(text, WRONG_KEY, paycollect_in_process.api_key)
    assert refused.source == "settings"
    # The record people read later (a callback's error, a finding) says the same, in English.
    assert 'PAYCOLLECT["API_KEY"]' in describe_error(refused)
    assert_no_secret(describe_error(refused), WRONG_KEY)


def test_a_key_of_another_community_names_the_community_setting(paycollect_in_process, settings, pay):
    other, _payment = seed.create_community(name="Other club", community_id="other-club")
    configured(settings, API_KEY=other.api_key)  # a real key, of another community
    refused = refusal(lambda: pay("10.00"))
    assert "HTTP 403" in str(refused)
    assert 'PAYCOLLECT["COMMUNITY_ID"]' in str(refused)
    assert repr(paycollect_in_process.community_id) in str(refused)
    assert_no_secret(str(refused), other.api_key)


def test_refused_basic_credentials_name_their_setting(paycollect_in_process, settings):
    configured(settings, BASIC_CREDENTIALS=("sandbox-user", "not-the-password"))
    refused = refusal(lambda: services.fetch_statistics())
    assert 'PAYCOLLECT["BASIC_CREDENTIALS"]' in str(refused)
    assert_no_secret(str(refused), "not-the-password", paycollect_in_process.basic_password)


def test_a_refused_community_rows_key_names_the_row_in_the_admin(paycollect_in_process, settings, pay):
    row = Community(
        community_id=paycollect_in_process.community_id,
        name="Club",
        variable_amount_id=paycollect_in_process.variable_amount_id,
    )
    row.api_key = WRONG_KEY
    row.save()
    refused = refusal(lambda: pay("10.00"))
    text = str(refused)
    assert "Communities" in text
    assert "admin" in text
    assert 'PAYCOLLECT["API_KEY"]' not in text
    assert refused.source == "community"
    assert_no_secret(text, WRONG_KEY)


def test_the_admin_shows_what_to_fix(paycollect_in_process, settings, pay, admin_client):
    txn = complete(paycollect_in_process, pay("100.00"))
    configured(settings, API_KEY=WRONG_KEY)
    response = post_action(admin_client, "transaction", "capture", [txn])
    shown = (
        text_of(admin_client.get(response["Location"])) if response.status_code == 302 else text_of(response)
    )
    assert 'PAYCOLLECT["API_KEY"]' in shown, shown[:2000]
    assert_no_secret(shown, WRONG_KEY)


# --- the command -------------------------------------------------------------------------------------


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("paycollect_check_credentials", *args, stdout=out)
    return out.getvalue()


def test_the_command_says_the_configured_credentials_work(paycollect_in_process):
    out = command()
    assert paycollect_in_process.community_id in out
    assert "API key: accepted" in out
    assert "basic credentials: accepted" in out
    assert_no_secret(out, paycollect_in_process.api_key, paycollect_in_process.basic_password)
    # A read that changes nothing: only the two reads were sent.
    assert set(ApiCall.objects.values_list("operation", flat=True)) == {
        "get_transaction",
        "dashboard_statistics",
    }


def run(*args: str) -> tuple[str, CommandError | None]:
    out = io.StringIO()
    try:
        call_command("paycollect_check_credentials", *args, stdout=out)
    except CommandError as error:
        return out.getvalue(), error
    return out.getvalue(), None


def test_the_command_says_which_community_is_refused_and_what_to_fix(paycollect_in_process, settings):
    other, _payment = seed.create_community(name="Other club", community_id="other-club")
    good = Community(community_id="other-club", name="Other club")
    good.api_key = other.api_key
    good.basic_credentials = f"{other.basic_username}:{other.basic_password}"
    good.save()
    broken = Community(community_id="third-club", name="Third club")
    broken.api_key = WRONG_KEY
    broken.save()
    configured(settings, BASIC_CREDENTIALS="someone:wrong-password")
    out, error = run()
    assert error is not None
    assert "2 of 3 communities" in str(error)
    lines = {line.split(":", 1)[0]: line for line in out.splitlines() if not line.startswith(" ")}
    assert "API key: accepted; basic credentials: refused" in lines[paycollect_in_process.community_id]
    assert "API key: accepted; basic credentials: accepted" in lines["other-club"]
    assert "API key: refused; basic credentials: not tried" in lines["third-club"]
    # What to fix, under each refused community.
    assert 'PAYCOLLECT["BASIC_CREDENTIALS"]' in out
    assert "Communities, 'third-club'" in out
    assert_no_secret(out, WRONG_KEY, "wrong-password", other.api_key, other.basic_password)


def test_the_command_can_try_one_community(paycollect_in_process, settings):
    configured(settings, API_KEY=WRONG_KEY)
    out, error = run("--community", paycollect_in_process.community_id)
    assert error is not None
    assert "1 of 1" in str(error)
    assert "API key: refused" in out
    assert 'PAYCOLLECT["API_KEY"]' in out
    out, error = run("--community", "nobody")
    assert error is not None
    assert "nobody: not configured" in out


# --- the REST API -------------------------------------------------------------------------------------


@pytest.fixture
def api_mounted(settings):
    settings.ROOT_URLCONF = "tests.api.urls"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "PAYABLE_RESOLVER": "tests.api.payables.resolve"}


def test_the_api_answers_refused_credentials_with_a_503_and_logs_what_to_fix(
    paycollect_in_process, settings, api_mounted, client, django_user_model, caplog
):
    configured(settings, API_KEY=WRONG_KEY, PAYABLE_RESOLVER="tests.api.payables.resolve")
    owner = django_user_model.objects.create_user("owner", "owner@example.com", first_name="Owner")
    owner.last_name = "Tester"
    owner.save()
    client.force_login(owner)
    with caplog.at_level(logging.ERROR, logger="django_paycollect.api"):
        answer = client.post("/api/payments/", {"reference": "book"}, content_type="application/json")
    assert answer.status_code == 503, answer.content
    assert answer.json()["code"] == "configuration"
    assert_no_secret(answer.content.decode(), WRONG_KEY, "API_KEY")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert 'PAYCOLLECT["API_KEY"]' in logged
    assert repr(paycollect_in_process.community_id) in logged
    assert_no_secret(logged, WRONG_KEY)


def test_the_words_are_read_in_the_readers_language_and_recorded_in_english(
    paycollect_in_process, settings, pay
):
    configured(settings, API_KEY=WRONG_KEY)
    refused = refusal(lambda: pay("10.00"))
    with translation.override("ar"):
        shown = str(refused)
        recorded = describe_error(refused)
    assert "رفضت خدمة الدفع" in shown
    assert 'PAYCOLLECT["API_KEY"]' in shown
    assert recorded.startswith("CredentialsRefused: The payment service refused")
