"""The browser return: the query is never trusted, the service is asked, only a status is revealed.

The customer's browser is played by the Django test client, following the Location the sandbox's
hosted page answers (the spec's redirect with its query parameters) where a test pays on the page.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from decimal import Decimal
from html import unescape
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.staticfiles import finders
from django.core.cache import cache
from django.utils import translation

from django_paycollect import services, tasks
from django_paycollect.intake import views
from django_paycollect.models import ReceivedCallback, Transaction
from django_paycollect.sandbox.envelope import dumps
from tests.support.payments import CALLBACK_TOKEN

pytestmark = pytest.mark.django_db(transaction=True)

RETURN = "/paycollect/return/"
STATUS = "/paycollect/return/status/"
UUID = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"


@pytest.fixture
def urls(settings: Any, paycollect_live: Any) -> Any:
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "SUCCESS_URL": "/shop/paid/",
        "FAILURE_URL": "/shop/cart/?payment=failed",
    }
    return paycollect_live


@pytest.fixture
def no_throttle(settings: Any) -> None:
    """Every return and status request may fetch (the throttle has its own test)."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RETURN_FETCH_INTERVAL": 0}


def fetches(sb: Any) -> int:
    return len(sb.control.journal("fetch_transaction"))


def pay_params(txn: Transaction, status: str = "SUCCESSFUL") -> dict[str, str]:
    """The Pay set of the spec's redirect, as the sandbox writes it."""
    return {
        "amount_piasters": str(txn.total_amount_piasters),
        "amount": "100",
        "transaction_uuid": str(txn.uuid),
        "transaction_status": status,
    }


def follow(client: Any, location: str) -> Any:
    """The browser arriving at a redirect URL of the sandbox (its path and query, on our site)."""
    parts = urlsplit(location)
    return client.get(parts.path, parse_qs(parts.query))


def is_waiting_page(response: Any) -> bool:
    return response.status_code == 200 and b'<section id="paycollect-waiting">' in response.content


def is_neutral_page(response: Any) -> bool:
    """The end state that neither confirms nor denies: not confirmed yet, do not pay again, where to look."""
    page = response.content.decode()
    return (
        response.status_code == 200
        and '<section id="paycollect-unconfirmed">' in page
        and "We could not confirm this payment yet" in page
        and "please do not pay again" in page
        and "receipt in your e-mail" in page
        and "your account on this site" in page
    )


def assert_denies_nothing(response: Any) -> None:
    """Never "failed", never "nothing was charged": the customer may have paid."""
    text = response.content.decode().lower()
    for word in ("fail", "charged", "declined", "try again", "pay again later"):
        assert word not in text, word


# --- the service decides -----------------------------------------------------------------------------


def test_a_paid_payment_returns_to_the_success_url(client, urls, pay, no_throttle, signal_log):
    sb = urls
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")  # we have not heard of it yet

    response = client.get(RETURN, pay_params(txn))
    assert response.status_code == 302
    assert response["Location"] == f"/shop/paid/?transaction_uuid={txn.uuid}"
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert txn.status_changes.get(to_status="SUCCESSFUL").source == "return"
    assert signal_log.count("payment_succeeded") == 1
    # Final now: a second visit (reload, back button) does not ask the service again.
    before = fetches(sb)
    assert client.get(RETURN, pay_params(txn))["Location"] == f"/shop/paid/?transaction_uuid={txn.uuid}"
    assert fetches(sb) == before


def test_the_redirect_of_the_hosted_page_is_followed_to_success(client, urls, pay, no_throttle):
    sb = urls
    sb.control.configure_api_payment(sb.variable_amount_id, redirect_url=f"https://shop.example{RETURN}")
    txn = pay("100.00")
    location = sb.submit_payment_page(txn.iframe_url, "pay").headers["Location"]
    assert set(parse_qs(urlsplit(location).query)) == {
        "amount_piasters",
        "amount",
        "transaction_uuid",
        "transaction_status",
    }
    response = follow(client, location)
    assert response.status_code == 302
    assert response["Location"] == f"/shop/paid/?transaction_uuid={txn.uuid}"


def test_a_declined_payment_returns_to_the_failure_url_keeping_its_query(client, urls, pay, no_throttle):
    sb = urls
    sb.control.configure_api_payment(sb.variable_amount_id, redirect_url=f"https://shop.example{RETURN}")
    txn = pay("100.00")
    location = sb.submit_payment_page(txn.iframe_url, "decline").headers["Location"]
    response = follow(client, location)
    assert response.status_code == 302
    assert response["Location"] == f"/shop/cart/?payment=failed&transaction_uuid={txn.uuid}"
    txn.refresh_from_db()
    assert txn.status == Transaction.FAILED


def test_a_forged_success_for_a_pending_payment_shows_the_waiting_page(
    client, urls, pay, no_throttle, signal_log
):
    txn = pay("100.00")
    response = client.get(RETURN, pay_params(txn, "SUCCESSFUL"))
    assert is_waiting_page(response)
    assert b"/shop/paid/" not in response.content
    txn.refresh_from_db()
    assert txn.status == Transaction.PENDING
    assert signal_log.count("payment_succeeded") == 0


def test_a_forged_failure_for_a_paid_payment_still_goes_to_success(client, urls, pay, no_throttle):
    txn = pay("100.00")
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    response = client.get(RETURN, pay_params(txn, "FAILED"))
    assert response["Location"].startswith("/shop/paid/")


@pytest.mark.parametrize(
    "claims",
    [
        {"amount": "9" * 40},
        {"total_amount_piasters": "1" * 33, "transaction_status": "S" * 65},
        {"member_id": "M" * 101},
        {"transaction_id": "x" * 65},  # neither the uuid nor an id: set aside, the uuid decides
    ],
    ids=["amount", "piasters and status", "member id", "transaction id"],
)
def test_an_overlong_claim_never_stops_a_return_its_uuid_decides(client, urls, pay, no_throttle, claims):
    txn = pay("100.00")
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    query = {**pay_params(txn), **claims}
    assert client.get(RETURN, query)["Location"] == f"/shop/paid/?transaction_uuid={txn.uuid}"
    assert client.get(STATUS, query).json() == {"status": "SUCCESSFUL"}


def test_the_spec_variant_with_member_id_and_a_transaction_id_holding_the_uuid(
    client, urls, pay, no_throttle
):
    txn = pay("100.00")
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    response = client.get(RETURN, {"member_id": "M-1", "transaction_id": txn.uuid})
    assert response["Location"] == f"/shop/paid/?transaction_uuid={txn.uuid}"


def test_the_spec_variant_with_member_id_and_a_numeric_transaction_id_finds_our_payment(
    client, urls, pay, no_throttle, signal_log
):
    txn = pay("100.00", membership_id="M-1")
    assert txn.service_id is not None  # Pay's transaction_id, stored
    urls.control.complete(txn.uuid, "SUCCESSFUL")  # we have not heard of it yet
    before = fetches(urls)

    response = client.get(RETURN, {"member_id": "M-1", "transaction_id": str(txn.service_id)})

    # Resolved by the service id we stored, then fetched: the service says it is paid.
    assert response.status_code == 302
    assert response["Location"] == f"/shop/paid/?transaction_id={txn.service_id}"
    assert fetches(urls) == before + 1
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL
    assert txn.status_changes.get(to_status="SUCCESSFUL").source == "return"
    assert signal_log.count("payment_succeeded") == 1
    assert client.get(STATUS, {"transaction_id": str(txn.service_id)}).json() == {"status": "SUCCESSFUL"}


def test_a_numeric_transaction_id_never_trusts_the_status_it_comes_with(client, urls, pay, no_throttle):
    txn = pay("100.00")
    response = client.get(
        RETURN, {"member_id": "", "transaction_id": str(txn.service_id), "transaction_status": "SUCCESSFUL"}
    )
    assert is_waiting_page(response)  # the service says PENDING
    page = response.content.decode()
    assert f'data-status-url="{STATUS}?transaction_id={txn.service_id}"' in page
    assert txn.uuid not in page  # the visitor brought an id: the uuid is not given away
    urls.control.complete(txn.uuid, "FAILED")
    location = client.get(RETURN, {"transaction_id": str(txn.service_id)})["Location"]
    assert location == f"/shop/cart/?payment=failed&transaction_id={txn.service_id}"


def test_a_numeric_transaction_id_we_never_stored_reads_pending_without_asking_the_service(client, urls, pay):
    txn = pay("100.00")
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    before = fetches(urls)
    for other in (txn.service_id + 1, 10**17):
        response = client.get(RETURN, {"member_id": "M-1", "transaction_id": str(other)})
        assert is_waiting_page(response)
        assert client.get(STATUS, {"transaction_id": str(other)}).json() == {"status": "PENDING"}
    assert fetches(urls) == before


def test_a_numeric_transaction_id_two_of_our_transactions_share_is_not_guessed_at(client, urls):
    for uuid in (UUID, UUID[:-1] + "1"):
        Transaction.objects.create(
            uuid=uuid,
            service_id=4821,
            community_id="c",
            status=Transaction.SUCCESSFUL,
            total_amount=Decimal(1),
        )
    assert is_waiting_page(client.get(RETURN, {"transaction_id": "4821"}))
    assert client.get(STATUS, {"transaction_id": "4821"}).json() == {"status": "PENDING"}


@pytest.mark.parametrize("value", ["0", "-4821", "4821.0", "1e3", "\uff14\uff18", "9" * 19, "48 21"])
def test_a_transaction_id_that_is_neither_a_uuid_nor_an_id_shows_the_neutral_page(client, urls, value):
    value = value.encode().decode("unicode_escape")
    response = client.get(RETURN, {"transaction_id": value})
    assert is_neutral_page(response)
    assert_denies_nothing(response)
    assert client.get(STATUS, {"transaction_id": value}).status_code == 400


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"transaction_uuid": "not-a-uuid"},
        {"transaction_uuid": UUID[:-1]},  # the URL cut short
        {"transaction_uuid": UUID.replace("-", "\u2010")},
        {"transaction_uuid": "{" + UUID},
        {"amount": "100", "transaction_status": "FAILED"},  # the uuid lost, the claim kept
        {"transaction_uuid": UUID, "transaction_id": UUID[:-1] + "1"},
    ],
    ids=["none", "garbled", "cut", "unicode-dashes", "half-braced", "claim-only", "contradictory"],
)
def test_a_return_without_a_readable_uuid_shows_the_neutral_page_never_the_failure_url(client, urls, query):
    """Someone whose return URL was cut after a real payment must not be told to pay again."""
    response = client.get(RETURN, query)
    assert is_neutral_page(response)
    assert_denies_nothing(response)
    assert b"<script" not in response.content  # nothing to poll
    assert b"http-equiv" not in response.content
    assert response["Referrer-Policy"] == "same-origin"
    assert "no-store" in response["Cache-Control"]
    assert fetches(urls) == 0


def test_the_neutral_page_reads_in_arabic_right_to_left(client, urls):
    with translation.override("ar"):
        response = client.get(RETURN)
    page = response.content.decode()
    assert '<html lang="ar" dir="rtl">' in page
    assert "<h1>لم نتمكن من تأكيد هذه الدفعة بعد</h1>" in page
    assert "يُرجى عدم الدفع مرة أخرى" in page
    assert "بريدك الإلكتروني" in page
    assert "حسابك" in page


#: The 36-character form wrapped as the canonicaliser reads it (django_paycollect/ids.py).
WRAPPED = {
    "braced": lambda uuid: "{" + uuid + "}",
    "braced-capitals": lambda uuid: "{" + uuid.upper() + "}",
    "urn": lambda uuid: f"urn:uuid:{uuid}",
    "urn-capitals": lambda uuid: f"URN:UUID:{uuid.upper()}",
    "urn-padded": lambda uuid: f" urn:uuid:{uuid}\n",
}


@pytest.mark.parametrize("spelling", WRAPPED)
@pytest.mark.parametrize("key", ["transaction_uuid", "transaction_id"])
def test_a_wrapped_spelling_of_a_paid_uuid_returns_to_the_success_url(
    client, urls, pay, no_throttle, spelling, key
):
    txn = pay("100.00")
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    value = WRAPPED[spelling](txn.uuid)

    response = client.get(RETURN, {key: value, "transaction_status": "FAILED"})

    assert response.status_code == 302
    assert response["Location"] == f"/shop/paid/?transaction_uuid={txn.uuid}"  # passed on canonical
    assert client.get(STATUS, {key: value}).json() == {"status": "SUCCESSFUL"}
    assert Transaction.objects.count() == 1


def test_success_url_may_be_a_url_name(client, urls, pay, settings, no_throttle):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "SUCCESS_URL": "admin:index"}
    txn = pay("100.00")
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    assert client.get(RETURN, pay_params(txn))["Location"] == f"/admin/?transaction_uuid={txn.uuid}"


def test_only_get_and_head_are_answered(client, urls):
    assert client.post(RETURN, {"transaction_uuid": UUID}).status_code == 405
    assert client.head(RETURN, {"transaction_uuid": UUID}).status_code == 200


# --- direct orders: a payment we learn of by its callback ----------------------------------------------


def test_a_direct_order_payment_unknown_to_us_waits_for_its_callback_then_succeeds(client, urls, no_throttle):
    sb = urls
    order = services.create_direct_order(
        name="Summer camp",
        amount=Decimal("200.00"),
        payment_methods=["card"],
        customer_name="Mona Ali",
        customer_email="mona@example.com",
        customer_mobile="+201001234567",
        redirect_url=f"https://shop.example{RETURN}",
        custom_fields=[{"field_label": "Member number", "field_type": "TEXT"}],
    )
    location = sb.submit_payment_page(order.payment_link, "pay", fields={"Member number": "M-88"}).headers[
        "Location"
    ]
    query = parse_qs(urlsplit(location).query)
    assert {"total_amount_piasters", "total_amount", "transaction_uuid", "Member number"} <= set(query)
    uuid = query["transaction_uuid"][0]

    # Its callback has not arrived: the uuid is nobody's we know, and the service is not asked.
    before = fetches(sb)
    assert is_waiting_page(follow(client, location))
    assert client.get(STATUS, {"transaction_uuid": uuid}).json() == {"status": "PENDING"}
    assert fetches(sb) == before
    assert not Transaction.objects.exists()

    # The callback arrives (stored, its verification not run yet): now the return may fetch it.
    body = {"transaction_uuid": uuid, "transaction_status": "SUCCESSFUL", "payment_id": order.payment_id}
    with mock.patch.object(tasks.process_callbacks, "apply_async"):
        client.post(f"/paycollect/callback/{CALLBACK_TOKEN}/", dumps(body), content_type="application/json")
    response = follow(client, location)
    assert response["Location"] == f"/shop/paid/?transaction_uuid={uuid}"
    assert Transaction.objects.get(uuid=uuid).status == Transaction.SUCCESSFUL


def test_a_uuid_named_only_by_an_invalid_callback_is_not_fetched(client, urls):
    ReceivedCallback.objects.create(state=ReceivedCallback.INVALID, transaction_uuid=UUID)
    assert is_waiting_page(client.get(RETURN, {"transaction_uuid": UUID}))
    assert fetches(urls) == 0


@pytest.mark.parametrize("state", [ReceivedCallback.FAILED, ReceivedCallback.QUEUED])
def test_a_uuid_a_callback_named_but_the_service_does_not_know_is_unconfirmed_never_failed(
    client, urls, no_throttle, state
):
    """The service's 404 says nothing about a charge (a uuid of another community, one it has not
    indexed yet): the customer waits, then sees the neutral page, never the failure URL."""
    ReceivedCallback.objects.create(state=state, transaction_uuid=UUID)
    assert is_waiting_page(client.get(RETURN, {"transaction_uuid": UUID}))
    assert fetches(urls) == 1  # it was asked, and did not know it
    assert client.get(STATUS, {"transaction_uuid": UUID}).json() == {"status": "PENDING"}
    last = client.get(RETURN, {"transaction_uuid": UUID, "wait": str(views.MAX_REFRESHES)})
    assert is_neutral_page(last)
    assert_denies_nothing(last)
    assert not Transaction.objects.exists()


def test_an_unknown_uuid_waits_then_shows_the_neutral_page_never_the_failure_url(client, urls, no_throttle):
    for wait in range(views.MAX_REFRESHES + 2):
        response = client.get(RETURN, {"transaction_uuid": UUID, "wait": str(wait)})
        assert response.status_code == 200
        assert_denies_nothing(response)
        assert is_waiting_page(response) is (wait < views.MAX_REFRESHES)
        assert is_neutral_page(response) is (wait >= views.MAX_REFRESHES)
        assert client.get(STATUS, {"transaction_uuid": UUID}).json() == {"status": "PENDING"}
    # With script, the same end state is in the page from the start, shown when polling gives up.
    first = client.get(RETURN, {"transaction_uuid": UUID}).content.decode()
    assert '<section id="paycollect-unconfirmed" hidden>' in first
    assert "receipt in your e-mail" in first
    assert fetches(urls) == 0


def test_a_stored_failure_the_service_has_since_turned_into_a_success_goes_to_the_success_url(
    client, urls, pay, no_throttle
):
    """A second try on the same payment page after a decline: its redirect brings the same uuid."""
    txn = pay("100.00")
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    Transaction.objects.filter(pk=txn.pk).update(status=Transaction.FAILED)  # the first try, as we stored it

    response = client.get(RETURN, pay_params(txn))

    assert response["Location"] == f"/shop/paid/?transaction_uuid={txn.uuid}"
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL


# --- a slow or broken service -------------------------------------------------------------------------


def test_a_slow_service_shows_the_waiting_page_then_the_status_endpoint_tells_the_outcome(
    client, urls, pay, settings, no_throttle
):
    sb = urls
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RETURN_TIMEOUT": (1.0, 0.3), "MAX_NETWORK_RETRIES": 0}
    txn = pay("100.00")
    sb.control.fault("fetch_transaction", "latency", latency_ms=1500, times=None)

    started = time.monotonic()
    response = client.get(RETURN, pay_params(txn))
    assert time.monotonic() - started < 1.5  # the short timeout, not the service's pace
    assert is_waiting_page(response)

    sb.control.clear_faults()
    assert client.get(STATUS, {"transaction_uuid": txn.uuid}).json() == {"status": "PENDING"}
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    status = client.get(STATUS, {"transaction_uuid": txn.uuid})
    assert status.json() == {"status": "SUCCESSFUL"}
    assert "no-cache" in status["Cache-Control"]
    # What the page's script does next: back to the return URL, now final.
    assert client.get(RETURN, {"transaction_uuid": txn.uuid})["Location"].startswith("/shop/paid/")

    # The slow request we gave up on is still running at the sandbox: let it end inside this test
    # (a request in flight across the next test's reset can leave the sandbox a stale cached
    # community, which then refuses that test's payments).
    deadline = time.monotonic() + 5
    while (
        not [e for e in sb.control.journal("fetch_transaction") if e["fault"]] and time.monotonic() < deadline
    ):
        time.sleep(0.05)


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "status", "status": 503},
        {"kind": "html", "status": 403},
        {"kind": "reset"},
    ],
    ids=["503", "firewall-html", "reset"],
)
def test_service_errors_show_the_waiting_page_never_an_error(client, urls, pay, no_throttle, fault):
    txn = pay("100.00")
    urls.control.fault("fetch_transaction", times=None, **fault)
    response = client.get(RETURN, pay_params(txn))
    assert is_waiting_page(response)
    assert client.get(STATUS, {"transaction_uuid": txn.uuid}).json() == {"status": "PENDING"}
    # A fetch that keeps failing ends on the neutral page, which says where to look.
    last = client.get(RETURN, {"transaction_uuid": txn.uuid, "wait": str(views.MAX_REFRESHES)})
    assert is_neutral_page(last)
    assert_denies_nothing(last)


def test_a_configuration_error_shows_the_waiting_page_too(client, urls, pay, no_throttle, settings):
    txn = pay("100.00")
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_KEY": ""}
    assert is_waiting_page(client.get(RETURN, pay_params(txn)))


def test_fetches_are_throttled_per_transaction_across_processes(client, urls, pay, settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RETURN_FETCH_INTERVAL": 30}
    txn = pay("100.00")
    before = fetches(urls)
    for _ in range(5):
        client.get(STATUS, {"transaction_uuid": txn.uuid})
        cache.clear()  # as if the next request reached another process, whose default cache is its own
    client.get(RETURN, {"transaction_uuid": txn.uuid})
    assert fetches(urls) == before + 1


# --- the waiting page and the status endpoint reveal nothing but a status --------------------------------


def test_a_visitor_who_only_knows_the_uuid_learns_only_the_status(client, urls, pay, no_throttle):
    txn = pay(
        "123.45",
        merchant_reference="order-7731",
        custom_fields=[{"field_label": "Seat", "field_value": "A1"}],
    )
    page = client.get(RETURN, {"transaction_uuid": txn.uuid})
    assert is_waiting_page(page)
    text = page.content.decode().replace(txn.uuid, "<the uuid>")  # the one thing the visitor brought
    for secret in ("123.45", "12345", "order-7731", "Mona", "mona@example.com", "+2010", "Seat", "A1"):
        assert secret not in text, secret
    assert page["Referrer-Policy"] == "same-origin"
    assert "no-store" in page["Cache-Control"]

    status = client.get(STATUS, {"transaction_uuid": txn.uuid})
    assert status.json() == {"status": "PENDING"}
    # An unknown uuid reads exactly like a pending one: existence is not revealed either.
    assert client.get(STATUS, {"transaction_uuid": UUID}).content == status.content

    urls.control.complete(txn.uuid, "SUCCESSFUL")
    location = client.get(RETURN, {"transaction_uuid": txn.uuid})["Location"]
    assert location == f"/shop/paid/?transaction_uuid={txn.uuid}"  # nothing the visitor did not bring


def test_a_stranger_counting_numeric_ids_learns_only_a_status(client, urls, pay, no_throttle):
    txn = pay(
        "123.45",
        merchant_reference="order-7731",
        membership_id="M-88",
        custom_fields=[{"field_label": "Seat", "field_value": "A1"}],
    )
    query = {"transaction_id": str(txn.service_id)}
    page = client.get(RETURN, query)
    assert is_waiting_page(page)
    text = page.content.decode().replace(str(txn.service_id), "<the id>")  # what the visitor brought
    for secret in (txn.uuid, "123.45", "12345", "order-7731", "M-88", "Mona", "mona@", "+2010", "Seat", "A1"):
        assert secret not in text, secret
    assert client.get(STATUS, query).json() == {"status": "PENDING"}
    urls.control.complete(txn.uuid, "SUCCESSFUL")
    location = client.get(RETURN, query)["Location"]
    assert location == f"/shop/paid/?transaction_id={txn.service_id}"  # never the uuid
    assert client.get(STATUS, query).content == b'{"status": "SUCCESSFUL"}'


def test_the_status_endpoint_refuses_a_malformed_uuid(client, urls):
    response = client.get(STATUS, {"transaction_uuid": "../../admin"})
    assert response.status_code == 400
    assert response.json() == {"status": "UNKNOWN"}
    assert client.get(STATUS).status_code == 400


def test_without_javascript_the_page_refreshes_itself_a_bounded_number_of_times(client, urls, pay):
    txn = pay("100.00")
    page = client.get(RETURN, {"transaction_uuid": txn.uuid}).content.decode()
    refresh = re.search(r'<noscript><meta http-equiv="refresh" content="(\d+);url=([^"]+)"></noscript>', page)
    assert refresh is not None
    assert int(refresh[1]) == views.REFRESH_SECONDS
    target = urlsplit(unescape(refresh[2]))
    assert target.path == RETURN
    assert parse_qs(target.query) == {"transaction_uuid": [txn.uuid], "wait": ["1"]}
    # The script polls the status endpoint of this uuid.
    assert f'data-status-url="{STATUS}?transaction_uuid={txn.uuid}"' in page

    last = client.get(RETURN, {"transaction_uuid": txn.uuid, "wait": str(views.MAX_REFRESHES)})
    text = last.content.decode()
    assert last.status_code == 200
    assert "http-equiv" not in text
    assert "<script" not in text
    assert "not confirmed yet" in text
    assert 'id="paycollect-waiting" hidden' in text
    # Never "failed": the customer may have paid, and must not pay twice.
    assert "fail" not in text.lower()


def test_a_strict_csp_nonce_is_put_on_the_script(rf, urls, pay):
    txn = pay("100.00")
    request = rf.get(RETURN, {"transaction_uuid": txn.uuid})
    request.csp_nonce = "n0nc3"
    request.resolver_match = None
    response = views.browser_return(request)
    page = response.content.decode()
    assert '<script src="/static/paycollect/return-waiting.js" nonce="n0nc3" defer></script>' in page


def test_the_page_needs_no_inline_script_or_style(client, urls, pay):
    """A Content-Security-Policy of script-src 'self' and style-src 'self' lets the page work."""
    txn = pay("100.00")
    page = client.get(RETURN, {"transaction_uuid": txn.uuid}).content.decode()
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/paycollect/return-waiting.js" defer>']
    assert "<style" not in page
    assert 'href="/static/paycollect/return-waiting.css"' in page
    for name in ("return-waiting.js", "return-waiting.css"):
        assert finders.find(f"paycollect/{name}") is not None


NODE_HARNESS = """
const calls = [];
let answers = JSON.parse(process.argv[1]);
const elements = {};
function element(id, attrs) { return elements[id] = {hidden: false, getAttribute: (n) => attrs[n]}; }
element("paycollect-return", JSON.parse(process.argv[2]));
element("paycollect-waiting", {}); element("paycollect-unconfirmed", {}).hidden = true;
global.document = {getElementById: (id) => elements[id] || null};
let now = 0;
Date.now = () => now;
const timers = [];
global.window = {
  setTimeout: (fn, ms) => timers.push([now + ms, fn]),
  location: {replace: (url) => calls.push(["replace", url])},
  fetch: (url) => {
    calls.push(["fetch", url]);
    const answer = answers.shift();
    if (answer === "error") return Promise.reject(new Error("offline"));
    return Promise.resolve({ok: answer !== 500, json: () => Promise.resolve({status: answer})});
  },
};
require("vm").runInThisContext(process.argv[3]);
(async () => {
  while (timers.length) {
    timers.sort((a, b) => a[0] - b[0]);
    const [at, fn] = timers.shift();
    now = at; fn();
    for (let i = 0; i < 10; i++) await Promise.resolve();
  }
  calls.push(["waiting hidden", elements["paycollect-waiting"].hidden,
              "unconfirmed hidden", elements["paycollect-unconfirmed"].hidden]);
  console.log(JSON.stringify(calls));
})();
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
@pytest.mark.parametrize(
    ("answers", "final"),
    [
        (["PENDING", "error", 500, "SUCCESSFUL"], "replace"),
        (["FAILED"], "replace"),
        (["PENDING"] * 200, "unconfirmed"),
    ],
    ids=["success-after-errors", "failed", "gives-up"],
)
def test_the_pages_script_polls_until_a_final_status_then_goes_back_to_the_return_url(
    client, urls, answers, final
):
    page = client.get(RETURN, {"transaction_uuid": UUID}).content.decode()
    assert re.search(r'<script src="/static/paycollect/return-waiting.js"', page)
    script = Path(finders.find("paycollect/return-waiting.js")).read_text()
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', page))
    attrs = {name: unescape(value) for name, value in attrs.items()}
    result = subprocess.run(  # noqa: S603
        ["node", "-e", NODE_HARNESS, json.dumps(answers), json.dumps(attrs), script],  # noqa: S607
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    calls = json.loads(result.stdout)
    polled = [url for kind, url, *_ in calls if kind == "fetch"]
    assert set(polled) == {f"{STATUS}?transaction_uuid={UUID}"}
    if final == "replace":
        assert calls[-2] == ["replace", f"{RETURN}?transaction_uuid={UUID}"]
        assert len(polled) == len(answers)
    else:
        assert not [c for c in calls if c[0] == "replace"]
        assert calls[-1] == ["waiting hidden", True, "unconfirmed hidden", False]
        assert abs(len(polled) - views.MAX_WAIT_SECONDS * 1000 // views.POLL_MS) <= 1
