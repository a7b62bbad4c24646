"""Throttling of the calls that reach the service, the API's system check, and a fuzz of the payments
endpoint: whatever a device sends, the answer is never a 5xx."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import override_settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from django_paycollect.api.throttles import PaymentsThrottle, QuotesThrottle
from tests.hypothesis_profiles import examples


class Clock:
    """The throttles' clock, moved by hand: no test sleeps."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    now = Clock()
    monkeypatch.setattr(PaymentsThrottle, "timer", now)
    monkeypatch.setattr(QuotesThrottle, "timer", now)
    return now


@pytest.mark.django_db
def test_starting_payments_is_throttled_per_user_by_the_setting(as_user, settings, clock):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_THROTTLE_RATES": {"paycollect_payments": "2/minute"}}
    owner, other = as_user("owner"), as_user("other")
    # A refused reference: the throttle counts the attempt before anything reaches the service.
    for _ in range(2):
        assert owner.post("/api/payments/", {"reference": "sold-out"}, format="json").status_code == 400
    limited = owner.post("/api/payments/", {"reference": "sold-out"}, format="json")
    assert limited.status_code == 429
    assert 0 < int(limited["Retry-After"]) <= 60
    # Per user: another customer is not slowed; reading one's payments is not throttled.
    assert other.post("/api/payments/", {"reference": "sold-out"}, format="json").status_code == 400
    assert owner.get("/api/payments/").status_code == 200
    clock.now += 61
    assert owner.post("/api/payments/", {"reference": "sold-out"}, format="json").status_code == 400


@pytest.mark.django_db
def test_quotes_and_promocodes_share_a_scope_and_none_lifts_a_limit(as_user, settings, clock):
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "API_THROTTLE_RATES": {"paycollect_quotes": "1/hour", "paycollect_payments": None},
    }
    api = as_user("owner")
    assert api.post("/api/quotes/", {"reference": "sold-out"}, format="json").status_code == 400
    body = {"reference": "sold-out", "promocode": "SAVE10"}
    assert api.post("/api/promocodes/validate/", body, format="json").status_code == 429
    for _ in range(5):
        assert api.post("/api/payments/", {"reference": "sold-out"}, format="json").status_code == 400


def test_the_default_rates_hold_when_the_setting_names_one_scope(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_THROTTLE_RATES": {"paycollect_quotes": "5/second"}}
    assert PaymentsThrottle().get_rate() == "10/minute"
    assert QuotesThrottle().get_rate() == "5/second"


def _api_check_ids(**paycollect: Any) -> list[str]:
    from django.conf import settings

    with override_settings(PAYCOLLECT={**settings.PAYCOLLECT, **paycollect}):
        return [
            m.id
            for m in run_checks(include_deployment_checks=False, databases=[])
            if m.id == "paycollect.E012"
        ]


def test_the_payable_hook_is_checked_when_the_api_is_mounted(settings):
    assert _api_check_ids() == []
    assert _api_check_ids(PAYABLE_RESOLVER=None) == ["paycollect.E012"]
    assert _api_check_ids(PAYABLE_RESOLVER="tests.api.payables.no_such_function") == ["paycollect.E012"]
    assert _api_check_ids(PAYABLE_RESOLVER="tests.api.payables.PRICES") == ["paycollect.E012"]  # not callable
    settings.ROOT_URLCONF = "tests.urls"  # not mounted: not needed
    assert _api_check_ids(PAYABLE_RESOLVER=None) == []


# --- fuzz: whatever the device sends ------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "reference": st.sampled_from(["sold-out", "nothing", "", "x" * 300]) | JSON,
        "billing_data": st.fixed_dictionaries(
            {}, optional={"name": JSON, "email": JSON, "phone_number": JSON}
        )
        | JSON,
        "pay_using": JSON,
        "promocode": JSON,
        "language": JSON,
        "amount": JSON,
    },
)
BODIES = FIELDS.map(json.dumps) | JSON.map(json.dumps) | st.text(max_size=40) | st.binary(max_size=40)


@pytest.mark.django_db
@hypothesis_settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    body=BODIES,
    content_type=st.sampled_from(["application/json", "application/x-www-form-urlencoded", "text/plain"]),
)
def test_no_body_gets_a_5xx_from_the_payments_endpoint(as_user, settings, body, content_type):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_THROTTLE_RATES": {"paycollect_payments": None}}
    answer = as_user("owner").generic("POST", "/api/payments/", body, content_type=content_type)
    assert answer.status_code in (400, 415), (body, answer.content)
    assert answer["Content-Type"].startswith("application/json")
