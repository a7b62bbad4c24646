"""The customer's endpoints: quotes, promocode checks, starting a payment and reading one's own payments."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle

from ... import services
from ...conf import paycollect_settings
from ...exceptions import StateConflict
from ...models import Transaction
from .. import serializers
from ..payables import resolve
from ..schema import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    OpenApiTypes,
    answers,
    extend_schema,
)
from ..throttles import PaymentsThrottle, QuotesThrottle
from .base import ContractView, Invalid, Pagination, billing_for, checked_promocode, owned_payment, sent


class QuoteView(ContractView):
    """``POST quotes/``: what paying for a payable will charge, shown before paying: with ``FEES_IN_BILL``,
    the service's prepare amount (its fees added), otherwise the amount itself (the community bears them)."""

    paycollect_throttles = (QuotesThrottle,)
    serializer_class = serializers.QuoteRequestSerializer

    @extend_schema(
        operation_id="quote",
        request=serializers.QuoteRequestSerializer,
        responses=answers({200: serializers.QuoteSerializer}, (400, 403, 429, 503)),
        examples=[
            OpenApiExample(
                "A plan", value={"reference": "standard-yearly", "pay_using": "card"}, request_only=True
            ),
            OpenApiExample(
                "Its quote",
                value={
                    "reference": "standard-yearly",
                    "amount": "1500.00",
                    "fees": "39.50",
                    "total_amount": "1539.50",
                    "currency": "EGP",
                },
                response_only=True,
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        data = self.validated(serializers.QuoteRequestSerializer)
        payable = resolve(request, data["reference"])
        currency = payable.currency or paycollect_settings.DEFAULT_CURRENCY
        total = payable.amount
        if paycollect_settings.FEES_IN_BILL:
            # The customer pays the fees only when the community adds them to the bill: then ask the service.
            total = services.prepare_amount(
                payable.amount, currency=currency, payment_method=data.get("pay_using") or payable.pay_using
            )
        body = {
            "reference": data["reference"],
            "amount": payable.amount,
            "fees": total - payable.amount,
            "total_amount": total,
            "currency": currency,
        }
        return Response(serializers.QuoteSerializer(body).data)


class PromocodeView(ContractView):
    """``POST promocodes/validate/``: whether a promocode applies to a payable, and its value."""

    paycollect_throttles = (QuotesThrottle,)
    serializer_class = serializers.PromocodeRequestSerializer

    @extend_schema(
        operation_id="validate_promocode",
        request=serializers.PromocodeRequestSerializer,
        responses=answers({200: serializers.PromocodeSerializer}, (400, 403, 429, 503)),
        examples=[
            OpenApiExample(
                "A promocode",
                value={
                    "reference": "standard-yearly",
                    "promocode": "SAVE10",
                    "phone_number": "+201001234567",
                },
                request_only=True,
            ),
            OpenApiExample(
                "It applies",
                value={
                    "reference": "standard-yearly",
                    "promocode": "SAVE10",
                    "valid": True,
                    "value": "150.00",
                    "currency": "EGP",
                },
                response_only=True,
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        data = self.validated(serializers.PromocodeRequestSerializer)
        payable = resolve(request, data["reference"])
        phone = data.get("phone_number") or billing_for(request, payable, None)["phone_number"]
        found = checked_promocode(payable, data["promocode"], phone, phone_field="phone_number")
        body = {
            "reference": data["reference"],
            "promocode": data["promocode"],
            "valid": True,
            "value": found.value,
            "currency": found.currency or payable.currency or paycollect_settings.DEFAULT_CURRENCY,
        }
        return Response(serializers.PromocodeSerializer(body).data)


class PaymentListView(ContractView):
    """``GET payments/``: the caller's payments, newest first. ``POST payments/``: start one."""

    serializer_class = serializers.PaymentSerializer
    pagination_class = Pagination

    def get_throttles(self) -> list[BaseThrottle]:
        # Only starting a payment calls the service; reading the list is not throttled by the app.
        if self.request.method == "POST":
            self.paycollect_throttles = (PaymentsThrottle,)
        return super().get_throttles()

    def get_queryset(self) -> QuerySet[Transaction]:
        payments = Transaction.objects.filter(owner_id=self.request.user.pk)
        wanted = self.request.query_params.get("status")
        if wanted is not None:
            known = {value for value, _label in Transaction.STATUS_CHOICES}
            if wanted.upper() not in known:
                raise Invalid({"status": [_("Must be one of: %s.") % ", ".join(sorted(known))]})
            payments = payments.filter(status=wanted.upper())
        reference = self.request.query_params.get("reference")
        if reference is not None:
            payments = payments.filter(merchant_reference=reference)
        return payments.order_by("-created_at", "-pk")

    @extend_schema(
        operation_id="list_payments",
        parameters=[
            OpenApiParameter(
                "status",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                description=_("Only this status (PENDING, SUCCESSFUL, ...)."),
            ),
            OpenApiParameter(
                "reference",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                description=_("Only this reference."),
            ),
        ],
        responses=answers({200: serializers.PaymentSerializer(many=True)}, (400, 403)),
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(serializers.PaymentSerializer(page, many=True).data)

    @extend_schema(
        operation_id="start_payment",
        request=serializers.StartPaymentRequestSerializer,
        responses=answers(
            {
                200: OpenApiResponse(
                    serializers.PaymentSerializer,
                    description=_("The open payment of this reference, started before."),
                ),
                201: OpenApiResponse(
                    serializers.PaymentSerializer,
                    description=_("Started: open iframe_url (or show the kiosk bill_reference)."),
                ),
                202: OpenApiResponse(
                    serializers.PaymentSerializer,
                    description=_("Sent, no answer: state unknown. Never start it again; poll the list."),
                ),
            },
            (400, 403, 409, 429, 503),
        ),
        examples=[
            OpenApiExample(
                "A plan, by card",
                value={
                    "reference": "standard-yearly",
                    "pay_using": "card",
                    "billing_data": {"phone_number": "+201001234567"},
                },
                request_only=True,
            ),
            OpenApiExample(
                "Started",
                value={
                    "uuid": "3f1c2a9e-8b4d-4c6e-9f0a-1b2c3d4e5f60",
                    "reference": "membership-42",  # the merchant reference the payable hook gave
                    "status": "PENDING",
                    "state": "open",
                    "amount": "1539.50",  # what is charged: the quote's total_amount
                    "currency": "EGP",
                    "pay_using": "card",
                    "iframe_url": "https://service.example/pay/3f1c2a9e-8b4d-4c6e-9f0a-1b2c3d4e5f60",
                    "bill_reference": "",
                    "kiosk_message": "",
                    "created_at": "2026-11-24T17:00:00Z",
                    "paid_at": None,
                },
                response_only=True,
                status_codes=["201"],
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        data = self.validated(serializers.StartPaymentRequestSerializer)
        payable = resolve(request, data["reference"])
        reference = payable.merchant_reference or data["reference"]
        if Transaction.objects.filter(merchant_reference=reference, status=Transaction.SUCCESSFUL).exists():
            raise StateConflict({"reference": [_("This has been paid already.")]})
        before = (
            Transaction.objects.open()
            .filter(merchant_reference=reference)
            .values_list("pk", flat=True)
            .first()
        )
        billing = billing_for(request, payable, data.get("billing_data"))
        code = data.get("promocode")
        promocode_id = (
            checked_promocode(
                payable, code, billing["phone_number"], phone_field="billing_data.phone_number"
            ).promocode_id
            if code
            else None
        )
        txn = services.start_payment(
            amount=payable.amount,
            currency=payable.currency,
            billing_data=billing,
            merchant_reference=reference,
            merchant_object=payable.merchant_object,
            pay_using=data.get("pay_using") or payable.pay_using,
            recurring=payable.recurring,
            promocode_id=promocode_id,
            language=data.get("language"),
            owner=request.user,
        )
        if txn.owner_id != request.user.pk:
            # The reference's open payment is someone else's: say so without showing any of it.
            raise StateConflict({"reference": [_("Another payment of this reference is under way.")]})
        return sent(
            serializers.PaymentSerializer(txn).data,
            unknown=serializers.payment_state(txn) == serializers.STATE_UNKNOWN,
            done=status.HTTP_200_OK if txn.pk == before else status.HTTP_201_CREATED,
        )


class PaymentDetailView(ContractView):
    """``GET payments/<uuid>/``: one of the caller's payments (a page polls it until it is not open)."""

    serializer_class = serializers.PaymentSerializer

    @extend_schema(
        operation_id="get_payment",
        responses=answers({200: serializers.PaymentSerializer}, (403, 404)),
    )
    def get(self, request: Request, uuid: str) -> Response:
        return Response(serializers.PaymentSerializer(owned_payment(request, uuid)).data)
