"""The typed client: one method per operation of the Payment Collection Service.

It knows nothing of Django. Paths, methods, headers and bodies follow the service's spec to the
character. Reads are retried after network failures and 429/502/503/504; state-changing calls
are retried only when the request provably never left this machine, because the service has no
idempotency keys: a payment or refund is never sent twice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from .envelope import Envelope
from .money import to_piasters
from .transport import OPERATIONS, Operation, Transport
from .types import (
    DEFAULT_CURRENCY,
    DEFAULT_PAY_USING,
    KNOWN_PAYMENT_FOR,
    Amount,
    BillingData,
    CommunityCreated,
    CustomFieldDefinition,
    CustomFieldValue,
    DashboardStatistics,
    DirectOrderCreated,
    Logo,
    OperationMessage,
    PaymentStarted,
    PreparedAmount,
    PromocodeValidated,
    Tag,
    Transaction,
)
from .validation import Checker

__all__ = ["OPERATIONS", "Operation", "PayCollectClient"]


def _compact(body: Mapping[str, Any]) -> dict[str, Any]:
    """Drop optional fields left unset, so the service sees only what the caller gave."""
    return {k: v for k, v in body.items() if v is not None}


class PayCollectClient(Transport):
    """A client of the Payment Collection Service.

    ``base_url`` is the only difference between the testing and the live environment.
    ``basic_credentials`` (for dashboard statistics) is ``(username, password)``, sent as the
    spec writes it, ``Authorization: Basic <username>:<password>``; a string is sent unchanged
    after the word ``Basic`` and a space. ``timeout`` is ``(connect seconds, read seconds)``. Reads are tried
    at most ``1 + max_network_retries`` times. ``promocode_method`` is POST unless the
    environment needs GET (the spec lists both).

    Every method takes the spec's field names as keyword arguments, checks them before sending
    (raising :class:`ValidationError` with ``sent=False``), and returns an :class:`Envelope`
    whose ``result`` is a typed view of ``data``.
    """

    # --- the ten operations -----------------------------------------------------------

    def prepare_amount(
        self,
        *,
        community_id: str,
        amount: Decimal | int | str,
        currency: str | None = None,
        selected_payment_method: str | None = None,
    ) -> Envelope[PreparedAmount]:
        """Compute the total with the service's fees for a base amount (EGP and card when not given).

        ``currency`` and ``selected_payment_method`` are matched case-insensitively (``" egp"`` is sent
        as ``EGP``, ``"Card"`` as ``card``).
        """
        check = Checker()
        body = _compact(
            {
                "community_id": check.text("community_id", community_id),
                "amount": check.amount("amount", amount),
                "currency": check.currency("currency", currency),
                "selected_payment_method": check.payment_method(
                    "selected_payment_method", selected_payment_method, required=False
                ),
            }
        )
        check.done()
        return self._call(OPERATIONS["prepare_amount"], PreparedAmount.from_data, json_body=body)

    def pay(
        self,
        *,
        community_id: str,
        amount: Decimal | int | str | None = None,
        original_amount: Decimal | int | str,
        variable_amount_id: int,
        billing_data: BillingData | Mapping[str, str],
        currency: str = DEFAULT_CURRENCY,
        pay_using: str = DEFAULT_PAY_USING,
        amount_piasters: int | None = None,
        membership_id: str | None = None,
        is_recurring: bool | None = None,
        expiry_date: Any = None,
        minimum_days_between_payments: int | None = None,
        promocode_id: int | None = None,
        custom_fields: Sequence[CustomFieldValue | Mapping[str, Any]] | None = None,
        language: str | None = None,
    ) -> Envelope[PaymentStarted]:
        """Start a payment for an API payment; the customer completes it at ``result.iframe_url``.

        ``amount`` is what is charged (the prepared total when fees are added in the bill);
        ``original_amount`` the cost without fees. ``amount_piasters`` (an int, as the spec's kiosk
        example carries it) may stand in for ``amount``, or come with it when both agree.
        ``billing_data`` is :class:`BillingData` or the spec's object ``{"name", "email",
        "phone_number"}``; ``custom_fields`` a list of :class:`CustomFieldValue` or of the spec's
        ``{"field_label", "field_value"}``. ``currency`` and ``pay_using`` are matched
        case-insensitively. For ``pay_using="kiosk"`` the result carries the bill reference.
        Never retried once sent: after :class:`OutcomeUnknownError` find the transaction by its
        callback or by reconciliation, do not pay again.
        """
        check = Checker()
        charged, piasters = check.charged_amount(amount, amount_piasters)
        pay_using_value = check.payment_method("pay_using", pay_using)
        body = _compact(
            {
                "community_id": check.text("community_id", community_id),
                "amount": charged,
                "original_amount": check.amount("original_amount", original_amount),
                "currency": check.currency("currency", currency) or (None if currency else DEFAULT_CURRENCY),
                "variable_amount_id": check.positive_int("variable_amount_id", variable_amount_id),
                "pay_using": pay_using_value,
                "billing_data": check.billing_data(billing_data),
                "membership_id": check.text("membership_id", membership_id, required=False),
                **check.recurring("is_recurring", is_recurring, expiry_date, minimum_days_between_payments),
                "promocode_id": check.positive_int("promocode_id", promocode_id, required=False),
                "custom_fields": check.custom_field_values(custom_fields),
                "language": check.text("language", language, required=False),
            }
        )
        check.done()
        if (pay_using_value == "kiosk" or piasters is not None) and charged is not None:
            # The spec's kiosk example carries amount_piasters; which field is authoritative is not
            # shown, so both are sent, computed from the same Decimal.
            body["amount_piasters"] = to_piasters(charged)
        return self._call(OPERATIONS["pay"], PaymentStarted.from_data, json_body=body)

    def get_transaction(self, *, community_id: str, transaction_uuid: str) -> Envelope[Transaction]:
        """Fetch one transaction: the truth about its status, whatever callbacks or redirects claim."""
        check = Checker()
        community = check.text("community_id", community_id)
        uuid = check.text("transaction_uuid", transaction_uuid)
        check.done()
        assert community is not None
        assert uuid is not None
        return self._call(
            OPERATIONS["get_transaction"],
            Transaction.from_data,
            path_params={"community_id": community, "transaction_uuid": uuid},
        )

    def _by_uuid(
        self, name: str, transaction_uuid: str, check: Checker | None = None, **extra: Any
    ) -> Envelope[OperationMessage]:
        check = check or Checker()
        body = {"transaction_uuid": check.text("transaction_uuid", transaction_uuid), **extra}
        check.done()
        return self._call(OPERATIONS[name], OperationMessage.from_data, json_body=body)

    def capture(self, *, transaction_uuid: str) -> Envelope[OperationMessage]:
        """Capture a transaction. Never retried once sent."""
        return self._by_uuid("capture", transaction_uuid)

    def refund(
        self, *, transaction_uuid: str, refund_amount: Decimal | int | str
    ) -> Envelope[OperationMessage]:
        """Refund all of a transaction or part of it. Never retried once sent."""
        check = Checker()
        amount = check.amount("refund_amount", refund_amount)
        return self._by_uuid("refund", transaction_uuid, check, refund_amount=amount)

    def cancel_recurring(self, *, transaction_uuid: str) -> Envelope[OperationMessage]:
        """Stop future charges of a recurring series; ``transaction_uuid`` is its parent transaction."""
        return self._by_uuid("cancel_recurring", transaction_uuid)

    def validate_promocode(
        self,
        *,
        name: str,
        community_id: str,
        phone_number: str,
        amount: Decimal | int | str,
        currency: str,
        payment_for: str,
        variable_amount_id: int | str,
    ) -> Envelope[PromocodeValidated]:
        """Check a promocode against an amount; pass ``result.promocode_id`` to :meth:`pay`."""
        check = Checker()
        body = {
            "name": check.text("name", name),
            "community_id": check.text("community_id", community_id),
            "phone_number": check.phone("phone_number", phone_number),
            "amount": check.amount("amount", amount),
            "currency": check.currency("currency", currency) if currency else check.text("currency", None),
            "payment_for": check.name_of("payment_for", payment_for, KNOWN_PAYMENT_FOR),
            # The spec types this one as a string, unlike Pay's integer.
            "variable_amount_id": check.identifier("variable_amount_id", variable_amount_id),
        }
        check.done()
        return self._call(
            OPERATIONS["validate_promocode"],
            PromocodeValidated.from_data,
            json_body=body,
            method=self.promocode_method,
        )

    def create_community(
        self,
        *,
        name: str,
        logo: Logo | tuple[Any, ...] | bytes | str | os.PathLike[str] | Any,
        app_modules: Sequence[str] | str | None = None,
        registered_name: str | None = None,
        address: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        payment_methods: Sequence[str] | str | None = None,
        kiosk_processor: str | None = None,
        wallet_processor: str | None = None,
        redirect_successful_only: str | None = None,
        order_description: str | None = None,
        allowed_cards: Any = None,
        extra_fields: Mapping[str, Any] | None = None,
    ) -> Envelope[CommunityCreated]:
        """Create a community (multipart/form-data with the png or jpg logo).

        ``logo`` is a :class:`Logo`, bytes, a binary file object, a path, or a requests-style tuple
        ``(filename, bytes or file object[, content_type])``. ``app_modules`` and
        ``payment_methods`` are lists or the spec's comma-separated text (``"event, service"``),
        matched case-insensitively and sent in the spec's spelling (``Event,Service``).
        ``order_description``, ``allowed_cards`` and ``extra_fields`` (the bank settings, under the
        bank's key) are fields whose rules the spec does not show: text is sent as given, objects
        and lists as JSON text; secret ones are never recorded.
        """
        check = Checker()
        given: dict[str, Any] = {
            "name": check.text("name", name),
            "app_modules": check.app_modules(app_modules),
            "registered_name": check.text("registered_name", registered_name, required=False),
            "address": check.text("address", address, required=False),
            "email": check.email("email", email, required=False),
            "phone": check.phone("phone", phone, required=False),
            "payment_methods": check.community_payment_methods(payment_methods),
            "kiosk_processor": check.text("kiosk_processor", kiosk_processor, required=False),
            "wallet_processor": check.text("wallet_processor", wallet_processor, required=False),
            "redirect_successful_only": check.text(
                "redirect_successful_only", redirect_successful_only, required=False
            ),
        }
        unshown = {"order_description": order_description, "allowed_cards": allowed_cards}
        for key, value in {**dict(extra_fields or {}), **_compact(unshown)}.items():
            if value is not None and given.get(key) is None:
                given[key] = value  # the checked fields above are never overridden
        given = _compact(given)
        form = {key: check.form_value(key, value) or "" for key, value in given.items()}
        checked_logo = check.logo(logo)
        check.done()
        return self._call(
            OPERATIONS["create_community"],
            CommunityCreated.from_data,
            form=form,
            recorded_form=given,
            logo=checked_logo,
        )

    def dashboard_statistics(self, *, community_id: str) -> Envelope[DashboardStatistics]:
        """Balance and transaction totals of a community (needs the API key and basic credentials)."""
        check = Checker()
        community = check.text("community_id", community_id)
        check.done()
        assert community is not None
        return self._call(
            OPERATIONS["dashboard_statistics"],
            DashboardStatistics.from_data,
            query={"community_id": community},
        )

    def create_direct_order(
        self,
        *,
        name: str,
        community_id: str,
        amount: Amount | Mapping[str, Any] | Decimal | int | str,
        payment_methods: Sequence[str] | str,
        customer_name: str,
        customer_email: str,
        customer_mobile: str,
        currency: str | None = None,
        discount_amount: Amount | Mapping[str, Any] | Decimal | int | str | None = None,
        discount_currency: str | None = None,
        allow_recurring_payments: bool | None = None,
        expiry_date: Any = None,
        minimum_days_between_payments: int | None = None,
        custom_fields: Sequence[CustomFieldDefinition | Mapping[str, Any]] | None = None,
        order_description: str | None = None,
        address: str | None = None,
        customer_title: str | None = None,
        vat_percentage: Decimal | int | str | None = None,
        send_by_email: bool | None = None,
        cc_email: str | None = None,
        send_by_sms: bool | None = None,
        redirect_url: str | None = None,
        callback_url: str | None = None,
        paid: bool | None = None,
        tags: Sequence[Tag | Mapping[str, Any]] | None = None,
    ) -> Envelope[DirectOrderCreated]:
        """Create a payable order; the customer pays at ``result.payment_link``.

        ``amount`` and ``discount_amount`` are the spec's objects, ``{"amount": ..., "currency":
        ...}`` (or :class:`Amount`), or, our convenience form, bare amounts with ``currency`` and
        ``discount_currency`` apart. Either way they are sent as objects; the order's currency is
        EGP when none is given, the discount's is the order's. ``payment_methods`` is a list (or
        comma-separated text) matched case-insensitively; ``custom_fields`` are
        :class:`CustomFieldDefinition` or the spec's objects, ``tags`` :class:`Tag` or ``{"id",
        "name"}``. Never retried once sent.
        """
        check = Checker()
        charged = check.amount_object(
            "amount", amount, currency, default_currency=DEFAULT_CURRENCY, required=True
        )
        discount = check.amount_object(
            "discount_amount",
            discount_amount,
            discount_currency,
            default_currency=charged["currency"] if charged else None,
            required=False,
        )
        if charged is not None and discount is not None and discount["amount"] >= charged["amount"]:
            check.fail("discount_amount.amount", "discount_not_less")
        body = _compact(
            {
                "name": check.text("name", name),
                "community_id": check.text("community_id", community_id),
                "amount": charged,
                "payment_methods": check.payment_methods("payment_methods", payment_methods),
                "customer_name": check.person_name("customer_name", customer_name),
                "customer_email": check.email("customer_email", customer_email),
                "customer_mobile": check.phone("customer_mobile", customer_mobile),
                "discount_amount": discount,
                **check.recurring(
                    "allow_recurring_payments",
                    allow_recurring_payments,
                    expiry_date,
                    minimum_days_between_payments,
                ),
                "custom_fields": check.custom_field_definitions(custom_fields),
                "order_description": check.text("order_description", order_description, required=False),
                "address": check.text("address", address, required=False),
                "customer_title": check.text("customer_title", customer_title, required=False),
                "vat_percentage": check.percentage("vat_percentage", vat_percentage),
                "send_by_email": check.boolean("send_by_email", send_by_email),
                "cc_email": check.email("cc_email", cc_email, required=False),
                "send_by_sms": check.boolean("send_by_sms", send_by_sms),
                "redirect_url": check.text("redirect_url", redirect_url, required=False),
                "callback_url": check.text("callback_url", callback_url, required=False),
                "paid": check.boolean("paid", paid),
                "tags": check.tags(tags),
            }
        )
        check.done()
        return self._call(OPERATIONS["create_direct_order"], DirectOrderCreated.from_data, json_body=body)
