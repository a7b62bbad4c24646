"""The club's payable hook for the REST API (``PAYCOLLECT["PAYABLE_RESOLVER"]``).

The single-page checkout names a plan, ``"<plan>-<billing>"`` (``"family-yearly"``); the price comes from
here, never from the page. Each signed-in member gets one open membership per plan and billing, which the
payment is for (its merchant object), so the signal receivers mark it paid as they do for the form checkout.

The membership is looked up by its account, never by e-mail: the join form lets any visitor type any e-mail,
and a membership found by it would take the member's payment and show it on the visitor's page.
"""

from __future__ import annotations

from typing import Any

from django_paycollect.api.payables import Payable

from .models import Billing, Membership, PayUsing, Plan, price_of


def resolve(request: Any, reference: str) -> Payable | None:
    plan, _, billing = reference.partition("-")
    if plan not in Plan.values or billing not in Billing.values:
        return None  # the API answers 400 {"reference": ["There is nothing to pay under this reference."]}
    user = request.user
    if not user.is_authenticated:
        return None  # the API lets only signed-in customers start payments; nothing is anyone's here
    name = user.get_full_name() or user.get_username()
    membership = (
        Membership.objects.filter(
            user=user, plan=plan, billing=billing, status__in=(Membership.NEW, Membership.PENDING)
        )
        .order_by("-created_at")
        .first()
    )
    if membership is None:
        price = price_of(plan, billing)
        membership = Membership.objects.create(
            user=user,
            plan=plan,
            billing=billing,
            pay_using=PayUsing.CARD,
            name=name,
            email=user.email,
            price=price,
            amount=price,
        )
    return Payable(
        amount=membership.amount,
        currency="EGP",
        merchant_object=membership,
        merchant_reference=membership.reference,
        billing_data={"name": name, "email": user.email},
        recurring=membership.recurring_terms(),
    )
