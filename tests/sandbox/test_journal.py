"""The request journal keeps what clients sent, and never a secret."""

from __future__ import annotations

import json
from decimal import Decimal

import requests

from django_paycollect.sandbox.testing import Sandbox, SandboxProcess

from .support import BILLING, png_bytes

BANK_PASSWORD = "S3cret-bank-pass"


def test_secrets_are_redacted_everywhere(
    paycollect_sandbox: Sandbox, paycollect_sandbox_server: SandboxProcess
) -> None:
    sandbox = paycollect_sandbox
    client = sandbox.client
    client.pay(
        community_id=sandbox.community_id,
        amount=Decimal("12.50"),
        original_amount=Decimal("12.50"),
        variable_amount_id=sandbox.variable_amount_id,
        billing_data=BILLING,
    )
    client.dashboard_statistics(community_id=sandbox.community_id)
    client.create_community(
        name="Bank Club",
        logo=("logo.png", png_bytes()),
        extra_fields={
            "order_description": "Monthly dues",
            "bank_settings": json.dumps(
                {
                    "integration_method": "redirect",
                    "merchant_id": "m-1",
                    "fee": 1.5,
                    "api_password": BANK_PASSWORD,
                }
            ),
            "api_password": BANK_PASSWORD + "-2",
        },
    )
    # A body the sandbox cannot parse, with a secret in it.
    requests.post(
        f"{sandbox.base_url}/api/v1/payments/prepare-amount/",
        data=f"amount=1&api_password={BANK_PASSWORD}-3",
        headers={"Content-Type": "text/plain"},
        timeout=10,
    )

    journal = sandbox.control.journal()
    text = requests.get(f"{sandbox.base_url}/_control/requests", timeout=10).text
    _user, password = sandbox.basic_credentials
    for secret in (sandbox.api_key, password, BANK_PASSWORD):
        assert secret not in text
    by_operation = {entry["operation"]: entry for entry in journal}
    assert by_operation["pay"]["headers"]["x-api-key"] == "[redacted]"
    assert by_operation["dashboard_statistics"]["headers"]["authorization"] == "[redacted]"
    # Everything that is not secret stays readable, money as exact numbers.
    pay_body = by_operation["pay"]["body"]
    assert pay_body["billing_data"] == {
        "name": "Mona Ali",
        "email": "mona@example.com",
        "phone_number": "+201001234567",
    }
    assert pay_body["amount"] == Decimal("12.50")
    assert '"amount":12.50' in text
    community_body = by_operation["create_community"]["body"]
    assert community_body["api_password"] == "[redacted]"
    assert community_body["bank_settings"]["api_password"] == "[redacted]"
    assert community_body["bank_settings"]["merchant_id"] == "m-1"
    assert community_body["_files"]["logo"]["name"] == "logo.png"
    assert "[redacted]" in by_operation["prepare_amount"]["body"]["text"]

    # The community record keeps the other settings, without the password.
    (bank,) = [c for c in sandbox.control.communities() if c["name"] == "Bank Club"]
    assert bank["extra"]["order_description"] == "Monthly dues"
    assert bank["extra"]["bank_settings"]["fee"] == Decimal("1.5")  # numbers in stored settings stay exact
    assert BANK_PASSWORD not in json.dumps(bank["extra"], default=str)

    # Nor does the sandbox's own log carry them.
    log = paycollect_sandbox_server.log_tail(10_000)
    assert BANK_PASSWORD not in log
    assert bank["api_key"] not in log
