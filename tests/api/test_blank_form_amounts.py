"""A blank amount is refused in every content type (issue 33): a form-encoded or multipart refund with its
``amount`` box left empty (the browsable API's own refund form) refunds nothing and answers 400, as JSON's
``""`` does; a blank ``expected_refundable`` is refused, never ignored. Left out, the amount still means all
that is left. Against the sandbox served in this process."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test.client import encode_multipart

from django_paycollect.models import Refund, Transaction
from tests.support.payments import complete

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def paid(api_in_process: Any, pay: Any) -> Transaction:
    return complete(api_in_process, pay("104.50"))


def form(api: Any, path: str, data: dict[str, str]) -> Any:
    return api.generic(
        "POST", path, "&".join(f"{k}={v}" for k, v in data.items()), "application/x-www-form-urlencoded"
    )


def multipart(api: Any, path: str, data: dict[str, str]) -> Any:
    return api.generic(
        "POST", path, encode_multipart("BoUnDaRy", data), "multipart/form-data; boundary=BoUnDaRy"
    )


def browsable(api: Any, path: str, data: dict[str, str]) -> Any:
    # What the browsable API's HTML form posts: its boxes, and the page asked for as HTML.
    return api.post(path, data, HTTP_ACCEPT="text/html")


SENDERS = {"form": form, "multipart": multipart, "browsable": browsable}


@pytest.mark.parametrize("how", sorted(SENDERS))
@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_amount_in_a_form_refunds_nothing(api_in_process, paid, as_user, how, blank):
    path = f"/api/payments/{paid.uuid}/refunds/"
    answer = SENDERS[how](as_user("refunder"), path, {"amount": blank})
    assert answer.status_code == 400, answer.content[:300]
    assert b"amount" in answer.content
    assert not Refund.objects.exists()
    assert api_in_process.control.journal("refund") == []


@pytest.mark.parametrize("how", sorted(SENDERS))
def test_the_browsable_forms_empty_boxes_refund_nothing(api_in_process, paid, as_user, how):
    path = f"/api/payments/{paid.uuid}/refunds/"
    answer = SENDERS[how](as_user("refunder"), path, {"amount": "", "expected_refundable": ""})
    assert answer.status_code == 400, answer.content[:300]
    assert not Refund.objects.exists()


@pytest.mark.parametrize("how", sorted(SENDERS))
def test_a_blank_expected_refundable_in_a_form_is_refused_not_ignored(api_in_process, paid, as_user, how):
    path = f"/api/payments/{paid.uuid}/refunds/"
    answer = SENDERS[how](as_user("refunder"), path, {"amount": "1.00", "expected_refundable": ""})
    assert answer.status_code == 400, answer.content[:300]
    assert b"expected_refundable" in answer.content
    assert not Refund.objects.exists()


@pytest.mark.parametrize("how", ["form", "multipart"])
def test_a_form_that_leaves_the_amount_out_still_refunds_all_that_is_left(api_in_process, paid, as_user, how):
    path = f"/api/payments/{paid.uuid}/refunds/"
    answer = SENDERS[how](as_user("refunder"), path, {"expected_refundable": "104.50"})
    assert answer.status_code == 201, answer.content[:300]
    assert Decimal(answer.json()["amount"]) == Decimal("104.50")


def test_a_form_amount_is_read_as_json_reads_it(api_in_process, paid, as_user):
    answer = form(as_user("refunder"), f"/api/payments/{paid.uuid}/refunds/", {"amount": "4.50"})
    assert answer.status_code == 201, answer.content[:300]
    assert answer.json()["amount"] == "4.50"
