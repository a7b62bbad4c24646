"""Helpers of the admin's tests: URLs, staff users with exact permissions, actions posted as a browser posts
them, the messages they leave, and rows made without the service."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db.models import Q
from django.urls import reverse

from django_paycollect import services
from django_paycollect.models import (
    ApiCall,
    Community,
    DirectOrder,
    RecurringSeries,
    Refund,
    StatisticsSnapshot,
    Transaction,
)

live = pytest.mark.django_db(transaction=True)

BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}


def url(model, view="changelist", *args):
    return reverse(f"admin:paycollect_{model}_{view}", args=args)


def staff(django_user_model, *codenames, username="staff"):
    """A staff user holding exactly these paycollect permissions."""
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    perms = list(Permission.objects.filter(content_type__app_label="paycollect", codename__in=codenames))
    assert sorted(p.codename for p in perms) == sorted(codenames)
    user.user_permissions.add(*perms)
    return user


def logged_in(client, user):
    client.force_login(user)
    return client


def offered(client, model):
    """The actions the changelist offers this user."""
    response = client.get(url(model))
    assert response.status_code == 200
    form = response.context["action_form"]
    if form is None:
        return set()
    return {name for name, _label in form.fields["action"].choices if name}


def post_action(client, model, action, objects, **extra):
    return client.post(
        url(model), {"action": action, "_selected_action": [obj.pk for obj in objects], **extra}
    )


def messages_of(response):
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def text_of(response):
    return " | ".join(text for _level, text in messages_of(response))


def sent(sb, operation):
    """What the sandbox received for an operation (its request journal)."""
    return sb.control.journal(operation)


def local_transaction(**fields):
    """A transaction row made directly, for tests that must not (and do not) reach the service."""
    values = {
        "community_id": "tests-community",
        "total_amount": Decimal("100.00"),
        "status": Transaction.SUCCESSFUL,
        "customer_email": "mona@example.com",
    }
    values.update(fields)
    return Transaction.objects.create(**values)


def series_of(txn):
    return RecurringSeries.objects.get(Q(parent_uuid=txn.uuid) | Q(pk=txn.series_id))


def start_pending(reference):
    return services.start_payment(amount=Decimal("50.00"), billing_data=BILLING, merchant_reference=reference)


def refund_page(client, transactions):
    """Start the refund action from the changelist; return the intermediate page it leads to."""
    response = post_action(client, "transaction", "refund", transactions)
    assert response.status_code == 302
    assert response["Location"].startswith(url("transaction", "refund"))
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert "admin/paycollect/transaction/refund.html" in [t.name for t in page.templates]
    return response["Location"], page


def amount_input(page, txn):
    match = re.search(rf'<input[^>]*name="amount_{txn.pk}"[^>]*>', page.content.decode())
    assert match, f"no amount field for {txn}"
    value = re.search(r'value="([^"]*)"', match.group(0))
    return value.group(1) if value else None


def make_records(numbers, user):
    """Rows of every model, each with its relations (what could cost a query per row)."""
    for i in numbers:
        series = RecurringSeries.objects.create(
            parent_uuid=f"parent-{i}", community_id="tests-community", cancelled_by=user
        )
        txn = local_transaction(
            uuid=f"uuid-{i}", merchant_reference=f"ref-{i}", series=series, raw={"id": i}, custom_fields=[]
        )
        refund = Refund.objects.create(transaction=txn, amount=Decimal("1.00"), requested_by=user)
        order = DirectOrder.objects.create(
            community_id="tests-community",
            name=f"order {i}",
            amount=Decimal("10.00"),
            customer_name="Mona Ali",
            customer_email="mona@example.com",
            customer_mobile="+201001234567",
            payment_link=f"https://pay.example/{i}",
            created_by=user,
        )
        ApiCall.objects.create(operation="refund", method="POST", path="/x", transaction=txn, refund=refund)
        ApiCall.objects.create(operation="create_direct_order", method="POST", path="/y", direct_order=order)
        StatisticsSnapshot.objects.create(community_id="tests-community", balance=Decimal(i))
        Community.objects.create(community_id=f"c-{i}")
