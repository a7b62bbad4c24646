"""The mounted sandbox speaks the site's language: its field errors (which reach customers through the app),
its hosted pages (right to left in Arabic, amounts kept whole) and its notifications. The envelope's own
status words stay as the spec writes them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from django_paycollect.sandbox import seed
from django_paycollect.sandbox.models import OutboxMessage

from .support import BILLING_JSON

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.sandbox.urls")]

PAY = "/sandbox/api/v1/payments/pay/variable-amount"


@pytest.fixture
def identity(settings: Settings) -> dict[str, Any]:
    settings.PAYCOLLECT_SANDBOX = {"CALLBACK_WORKER": False}
    settings.LANGUAGE_CODE = "ar"
    return seed.seed(None, "http://testserver/sandbox")


def _key(identity: dict[str, Any]) -> dict[str, str]:
    return {"x-api-key": identity["api_key"]}


def _pay(client: Client, identity: dict[str, Any], **billing: str) -> Any:
    body = {
        "community_id": identity["community_id"],
        "amount": "1539.50",
        "original_amount": "1500.00",
        "variable_amount_id": identity["variable_amount_id"],
        "billing_data": {**BILLING_JSON, **billing},
    }
    return client.post(PAY, data=json.dumps(body), content_type="application/json", headers=_key(identity))


def test_a_refused_phone_number_is_explained_in_the_site_s_language(client: Client, identity: dict[str, Any]):
    refused = _pay(client, identity, phone_number="+2010012")
    assert refused.status_code == 400
    answer = refused.json()
    assert answer["status"]["message"] == "validation error: billing_data"  # the envelope's words stay
    assert answer["status"]["errors"] == [
        {
            "billing_data": {
                "phone_number": ["أدخل رقم الهاتف مسبوقًا برمز الدولة، مثل \u2066+201001234567\u2069."]
            }
        }
    ]


def test_the_hosted_page_is_right_to_left_with_each_amount_kept_whole(
    client: Client, identity: dict[str, Any]
):
    uuid = _pay(client, identity).json()["data"]["transaction_uuid"]
    page = client.get(f"/sandbox/pay/{uuid}/").content.decode()
    assert '<html lang="ar" dir="rtl">' in page
    assert '<td class="num" id="total"><bdi dir="ltr">1539.50 EGP</bdi></td>' in page
    assert '<td class="num" id="fees"><bdi dir="ltr">39.50 EGP</bdi></td>' in page
    assert 'ادفع <bdi dir="ltr">1539.50 EGP</bdi>' in page
    assert "بطاقة" in page  # the payment method, in words


def test_a_direct_order_s_notification_is_written_in_the_site_s_language(
    client: Client, identity: dict[str, Any]
):
    body = {
        "community_id": identity["community_id"],
        "name": "اشتراك المسبح",
        "amount": {"amount": "500.00", "currency": "EGP"},
        "payment_methods": ["card"],
        "customer_name": "عمر حسن",
        "customer_email": "omar@example.com",
        "customer_mobile": "+201112223334",
        "send_by_email": True,
    }
    created = client.post(
        "/sandbox/api/orders/create-direct-order/",
        data=json.dumps(body),
        content_type="application/json",
        headers=_key(identity),
    )
    assert created.status_code == 201, created.content
    message = OutboxMessage.objects.get()
    assert message.subject == "طلب دفع: اشتراك المسبح"
    assert message.body.startswith("عزيزي/عزيزتي عمر حسن،")
