"""Acceptance: a project whose ``PAYCOLLECT`` comes from the environment as the environment gives it, text
(``CALLBACK_TOKENS``, ``ENCRYPTION_KEYS`` and ``METRICS_TOKENS`` one text each, ``VARIABLE_AMOUNT_ID`` the
text ``"12"``), starts without a check's complaint, pays, hears a direct order's callback over real HTTP from
the sandbox in its own process, and keeps its keys safe."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.apps import apps
from django.core.checks import run_checks
from django.test import override_settings

from django_paycollect import crypto
from django_paycollect.models import Community, DirectOrder, ReceivedCallback, Transaction
from tests.example_project import run_example
from tests.support.admin import logged_in, staff, url
from tests.support.callbacks import processed_callback

live = pytest.mark.django_db(transaction=True)

#: What the environment holds (``os.environ[...]``: text, every one of them).
ENVIRONMENT = {
    "PAYCOLLECT_CALLBACK_TOKENS": "env-callback-token-3kV9qLw2XzR8tY4u",
    "PAYCOLLECT_ENCRYPTION_KEYS": "env-encryption-key-Hc7Pn2Wq9ZsL4xVb0Mr",
    "PAYCOLLECT_METRICS_TOKENS": "env-metrics-token-Ta5Ue8Rk1Jd6Gy3w",
}
COMMUNITY_KEY = "stored-community-api-key-Qm2Zx7Lp4"
COMMUNITY_BASIC = "club-user:stored-basic-password-Vn8Rt"


@pytest.fixture
def environment_settings(paycollect_live: Any, settings: Any) -> dict[str, str]:
    environ = {**ENVIRONMENT, "PAYCOLLECT_VARIABLE_AMOUNT_ID": str(paycollect_live.variable_amount_id)}
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "CALLBACK_TOKENS": environ["PAYCOLLECT_CALLBACK_TOKENS"],
        "ENCRYPTION_KEYS": environ["PAYCOLLECT_ENCRYPTION_KEYS"],
        "METRICS_TOKENS": environ["PAYCOLLECT_METRICS_TOKENS"],
        "VARIABLE_AMOUNT_ID": environ["PAYCOLLECT_VARIABLE_AMOUNT_ID"],
    }
    return environ


@live
def test_a_project_configured_from_the_environment_pays_hears_a_direct_orders_callback_and_keeps_its_keys(
    paycollect_live, environment_settings, live_server, pay, client, django_user_model
):
    sb, environ = paycollect_live, environment_settings
    token = environ["PAYCOLLECT_CALLBACK_TOKENS"]

    # It starts: no check refuses what the environment gave.
    assert [m.id for m in run_checks(databases=[]) if m.id.startswith("paycollect.") and m.is_serious()] == []

    # It pays: the API payment named by the text "12" (before: "Must be a whole number greater than zero.").
    callback_url = f"{live_server.url}/paycollect/callback/{token}/"
    sb.control.configure_api_payment(sb.variable_amount_id, callback_url=callback_url)
    txn = pay("100.00", merchant_reference="from-the-environment")
    assert txn.status == Transaction.PENDING
    assert sb.submit_payment_page(txn.iframe_url, "pay").status_code == 302
    assert processed_callback(txn.uuid).token_index == 0
    txn.refresh_from_db()
    assert txn.status == Transaction.SUCCESSFUL

    # A direct order made in the admin: its callback URL is this site's, with the whole token (before: its
    # first letter, and every callback answered 404).
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    host = urlsplit(live_server.url).netloc
    form = {
        "community_id": sb.community_id,
        "name": "Coaching",
        "amount": "80.00",
        "currency": "EGP",
        "payment_methods": "card",
        "customer_name": "Omar Hassan",
        "customer_email": "omar@example.com",
        "customer_mobile": "+201112223334",
        "redirect_url": "",
        "callback_url": "",
    }
    response = client.post(url("directorder", "add"), form, headers={"host": host})
    assert response.status_code == 302, response.context["adminform"].form.errors
    order = DirectOrder.objects.get()
    assert order.callback_url == f"http://{host}/paycollect/callback/[redacted]/"
    answer = sb.submit_payment_page(order.payment_link, "pay")
    assert answer.status_code == 302
    paid_uuid = parse_qs(urlsplit(answer.headers["Location"]).query)["transaction_uuid"][0]
    heard = processed_callback(paid_uuid)  # real HTTP from the sandbox's process to the live server
    assert heard.token_index == 0
    assert Transaction.objects.get(uuid=paid_uuid).status == Transaction.SUCCESSFUL
    (delivery,) = sb.control.wait_for_callbacks(transaction_uuid=paid_uuid)
    assert delivery["attempt_log"][0]["http_status"] == 200

    # Metrics: the one token is a token, never its letters.
    pytest.importorskip("prometheus_client")
    metrics = f"{live_server.url}/metrics/"
    bearer = environ["PAYCOLLECT_METRICS_TOKENS"]
    assert requests.get(metrics, headers={"Authorization": f"Bearer {bearer}"}, timeout=10).status_code == 200
    assert (
        requests.get(metrics, headers={"Authorization": f"Bearer {bearer[0]}"}, timeout=10).status_code == 401
    )

    # Keys kept safe: a community's key is encrypted with the one key, and with no trivial one.
    community = Community(community_id="club-b", name="Club B")
    community.api_key = COMMUNITY_KEY
    community.basic_credentials = COMMUNITY_BASIC
    community.save()
    stored = Community.objects.values_list("api_key_encrypted", flat=True).get()
    assert crypto.decrypt(stored) == COMMUNITY_KEY
    key = environ["PAYCOLLECT_ENCRYPTION_KEYS"]
    trivial = [bytes([n]) for n in range(256)] + [bytes(n) for n in range(1, 65)] + sorted(set(key))
    for guess in trivial:
        with (
            override_settings(PAYCOLLECT={"ENCRYPTION_KEYS": [guess]}),
            pytest.raises(crypto.DecryptionError),
        ):
            crypto.decrypt(stored)

    # Nothing of our secrets in the database in clear: the configured API key, the community's key and
    # password, the callback token, the metrics token.
    everything = json.dumps(
        [list(model._base_manager.values()) for model in apps.get_models() if model._meta.managed],
        default=str,
    )
    secrets = [sb.api_key, COMMUNITY_KEY, COMMUNITY_BASIC.split(":")[1], token, bearer, key]
    assert [secret for secret in secrets if secret in everything] == []
    assert ReceivedCallback.objects.filter(state=ReceivedCallback.PROCESSED).count() == 2


@pytest.mark.parametrize(("given", "refused"), [("1", False), ("seven", True), ("0", True)])
def test_the_example_project_reads_its_variable_amount_id_as_the_environment_gives_it(given, refused):
    """The club site passes the environment's text on: "1" is the API payment 1, a word is check E010 at
    start (before: the settings' own int() stopped the site with a traceback)."""
    done = run_example(
        "example_project/manage.py", "check", CLUBSITE_DEBUG="1", PAYCOLLECT_VARIABLE_AMOUNT_ID=given
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert (done.returncode != 0) is refused, output
    assert ("paycollect.E010" in output and "PAYCOLLECT['VARIABLE_AMOUNT_ID']" in output) is refused
