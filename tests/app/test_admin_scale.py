"""The admin's changelists at scale, by what they send to the database: no DISTINCT over a table for a
filter, a count bounded by ``COUNT_LIMIT``, exact searches without ``UPPER()`` or a join, sorts an index
can read in order. (Their times at ten thousand and a million rows: ``benchmarks/admin_changelist.py``.)
"""

from __future__ import annotations

import uuid as uuid_lib
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_paycollect.admin import changelists
from django_paycollect.models import ApiCall, ReceivedCallback
from tests.support.admin import local_transaction, make_records, url

CHANGELISTS = [
    "transaction",
    "recurringseries",
    "directorder",
    "refund",
    "apicall",
    "statisticssnapshot",
    "receivedcallback",
]


def statements(client, path, query=None):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, query or {})
    assert response.status_code == 200, response.status_code
    return response, [q["sql"] for q in captured.captured_queries]


@pytest.mark.django_db
@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelists_read_no_distinct_and_count_at_most_the_limit(admin_client, admin_user, model):
    make_records(range(2), admin_user)
    ReceivedCallback.objects.create(transaction_uuid=str(uuid_lib.uuid4()), claimed_status="SUCCESSFUL")

    response, sqls = statements(admin_client, url(model))

    assert not [sql for sql in sqls if "DISTINCT" in sql.upper()]
    counts = [sql for sql in sqls if "COUNT(" in sql.upper()]
    assert counts, sqls
    assert all(f"LIMIT {changelists.COUNT_LIMIT + 1}" in sql for sql in counts), counts
    assert response.context["cl"].result_count >= 1


@pytest.mark.django_db
def test_a_count_past_the_limit_says_more_than(admin_client, monkeypatch):
    monkeypatch.setattr(changelists.CappedCountPaginator, "count_limit", 2)
    for n in range(4):
        local_transaction(merchant_reference=f"ref-{n}")

    html = admin_client.get(url("transaction")).content.decode()

    assert "More than 2 transactions" in html
    assert len(admin_client.get(url("transaction")).context["cl"].result_list) == 4


@pytest.mark.django_db
def test_api_calls_are_found_by_a_transaction_uuid_in_any_spelling_without_a_join(admin_client):
    canonical = str(uuid_lib.uuid4())
    txn = local_transaction(uuid=canonical)
    found = ApiCall.objects.create(operation="get_transaction", method="GET", path="/t", transaction=txn)
    ApiCall.objects.create(operation="get_transaction", method="GET", path="/t", task_id="task-1")

    for term in (canonical, canonical.upper(), canonical.replace("-", "")):
        response, sqls = statements(admin_client, url("apicall"), {"q": term})
        assert [call.pk for call in response.context["cl"].result_list] == [found.pk], term
        searched = [sql for sql in sqls if "COUNT(" in sql]
        assert searched, sqls
        assert '"transaction_id" IN' in searched[0]
        assert "UPPER(" not in searched[0]
        assert " JOIN " not in searched[0]
    response = admin_client.get(url("apicall"), {"q": "task-1"})
    assert [call.task_id for call in response.context["cl"].result_list] == ["task-1"]


@pytest.mark.django_db
def test_sorting_by_amount_breaks_ties_by_id_in_the_same_direction(admin_client):
    for amount in ("5.00", "7.00", "5.00"):
        local_transaction(total_amount=Decimal(amount))
    column = list(admin_client.get(url("transaction")).context["cl"].list_display).index("amount")

    response, sqls = statements(admin_client, url("transaction"), {"o": str(column)})

    page = next(sql for sql in sqls if "ORDER BY" in sql and 'FROM "paycollect_transaction"' in sql)
    assert '"total_amount" ASC, "paycollect_transaction"."id" ASC' in page, page
    amounts = [txn.total_amount for txn in response.context["cl"].result_list]
    assert amounts == sorted(amounts)


@pytest.mark.django_db
def test_fixed_choice_filters_select_what_they_name(admin_client, settings):
    ApiCall.objects.create(operation="refund", method="POST", path="/r", error_class="ConnectError")
    ApiCall.objects.create(operation="capture", method="POST", path="/c")
    ApiCall.objects.create(operation="capture", method="POST", path="/c", error_class="DecryptionError")
    for claimed in ("SUCCESSFUL", "ON_HOLD"):
        ReceivedCallback.objects.create(transaction_uuid=str(uuid_lib.uuid4()), claimed_status=claimed)

    def listed(model, query, attribute):
        response = admin_client.get(url(model), query)
        assert response.status_code == 200, query
        return sorted(getattr(row, attribute) for row in response.context["cl"].result_list)

    assert listed("apicall", {"error_class__exact": "none"}, "operation") == ["capture"]
    assert listed("apicall", {"error_class__exact": "ConnectError"}, "operation") == ["refund"]
    assert listed("apicall", {"error_class__exact": "__other__"}, "error_class") == ["DecryptionError"]
    assert listed("apicall", {"operation__exact": "capture"}, "path") == ["/c", "/c"]
    assert listed("receivedcallback", {"claimed_status__exact": "__other__"}, "claimed_status") == ["ON_HOLD"]
