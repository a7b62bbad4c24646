"""The sandbox's business rules: fees, payments, completion, capture, refunds, recurring series, direct
orders, promocodes and statistics. Views validate input and call these; the control API calls them too.

Every mutation runs inside ``state.writing()`` and re-reads the rows it changes, so two requests racing on
the same transaction (a double refund click, a page submit beside a control-API completion) are applied one
after the other against fresh values.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.db.models import Q
from django.utils.translation import gettext

from . import callbacks, money
from .conf import get_settings
from .envelope import ApiError
from .models import (
    ApiPayment,
    Community,
    DirectOrder,
    FeeRule,
    OutboxMessage,
    Promocode,
    RecurringSeries,
    Refund,
    Transaction,
)
from .state import now, today, writing

PAYMENT_FOR_API = "API_PAYMENT"
# payment_for of transactions paid through a direct order's link; the spec does not show the value.
PAYMENT_FOR_DIRECT_ORDER = "DIRECT_ORDER"
SUCCESSFUL = Transaction.Status.SUCCESSFUL
FAILED = Transaction.Status.FAILED
PENDING = Transaction.Status.PENDING
OUTCOMES = (SUCCESSFUL.value, FAILED.value)


# --- fees -------------------------------------------------------------------------------------


def fee_rule(community: Community, method: str, currency: str) -> FeeRule | None:
    """The most specific rule: community over global, exact currency over any currency."""
    rules = FeeRule.objects.filter(
        Q(community=community) | Q(community__isnull=True), payment_method__iexact=method
    )
    best: FeeRule | None = None
    best_rank = -1
    for rule in rules:
        if rule.currency and rule.currency != currency:
            continue
        rank = (2 if rule.community_id else 0) + (1 if rule.currency else 0)
        if rank > best_rank:
            best, best_rank = rule, rank
    return best


def total_with_fees(community: Community, amount: Decimal, currency: str, method: str) -> Decimal:
    rule = fee_rule(community, method, currency)
    if rule is None:
        return money.quantize(amount)
    fee = amount * rule.percentage / 100 + rule.fixed_amount
    return money.quantize(amount + fee)


# --- payment methods ----------------------------------------------------------------------------


def community_methods(community: Community) -> list[str]:
    """pay_using values enabled for the community (lower case)."""
    methods = [str(m).lower() for m in community.payment_methods]
    wallet = get_settings().wallet_pay_using.lower()
    if community.wallet_processor and wallet not in methods:
        methods.append(wallet)
    return methods


def is_kiosk(pay_using: str) -> bool:
    return pay_using.lower() == "kiosk"


# --- pay ------------------------------------------------------------------------------------------


def _new_bill_reference() -> int:
    while True:
        reference = 10**9 + secrets.randbelow(9 * 10**9)
        if not Transaction.objects.filter(bill_reference=reference).exists():
            return reference


def start_payment(community: Community, api_payment: ApiPayment, data: Mapping[str, Any]) -> Transaction:
    """A PENDING transaction for Pay; the customer completes it on the hosted page (or a kiosk)."""
    billing = data["billing_data"]
    custom = {item["field_label"]: item["field_value"] for item in data.get("custom_fields") or []}
    with writing():
        tx = Transaction(
            community=community,
            api_payment=api_payment,
            payment_for=PAYMENT_FOR_API,
            total_amount=data["amount"],
            original_amount=data.get("original_amount"),
            currency=data["currency"],
            pay_using=data["pay_using"],
            billing_name=billing["name"],
            billing_email=billing["email"],
            billing_phone=billing["phone_number"],
            member_id=data.get("membership_id") or "",
            language=data.get("language") or "",
            promocode=data.get("promocode"),
            custom_fields_json=custom or None,
            created=now(),
        )
        if is_kiosk(tx.pay_using):
            tx.bill_reference = _new_bill_reference()
        if data.get("is_recurring"):
            tx.series = RecurringSeries.objects.create(
                community=community,
                expiry_date=data["expiry_date"],
                minimum_days_between_payments=data["minimum_days_between_payments"],
            )
        tx.save()
        if tx.series is not None:
            RecurringSeries.objects.filter(pk=tx.series.pk).update(parent_uuid=tx.uuid)
            tx.series.parent_uuid = tx.uuid
    return tx


# --- completion ---------------------------------------------------------------------------------


def complete(transaction_uuid: Any, outcome: str) -> Transaction:
    """Move a PENDING transaction to SUCCESSFUL or FAILED, then queue its callback. Forward only."""
    if outcome not in OUTCOMES:
        raise ApiError.field("outcome", gettext("Must be SUCCESSFUL or FAILED."))
    with writing():
        tx = _locked_transaction(transaction_uuid)
        if tx.status != PENDING:
            raise ApiError.field(
                "transaction_uuid", gettext("Transaction is already %(status)s.") % {"status": tx.status}
            )
        if tx.direct_order_id is not None and outcome == SUCCESSFUL:
            # Two payments of one order completing at once (two processes on PostgreSQL): the order's row
            # lock makes the second one see the first one's success.
            DirectOrder.objects.select_for_update().filter(pk=tx.direct_order_id).first()
            if _order_paid(tx.direct_order_id):
                raise ApiError.field("transaction_uuid", gettext("The direct order is already paid."))
        moment = now()
        tx.status = outcome
        tx.completed_at = moment
        series = tx.series
        if series is not None:
            series = RecurringSeries.objects.select_for_update().get(pk=series.pk)
            if outcome == SUCCESSFUL:
                series.recurring_count += 1
                tx.transaction_order = series.recurring_count
                series.next_charge_on = moment.date() + dt.timedelta(
                    days=series.minimum_days_between_payments
                )
            else:
                # A failed first charge leaves nothing to renew.
                tx.transaction_order = 0
                series.active = False
            series.save()
            tx.series = series
        tx.save()
        callbacks.enqueue(tx, callback_url(tx), callback_body(tx))
    return tx


def _locked_transaction(transaction_uuid: Any) -> Transaction:
    # The lock is on the transaction's row only: its API payment, direct order and series are nullable,
    # and PostgreSQL refuses FOR UPDATE on the nullable side of the outer joins that read them. Whoever
    # changes one of those rows locks it by itself (the series in complete() and cancel_recurring()).
    tx = (
        Transaction.objects.select_for_update(of=("self",))
        .select_related("community", "api_payment", "direct_order", "series")
        .filter(uuid=transaction_uuid)
        .first()
    )
    if tx is None:
        raise ApiError.field("transaction_uuid", gettext("Transaction not found."), code=404)
    return tx


def _order_paid(order_id: int) -> bool:
    return Transaction.objects.filter(direct_order_id=order_id, status=SUCCESSFUL).exists()


def order_is_paid(order: DirectOrder) -> bool:
    return _order_paid(order.pk)


# --- capture, refund, cancel ------------------------------------------------------------------------


def capture(community: Community, transaction_uuid: Any) -> Transaction:
    with writing():
        tx = _locked_transaction(transaction_uuid)
        _check_owner(tx, community)
        if tx.status != SUCCESSFUL:
            raise ApiError.field(
                "transaction_uuid",
                gettext("Only a SUCCESSFUL transaction can be captured (%(status)s).")
                % {"status": tx.status},
            )
        if tx.captured_at is not None:
            raise ApiError.field("transaction_uuid", gettext("Transaction is already captured."))
        tx.captured_at = now()
        tx.save(update_fields=["captured_at"])
    return tx


def refund(community: Community, transaction_uuid: Any, amount: Decimal) -> Refund:
    """Full or partial refund; the sum of refunds never exceeds what was paid."""
    with writing():
        tx = _locked_transaction(transaction_uuid)
        _check_owner(tx, community)
        if tx.status != SUCCESSFUL:
            raise ApiError.field(
                "transaction_uuid",
                gettext("Only a SUCCESSFUL transaction can be refunded (%(status)s).")
                % {"status": tx.status},
            )
        remaining = tx.total_amount - tx.refunded_amount
        if remaining <= 0:
            raise ApiError.field("refund_amount", gettext("Transaction is already fully refunded."))
        if amount > remaining:
            raise ApiError.field(
                "refund_amount",
                gettext(
                    "Ensure this value is less than or equal to %(amount)s (the amount not yet refunded)."
                )
                % {"amount": money.text(remaining)},
            )
        tx.refunded_amount += amount
        tx.save(update_fields=["refunded_amount"])
        return Refund.objects.create(transaction=tx, amount=amount, created=now())


def cancel_recurring(community: Community, transaction_uuid: Any) -> bool:
    """Stop future charges of the series; charges already made stay. Returns False if already stopped."""
    with writing():
        tx = _locked_transaction(transaction_uuid)
        _check_owner(tx, community)
        if tx.series is None:
            raise ApiError.field(
                "transaction_uuid", gettext("Transaction is not part of a recurring payment.")
            )
        series = RecurringSeries.objects.select_for_update().get(pk=tx.series.pk)
        if series.cancelled_at is not None:
            return False
        series.active = False
        series.cancelled_at = now()
        series.save(update_fields=["active", "cancelled_at"])
    return True


def _check_owner(tx: Transaction, community: Community) -> None:
    # Another community's transaction is answered as unknown, so keys cannot probe foreign uuids.
    if tx.community_id != community.pk:
        raise ApiError.field("transaction_uuid", gettext("Transaction not found."), code=404)


# --- recurring renewals -------------------------------------------------------------------------------


def advance_clock(days: int) -> list[Transaction]:
    """Move the sandbox clock and run every renewal that falls due, in date order, each with its callback."""
    from .state import get_state

    renewals: list[Transaction] = []
    with writing():
        state = get_state()
        state.clock_offset_seconds += days * 86400
        state.save(update_fields=["clock_offset_seconds"])
        renewals = run_due_renewals()
    return renewals


def run_due_renewals() -> list[Transaction]:
    renewals: list[Transaction] = []
    with writing():
        current = today()
        for series in RecurringSeries.objects.select_for_update().filter(active=True).order_by("id"):
            parent = (
                Transaction.objects.filter(uuid=series.parent_uuid).first() if series.parent_uuid else None
            )
            while (
                parent is not None and series.next_charge_on is not None and series.next_charge_on <= current
            ):
                if series.next_charge_on > series.expiry_date:
                    break
                renewals.append(_renew(series, parent, series.next_charge_on))
            if current > series.expiry_date:
                series.active = False
            series.save()
    return renewals


def _renew(series: RecurringSeries, parent: Transaction, on: dt.date) -> Transaction:
    at = dt.datetime.combine(on, parent.created.timetz())
    failing = series.fail_next_renewals > 0
    tx = Transaction(
        community_id=parent.community_id,
        api_payment_id=parent.api_payment_id,
        direct_order_id=parent.direct_order_id,
        payment_for=parent.payment_for,
        status=FAILED if failing else SUCCESSFUL,
        total_amount=parent.total_amount,
        original_amount=parent.original_amount,
        currency=parent.currency,
        pay_using=parent.pay_using,
        billing_name=parent.billing_name,
        billing_email=parent.billing_email,
        billing_phone=parent.billing_phone,
        member_id=parent.member_id,
        language=parent.language,
        custom_fields_json=parent.custom_fields_json,
        series=series,
        is_sub_payment=True,
        created=at,
        completed_at=at,
    )
    if failing:
        series.fail_next_renewals -= 1
        tx.transaction_order = 0
    else:
        series.recurring_count += 1
        tx.transaction_order = series.recurring_count
    # The schedule moves on after a failed attempt too: the sandbox does not retry renewals.
    assert series.next_charge_on is not None
    series.next_charge_on = series.next_charge_on + dt.timedelta(days=series.minimum_days_between_payments)
    tx.save()
    callbacks.enqueue(tx, callback_url(tx), callback_body(tx))
    return tx


# --- direct orders ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrderTotals:
    amount: Decimal
    discount: Decimal
    subtotal: Decimal
    vat_percentage: Decimal
    vat: Decimal
    total: Decimal


def order_totals(order: DirectOrder) -> OrderTotals:
    """VAT is computed on the amount after the discount, rounded half up to piasters."""
    subtotal = order.amount - order.discount_amount
    vat = money.quantize(subtotal * order.vat_percentage / 100)
    return OrderTotals(
        amount=order.amount,
        discount=order.discount_amount,
        subtotal=subtotal,
        vat_percentage=order.vat_percentage,
        vat=vat,
        total=subtotal + vat,
    )


def create_direct_order(community: Community, data: Mapping[str, Any], payment_link_for: Any) -> DirectOrder:
    with writing():
        order = DirectOrder.objects.create(
            community=community,
            payment_id=secrets.token_hex(10),
            name=data["name"],
            amount=data["amount"]["amount"],
            currency=data["amount"]["currency"],
            discount_amount=(data.get("discount_amount") or {}).get("amount") or Decimal("0"),
            vat_percentage=data.get("vat_percentage") or Decimal("0"),
            payment_methods=data["payment_methods"],
            customer_name=data["customer_name"],
            customer_email=data["customer_email"],
            customer_mobile=data["customer_mobile"],
            customer_title=data.get("customer_title") or "",
            address=data.get("address") or "",
            order_description=data.get("order_description") or "",
            allow_recurring_payments=bool(data.get("allow_recurring_payments")),
            expiry_date=data.get("expiry_date"),
            minimum_days_between_payments=data.get("minimum_days_between_payments"),
            custom_fields=[dict(item) for item in data.get("custom_fields") or []],
            tags=[dict(item) for item in data.get("tags") or []],
            redirect_url=data.get("redirect_url") or "",
            callback_url=data.get("callback_url") or "",
            send_by_email=bool(data.get("send_by_email")),
            cc_email=data.get("cc_email") or "",
            send_by_sms=bool(data.get("send_by_sms")),
            paid=bool(data.get("paid")),
            created=now(),
        )
        link = str(payment_link_for(order))
        totals = order_totals(order)
        amount_text = f"{money.text(totals.total)} {order.currency}"
        greeting = " ".join(part for part in (order.customer_title, order.customer_name) if part)
        if order.send_by_email:
            OutboxMessage.objects.create(
                direct_order=order,
                channel=OutboxMessage.Channel.EMAIL,
                to=order.customer_email,
                cc=order.cc_email,
                subject=gettext("Payment request: %(order)s") % {"order": order.name},
                body=gettext(
                    "Dear %(customer)s,\n\n%(community)s asks you to pay %(amount)s for %(order)s.\n"
                    "Pay here: %(link)s\n"
                )
                % {
                    "customer": greeting,
                    "community": community.name,
                    "amount": amount_text,
                    "order": order.name,
                    "link": link,
                },
                created=order.created,
            )
        if order.send_by_sms:
            OutboxMessage.objects.create(
                direct_order=order,
                channel=OutboxMessage.Channel.SMS,
                to=order.customer_mobile,
                body=gettext("%(community)s: pay %(amount)s for %(order)s: %(link)s")
                % {"community": community.name, "amount": amount_text, "order": order.name, "link": link},
                created=order.created,
            )
    return order


def start_order_payment(order: DirectOrder, pay_using: str, answers: dict[str, Any]) -> Transaction:
    """A PENDING transaction for one payment of a direct order, with the customer's custom field answers."""
    totals = order_totals(order)
    with writing():
        if order_is_paid(order):
            raise ApiError.field("payment_id", gettext("The direct order is already paid."))
        tx = Transaction(
            community_id=order.community_id,
            direct_order=order,
            payment_for=PAYMENT_FOR_DIRECT_ORDER,
            total_amount=totals.total,
            original_amount=order.amount,
            currency=order.currency,
            pay_using=pay_using,
            billing_name=order.customer_name,
            billing_email=order.customer_email,
            billing_phone=order.customer_mobile,
            custom_fields_json=answers or None,
            created=now(),
        )
        if is_kiosk(pay_using):
            tx.bill_reference = _new_bill_reference()
        if order.allow_recurring_payments and order.expiry_date and order.minimum_days_between_payments:
            tx.series = RecurringSeries.objects.create(
                community_id=order.community_id,
                expiry_date=order.expiry_date,
                minimum_days_between_payments=order.minimum_days_between_payments,
            )
        tx.save()
        if tx.series is not None:
            RecurringSeries.objects.filter(pk=tx.series.pk).update(parent_uuid=tx.uuid)
            tx.series.parent_uuid = tx.uuid
    return tx


# --- promocodes ---------------------------------------------------------------------------------------


def promocode_value(promo: Promocode, amount: Decimal) -> Decimal:
    """The discount for this amount: a fixed value (never above the amount) or a percentage of it."""
    if promo.kind == Promocode.Kind.PERCENTAGE:
        return money.quantize(amount * promo.value / 100)
    return min(promo.value, amount)


def check_promocode(
    promo: Promocode | None, field: str, amount: Decimal | None, currency: str | None, payment_for: str | None
) -> Promocode:
    """Raise a 400 naming what fails: existence, expiry, currency, payment_for, amount rules."""
    if promo is None:
        raise ApiError.field(field, gettext("Promocode not found."))
    if promo.expires_on is not None and promo.expires_on < today():
        raise ApiError.field(
            field, gettext("Promocode expired on %(date)s.") % {"date": promo.expires_on.isoformat()}
        )
    if currency is not None and promo.currency != currency:
        raise ApiError.field(
            "currency", gettext("Promocode applies to %(currency)s only.") % {"currency": promo.currency}
        )
    if payment_for is not None and promo.payment_for and promo.payment_for != payment_for:
        raise ApiError.field(
            "payment_for",
            gettext("Promocode applies to %(payment_for)s only.") % {"payment_for": promo.payment_for},
        )
    if amount is not None:
        if promo.min_amount is not None and amount < promo.min_amount:
            raise ApiError.field(
                "amount",
                gettext("Promocode applies to amounts of at least %(amount)s.")
                % {"amount": money.text(promo.min_amount)},
            )
        if promo.max_amount is not None and amount > promo.max_amount:
            raise ApiError.field(
                "amount",
                gettext("Promocode applies to amounts up to %(amount)s.")
                % {"amount": money.text(promo.max_amount)},
            )
    return promo


# --- statistics -----------------------------------------------------------------------------------------


def statistics(community: Community) -> dict[str, Any]:
    """Computed from the ledger, in Decimal (SQLite cannot sum decimals exactly).

    collected = paid amounts net of refunds of SUCCESSFUL transactions; settled = the collected amount of
    captured transactions; balance = collected - settled; the week runs Monday 00:00 UTC to Monday on the
    sandbox clock.
    """
    zero = Decimal("0.00")
    collected = settled = weekly = zero
    total_number = 0
    current = now()
    week_start = dt.datetime.combine(
        current.date() - dt.timedelta(days=current.weekday()), dt.time(), tzinfo=dt.UTC
    )
    week_end = week_start + dt.timedelta(days=7)
    rows = Transaction.objects.filter(community=community).values_list(
        "status", "total_amount", "refunded_amount", "captured_at", "completed_at"
    )
    for status, total, refunded, captured_at, completed_at in rows:
        total_number += 1
        if status != SUCCESSFUL:
            continue
        net = total - refunded
        collected += net
        if captured_at is not None:
            settled += net
        if completed_at is not None and week_start <= completed_at < week_end:
            weekly += net
    return {
        "balance_details": {
            "balance": money.quantize(collected - settled),
            "total_settled": money.quantize(settled),
        },
        "total_number_of_transactions": total_number,
        "total_collected_transactions": money.quantize(collected),
        "weekly_collected_transactions": money.quantize(weekly),
    }


# --- callbacks and redirects ------------------------------------------------------------------------------


def callback_url(tx: Transaction) -> str:
    if tx.direct_order_id is not None:
        return tx.direct_order.callback_url if tx.direct_order else ""
    return tx.api_payment.callback_url if tx.api_payment else ""


def callback_body(tx: Transaction) -> dict[str, Any]:
    """The spec's Callback body; custom fields are top-level keys, after (and never replacing) spec fields."""
    from .state import get_state

    key = get_state().config.get("callback_uuid_key") or get_settings().callback_uuid_key
    body: dict[str, Any] = {
        "total_amount_piasters": money.to_piasters(tx.total_amount),
        "total_amount": money.quantize(tx.total_amount),
    }
    if key in ("transaction_uuid", "both"):
        body["transaction_uuid"] = str(tx.uuid)
    if key in ("transaction_id", "both"):
        body["transaction_id"] = str(tx.uuid)
    body["transaction_status"] = tx.status
    body["member_id"] = tx.member_id or None
    order = tx.direct_order if tx.direct_order_id is not None else None
    body["payment_id"] = order.payment_id if order is not None else str(tx.api_payment_id or "")
    body["merchant_id"] = tx.community.community_id
    if order is not None:
        body["message"] = f"Payment of direct order {order.name} is {tx.status}."
    if tx.series is not None:
        body["recurring"] = {
            "is_sub_payment": tx.is_sub_payment,
            "parent_transaction": str(tx.series.parent_uuid),
        }
    for label, value in (tx.custom_fields_json or {}).items():
        body.setdefault(str(label), value)
    return body


def redirect_target(tx: Transaction) -> str | None:
    """The browser redirect with the spec's query parameters, or None when no URL is configured."""
    if tx.direct_order_id is not None and tx.direct_order is not None:
        # The spec types both as floats here (and Pay's amount as an integer, below).
        params: list[tuple[str, str]] = [
            ("total_amount_piasters", money.float_text(Decimal(money.to_piasters(tx.total_amount)))),
            ("total_amount", money.float_text(tx.total_amount)),
            ("transaction_uuid", str(tx.uuid)),
            ("transaction_status", tx.status),
        ]
        reserved = {name for name, _ in params}
        for label, value in (tx.custom_fields_json or {}).items():
            if label not in reserved:
                params.append((str(label), _query_value(value)))
        return _with_query(tx.direct_order.redirect_url, params) if tx.direct_order.redirect_url else None
    base = tx.api_payment.redirect_url if tx.api_payment else ""
    if not base and tx.status == SUCCESSFUL:
        base = tx.community.redirect_successful_only
    if not base:
        return None
    return _with_query(
        base,
        [
            ("amount_piasters", str(money.to_piasters(tx.total_amount))),
            ("amount", money.integer_text(tx.total_amount)),
            ("transaction_uuid", str(tx.uuid)),
            ("transaction_status", tx.status),
        ],
    )


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return f"{value:f}"
    return str(value)


def _with_query(url: str, params: list[tuple[str, str]]) -> str:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True) + params
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))
