"""Every endpoint and every error path answers the spec's envelope, with the status code in it.

Raw ``requests`` on purpose: the exact bytes on the wire, including malformed bodies the typed client would
never send.
"""

from __future__ import annotations

import base64
import json
import uuid
from decimal import Decimal
from typing import Any

import requests

from django_paycollect.sandbox.testing import Sandbox

from .support import BILLING_JSON, assert_envelope, error_fields, future_date, png_bytes


class Wire:
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.session = requests.Session()
        self.key = {"x-api-key": sandbox.api_key}
        user, password = sandbox.basic_credentials
        self.stats_auth = {**self.key, "Authorization": f"Basic {user}:{password}"}

    def send(
        self,
        method: str,
        path: str,
        code: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        form: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        data: Any = raw if raw is not None else (json.dumps(body) if body is not None else form)
        sent_headers = dict(headers or {})
        if body is not None:
            sent_headers["Content-Type"] = "application/json"
        response = self.session.request(
            method, self.sandbox.base_url + path, data=data, headers=sent_headers, timeout=10, **kwargs
        )
        return assert_envelope(response, code)


def pay_body(sandbox: Sandbox, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "community_id": sandbox.community_id,
        "amount": 104.5,
        "original_amount": 100,
        "currency": "EGP",
        "variable_amount_id": sandbox.variable_amount_id,
        "pay_using": "card",
        "billing_data": dict(BILLING_JSON),
    }
    body.update(overrides)
    return body


def test_every_endpoint_and_error_path_answers_the_envelope(sandbox: Sandbox) -> None:
    w = Wire(sandbox)
    key = w.key
    cid = sandbox.community_id
    pay = "/api/v1/payments/pay/variable-amount"

    # A second community, to check that keys only act for their own community.
    w.session.post(
        f"{sandbox.base_url}/api/communities/create_community",
        data={"name": "Other Club"},
        files={"logo": ("l.png", png_bytes())},
        timeout=10,
    )
    (other,) = [c for c in sandbox.control.communities() if c["name"] == "Other Club"]
    other_key = {"x-api-key": other["api_key"]}

    # 1. Prepare amount (no credentials needed).
    prepare = "/api/v1/payments/prepare-amount/"
    ok = w.send("POST", prepare, 200, {"community_id": cid, "amount": 100})
    assert ok["data"] == {"total_amount": Decimal("104.50"), "total_amount_currency": "EGP"}
    usd = w.send("POST", prepare, 200, {"community_id": cid, "amount": "10.00", "currency": "usd"})
    assert usd["data"]["total_amount_currency"] == "USD"
    assert "amount" in error_fields(w.send("POST", prepare, 400, {"community_id": cid, "amount": 1.005}))
    assert "amount" in error_fields(w.send("POST", prepare, 400, {"community_id": cid, "amount": 0}))
    assert "currency" in error_fields(
        w.send("POST", prepare, 400, {"community_id": cid, "amount": 1, "currency": "XXX"})
    )
    assert "selected_payment_method" in error_fields(
        w.send("POST", prepare, 400, {"community_id": cid, "amount": 1, "selected_payment_method": "gold"})
    )
    assert error_fields(w.send("POST", prepare, 400, {"community_id": "nope", "amount": 1})) == {
        "community_id": ["Community not found."]
    }
    assert "non_field_errors" in error_fields(w.send("POST", prepare, 400, raw=b"{not json"))
    assert "non_field_errors" in error_fields(w.send("POST", prepare, 400, raw=b"[1, 2]"))
    assert "non_field_errors" in error_fields(w.send("POST", prepare, 400, raw=b'{"amount": NaN}'))
    assert "non_field_errors" in error_fields(w.send("POST", prepare, 400, raw=b""))
    w.send("GET", prepare, 405)

    # 2. Pay
    started = w.send("POST", pay, 200, pay_body(sandbox), headers=key)["data"]
    assert set(started) == {"iframe_url", "transaction_id", "transaction_uuid", "transaction_status"}
    assert started["transaction_status"] == "PENDING"
    kiosk = w.send(
        "POST", pay, 200, pay_body(sandbox, pay_using="kiosk", amount_piasters=10450), headers=key
    )["data"]
    assert isinstance(kiosk["bill_refrence"], int)
    assert kiosk["bill_reference"] == kiosk["bill_refrence"]  # both spellings
    assert str(kiosk["bill_refrence"]) in kiosk["message"]
    by_piasters = pay_body(sandbox, pay_using="kiosk", amount_piasters=999)
    del by_piasters["amount"]
    assert w.send("POST", pay, 200, by_piasters, headers=key)["data"]["transaction_status"] == "PENDING"
    assert "amount_piasters" in error_fields(
        w.send("POST", pay, 400, pay_body(sandbox, pay_using="kiosk", amount_piasters=1), headers=key)
    )
    missing_key = w.send("POST", pay, 401, pay_body(sandbox))
    assert error_fields(missing_key) == {"x-api-key": ["Authentication credentials were not provided."]}
    wrong_key = w.send("POST", pay, 401, pay_body(sandbox), headers={"x-api-key": "sbx_wrong"})
    assert error_fields(wrong_key) == {"x-api-key": ["Invalid API key."]}
    assert sandbox.api_key not in json.dumps(wrong_key)
    assert "community_id" in error_fields(w.send("POST", pay, 403, pay_body(sandbox), headers=other_key))
    bad_billing = w.send(
        "POST",
        pay,
        400,
        pay_body(
            sandbox, billing_data={"name": "Mona", "email": "not-an-email", "phone_number": "01001234567"}
        ),
        headers=key,
    )
    nested = error_fields(bad_billing)["billing_data"]
    assert set(nested) == {"name", "email", "phone_number"}  # nested one level deeper, as the spec shows
    everything_missing = error_fields(w.send("POST", pay, 400, {}, headers=key))
    assert {"community_id", "original_amount", "variable_amount_id", "billing_data", "amount"} <= set(
        everything_missing
    )
    assert "variable_amount_id" in error_fields(
        w.send("POST", pay, 400, pay_body(sandbox, variable_amount_id=999_999), headers=key)
    )
    member_only = pay_body(sandbox, variable_amount_id=sandbox.member_variable_amount_id)
    assert "membership_id" in error_fields(w.send("POST", pay, 400, member_only, headers=key))
    w.send("POST", pay, 200, {**member_only, "membership_id": "M-1"}, headers=key)
    recurring_errors = error_fields(
        w.send("POST", pay, 400, pay_body(sandbox, is_recurring=True), headers=key)
    )
    assert {"expiry_date", "minimum_days_between_payments"} <= set(recurring_errors)
    past = pay_body(sandbox, is_recurring=True, expiry_date="2020-01-01", minimum_days_between_payments=30)
    assert "expiry_date" in error_fields(w.send("POST", pay, 400, past, headers=key))
    assert "pay_using" in error_fields(
        w.send("POST", pay, 400, pay_body(sandbox, pay_using="gold"), headers=key)
    )
    assert "promocode_id" in error_fields(
        w.send("POST", pay, 400, pay_body(sandbox, promocode_id=999_999), headers=key)
    )
    assert "custom_fields" in error_fields(
        w.send("POST", pay, 400, pay_body(sandbox, custom_fields=[{"field_label": "x"}]), headers=key)
    )
    w.send("GET", pay, 405, headers=key)
    w.send("PUT", pay, 405, headers=key)

    # 3. Fetch transaction
    tx = started["transaction_uuid"]
    fetch = f"/api/v1/communities/{cid}/transactions/{tx}/"
    fetched = w.send("GET", fetch, 200, headers=key)["data"]
    assert list(fetched) == [
        "created",
        "id",
        "uuid",
        "member_id",
        "total_amount",
        "total_amount_currency",
        "payment_for",
        "quantity",
        "status",
        "custom_fields_json",
        "total_amount_piasters",
    ]
    assert fetched["total_amount"] == "104.50"
    assert fetched["total_amount_piasters"] == 10450
    assert fetched["member_id"] is None  # null when none, as the service's own answers have it
    w.send("GET", f"/api/v1/communities/{cid}/transactions/{uuid.uuid4()}/", 404, headers=key)
    w.send("GET", f"/api/v1/communities/{cid}/transactions/not-a-uuid/", 404, headers=key)
    w.send("GET", fetch, 403, headers=other_key)
    w.send("GET", f"/api/v1/communities/{other['community_id']}/transactions/{tx}/", 404, headers=other_key)
    w.send("GET", fetch, 401)
    w.send("POST", fetch, 405, headers=key)

    # 4. Capture, 5. Refund, 6. Cancel recurring: on a PENDING, then a SUCCESSFUL transaction.
    capture, refund = "/api/payments/capture-payment/", "/api/payments/refund-transaction/"
    cancel = "/api/payments/cancel-recurring-payment/"
    assert "transaction_uuid" in error_fields(
        w.send("POST", capture, 400, {"transaction_uuid": tx}, headers=key)
    )
    assert "transaction_uuid" in error_fields(
        w.send("POST", refund, 400, {"transaction_uuid": tx, "refund_amount": "1.00"}, headers=key)
    )
    sandbox.control.complete(tx)
    w.send("POST", capture, 404, {"transaction_uuid": tx}, headers=other_key)  # not theirs
    assert w.send("POST", capture, 201, {"transaction_uuid": tx}, headers=key)["data"]["message"]
    w.send("POST", capture, 400, {"transaction_uuid": tx}, headers=key)
    w.send("POST", capture, 404, {"transaction_uuid": str(uuid.uuid4())}, headers=key)
    assert "transaction_uuid" in error_fields(
        w.send("POST", capture, 400, {"transaction_uuid": "x"}, headers=key)
    )
    w.send("POST", capture, 401, {"transaction_uuid": tx})
    w.send("GET", capture, 405, headers=key)
    # The example sends refund_amount as text; numbers work too.
    assert w.send("POST", refund, 201, {"transaction_uuid": tx, "refund_amount": "4.50"}, headers=key)[
        "data"
    ]["message"]
    too_much = w.send("POST", refund, 400, {"transaction_uuid": tx, "refund_amount": 100.01}, headers=key)
    assert "100.00" in error_fields(too_much)["refund_amount"][0]
    w.send("POST", refund, 400, {"transaction_uuid": tx, "refund_amount": 0}, headers=key)
    w.send("POST", refund, 400, {"transaction_uuid": tx}, headers=key)
    w.send("POST", refund, 404, {"transaction_uuid": str(uuid.uuid4()), "refund_amount": 1}, headers=key)
    w.send("GET", refund, 405, headers=key)
    assert "transaction_uuid" in error_fields(
        w.send("POST", cancel, 400, {"transaction_uuid": tx}, headers=key)
    )
    recurring = w.send(
        "POST",
        pay,
        200,
        pay_body(
            sandbox,
            is_recurring=True,
            expiry_date=future_date(60).isoformat(),
            minimum_days_between_payments=7,
        ),
        headers=key,
    )["data"]["transaction_uuid"]
    assert w.send("POST", cancel, 200, {"transaction_uuid": recurring}, headers=key)["data"]["message"]
    again = w.send("POST", cancel, 200, {"transaction_uuid": recurring}, headers=key)
    assert "already" in again["data"]["message"]
    w.send("POST", cancel, 404, {"transaction_uuid": str(uuid.uuid4())}, headers=key)
    w.send("GET", cancel, 405, headers=key)

    # 7. Validate promocode (no credentials; POST, and GET as the live listing shows).
    promo = "/api/promocodes/validate/"
    promo_body = {
        "name": "FLAT25",
        "community_id": cid,
        "phone_number": "+201001234567",
        "amount": 150,
        "currency": "EGP",
        "payment_for": "API_PAYMENT",
        "variable_amount_id": str(sandbox.variable_amount_id),
    }
    valid = w.send("POST", promo, 200, promo_body)["data"]
    assert valid["value"] == Decimal("25.00")
    assert valid["currency"] == "EGP"
    assert isinstance(valid["promocode_id"], int)
    assert w.send("GET", promo, 200, params=promo_body)["data"] == valid
    assert w.send("GET", promo, 200, promo_body)["data"] == valid  # GET with a JSON body
    assert "amount" in error_fields(w.send("POST", promo, 400, {**promo_body, "amount": 50}))  # below 100.00
    assert "name" in error_fields(w.send("POST", promo, 400, {**promo_body, "name": "EXPIRED20"}))
    assert "name" in error_fields(w.send("POST", promo, 400, {**promo_body, "name": "UNKNOWN"}))
    assert "currency" in error_fields(w.send("POST", promo, 400, {**promo_body, "currency": "USD"}))
    assert "variable_amount_id" in error_fields(
        w.send("POST", promo, 400, {**promo_body, "variable_amount_id": "99"})
    )
    assert "phone_number" in error_fields(w.send("POST", promo, 400, {**promo_body, "phone_number": "0100"}))
    assert len(error_fields(w.send("POST", promo, 400, {}))) == 7
    w.send("PUT", promo, 405)

    # 8. Create community (multipart).
    create = "/api/communities/create_community"
    made = w.send(
        "POST", create, 200, form={"name": "Run Club"}, files={"logo": ("r.jpg", b"\xff\xd8\xff\xe0jpeg")}
    )
    assert made["data"] == {}
    assert error_fields(
        w.send("POST", create, 400, form={"name": "Bad"}, files={"logo": ("x.png", b"GIF89a")})
    ) == {"logo": ["Upload a png or jpg image."]}
    assert {"name", "logo"} <= set(error_fields(w.send("POST", create, 400, form={})))
    bad_lists = error_fields(
        w.send(
            "POST",
            create,
            400,
            form={
                "name": "Bad",
                "app_modules": "Event,Casino",
                "payment_methods": "Card,Gold",
                "phone": "0100",
            },
            files={"logo": ("l.png", png_bytes())},
        )
    )
    assert {"app_modules", "payment_methods", "phone"} <= set(bad_lists)
    w.send("GET", create, 405)

    # 9. Dashboard statistics: x-api-key and Basic <username>:<password> (literal, or base64).
    stats = f"/api/core/dashboard/statistics?community_id={cid}"
    figures = w.send("GET", stats, 200, headers=w.stats_auth)["data"]
    assert set(figures) == {
        "balance_details",
        "total_number_of_transactions",
        "total_collected_transactions",
        "weekly_collected_transactions",
    }
    assert set(figures["balance_details"]) == {"balance", "total_settled"}
    user, password = sandbox.basic_credentials
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    assert w.send("GET", stats, 200, headers={**key, "Authorization": f"Basic {encoded}"})["data"] == figures
    assert "Authorization" in error_fields(w.send("GET", stats, 401, headers=key))
    w.send("GET", stats, 401, headers={**key, "Authorization": f"Basic {user}:wrong"})
    w.send("GET", stats, 401, headers={**key, "Authorization": f"Bearer {password}"})
    w.send("GET", stats, 401, headers={"Authorization": f"Basic {user}:{password}"})
    w.send("GET", "/api/core/dashboard/statistics", 400, headers=w.stats_auth)
    other_auth = {**other_key, "Authorization": f"Basic {other['basic_username']}:{other['basic_password']}"}
    w.send("GET", stats, 403, headers=other_auth)
    w.send("POST", stats, 405, headers=w.stats_auth)

    # 10. Direct order
    order = "/api/orders/create-direct-order/"
    order_body: dict[str, Any] = {
        "name": "Trip",
        "community_id": cid,
        "amount": {"amount": 100.00, "currency": "EGP"},
        "payment_methods": ["CARD"],
        "customer_name": "Omar Hassan",
        "customer_email": "omar@example.com",
        "customer_mobile": "+201112223334",
    }
    created = w.send("POST", order, 201, order_body, headers=key)["data"]
    assert set(created) == {"success", "merchant_id", "payment_id", "payment_link", "message"}
    assert created["merchant_id"] == cid
    assert created["success"] is True
    assert "discount_amount" in error_fields(
        w.send(
            "POST",
            order,
            400,
            {**order_body, "discount_amount": {"amount": 100, "currency": "EGP"}},
            headers=key,
        )
    )
    assert "discount_amount" in error_fields(
        w.send(
            "POST",
            order,
            400,
            {**order_body, "discount_amount": {"amount": 1, "currency": "USD"}},
            headers=key,
        )
    )
    dropdown = [{"field_label": "Size", "field_type": "DROPDOWNLIST", "required": True}]
    assert "custom_fields" in error_fields(
        w.send("POST", order, 400, {**order_body, "custom_fields": dropdown}, headers=key)
    )
    assert "tags" in error_fields(
        w.send("POST", order, 400, {**order_body, "tags": [{"id": "x"}]}, headers=key)
    )
    assert {"expiry_date", "minimum_days_between_payments"} <= set(
        error_fields(
            w.send("POST", order, 400, {**order_body, "allow_recurring_payments": True}, headers=key)
        )
    )
    assert "customer_name" in error_fields(
        w.send("POST", order, 400, {**order_body, "customer_name": "Omar"}, headers=key)
    )
    amount_errors = error_fields(
        w.send("POST", order, 400, {**order_body, "amount": {"currency": "EGP"}}, headers=key)
    )
    assert amount_errors == {"amount": {"amount": ["This field is required."]}}
    other_order = {
        **order_body,
        "community_id": other["community_id"],
        "payment_methods": ["installment_provider"],
    }
    assert "payment_methods" in error_fields(w.send("POST", order, 400, other_order, headers=other_key))
    w.send("POST", order, 403, order_body, headers=other_key)
    w.send("POST", order, 401, order_body)
    w.send("GET", order, 405, headers=key)

    # Paths are character-exact: the other slash variant, and anything else, is the 404 envelope.
    for wrong in (
        "/api/v1/payments/prepare-amount",
        "/api/v1/payments/pay/variable-amount/",
        "/api/core/dashboard/statistics/",
        "/api/communities/create_community/",
        "/api/payments/capture-payment",
        "/api/v2/payments/prepare-amount/",
        "/",
    ):
        assert "path" in error_fields(w.send("POST", wrong, 404, {}, headers=key)), wrong

    # An injected status fault answers the envelope too.
    sandbox.control.fault("prepare_amount", "status", status=503)
    w.send("POST", prepare, 503, {"community_id": cid, "amount": 1})
    w.send("POST", prepare, 200, {"community_id": cid, "amount": 1})
