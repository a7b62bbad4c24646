"""The admin writes every amount as the app reads amounts (docs: Money), in every language: ``1234.50``, never
a localized ``1234,50`` (Django's Arabic format) beside its own ``1234.50 EGP``. A localized amount is a
spelling the amount boxes refuse, and the refund page compared the remainder it showed as text: in an Arabic
admin it refused every refund ("changed from 1234,50 to 1234.50")."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from django_paycollect.models import DirectOrder, RecurringSeries, Refund, StatisticsSnapshot, Transaction
from tests.support.admin import live, local_transaction, logged_in, refund_page, sent, staff, text_of, url

#: An amount written with a decimal comma, as a localized page writes it.
LOCALIZED = re.compile(r"(?<![\d,.])\d+,\d\d(?!\d)")


@pytest.fixture
def arabic(settings):
    settings.LANGUAGE_CODE = "ar"


def amounts_of(html: str) -> set[str]:
    """What the page shows that looks like an amount with two decimals, however written."""
    return set(
        re.findall(
            r"(?<![\d,.])\d+[.,]\d\d(?![\d,.])", re.sub(r"<(svg|style|script).*?</\1>", "", html, flags=re.S)
        )
    )


@pytest.mark.django_db
def test_every_page_of_a_payment_writes_its_amounts_as_they_are_read(arabic, client, django_user_model):
    txn = local_transaction(
        uuid="0b0b0b0b-1111-4222-8333-444455556666",
        total_amount=Decimal("1234.50"),
        original_amount=Decimal("1200.25"),
        refunded_amount=Decimal("12.50"),
        captured_amount=Decimal("5.75"),
    )
    Refund.objects.create(transaction=txn, amount=Decimal("12.50"), state=Refund.SUCCEEDED)
    order = DirectOrder.objects.create(
        community_id="tests-community",
        name="Hall",
        amount=Decimal("750.00"),
        discount_amount=Decimal("25.50"),
        vat_percentage=Decimal("14.00"),
        customer_name="Mona Ali",
        customer_email="mona@example.com",
        customer_mobile="+201001234567",
    )
    snapshot = StatisticsSnapshot.objects.create(
        community_id="tests-community", balance=Decimal("99.90"), total_settled=Decimal("80.10")
    )
    refund = Refund.objects.get()
    logged_in(client, django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    pages = {
        "transactions": (url("transaction"), {"1234.50", "12.50"}),
        "transaction": (
            url("transaction", "change", txn.pk),
            {"1234.50", "1200.25", "12.50", "5.75", "1222.00"},
        ),
        "refunds": (url("refund"), {"12.50"}),
        "refund": (url("refund", "change", refund.pk), {"12.50"}),
        "order": (url("directorder", "change", order.pk), {"750.00", "25.50", "14.00"}),
        "snapshots": (url("statisticssnapshot"), {"99.90", "80.10"}),
        "snapshot": (url("statisticssnapshot", "change", snapshot.pk), {"99.90", "80.10"}),
    }
    for name, (page, expected) in pages.items():
        html = client.get(page).content.decode()
        assert expected <= amounts_of(html), (name, amounts_of(html))
        assert not LOCALIZED.findall(html.split("</head>", 1)[-1]), (name, LOCALIZED.findall(html))


@live
def test_the_refund_page_refunds_in_an_arabic_admin(
    arabic, paycollect_in_process, paid_transaction, client, django_user_model, atomic_requests
):
    txn = paid_transaction
    logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
    page_url, page = refund_page(client, [txn])
    html = page.content.decode()
    shown = re.search(rf'name="shown_{txn.pk}" value="([^"]*)"', html).group(1)
    assert shown == "100.00"
    assert not LOCALIZED.findall(html)

    response = client.post(page_url, {f"amount_{txn.pk}": "\u0663\u0660", f"shown_{txn.pk}": shown})

    assert response.status_code == 302, response.context["form"].errors
    assert Refund.objects.get(transaction=txn).amount == Decimal("30.00")
    [request] = sent(paycollect_in_process, "refund")
    assert Decimal(str(request["body"]["refund_amount"])) == Decimal("30.00")
    assert "(30.00 EGP)" in text_of(response)


@pytest.mark.django_db
def test_the_cancel_confirmation_writes_the_charge_as_it_is_read(arabic, client, django_user_model):
    parent = local_transaction(uuid="p-1", total_amount=Decimal("49.99"))
    series = RecurringSeries.objects.create(parent_uuid=parent.uuid, community_id="tests-community")
    logged_in(client, django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    answer = client.post(
        reverse("admin:paycollect_recurringseries_changelist"),
        {"action": "cancel", "_selected_action": [series.pk]},
    )
    html = answer.content.decode()
    assert "49.99 EGP" in html
    assert not LOCALIZED.findall(html), LOCALIZED.findall(html)
    assert Transaction.objects.count() == 1
