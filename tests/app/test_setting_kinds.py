"""Every ``PAYCOLLECT`` key read once, by its kind, in ``conf``: each spelling a settings file can give a key
(one text, a list, a tuple, bytes, a number as the environment gives it, None, a word) is either read as this
table says or refused by a named system check; never a crash, never a silent misreading. The table is this
test's own: a key added to ``conf.DEFAULTS`` fails here until its kind is written down."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import RequestFactory, override_settings

from django_paycollect.amounts import max_amount
from django_paycollect.conf import DEFAULTS, paycollect_settings
from django_paycollect.exceptions import PayCollectConfigurationError
from django_paycollect.urls import service_urls

TOKEN = "one-long-callback-token-Zx81Qp4mWv"
GOOD = {
    "BASE_URL": "https://service.example",
    "COMMUNITY_ID": "c-1",
    "API_KEY": "key-0123456789abcdef",
    "CALLBACK_TOKENS": [TOKEN],
}
REFUSED = object()

#: Each key's kind, and a text it takes (what the environment would hold).
KINDS: dict[str, tuple[str, str]] = {
    "BASE_URL": ("text or none", "https://other.example"),
    "COMMUNITY_ID": ("text or none", "community-7"),
    "API_KEY": ("text or none", "an-api-key-0123456789"),
    "BASIC_CREDENTIALS": ("credentials", "club:basic-password-42"),
    "VARIABLE_AMOUNT_ID": ("id", "12"),
    "TIMEOUT": ("timeout", "12"),
    "MAX_NETWORK_RETRIES": ("count", "12"),
    "PROMOCODE_METHOD": ("method", "get"),
    "CALLBACK_TOKENS": ("list", TOKEN),
    "FEES_IN_BILL": ("flag", "true"),
    "SUCCESS_URL": ("text", "/paid/"),
    "FAILURE_URL": ("text", "/failed/"),
    "RETURN_TIMEOUT": ("timeout", "12"),
    "RETURN_FETCH_INTERVAL": ("seconds", "12"),
    "MAX_CALLBACK_BYTES": ("count", "12"),
    "CALLBACK_REQUEUE_AFTER": ("seconds", "12"),
    "CALLBACK_FETCH_INTERVAL": ("seconds", "12"),
    "CALLBACK_PUBLISH_BUFFER": ("count", "12"),
    "CALLBACK_PUBLISH_LINGER": ("seconds", "12"),
    "TRUSTED_PROXIES": ("list", "10.0.0.0/8"),
    "CALLBACK_SECRET_FIELD": ("text", "paycollect secret"),
    "CALLBACK_SECRET": ("list", "an-echoed-secret-0123456789"),
    "ENCRYPTION_KEYS": ("list", "an-encryption-key-Xq8v2LmP0wZr5TnKa9"),
    "STORE_REQUEST_BODIES": ("flag", "false"),
    "RECONCILE_CONCURRENCY": ("count", "12"),
    "RECONCILE_GIVE_UP_AFTER": ("seconds or none", "12"),
    "DEFAULT_CURRENCY": ("currency", "usd"),
    "DEFAULT_PAY_USING": ("text", "kiosk"),
    "MAX_AMOUNT": ("amount", "250000.50"),
    "PAYABLE_RESOLVER": ("text or none", "tests.api.payables.resolve"),
    "API_THROTTLE_RATES": ("rates", "10/minute"),
    "API_PAGE_SIZE": ("count", "12"),
    "METRICS": ("flag or none", "true"),
    "METRICS_TOKENS": ("list", "a-metrics-token-0123456789"),
    "TASK_RUNNER": ("runner", "Django"),
    "ALLOW_IMMEDIATE_TASKS": ("flag", "true"),
}
#: Checks that may refuse a value read as the table says, for what it is rather than its spelling (an address
#: that is no URL, a token too short, a key too weak, a required key left out).
VALIDITY = {
    "BASE_URL": {"paycollect.E001", "paycollect.E007"},
    "API_KEY": {"paycollect.E002"},
    "COMMUNITY_ID": {"paycollect.E003"},
    "TRUSTED_PROXIES": {"paycollect.E008"},
    "ENCRYPTION_KEYS": {"paycollect.E016"},
    "TASK_RUNNER": {"paycollect.E022", "paycollect.E023"},  # "django" with no TASKS setting
}
WORD = "not-a-number"
SPELLINGS = ["text", "list", "tuple", "bytes", "number as text", "none", "word"]


def given(key: str, spelling: str) -> Any:
    sample = KINDS[key][1]
    return {
        "text": sample,
        "list": [sample],
        "tuple": (sample,),
        "bytes": sample.encode(),
        "number as text": "1",
        "none": None,
        "word": WORD,
    }[spelling]


def expected(key: str, spelling: str) -> Any:
    kind, sample = KINDS[key]
    value = given(key, spelling)
    one = value.decode() if isinstance(value, bytes) else value  # one text, however it came
    texts = isinstance(value, (str, bytes))
    if kind == "list":
        if value is None:
            return ()
        entry = (
            value if key == "ENCRYPTION_KEYS" and isinstance(value, bytes) else sample if not texts else one
        )
        return (entry,)
    if kind in ("text", "text or none"):
        return one if texts else None if value is None and kind == "text or none" else REFUSED
    if kind == "credentials":
        return one if texts and ":" in one else None if value is None else REFUSED
    if kind in ("id", "count", "seconds", "seconds or none"):
        if value is None and kind in ("id", "seconds or none"):
            return None
        if not texts or not one.isdigit():
            return REFUSED
        return int(one) if kind in ("id", "count") else float(one)
    if kind in ("flag", "flag or none"):
        if value is None and kind == "flag or none":
            return None
        return {"true": True, "false": False, "1": True}.get(one, REFUSED) if texts else REFUSED
    if kind == "method":
        return one.upper() if texts and one.upper() in ("GET", "POST") else REFUSED
    if kind == "runner":
        return one.lower() if texts and one.lower() in ("celery", "django") else REFUSED
    if kind == "currency":
        return one.upper() if texts and one.upper() in ("USD", "EGP") else REFUSED
    if kind == "amount":
        return Decimal(one) if isinstance(value, str) and one != WORD else REFUSED
    if kind == "rates":
        return {} if value is None else REFUSED
    assert kind == "timeout"
    return REFUSED


def read(key: str) -> Any:
    try:
        return max_amount() if key == "MAX_AMOUNT" else getattr(paycollect_settings, key)
    except PayCollectConfigurationError:
        return REFUSED  # refused where it is used too, never read as something else


def test_the_table_knows_every_key():
    assert set(KINDS) == set(DEFAULTS)


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("key", sorted(DEFAULTS))
def test_every_spelling_of_every_key_is_read_as_its_kind_or_refused_by_a_named_check(key, spelling):
    value = given(key, spelling)
    with override_settings(PAYCOLLECT={**GOOD, key: value}, DEBUG=False):
        messages = [m for m in run_checks(databases=[]) if m.id.startswith("paycollect.")]
        reading = read(key)
    errors = {m.id for m in messages if m.is_serious()}
    want = expected(key, spelling)
    if want is REFUSED:
        assert errors, f"{key}={value!r} is neither read nor refused: read as {reading!r}"
        named = [m for m in messages if m.is_serious() and f"PAYCOLLECT['{key}']" in m.msg]
        assert named, [m.msg for m in messages]
    else:
        assert errors <= VALIDITY.get(key, set()), [m.msg for m in messages]
        assert reading == want
        assert type(reading) is type(want)
    if key in ("API_KEY", "BASIC_CREDENTIALS", "CALLBACK_SECRET", "ENCRYPTION_KEYS", "METRICS_TOKENS"):
        shown = " ".join(f"{m.msg} {m.hint or ''}" for m in messages)
        assert KINDS[key][1] not in shown  # a secret is never shown, however wrongly it is spelled


@pytest.mark.parametrize(
    ("key", "value", "want"),
    [
        ("TIMEOUT", ("5", "30"), (5.0, 30.0)),
        ("RETURN_TIMEOUT", [2, "3.5"], (2.0, 3.5)),
        ("API_THROTTLE_RATES", {"paycollect_payments": "5/Minute", "paycollect_quotes": None}, None),
        ("COMMUNITY_ID", 1234, "1234"),
        ("VARIABLE_AMOUNT_ID", 12, 12),
        ("VARIABLE_AMOUNT_ID", " 7 ", 7),
        ("FEES_IN_BILL", "False", False),
        ("FEES_IN_BILL", "0", False),
        ("STORE_REQUEST_BODIES", "off", False),
        ("METRICS", "no", False),
        ("BASIC_CREDENTIALS", ("club", "pass word"), "club:pass word"),
        ("CALLBACK_TOKENS", f"{TOKEN}", (TOKEN,)),
        (
            "CALLBACK_TOKENS",
            [TOKEN, b"older-token-0123456789abcdef"],
            (TOKEN, "older-token-0123456789abcdef"),
        ),
        ("TRUSTED_PROXIES", {"10.0.0.0/8"}, ("10.0.0.0/8",)),
        ("CALLBACK_PUBLISH_LINGER", "0.05", 0.05),
        ("DEFAULT_CURRENCY", " egp ", "EGP"),
    ],
)
def test_other_spellings_a_settings_file_gives_are_read_as_meant(key, value, want):
    with override_settings(PAYCOLLECT={**GOOD, key: value}, DEBUG=False):
        assert [m.id for m in run_checks(databases=[]) if m.id.startswith("paycollect.")] == []
        reading = getattr(paycollect_settings, key)
    if key == "API_THROTTLE_RATES":
        want = {"paycollect_payments": "5/minute", "paycollect_quotes": None}
    assert reading == want


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("VARIABLE_AMOUNT_ID", "0"),
        ("VARIABLE_AMOUNT_ID", "1.5"),
        ("VARIABLE_AMOUNT_ID", True),
        ("CALLBACK_TOKENS", {TOKEN, "another-token-0123456789"}),  # a set: which one is current?
        ("ENCRYPTION_KEYS", [12345]),
        ("API_THROTTLE_RATES", {"paycollect_payments": "10 per minute"}),
        ("API_PAGE_SIZE", "0"),
        ("BASIC_CREDENTIALS", "no-colon-here"),
        ("DEFAULT_PAY_USING", " "),
        ("FEES_IN_BILL", ""),
    ],
)
def test_values_that_cannot_be_read_are_refused_at_start_with_e010(key, value):
    with override_settings(PAYCOLLECT={**GOOD, key: value}, DEBUG=False):
        found = [m for m in run_checks(databases=[]) if m.id.startswith("paycollect.")]
    assert [m.id for m in found] == ["paycollect.E010"]
    assert f"PAYCOLLECT['{key}']" in found[0].msg


def test_a_setting_that_cannot_be_read_is_never_an_encryption_key_it_does_not_hold():
    """Falling back to the default would encrypt new values with the key derived from SECRET_KEY."""
    with (
        override_settings(PAYCOLLECT={**GOOD, "ENCRYPTION_KEYS": 12345}),
        pytest.raises(PayCollectConfigurationError, match="ENCRYPTION_KEYS"),
    ):
        paycollect_settings.encryption_keys()


def test_the_callback_url_handed_to_the_service_carries_the_whole_token_given_as_one_text():
    """The finding: CALLBACK_TOKENS as one text gave ``/callback/o/``, its first letter (the admin's Add
    direct order, the API's direct orders)."""
    request = RequestFactory().get("/", SERVER_NAME="shop.example")
    with override_settings(PAYCOLLECT={**GOOD, "CALLBACK_TOKENS": TOKEN}):
        urls = service_urls(request)
    assert urls["callback_url"] == f"http://shop.example/paycollect/callback/{TOKEN}/"


@pytest.mark.django_db
def test_metrics_tokens_given_as_one_text_accept_that_token_and_never_its_letters(client):
    pytest.importorskip("prometheus_client")
    with override_settings(PAYCOLLECT={**GOOD, "METRICS_TOKENS": "a-metrics-token-0123456789"}):
        assert client.get("/metrics/", headers={"authorization": "Bearer a"}).status_code == 401
        whole = client.get("/metrics/", headers={"authorization": "Bearer a-metrics-token-0123456789"})
    assert whole.status_code == 200
