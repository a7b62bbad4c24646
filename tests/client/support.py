"""Builders and assertions shared by the client tests (fixtures live in ``conftest.py``).

Response bodies are shaped exactly like the spec's envelope: ``status.code``, ``status.message``,
``status.errors``, ``data``, ``count``, ``next``, ``previous``.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import responses

from django_paycollect import __version__
from django_paycollect.client import BillingData, Envelope, Logo, PayCollectClient

BASE_URL = "https://pay.example.test"
API_KEY = "pk_test_Zx9SECRETkey0123456789"
BASIC_USER = "merchant-user"
BASIC_PASSWORD = "S3cr3t-Pa55word"
BASIC_LITERAL = f"{BASIC_USER}:{BASIC_PASSWORD}"
SECRETS = (API_KEY, BASIC_LITERAL, BASIC_PASSWORD)

COMMUNITY = "c0mmunity-42"
TX_UUID = "6f1c2d3e-4a5b-4c6d-8e9f-1234567890ab"
PHONE = "+201001234567"
PAYER_NAME = "Mona Ali"
PAYER_EMAIL = "mona@example.com"
BILLING = BillingData(PAYER_NAME, PAYER_EMAIL, PHONE)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(16))
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(16))

USER_AGENT_PREFIX = f"django-paycollect/{__version__}"


def envelope(
    data: Any = None,
    *,
    code: int = 200,
    message: str = "success",
    errors: list[Any] | None = None,
    count: int | None = None,
    next: str | None = None,
    previous: str | None = None,
) -> dict[str, Any]:
    """A response body as the spec shapes it."""
    return {
        "status": {"code": code, "message": message, "errors": [] if errors is None else errors},
        "data": {} if data is None else data,
        "count": count,
        "next": next,
        "previous": previous,
    }


#: The spec's validation failure of Pay: a flat field error and billing_data's nested ones.
PAY_ERRORS = [
    {"amount": ["Ensure this value is greater than or equal to 1."]},
    {
        "billing_data": {
            "phone_number": ["Enter a valid phone number."],
            "name": ["Enter first and last name."],
        }
    },
]


def failure(
    errors: list[Any] | None = None, *, code: int = 400, message: str = "Bad request"
) -> dict[str, Any]:
    """A failure envelope: data is empty, count/next/previous are null."""
    return envelope({}, code=code, message=message, errors=PAY_ERRORS if errors is None else errors)


def make_client(**kwargs: Any) -> tuple[PayCollectClient, list[float]]:
    """A client with both credentials whose sleeps are recorded instead of slept."""
    options: dict[str, Any] = {"api_key": API_KEY, "basic_credentials": (BASIC_USER, BASIC_PASSWORD)}
    options.update(kwargs)
    base_url = options.pop("base_url", BASE_URL)
    client = PayCollectClient(base_url, **options)
    sleeps: list[float] = []
    client._sleep = sleeps.append
    return client, sleeps


def sent_text(request: Any) -> str:
    body = request.body
    assert body is not None, "no body was sent"
    return body.decode() if isinstance(body, bytes) else str(body)


def sent_json(request: Any) -> Any:
    """The request body as the service would read it, money as Decimal."""
    return json.loads(sent_text(request), parse_float=Decimal)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def numbers_in(raw: str) -> list[str]:
    """Every JSON number of a body, as written (string literals removed first)."""
    return _NUMBER.findall(_STRING.sub('""', raw))


def assert_money_written(raw: str, key: str, text: str) -> None:
    """``"key": text`` appears literally, and no number of the body has an exponent or 1 or 3+ decimals."""
    assert f'"{key}": {text}' in raw, raw
    for number in numbers_in(raw):
        assert "e" not in number.lower(), raw
        if "." in number:
            assert len(number.split(".")[1]) == 2, (number, raw)


def assert_headers(
    request: Any,
    *,
    api_key: bool,
    basic: bool = False,
    content_type: str | None = "application/json",
) -> None:
    headers = request.headers
    assert headers["User-Agent"].startswith(USER_AGENT_PREFIX + " ") or headers["User-Agent"] == (
        USER_AGENT_PREFIX
    )
    if api_key:
        assert headers["x-api-key"] == API_KEY
    else:
        assert "x-api-key" not in headers
    if basic:
        # Literally as the spec writes it, not base64.
        assert headers["Authorization"] == f"Basic {BASIC_USER}:{BASIC_PASSWORD}"
    else:
        assert "Authorization" not in headers
    if content_type is None:
        assert "Content-Type" not in headers
    elif content_type == "multipart/form-data":
        assert headers["Content-Type"].startswith("multipart/form-data; boundary=")
    else:
        assert headers["Content-Type"] == content_type


@dataclass(frozen=True)
class Part:
    name: str
    filename: str | None
    content_type: str | None
    content: bytes


def parse_multipart(request: Any) -> dict[str, Part]:
    """The parts of a multipart/form-data request, by field name."""
    head = f"Content-Type: {request.headers['Content-Type']}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request.body)
    assert message.is_multipart()
    parts: dict[str, Part] = {}
    for sub in message.iter_parts():
        disposition = sub.get("Content-Disposition", "")
        assert disposition.startswith("form-data"), disposition
        name = sub.get_param("name", header="content-disposition")
        assert isinstance(name, str)
        assert name not in parts, f"field {name} sent twice"
        content = sub.get_payload(decode=True)
        assert isinstance(content, bytes)
        parts[name] = Part(
            name=name,
            filename=sub.get_filename(),
            content_type=sub.get("Content-Type"),
            content=content,
        )
    return parts


@dataclass(frozen=True)
class OperationCase:
    """One operation called with valid arguments, and where it goes."""

    name: str
    method: str
    url: str
    changes_state: bool
    invoke: Callable[[PayCollectClient], Envelope[Any]]

    def __str__(self) -> str:
        return self.name


OPERATION_CASES = (
    OperationCase(
        "prepare_amount",
        "POST",
        BASE_URL + "/api/v1/payments/prepare-amount/",
        False,
        lambda c: c.prepare_amount(community_id=COMMUNITY, amount=Decimal("100")),
    ),
    OperationCase(
        "pay",
        "POST",
        BASE_URL + "/api/v1/payments/pay/variable-amount",
        True,
        lambda c: c.pay(
            community_id=COMMUNITY,
            amount=Decimal("102.85"),
            original_amount=Decimal("100"),
            variable_amount_id=12,
            billing_data=BILLING,
        ),
    ),
    OperationCase(
        "create_direct_order",
        "POST",
        BASE_URL + "/api/orders/create-direct-order/",
        True,
        lambda c: c.create_direct_order(
            name="Gym membership",
            community_id=COMMUNITY,
            amount=Decimal("250"),
            payment_methods=["card"],
            customer_name=PAYER_NAME,
            customer_email=PAYER_EMAIL,
            customer_mobile=PHONE,
        ),
    ),
    OperationCase(
        "get_transaction",
        "GET",
        f"{BASE_URL}/api/v1/communities/{COMMUNITY}/transactions/{TX_UUID}/",
        False,
        lambda c: c.get_transaction(community_id=COMMUNITY, transaction_uuid=TX_UUID),
    ),
    OperationCase(
        "capture",
        "POST",
        BASE_URL + "/api/payments/capture-payment/",
        True,
        lambda c: c.capture(transaction_uuid=TX_UUID),
    ),
    OperationCase(
        "refund",
        "POST",
        BASE_URL + "/api/payments/refund-transaction/",
        True,
        lambda c: c.refund(transaction_uuid=TX_UUID, refund_amount=Decimal("40.25")),
    ),
    OperationCase(
        "cancel_recurring",
        "POST",
        BASE_URL + "/api/payments/cancel-recurring-payment/",
        True,
        lambda c: c.cancel_recurring(transaction_uuid=TX_UUID),
    ),
    OperationCase(
        "validate_promocode",
        "POST",
        BASE_URL + "/api/promocodes/validate/",
        False,
        lambda c: c.validate_promocode(
            name="SUMMER10",
            community_id=COMMUNITY,
            phone_number=PHONE,
            amount=Decimal("100"),
            currency="EGP",
            payment_for="API_PAYMENT",
            variable_amount_id=12,
        ),
    ),
    OperationCase(
        "create_community",
        "POST",
        BASE_URL + "/api/communities/create_community",
        True,
        lambda c: c.create_community(name="Cairo Runners", logo=Logo("logo.png", PNG)),
    ),
    OperationCase(
        "dashboard_statistics",
        "GET",
        f"{BASE_URL}/api/core/dashboard/statistics?community_id={COMMUNITY}",
        False,
        lambda c: c.dashboard_statistics(community_id=COMMUNITY),
    ),
)

CASES_BY_NAME = {case.name: case for case in OPERATION_CASES}
READ_CASES = tuple(case for case in OPERATION_CASES if not case.changes_state)
WRITE_CASES = tuple(case for case in OPERATION_CASES if case.changes_state)


def only_call(rsps: responses.RequestsMock) -> responses.Call:
    assert len(rsps.calls) == 1
    return rsps.calls[0]


def assert_success_envelope(got: Envelope[object], data: dict[str, object], *, code: int = 200) -> None:
    assert got.http_status == code
    assert got.code == code
    assert got.message == "success"
    assert got.errors == []
    assert got.data == data
    assert got.count is None
    assert got.next is None
    assert got.previous is None
