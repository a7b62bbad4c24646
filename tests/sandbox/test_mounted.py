"""The sandbox mounted inside a project under a prefix (Django's test client, the project's settings), and
its refusal to run in a live deployment."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection
from django.test import Client
from pytest_django.fixtures import Settings

from django_paycollect.sandbox import faults, seed, services, state
from django_paycollect.sandbox.apps import check_not_live
from django_paycollect.sandbox.envelope import ApiError
from django_paycollect.sandbox.models import ApiPayment, DirectOrder, OutboxMessage, Transaction

from .support import BILLING_JSON, future_date

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.sandbox.urls")]


@pytest.fixture
def identity(settings: Settings) -> dict[str, Any]:
    # Mounted defaults: control API off; no delivery thread inside the test's database transaction.
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False}
    return seed.seed(None, "http://testserver/sandbox")


def _post(client: Client, path: str, body: dict[str, Any], **headers: str) -> Any:
    return client.post(path, data=json.dumps(body), content_type="application/json", headers=headers)


def _pay_body(identity: dict[str, Any]) -> dict[str, Any]:
    return {
        "community_id": identity["community_id"],
        "amount": "10.00",
        "original_amount": "10.00",
        "variable_amount_id": identity["variable_amount_id"],
        "billing_data": BILLING_JSON,
    }


def test_spec_paths_answer_under_the_prefix(client: Client, identity: dict[str, Any]) -> None:
    key = identity["api_key"]
    cid = identity["community_id"]
    prepared = _post(client, "/sandbox/api/v1/payments/prepare-amount/", {"community_id": cid, "amount": 100})
    assert prepared.status_code == 200
    assert json.loads(prepared.content, parse_float=Decimal)["data"]["total_amount"] == Decimal("104.50")

    paid = _post(client, "/sandbox/api/v1/payments/pay/variable-amount", _pay_body(identity), x_api_key=key)
    data = paid.json()["data"]
    assert data["iframe_url"] == f"http://testserver/sandbox/pay/{data['transaction_uuid']}/"
    fetched = client.get(
        f"/sandbox/api/v1/communities/{cid}/transactions/{data['transaction_uuid']}/",
        headers={"x-api-key": key},
    )
    assert fetched.status_code == 200
    assert fetched.json()["data"]["status"] == "PENDING"
    page = client.get(f"/sandbox/pay/{data['transaction_uuid']}/")
    assert page.status_code == 200
    assert b'name="action" value="pay"' in page.content

    user, password = identity["basic_username"], identity["basic_password"]
    stats = client.get(
        f"/sandbox/api/core/dashboard/statistics?community_id={cid}",
        headers={"x-api-key": key, "authorization": f"Basic {user}:{password}"},
    )
    assert stats.json()["data"]["total_number_of_transactions"] == 1

    # The project's own slash handling never sees sandbox paths: the other variant is the 404 envelope.
    for wrong in ("/sandbox/api/v1/payments/prepare-amount", "/sandbox/api/core/dashboard/statistics/"):
        response = client.get(wrong)
        assert response.status_code == 404
        assert response.json()["status"]["code"] == 404


def test_control_api_is_off_unless_enabled(
    client: Client, identity: dict[str, Any], settings: Settings
) -> None:
    off = client.post("/sandbox/_control/reset")
    assert off.status_code == 404
    assert off.json()["status"]["errors"][0]["path"]
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "CONTROL_API": True}
    on = client.post("/sandbox/_control/reset")
    assert on.status_code == 200
    assert on.json()["data"]["api_key"] == identity["api_key"]


def test_connection_faults_degrade_to_gateway_pages_when_mounted(
    client: Client, identity: dict[str, Any]
) -> None:
    key = identity["api_key"]
    faults.create({"operation": "pay", "kind": "reset"})
    reset = _post(client, "/sandbox/api/v1/payments/pay/variable-amount", _pay_body(identity), x_api_key=key)
    assert reset.status_code == 502
    assert reset["Content-Type"].startswith("text/html")
    assert not Transaction.objects.exists()  # a reset happens before the work

    faults.create({"operation": "pay", "kind": "drop_after"})
    dropped = _post(
        client, "/sandbox/api/v1/payments/pay/variable-amount", _pay_body(identity), x_api_key=key
    )
    assert dropped.status_code == 504
    assert b"Gateway timeout" in dropped.content
    assert Transaction.objects.count() == 1  # the work was done, the answer lost


@pytest.fixture
def staff_dashboard(identity: dict[str, Any], settings: Settings, admin_client: Client) -> Client:
    """The dashboard on with DEBUG off (for staff only), and a staff user's browser."""
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "DASHBOARD": True}
    return admin_client


def test_dashboard_sets_an_api_payments_urls_and_shows_the_outbox(
    staff_dashboard: Client, identity: dict[str, Any]
) -> None:
    client = staff_dashboard
    pk = identity["variable_amount_id"]
    assert identity["api_key"] in client.get("/sandbox/_sandbox/").content.decode()
    saved = client.post(
        f"/sandbox/_sandbox/api-payments/{pk}/",
        {"redirect_url": "https://merchant.example/r", "callback_url": "https://merchant.example/c"},
    )
    assert saved.status_code == 302
    api_payment = ApiPayment.objects.get(pk=pk)
    assert (api_payment.redirect_url, api_payment.callback_url) == (
        "https://merchant.example/r",
        "https://merchant.example/c",
    )
    order = _post(
        client,
        "/sandbox/api/orders/create-direct-order/",
        {
            "name": "Trip",
            "community_id": identity["community_id"],
            "amount": {"amount": 50, "currency": "EGP"},
            "payment_methods": ["card"],
            "customer_name": "Omar Hassan",
            "customer_email": "omar@example.com",
            "customer_mobile": "+201112223334",
            "send_by_email": True,
        },
        x_api_key=identity["api_key"],
    )
    assert order.status_code == 201
    (message,) = OutboxMessage.objects.all()
    assert message.to == "omar@example.com"
    assert "omar@example.com" in client.get("/sandbox/_sandbox/outbox/").content.decode()


def test_saving_an_api_payments_urls_says_so_and_refuses_what_is_not_a_web_address(
    staff_dashboard: Client, identity: dict[str, Any]
) -> None:
    client = staff_dashboard
    pk = identity["variable_amount_id"]
    page = client.get("/sandbox/_sandbox/").content.decode()
    assert "Saved:" not in page
    urls = {"redirect_url": "https://merchant.example/r", "callback_url": "https://merchant.example/c"}
    saved = client.post(f"/sandbox/_sandbox/api-payments/{pk}/", urls, follow=True)
    assert saved.redirect_chain == [(f"/sandbox/_sandbox/?saved={pk}#api-payment-{pk}", 302)]
    assert "Saved: from now on this API payment redirects the customer" in saved.content.decode()

    refused = client.post(
        f"/sandbox/_sandbox/api-payments/{pk}/", {"redirect_url": "merchant.example/r", "callback_url": ""}
    )
    assert refused.status_code == 400
    assert "Redirect URL: enter an http:// or https:// address, or nothing." in refused.content.decode()
    assert ApiPayment.objects.get(pk=pk).redirect_url == urls["redirect_url"]  # unchanged


def test_amounts_above_the_maximum_are_refused_with_a_400_naming_the_field(
    client: Client, identity: dict[str, Any], settings: Settings
) -> None:
    key = identity["api_key"]
    pay_path = "/sandbox/api/v1/payments/pay/variable-amount"
    over = {**_pay_body(identity), "amount": "1000000.01"}
    refused = _post(client, pay_path, over, x_api_key=key)
    assert refused.status_code == 400
    assert refused.json()["status"]["errors"] == [{"amount": ["Ensure this amount is at most 1000000.00."]}]
    in_piasters = {k: v for k, v in _pay_body(identity).items() if k != "amount"} | {
        "amount_piasters": 100000001
    }
    refused = _post(client, pay_path, in_piasters, x_api_key=key)
    assert refused.json()["status"]["errors"] == [
        {"amount_piasters": ["Ensure this amount is at most 1000000.00."]}
    ]
    at_most = _post(client, pay_path, {**_pay_body(identity), "amount": "1000000.00"}, x_api_key=key)
    assert at_most.status_code == 200

    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "MAX_AMOUNT": Decimal("50.00")}
    prepared = _post(
        client,
        "/sandbox/api/v1/payments/prepare-amount/",
        {"community_id": identity["community_id"], "amount": "50.01"},
    )
    assert prepared.json()["status"]["errors"] == [{"amount": ["Ensure this amount is at most 50.00."]}]
    assert Transaction.objects.count() == 1


def test_the_payment_page_shows_what_a_promocode_took_off_and_no_empty_discount(
    client: Client, identity: dict[str, Any]
) -> None:
    key = identity["api_key"]
    pay_path = "/sandbox/api/v1/payments/pay/variable-amount"
    checked = client.post(
        "/sandbox/api/promocodes/validate/",
        data=json.dumps(
            {
                "name": "SAVE10",
                "community_id": identity["community_id"],
                "phone_number": "+201001234567",
                "amount": "100.00",
                "currency": "EGP",
                "payment_for": "API_PAYMENT",
                "variable_amount_id": str(identity["variable_amount_id"]),
            }
        ),
        content_type="application/json",
    ).json()["data"]
    body = {**_pay_body(identity), "amount": "90.00", "original_amount": "90.00"}
    paid = _post(client, pay_path, {**body, "promocode_id": checked["promocode_id"]}, x_api_key=key)
    page = client.get(f"/sandbox/pay/{paid.json()['data']['transaction_uuid']}/").content.decode()
    text = re.sub(r"<[^>]+>", "", page)  # amounts are isolated in <bdi> for right-to-left pages
    assert "Promocode SAVE10" in text
    assert "-10%, already taken off the amount" in text

    order = _post(
        client,
        "/sandbox/api/orders/create-direct-order/",
        {
            "name": "Trip",
            "community_id": identity["community_id"],
            "amount": {"amount": 50, "currency": "EGP"},
            "payment_methods": ["card"],
            "customer_name": "Omar Hassan",
            "customer_email": "omar@example.com",
            "customer_mobile": "+201112223334",
        },
        x_api_key=key,
    ).json()["data"]
    order_page = client.get(order["payment_link"].removeprefix("http://testserver")).content.decode()
    assert re.search(r'id="total"><bdi dir="ltr">50\.00 EGP</bdi>', order_page)
    for absent in ('id="discount"', 'id="subtotal"', 'id="vat"'):
        assert absent not in order_page  # no "Discount -0.00 EGP" without a discount


def test_seed_command_prints_the_credentials(identity: dict[str, Any]) -> None:
    out = StringIO()
    call_command("paycollect_sandbox_seed", stdout=out)
    assert identity["api_key"] in out.getvalue()
    assert identity["community_id"] in out.getvalue()


def test_refuses_a_live_deployment(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    check_not_live()  # not live: fine
    monkeypatch.setenv("PAYCOLLECT_DEPLOYMENT", "live")
    with pytest.raises(ImproperlyConfigured, match="live"):
        check_not_live()
    monkeypatch.delenv("PAYCOLLECT_DEPLOYMENT")
    settings.PAYCOLLECT_DEPLOYMENT = "live"
    with pytest.raises(ImproperlyConfigured, match="live"):
        check_not_live()


def test_runner_refuses_a_live_deployment(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PAYCOLLECT_DEPLOYMENT": "live",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    result = subprocess.run(  # noqa: S603
        [
            sys.executable,
            "-m",
            "django_paycollect.sandbox",
            "--port",
            "0",
            "--db",
            str(tmp_path / "x.sqlite3"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "Refusing to start" in result.stderr
    assert "live" in result.stderr
    assert not (tmp_path / "x.sqlite3").exists()


def test_api_payments_created_after_seeding_chosen_ids_get_fresh_ids(settings: Settings) -> None:
    """A project may seed with its own ids (the demo does); the sequence must move past them."""
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False}
    identity = seed.seed(
        {"variable_amount_id": 1, "member_variable_amount_id": 2}, "http://testserver/sandbox"
    )
    assert identity["variable_amount_id"] == 1
    community = ApiPayment.objects.get(pk=1).community
    created = ApiPayment.objects.create(community=community, name="Another API payment")
    assert created.pk not in (1, 2)


def test_a_fault_on_every_request_is_read_once_a_second_and_never_written(
    identity: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_paycollect.sandbox import fastpath
    from django_paycollect.sandbox.models import Fault

    standing = faults.create(
        {"operation": "fetch_transaction", "kind": "latency", "latency_ms": 5, "times": None}
    )
    counted = faults.create({"operation": "pay", "kind": "status", "status": 503, "times": 1})
    fastpath.forget_faults()  # what the commit of each creation does
    # Trusted for a minute here, not a second: a loaded machine must not make the three takes read again.
    monkeypatch.setattr(fastpath, "TRUST_SECONDS", 60.0)
    assert faults.take("fetch_transaction") is not None  # read, then trusted

    with CaptureQueriesContext(connection) as queries:
        taken = [faults.take("fetch_transaction") for _ in range(3)]

    # A latency on every fetch holds back no other request: no query, no write lock, nothing used up.
    assert queries.captured_queries == []
    assert {(f.kind, f.latency_ms) for f in taken if f is not None} == {("latency", 5)}
    assert Fault.objects.get(pk=standing.pk).remaining is None
    # A fault for a number of requests is still used up under the lock, once.
    assert faults.take("pay") is not None
    fastpath.forget_faults()
    assert faults.take("pay") is None
    assert not Fault.objects.filter(pk=counted.pk).exists()


def test_pay_complete_refund_capture_and_cancel_take_row_locks_on_the_projects_database(
    client: Client, identity: dict[str, Any], settings: Settings
) -> None:
    """Every state change of the mounted sandbox locks its transaction on the project's own database.

    On PostgreSQL (make test-postgres) this is where FOR UPDATE meets the nullable relations of a
    transaction (API payment, direct order, series): the lock must be on the row itself, never on the
    nullable side of an outer join, which PostgreSQL refuses.
    """
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False, "CONTROL_API": True}
    key, cid = identity["api_key"], identity["community_id"]
    pay_path = "/sandbox/api/v1/payments/pay/variable-amount"

    # The hosted page's Pay: redirected to the API payment's return URL.
    by_page = _post(client, pay_path, _pay_body(identity), x_api_key=key).json()["data"]["transaction_uuid"]
    paid = client.post(f"/sandbox/pay/{by_page}/", {"action": "pay"})
    assert paid.status_code == 302, paid.content[:500]
    assert "transaction_status=SUCCESSFUL" in paid["Location"]

    # The control API's completion (a kiosk payment, or a card payment without the page).
    by_control = _post(client, pay_path, _pay_body(identity), x_api_key=key).json()["data"][
        "transaction_uuid"
    ]
    completed = client.post(
        f"/sandbox/_control/transactions/{by_control}/complete",
        data=json.dumps({"outcome": "SUCCESSFUL"}),
        content_type="application/json",
    )
    assert completed.status_code == 200, completed.content[:500]

    for tx_uuid in (by_page, by_control):
        refunded = _post(
            client,
            "/sandbox/api/payments/refund-transaction/",
            {"transaction_uuid": tx_uuid, "refund_amount": "4.00"},
            x_api_key=key,
        )
        assert refunded.status_code == 201, refunded.content[:500]
        captured = _post(
            client, "/sandbox/api/payments/capture-payment/", {"transaction_uuid": tx_uuid}, x_api_key=key
        )
        assert captured.status_code == 201, captured.content[:500]
    assert {(t.refunded_amount, t.captured_at is not None) for t in Transaction.objects.all()} == {
        (Decimal("4.00"), True)
    }

    # A recurring payment: its completion locks the series too; the cancel locks the transaction first.
    recurring = {
        **_pay_body(identity),
        "is_recurring": True,
        "expiry_date": str(future_date(100)),
        "minimum_days_between_payments": 30,
    }
    parent = _post(client, pay_path, recurring, x_api_key=key).json()["data"]["transaction_uuid"]
    assert client.post(f"/sandbox/pay/{parent}/", {"action": "pay"}).status_code == 302
    cancelled = _post(
        client, "/sandbox/api/payments/cancel-recurring-payment/", {"transaction_uuid": parent}, x_api_key=key
    )
    assert cancelled.status_code == 200, cancelled.content[:500]

    # A direct order's payment link: the order's own page starts and completes its payment.
    order = _post(
        client,
        "/sandbox/api/orders/create-direct-order/",
        {
            "name": "Trip",
            "community_id": cid,
            "amount": {"amount": 50, "currency": "EGP"},
            "payment_methods": ["card"],
            "customer_name": "Omar Hassan",
            "customer_email": "omar@example.com",
            "customer_mobile": "+201112223334",
        },
        x_api_key=key,
    ).json()["data"]
    link = order["payment_link"].removeprefix("http://testserver")
    ordered = client.post(link, {"action": "pay", "pay_using": "card"})
    assert ordered.status_code in (200, 302), ordered.content[:500]
    assert Transaction.objects.filter(direct_order__isnull=False, status="SUCCESSFUL").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_payments_of_one_direct_order_completing_at_once_pay_it_once(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes serving one PostgreSQL database: each has its own write lock, so only a row lock on the
    order keeps its second payment from succeeding beside the first."""
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False}
    identity = seed.seed(None, "http://testserver/sandbox")
    order = _post(
        client,
        "/sandbox/api/orders/create-direct-order/",
        {
            "name": "Trip",
            "community_id": identity["community_id"],
            "amount": {"amount": 50, "currency": "EGP"},
            "payment_methods": ["kiosk"],
            "customer_name": "Omar Hassan",
            "customer_email": "omar@example.com",
            "customer_mobile": "+201112223334",
        },
        x_api_key=identity["api_key"],
    ).json()["data"]
    direct_order = DirectOrder.objects.get(payment_id=order["payment_link"].rstrip("/").rsplit("/", 1)[1])
    # Two kiosk bills of the same order, both waiting for the kiosk.
    pending = [services.start_order_payment(direct_order, "kiosk", {}).uuid for _ in range(2)]

    # As in two processes: no shared in-process lock, and each looks at the order before either commits.
    monkeypatch.setattr(state, "WRITE_LOCK", contextlib.nullcontext())
    order_paid = services._order_paid

    def slow_order_paid(order_id: int) -> bool:
        paid = order_paid(order_id)
        time.sleep(0.5)
        return paid

    monkeypatch.setattr(services, "_order_paid", slow_order_paid)
    start = threading.Barrier(2)
    outcomes: dict[str, str] = {}

    def complete(tx_uuid: Any) -> None:
        start.wait(timeout=10)
        try:
            services.complete(tx_uuid, services.SUCCESSFUL)
            outcomes[str(tx_uuid)] = "paid"
        except ApiError as exc:
            outcomes[str(tx_uuid)] = str(exc.errors)
        finally:
            connection.close()

    threads = [threading.Thread(target=complete, args=(tx_uuid,)) for tx_uuid in pending]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes.values()) == [
        "[{'transaction_uuid': ['The direct order is already paid.']}]",
        "paid",
    ]
    assert Transaction.objects.filter(direct_order=direct_order, status="SUCCESSFUL").count() == 1
