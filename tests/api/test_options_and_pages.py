"""Every endpoint answers OPTIONS (with the permissions of its other methods), and a page that is not there
is a 400 naming ``page``, as the schema documents a bad query parameter."""

from __future__ import annotations

from typing import Any

import pytest

from django_paycollect.models import Transaction

pytestmark = pytest.mark.django_db

UUID = "3f1c2a9e-8b4d-4c6e-9f0a-1b2c3d4e5f60"
#: Every endpoint, and who may use it.
ENDPOINTS = [
    ("/api/quotes/", "owner"),
    ("/api/promocodes/validate/", "owner"),
    ("/api/payments/", "owner"),
    (f"/api/payments/{UUID}/", "owner"),
    (f"/api/payments/{UUID}/refunds/", "refunder"),
    (f"/api/payments/{UUID}/capture/", "capturer"),
    ("/api/series/1/cancel/", "canceller"),
    ("/api/direct-orders/", "orderer"),
    ("/api/direct-orders/1/", "orderer"),
]


@pytest.mark.parametrize(("url", "allowed"), ENDPOINTS, ids=[url for url, _ in ENDPOINTS])
def test_every_endpoint_answers_options(as_user: Any, url: str, allowed: str) -> None:
    answer = as_user(allowed).options(url)
    assert answer.status_code == 200, answer.content
    assert answer.json()["name"]
    # Others are refused as for any other method, never with a server error.
    for who in (None, "not_staff", "staff"):
        if who != allowed:
            assert as_user(who).options(url).status_code in (200, 403), who


def test_options_of_an_endpoint_without_a_body_lists_no_fields(as_user: Any) -> None:
    answer = as_user("capturer").options(f"/api/payments/{UUID}/capture/")
    assert answer.status_code == 200
    assert "actions" not in answer.json()
    refund = as_user("refunder").options(f"/api/payments/{UUID}/refunds/").json()
    assert set(refund["actions"]["POST"]) == {"amount", "expected_refundable"}


@pytest.fixture
def three_payments(users: dict[str, Any]) -> None:
    for n in range(3):
        Transaction.objects.create(
            community_id="c", total_amount="10.00", merchant_reference=f"r-{n}", owner=users["owner"]
        )


@pytest.mark.parametrize(
    ("page", "says"),
    [
        ("0", "Must be a page number: a whole number from 1, or last."),
        ("-1", "Must be a page number: a whole number from 1, or last."),
        ("abc", "Must be a page number: a whole number from 1, or last."),
        ("1.5", "Must be a page number: a whole number from 1, or last."),
        ("3", "There is no page 3; the last is page 2."),
    ],
)
def test_a_page_that_is_not_there_is_a_400_naming_page(
    three_payments: None, as_user: Any, settings: Any, page: str, says: str
) -> None:
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_PAGE_SIZE": 2}
    answer = as_user("owner").get("/api/payments/", {"page": page})
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"page": [says]}


@pytest.mark.parametrize(("page", "count"), [("1", 2), ("2", 1), ("last", 1)])
def test_the_pages_that_are_there_answer_200(
    three_payments: None, as_user: Any, settings: Any, page: str, count: int
) -> None:
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "API_PAGE_SIZE": 2}
    answer = as_user("owner").get("/api/payments/", {"page": page})
    assert answer.status_code == 200, answer.content
    assert (answer.json()["count"], len(answer.json()["results"])) == (3, count)
