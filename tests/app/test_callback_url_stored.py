"""The callback token is never stored: a direct order's callback URL is sent to the service whole and stored
without its token, and the data migration removes the tokens stored before."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from django_paycollect import services
from django_paycollect.models import ApiCall, DirectOrder
from django_paycollect.models.orders import without_callback_token
from tests.support.admin import logged_in, sent, staff, url
from tests.support.payments import CALLBACK_TOKEN

live = pytest.mark.django_db(transaction=True)
ORDER = {
    "name": "Summer camp",
    "amount": Decimal("200.00"),
    "payment_methods": ["card"],
    "customer_name": "Omar Hassan",
    "customer_email": "omar@example.com",
    "customer_mobile": "+201112223334",
}
OLD_TOKEN = "a-token-rotated-away-long-ago-0123456789"


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (
            f"https://shop.example/pay/callback/{CALLBACK_TOKEN}/",
            "https://shop.example/pay/callback/[redacted]/",
        ),
        (
            f"https://shop.example/pay/callback/{CALLBACK_TOKEN}",
            "https://shop.example/pay/callback/[redacted]",
        ),
        (f"https://shop.example/callback/{OLD_TOKEN}/?a=1", "https://shop.example/callback/[redacted]/?a=1"),
        (f"https://shop.example/hooks/{CALLBACK_TOKEN}/in/", "https://shop.example/hooks/[redacted]/in/"),
        ("https://shop.example/hooks/paycollect/", "https://shop.example/hooks/paycollect/"),
        ("", ""),
    ],
)
def test_a_callback_url_is_stored_without_its_token(settings, given, stored):
    settings.PAYCOLLECT = {"CALLBACK_TOKENS": CALLBACK_TOKEN}  # one text: the token, never its letters
    assert without_callback_token(given) == stored


@live
def test_a_direct_order_is_sent_its_whole_callback_url_and_stores_it_without_the_token(paycollect_in_process):
    callback_url = f"https://shop.example/paycollect/callback/{CALLBACK_TOKEN}/"
    order = services.create_direct_order(
        community_id=paycollect_in_process.community_id, callback_url=callback_url, **ORDER
    )
    assert order.state == DirectOrder.CREATED
    [request] = sent(paycollect_in_process, "direct_order")
    assert request["body"]["callback_url"] == callback_url  # what the service calls back
    assert order.callback_url == "https://shop.example/paycollect/callback/[redacted]/"
    assert DirectOrder.objects.values_list("callback_url", flat=True).get() == order.callback_url
    stored = [str(row) for row in ApiCall.objects.values_list("request_body", "data", "path")]
    assert CALLBACK_TOKEN not in " ".join(stored)


@live
def test_the_admins_add_direct_order_stores_this_sites_callback_url_without_the_token(
    paycollect_in_process, client, django_user_model
):
    """The finding: the URL built by ``urls.service_urls`` was stored, token and all."""
    logged_in(client, staff(django_user_model, "add_directorder", "view_directorder"))
    form = {
        "community_id": paycollect_in_process.community_id,
        "name": "Summer camp",
        "amount": "200.00",
        "currency": "EGP",
        "payment_methods": "card",
        "customer_name": "Omar Hassan",
        "customer_email": "omar@example.com",
        "customer_mobile": "+201112223334",
        "redirect_url": "",
        "callback_url": "",
    }
    response = client.post(url("directorder", "add"), form, headers={"host": "shop.example"})
    assert response.status_code == 302, response.context["adminform"].form.errors
    [request] = sent(paycollect_in_process, "direct_order")
    assert request["body"]["callback_url"] == f"http://shop.example/paycollect/callback/{CALLBACK_TOKEN}/"
    stored = DirectOrder.objects.values_list("callback_url", flat=True).get()
    assert stored == "http://shop.example/paycollect/callback/[redacted]/"


@live
def test_the_data_migration_removes_the_tokens_stored_before(settings):
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_TOKENS": [CALLBACK_TOKEN]}
    before, after = (
        ("paycollect", "0001_initial"),
        ("paycollect", "0002_direct_order_callback_url_without_token"),
    )
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    Order = executor.loader.project_state([before]).apps.get_model("paycollect", "DirectOrder")
    urls = {
        f"https://shop.example/paycollect/callback/{CALLBACK_TOKEN}/": "https://shop.example/paycollect/callback/[redacted]/",
        f"https://shop.example/paycollect/callback/{OLD_TOKEN}/": "https://shop.example/paycollect/callback/[redacted]/",
        f"https://shop.example/in/{CALLBACK_TOKEN}/x": "https://shop.example/in/[redacted]/x",
        "https://merchant.example/hook/": "https://merchant.example/hook/",
        "": "",
    }
    for index, given in enumerate(urls):
        Order.objects.create(
            community_id="c-1",
            name=f"order {index}",
            amount=Decimal("10.00"),
            callback_url=given,
            customer_name="Omar",
            customer_email="omar@example.com",
            customer_mobile="+201112223334",
        )
    executor = MigrationExecutor(connection)  # the graph again, as migrate reads it
    executor.migrate([after])
    stored = DirectOrder.objects.order_by("pk").values_list("callback_url", flat=True)
    assert list(stored) == list(urls.values())
