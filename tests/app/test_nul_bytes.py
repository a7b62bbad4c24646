"""A NUL character in a query or form value is a 400 in words, never a 500 (issue 33): PostgreSQL refuses a
text holding one ("A string literal cannot contain NUL (0x00) characters"), so a filter or a search on it
was a 500 there. The REST API's query parameters, the admin's list filters and search. Run on PostgreSQL
too: ``eval "$(bash .ci/postgres.sh)"``."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

NUL = "%00"


@pytest.fixture
def api(settings: Any, django_user_model: Any) -> APIClient:
    settings.ROOT_URLCONF = "tests.api.urls"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "PAYABLE_RESOLVER": "tests.api.payables.resolve"}
    client = APIClient()
    client.force_login(django_user_model.objects.create_user("owner", "owner@example.com"))
    return client


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (f"reference={NUL}", "reference"),
        (f"reference=book{NUL}", "reference"),
        (f"status={NUL}", "status"),
        (f"page={NUL}", "page"),
    ],
)
def test_the_api_refuses_a_nul_in_a_query_parameter_naming_it(api, query, field):
    answer = api.get(f"/api/payments/?{query}")
    assert answer.status_code == 400, answer.content[:300]
    assert list(answer.json()) == [field]
    assert "NUL" in answer.json()[field][0]


def test_the_api_refuses_a_nul_in_a_form_value(api):
    answer = api.generic(
        "POST", "/api/payments/", f"reference=book{NUL}", "application/x-www-form-urlencoded"
    )
    assert answer.status_code == 400, answer.content[:300]
    assert list(answer.json()) == ["reference"]


ADMIN = "/admin/paycollect"


@pytest.mark.parametrize(
    "path",
    [
        f"{ADMIN}/transaction/?community_id__exact={NUL}",
        f"{ADMIN}/transaction/?status__exact={NUL}",
        f"{ADMIN}/transaction/?currency={NUL}",
        f"{ADMIN}/transaction/?q={NUL}",
        f"{ADMIN}/transaction/?q=abc{NUL}def",
        f"{ADMIN}/directorder/?state__exact={NUL}",
        f"{ADMIN}/refund/?state__exact={NUL}",
        f"{ADMIN}/receivedcallback/?state__exact={NUL}",
        f"{ADMIN}/receivedcallback/?community_id__exact={NUL}",
        f"{ADMIN}/apicall/?operation__exact={NUL}",
        f"{ADMIN}/recurringseries/?cancel_state__exact={NUL}",
    ],
)
def test_the_admin_refuses_a_nul_in_a_filter_or_search_in_words(admin_client, path):
    answer = admin_client.get(path)
    assert answer.status_code == 400, (path, answer.status_code)
    assert "NUL" in answer.content.decode()


def test_the_admin_lists_answer_their_ordinary_filters(admin_client):
    for path in (f"{ADMIN}/transaction/?status__exact=FAILED", f"{ADMIN}/refund/?state__exact=failed"):
        assert admin_client.get(path).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        f"{ADMIN}/community/?q={NUL}",
        f"{ADMIN}/dashboard/?community={NUL}",
        f"{ADMIN}/transaction/1{NUL}/change/",
    ],
)
def test_the_admins_other_pages_never_answer_500_to_a_nul(admin_client, path):
    assert admin_client.get(path).status_code < 500
