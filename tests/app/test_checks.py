"""System checks and the lazily read PAYCOLLECT setting."""

from decimal import Decimal

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from django_paycollect import crypto
from django_paycollect.conf import DEFAULTS, paycollect_settings
from django_paycollect.exceptions import PayCollectConfigurationError
from django_paycollect.models import Community

GOOD = {
    "BASE_URL": "https://service.example",
    "COMMUNITY_ID": "c-1",
    "API_KEY": "key-0123456789",
    "CALLBACK_TOKENS": ["a-long-random-callback-token-1"],
}


def ids(**settings):
    # databases=[]: no check opens a connection here (Django 6.1 gives model checks every alias by default).
    with override_settings(**settings):
        return sorted(
            m.id
            for m in run_checks(include_deployment_checks=False, databases=[])
            if m.id.startswith("paycollect.")
        )


def test_a_complete_configuration_passes():
    assert ids(PAYCOLLECT=GOOD, DEBUG=False) == []


@pytest.mark.parametrize(
    ("missing", "check_id"),
    [("BASE_URL", "paycollect.E001"), ("API_KEY", "paycollect.E002"), ("COMMUNITY_ID", "paycollect.E003")],
)
def test_missing_required_keys_are_errors(missing, check_id):
    settings = {k: v for k, v in GOOD.items() if k != missing}
    assert check_id in ids(PAYCOLLECT=settings)


def test_plain_http_is_an_error_only_when_debug_is_off():
    settings = {**GOOD, "BASE_URL": "http://service.example"}
    assert "paycollect.E004" in ids(PAYCOLLECT=settings, DEBUG=False)
    assert "paycollect.E004" not in ids(PAYCOLLECT=settings, DEBUG=True)


def test_sandbox_base_url_warns_when_debug_is_off():
    settings = {**GOOD, "BASE_URL": "http://127.0.0.1:8001/sandbox"}
    assert "paycollect.W001" in ids(PAYCOLLECT=settings, DEBUG=False, SILENCED_SYSTEM_CHECKS=[])
    assert "paycollect.W001" not in ids(PAYCOLLECT=settings, DEBUG=True, SILENCED_SYSTEM_CHECKS=[])


def test_no_callback_token_and_short_tokens_warn():
    assert "paycollect.W002" in ids(PAYCOLLECT={**GOOD, "CALLBACK_TOKENS": []})
    assert "paycollect.W003" in ids(PAYCOLLECT={**GOOD, "CALLBACK_TOKENS": ["short"]})


def test_unknown_keys_are_an_error_and_attribute_access_suggests_the_right_one():
    assert "paycollect.E006" in ids(PAYCOLLECT={**GOOD, "API_KYE": "x"})
    with override_settings(PAYCOLLECT=GOOD), pytest.raises(AttributeError, match="did you mean API_KEY"):
        paycollect_settings.API_KYE  # noqa: B018


def test_settings_are_read_lazily_so_override_settings_works():
    with override_settings(PAYCOLLECT={**GOOD, "TIMEOUT": (1, 2)}):
        assert paycollect_settings.TIMEOUT == (1, 2)
    with override_settings(PAYCOLLECT=GOOD):
        assert paycollect_settings.TIMEOUT == (5.0, 30.0)
        with pytest.raises(PayCollectConfigurationError, match="VARIABLE_AMOUNT_ID"):
            paycollect_settings.require("VARIABLE_AMOUNT_ID")


@pytest.mark.django_db
def test_undecryptable_stored_keys_are_an_error():
    with override_settings(PAYCOLLECT={**GOOD, "ENCRYPTION_KEYS": ["key-that-will-be-lost"]}):
        community = Community(community_id="c-2")
        community.api_key = "stored-key-0123456789"
        community.save()
    with override_settings(PAYCOLLECT={**GOOD, "ENCRYPTION_KEYS": ["another-key"]}):
        messages = run_checks(databases=["default"])
        assert "paycollect.E005" in [m.id for m in messages]
        with pytest.raises(crypto.DecryptionError):
            Community.objects.get().api_key  # noqa: B018


def test_trusted_proxies_are_checked():
    assert "paycollect.E008" in ids(PAYCOLLECT={**GOOD, "TRUSTED_PROXIES": ["not-an-ip"]})
    assert "paycollect.W004" in ids(PAYCOLLECT={**GOOD, "TRUSTED_PROXIES": ["0.0.0.0/0"]})
    assert ids(PAYCOLLECT={**GOOD, "TRUSTED_PROXIES": ["10.0.0.0/8", "::1"]}) == []


def test_a_text_where_a_list_may_be_given_is_one_entry_not_its_letters():
    """Checked as the app reads it: a token of one text is that token, a proxy of one text that network."""
    assert ids(PAYCOLLECT={**GOOD, "CALLBACK_TOKENS": "a-long-random-callback-token-1"}) == []
    assert ids(PAYCOLLECT={**GOOD, "TRUSTED_PROXIES": "10.0.0.0/8"}) == []
    with override_settings(PAYCOLLECT={**GOOD, "TRUSTED_PROXIES": "10.0.0.0/8", "CALLBACK_SECRET": "s3cret"}):
        assert [str(n) for n in paycollect_settings.trusted_proxies()] == ["10.0.0.0/8"]
        assert paycollect_settings.texts("CALLBACK_SECRET") == ("s3cret",)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("MAX_CALLBACK_BYTES", "64k"),
        ("MAX_NETWORK_RETRIES", -1),
        ("RETURN_FETCH_INTERVAL", "3s"),
        ("TIMEOUT", 30),
        ("RETURN_TIMEOUT", (2.0, 0)),
        ("TIMEOUT", (5.0, 30.0, 1.0)),
    ],
)
def test_every_key_read_as_seconds_a_count_or_a_timeout_is_checked_as_it_is_read(key, value):
    assert ids(PAYCOLLECT={**GOOD, key: value}) == ["paycollect.E010"]


def test_a_value_that_cannot_be_read_is_used_as_its_default_and_logged_once(caplog):
    with override_settings(PAYCOLLECT={**GOOD, "MAX_CALLBACK_BYTES": "64 KiB", "RETURN_TIMEOUT": [1, 2]}):
        assert paycollect_settings.count("MAX_CALLBACK_BYTES") == DEFAULTS["MAX_CALLBACK_BYTES"]
        assert paycollect_settings.count("MAX_CALLBACK_BYTES") == DEFAULTS["MAX_CALLBACK_BYTES"]
        assert paycollect_settings.timeout("RETURN_TIMEOUT") == (1.0, 2.0)  # a list is a pair too
        assert paycollect_settings.seconds("RECONCILE_GIVE_UP_AFTER") == 7 * 86400
    logged = "PAYCOLLECT['MAX_CALLBACK_BYTES'] is '64 KiB': it must be a whole number, at least 1"
    assert caplog.text.count(logged) == 1


@pytest.mark.parametrize(
    "value",
    [0, Decimal("-1.00"), 1000000.0, "lots", Decimal("1.005"), Decimal("1000000000000.00"), True, None],
    ids=["zero", "negative", "float", "text", "three-decimals", "above-the-columns", "bool", "none"],
)
def test_a_maximum_amount_that_is_not_a_positive_amount_is_an_error(value):
    assert ids(PAYCOLLECT={**GOOD, "MAX_AMOUNT": value}, DEBUG=False) == ["paycollect.E011"]


@pytest.mark.parametrize("value", [Decimal("50000000.00"), 500, "250000.50", Decimal("999999999999.99")])
def test_the_maximum_amount_may_be_set_to_any_amount_the_columns_hold(value):
    assert ids(PAYCOLLECT={**GOOD, "MAX_AMOUNT": value}, DEBUG=False) == []
