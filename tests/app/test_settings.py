"""Every ``PAYCOLLECT`` key earns its place: documented in the settings reference, which documents no other,
and each one a site may set has a test showing what it changes. The keys other tests already turn (timeouts,
intervals, the callback and API settings, ...) are shown there; these are the rest."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection, transaction

from django_paycollect import services
from django_paycollect.conf import DEFAULTS
from django_paycollect.exceptions import PayCollectConfigurationError
from django_paycollect.models import ApiCall, Transaction
from django_paycollect.reconciliation.steps import concurrency

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"

live = pytest.mark.django_db(transaction=True)


def test_every_key_is_documented_and_the_reference_documents_no_other():
    page = REFERENCE.read_text()
    outside = page.index("## Settings outside `PAYCOLLECT`")
    documented = re.findall(r"^### `([A-Z][A-Z0-9_]*)`$", page[:outside], re.M)
    assert len(documented) == len(set(documented)), "a key documented twice"
    assert set(documented) == set(DEFAULTS)
    for key in DEFAULTS:  # each section shows its default from conf.DEFAULTS, never a stale copy
        assert f"Default: {{pcdefault}}`{key}`" in page


@live
@pytest.mark.parametrize("method", ["POST", "GET"])
def test_promocode_method_is_the_method_validate_promocode_is_sent_with(
    paycollect_in_process, settings, method
):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "PROMOCODE_METHOD": method}
    found = services.validate_promocode("SAVE10", amount=Decimal("100.00"), phone_number="+201001234567")
    assert found.promocode_id
    [sent] = paycollect_in_process.control.journal("validate_promocode")
    assert (sent["method"], sent["body"]["name"]) == (method, "SAVE10")  # GET carries its body too
    assert ApiCall.objects.get(operation="validate_promocode").method == method


@live
def test_default_currency_and_pay_using_are_what_a_payment_naming_none_is_started_with(
    paycollect_in_process, pay, settings
):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "DEFAULT_CURRENCY": "USD", "DEFAULT_PAY_USING": "kiosk"}
    started = pay("25.00")
    assert (started.currency, started.pay_using) == ("USD", "kiosk")
    assert started.bill_reference  # a kiosk payment: a bill reference, no payment page
    [sent] = paycollect_in_process.control.journal("pay")
    assert (sent["body"]["currency"], sent["body"]["pay_using"]) == ("USD", "kiosk")
    named = pay("25.00", currency="EGP", pay_using="card")  # a call naming them is not overridden
    assert (named.currency, named.pay_using) == ("EGP", "card")


@live
def test_store_request_bodies_off_stores_none_and_on_stores_them_masked(paycollect_in_process, pay, settings):
    pay("10.00", merchant_reference="stored")
    stored = ApiCall.objects.get(operation="pay")
    assert stored.request_body["billing_data"]["name"] == "M*** A***"  # personal data masked, always
    assert stored.request_body["billing_data"]["email"] == "m***@example.com"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "STORE_REQUEST_BODIES": False}
    pay("10.00", merchant_reference="not-stored")
    assert ApiCall.objects.exclude(pk=stored.pk).get(operation="pay").request_body is None


@live
@pytest.mark.parametrize("form", ["pair", "text"])
def test_basic_credentials_are_what_dashboard_statistics_is_asked_with(paycollect_in_process, settings, form):
    user, password = paycollect_in_process.basic_credentials
    given = (user, password) if form == "pair" else f"{user}:{password}"
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASIC_CREDENTIALS": given}
    assert services.fetch_statistics().community_id == paycollect_in_process.community_id
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "BASIC_CREDENTIALS": None}
    with pytest.raises(PayCollectConfigurationError, match="basic_credentials"):
        services.fetch_statistics()
    assert ApiCall.objects.filter(operation="dashboard_statistics").count() == 2  # refused before sending


@pytest.mark.postgres
@live
def test_reconcile_concurrency_is_how_many_fetches_run_at_once(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RECONCILE_CONCURRENCY": 3}
    assert connection.vendor == "postgresql"
    assert concurrency() == 3
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "RECONCILE_CONCURRENCY": 1,
    }  # a database short of connections
    assert concurrency() == 1
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RECONCILE_CONCURRENCY": 3}
    with transaction.atomic():  # other threads would not see this transaction's rows
        assert concurrency(Transaction) == 1


@pytest.mark.postgres
@live
def test_reconcile_fetches_eight_at_once_by_default(settings):
    # 20 ms of service latency over some 2 ms of the process's CPU per fetch (docs/settings.md).
    settings.PAYCOLLECT = {
        key: value for key, value in settings.PAYCOLLECT.items() if key != "RECONCILE_CONCURRENCY"
    }
    assert concurrency() == 8


@pytest.mark.django_db
def test_reconcile_concurrency_is_one_on_sqlite_whatever_it_says(settings):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's one writer at a time")
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "RECONCILE_CONCURRENCY": 8}
    assert concurrency() == 1
