"""Construction of the client: options checked, one pooled session, no urllib3 retries."""

from __future__ import annotations

import pytest
import requests

from django_paycollect import __version__
from django_paycollect.client import OPERATIONS, PayCollectClient

from .support import API_KEY, BASE_URL, CASES_BY_NAME, envelope


@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ("pay.example.test", "http:// or https://"),
        ("ftp://pay.example.test", "http:// or https://"),
        ("https://", "http:// or https://"),
        ("https://pay.example.test/?env=test", "query or a fragment"),
        ("https://pay.example.test/#x", "query or a fragment"),
    ],
)
def test_base_url_is_checked(base_url, message):
    with pytest.raises(ValueError, match=message):
        PayCollectClient(base_url)


def test_options_are_checked():
    with pytest.raises(ValueError, match="max_network_retries"):
        PayCollectClient(BASE_URL, max_network_retries=-1)
    with pytest.raises(ValueError, match="promocode_method"):
        PayCollectClient(BASE_URL, promocode_method="PUT")  # type: ignore[arg-type]


def test_defaults_and_user_agent():
    made = PayCollectClient(BASE_URL + "/", api_key=API_KEY)
    assert made.base_url == BASE_URL
    assert made.timeout == (5.0, 30.0)
    assert made.max_network_retries == 2
    assert made.promocode_method == "POST"
    assert made.user_agent == f"django-paycollect/{__version__} python-requests/{requests.__version__}"


def test_one_pooled_session_that_never_retries_on_its_own():
    made = PayCollectClient(BASE_URL)
    for prefix in ("https://", "http://"):
        adapter = made.session.get_adapter(prefix + "pay.example.test")
        assert adapter.max_retries.total == 0
        assert adapter.max_retries.read is False
    made.close()


def test_a_given_session_is_used(rsps):
    session = requests.Session()
    made = PayCollectClient(BASE_URL, api_key=API_KEY, session=session)
    case = CASES_BY_NAME["capture"]
    rsps.add(case.method, case.url, json=envelope({}))

    with made as entered:
        assert entered is made
        case.invoke(made)

    assert made.session is session
    assert len(rsps.calls) == 1


def test_timeouts_are_passed_to_every_request(rsps, monkeypatch):
    made = PayCollectClient(BASE_URL, api_key=API_KEY, timeout=(1.5, 9.0))
    seen: list[object] = []
    original = made.session.request

    def spy(*args, **kwargs):
        seen.append((kwargs["timeout"], kwargs["allow_redirects"]))
        return original(*args, **kwargs)

    monkeypatch.setattr(made.session, "request", spy)
    case = CASES_BY_NAME["capture"]
    rsps.add(case.method, case.url, json=envelope({}))

    case.invoke(made)

    assert seen == [((1.5, 9.0), False)]


def test_the_operation_table_follows_the_spec():
    table = {name: (op.method, op.path, op.auth, op.changes_state) for name, op in OPERATIONS.items()}
    assert table == {
        "prepare_amount": ("POST", "/api/v1/payments/prepare-amount/", "key_if_set", False),
        "pay": ("POST", "/api/v1/payments/pay/variable-amount", "key", True),
        "get_transaction": (
            "GET",
            "/api/v1/communities/{community_id}/transactions/{transaction_uuid}/",
            "key",
            False,
        ),
        "capture": ("POST", "/api/payments/capture-payment/", "key", True),
        "refund": ("POST", "/api/payments/refund-transaction/", "key", True),
        "cancel_recurring": ("POST", "/api/payments/cancel-recurring-payment/", "key", True),
        "validate_promocode": ("POST", "/api/promocodes/validate/", "none", False),
        "create_community": ("POST", "/api/communities/create_community", "key_if_set", True),
        "dashboard_statistics": ("GET", "/api/core/dashboard/statistics", "key_and_basic", False),
        "create_direct_order": ("POST", "/api/orders/create-direct-order/", "key", True),
    }


def test_netrc_never_changes_the_headers(rsps, tmp_path, monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine pay.example.test login someone password elsewhere\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    made = PayCollectClient(BASE_URL, api_key=API_KEY, basic_credentials=("merchant-user", "pw"))
    stats, capture = CASES_BY_NAME["dashboard_statistics"], CASES_BY_NAME["capture"]
    rsps.add(stats.method, stats.url, json=envelope({}))
    rsps.add(capture.method, capture.url, json=envelope({}))

    stats.invoke(made)
    capture.invoke(made)

    assert rsps.calls[0].request.headers["Authorization"] == "Basic merchant-user:pw"
    assert "Authorization" not in rsps.calls[1].request.headers
