"""The API's views: thin callers of the service layer (``from django_paycollect import services``).

Each view validates what the device sent (400 with field paths), asks the payable hook or looks up the row
the caller may see (404 otherwise), calls one service and answers its row; the service layer's errors become
answers in :mod:`.errors`. Every view runs outside a database transaction, as the service layer requires
(the URLs mark them non-atomic for projects with ``ATOMIC_REQUESTS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework import generics, status
from rest_framework.exceptions import NotFound as HttpNotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle

from .. import services
from ..client import PromocodeValidated
from ..conf import paycollect_settings
from ..exceptions import PaymentRefused, StateConflict
from ..ids import canonical_uuid, looks_like_uuid
from ..models import DirectOrder, RecurringSeries, Refund, Transaction
from ..serializers import DirectOrderSerializer
from . import permissions, serializers
from .errors import contract_response, field_errors, invalid
from .payables import Payable, resolve
from .schema import OpenApiExample, OpenApiParameter, OpenApiResponse, OpenApiTypes, extend_schema
from .throttles import PaymentsThrottle, QuotesThrottle

FIELD_ERRORS = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=_(
        'Field errors by the spec\'s dotted field path, e.g. {"billing_data.phone_number": ["..."]}.'
    ),
    examples=[
        OpenApiExample(
            "Field errors",
            value={"billing_data.phone_number": ["Must start with + and the country code."]},
            response_only=True,
            status_codes=["400"],
        )
    ],
)
UNAVAILABLE = OpenApiResponse(
    response=serializers.ProblemSerializer,
    description=_(
        "The service cannot be reached (code service_unavailable; nothing was done) or the site's "
        "payments configuration is wrong (code configuration)."
    ),
    examples=[
        OpenApiExample(
            "Unavailable",
            value={
                "code": "service_unavailable",
                "detail": "The payment service cannot be reached; nothing was done.",
            },
            response_only=True,
            status_codes=["503"],
        )
    ],
)
CONFLICT = OpenApiResponse(
    response=serializers.ProblemSerializer,
    description=_("The state forbids it (code conflict)."),
    examples=[
        OpenApiExample(
            "Conflict",
            value={
                "code": "conflict",
                "detail": "At most 40.00 EGP can still be refunded.",
                "field_errors": {"amount": ["At most 40.00 EGP can still be refunded."]},
            },
            response_only=True,
            status_codes=["409"],
        )
    ],
)
NOT_YOURS = OpenApiResponse(description=_("No such payment among the caller's."))
REFUSED = OpenApiResponse(description=_("Not signed in, or without the permission."))
THROTTLED = OpenApiResponse(description=_("Too many requests; Retry-After says when to try again."))
_ERRORS = {400: FIELD_ERRORS, 403: REFUSED, 404: NOT_YOURS, 409: CONFLICT, 429: THROTTLED, 503: UNAVAILABLE}


def answers(successes: dict[int, Any], *errors: int) -> dict[int, Any]:
    """An operation's documented answers: its successes, and the error answers it may give."""
    return {**successes, **{status_code: _ERRORS[status_code] for status_code in errors}}


class ContractView(generics.GenericAPIView):  # type: ignore[type-arg]
    """Answers the service layer's errors (see :mod:`.errors`); the app's throttles join the project's."""

    paycollect_permissions: Sequence[type[BasePermission]] = (permissions.IsCustomer,)
    paycollect_throttles: Sequence[type[BaseThrottle]] = ()

    def get_permissions(self) -> list[BasePermission]:
        return [permission() for permission in self.paycollect_permissions]

    def get_throttles(self) -> list[BaseThrottle]:
        return [*super().get_throttles(), *(throttle() for throttle in self.paycollect_throttles)]

    def handle_exception(self, exc: Exception) -> Response:
        answer = invalid(exc.detail) if isinstance(exc, _Invalid) else contract_response(exc)
        return answer if answer is not None else super().handle_exception(exc)

    def validated(self, serializer_class: type[Any]) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.data)
        if not serializer.is_valid():
            raise _Invalid(serializer.errors)
        return dict(serializer.validated_data)


class _Invalid(Exception):
    """Bad input found by a view: answered as field errors by dotted path."""

    def __init__(self, detail: Any) -> None:
        super().__init__("invalid")
        self.detail = detail


def _billing(request: Request, payable: Payable, given: dict[str, str] | None) -> dict[str, str]:
    """The customer's details: what the device sent, over the payable's defaults, over the user's own."""
    user = request.user
    billing = {
        "name": (user.get_full_name() if hasattr(user, "get_full_name") else "") or "",
        "email": getattr(user, "email", "") or "",
        "phone_number": "",
    }
    billing.update({k: v for k, v in payable.billing_data.items() if v})
    billing.update({k: v for k, v in (given or {}).items() if v})
    return billing


def _promocode(payable: Payable, code: str, phone_number: str) -> PromocodeValidated:
    """A promocode the customer typed, checked by the service for this payable's amount; every refusal of it
    (unknown, expired, not for this amount) is the ``promocode`` field's error."""
    try:
        found = services.validate_promocode(
            code, amount=payable.amount, phone_number=phone_number, currency=payable.currency
        )
    except PaymentRefused as refused:  # NotFound included: the service does not know the code
        messages = [m for ms in field_errors(refused).values() for m in ms]
        raise PaymentRefused({"promocode": messages}) from refused
    if found.promocode_id is None:
        raise PaymentRefused({"promocode": [_("This promocode cannot be used.")]})
    return found


def _owned_payment(request: Request, uuid: str, *, anyone: bool = False) -> Transaction:
    """The payment of ``uuid`` the caller may see (their own; any, for staff acts), or a 404."""
    if not looks_like_uuid(uuid):
        raise HttpNotFound()
    payments = Transaction.objects.all() if anyone else Transaction.objects.filter(owner_id=request.user.pk)
    found = payments.filter(uuid=canonical_uuid(uuid)).first()
    if found is None:
        raise HttpNotFound()
    return found


def sent(body: Any, *, unknown: bool, done: int = status.HTTP_200_OK) -> Response:
    """The answer to a state-changing call: ``done`` when it took effect, 202 when its outcome is unknown
    (the row says so; it is never sent again, and reconciliation finds the truth)."""
    return Response(body, status=status.HTTP_202_ACCEPTED if unknown else done)


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 100

    def get_page_size(self, request: Request) -> int | None:
        self.page_size = int(paycollect_settings.API_PAGE_SIZE)
        return super().get_page_size(request)


class QuoteView(ContractView):
    """``POST quotes/``: what paying for a payable will charge, shown before paying: with ``FEES_IN_BILL``,
    the service's prepare amount (its fees added), otherwise the amount itself (the community bears them)."""

    paycollect_throttles = (QuotesThrottle,)
    serializer_class = serializers.QuoteRequestSerializer

    @extend_schema(
        operation_id="quote",
        request=serializers.QuoteRequestSerializer,
        responses=answers({200: serializers.QuoteSerializer}, 400, 403, 429, 503),
        examples=[
            OpenApiExample(
                "A plan", value={"reference": "plan-standard-yearly", "pay_using": "card"}, request_only=True
            ),
            OpenApiExample(
                "Its quote",
                value={
                    "reference": "plan-standard-yearly",
                    "amount": "1500.00",
                    "fees": "37.50",
                    "total_amount": "1537.50",
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
        responses=answers({200: serializers.PromocodeSerializer}, 400, 403, 429, 503),
        examples=[
            OpenApiExample(
                "A promocode",
                value={"reference": "plan-standard-yearly", "promocode": "WELCOME10"},
                request_only=True,
            ),
            OpenApiExample(
                "It applies",
                value={
                    "reference": "plan-standard-yearly",
                    "promocode": "WELCOME10",
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
        phone = data.get("phone_number") or _billing(request, payable, None)["phone_number"]
        found = _promocode(payable, data["promocode"], phone)
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
                raise _Invalid({"status": [_("Must be one of: %s.") % ", ".join(sorted(known))]})
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
        responses=answers({200: serializers.PaymentSerializer(many=True)}, 400, 403),
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(serializers.PaymentSerializer(page, many=True).data)

    @extend_schema(
        operation_id="start_payment",
        request=serializers.StartPaymentSerializer,
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
            400,
            403,
            409,
            429,
            503,
        ),
        examples=[
            OpenApiExample(
                "A plan, by card",
                value={
                    "reference": "plan-standard-yearly",
                    "pay_using": "card",
                    "billing_data": {"phone_number": "+201001234567"},
                },
                request_only=True,
            ),
            OpenApiExample(
                "Started",
                value={
                    "uuid": "3f1c2a9e-8b4d-4c6e-9f0a-1b2c3d4e5f60",
                    "reference": "plan-standard-yearly",
                    "status": "PENDING",
                    "state": "open",
                    "amount": "1500.00",
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
        data = self.validated(serializers.StartPaymentSerializer)
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
        billing = _billing(request, payable, data.get("billing_data"))
        code = data.get("promocode")
        promocode_id = _promocode(payable, code, billing["phone_number"]).promocode_id if code else None
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
        responses=answers({200: serializers.PaymentSerializer}, 403, 404),
    )
    def get(self, request: Request, uuid: str) -> Response:
        return Response(serializers.PaymentSerializer(_owned_payment(request, uuid)).data)


# --- staff ------------------------------------------------------------------------------------------------


class RefundView(ContractView):
    """``POST payments/<uuid>/refunds/``: refund some or all of a successful payment (staff: refund)."""

    paycollect_permissions = (permissions.CAN_REFUND,)
    serializer_class = serializers.RefundRequestSerializer

    @extend_schema(
        operation_id="refund_payment",
        request=serializers.RefundRequestSerializer,
        responses=answers(
            {
                201: OpenApiResponse(serializers.RefundSerializer, description=_("Refunded.")),
                202: OpenApiResponse(
                    serializers.RefundSerializer,
                    description=_("Sent, no answer: state unknown; never sent again."),
                ),
            },
            400,
            403,
            404,
            409,
            503,
        ),
        examples=[
            OpenApiExample(
                "Part of it", value={"amount": "25.00", "expected_refundable": "100.00"}, request_only=True
            )
        ],
    )
    def post(self, request: Request, uuid: str) -> Response:
        data = self.validated(serializers.RefundRequestSerializer)
        txn = _owned_payment(request, uuid, anyone=True)
        refund = services.refund(
            txn, data.get("amount"), user=request.user, expected_refundable=data.get("expected_refundable")
        )
        return sent(
            serializers.RefundSerializer(refund).data,
            unknown=refund.state == Refund.UNKNOWN,
            done=status.HTTP_201_CREATED,
        )


class CaptureView(ContractView):
    """``POST payments/<uuid>/capture/``: capture a successful payment (staff, capture permission)."""

    paycollect_permissions = (permissions.CAN_CAPTURE,)

    @extend_schema(
        operation_id="capture_payment",
        request=None,
        responses=answers(
            {
                200: OpenApiResponse(serializers.StaffPaymentSerializer, description=_("Captured.")),
                202: OpenApiResponse(
                    serializers.StaffPaymentSerializer,
                    description=_("Sent, no answer: capture_state unknown."),
                ),
            },
            400,
            403,
            404,
            409,
            503,
        ),
    )
    def post(self, request: Request, uuid: str) -> Response:
        txn = services.capture(_owned_payment(request, uuid, anyone=True), user=request.user)
        return sent(
            serializers.StaffPaymentSerializer(txn).data,
            unknown=txn.capture_state == Transaction.CAPTURE_UNKNOWN,
        )


class SeriesCancelView(ContractView):
    """``POST series/<id>/cancel/``: stop a recurring series' future charges (staff, cancel permission)."""

    paycollect_permissions = (permissions.CAN_CANCEL_SERIES,)

    @extend_schema(
        operation_id="cancel_series",
        request=None,
        responses=answers(
            {
                200: OpenApiResponse(serializers.SeriesSerializer, description=_("Cancelled.")),
                202: OpenApiResponse(
                    serializers.SeriesSerializer, description=_("Sent, no answer: cancel_state unknown.")
                ),
                404: OpenApiResponse(description=_("No such series.")),
            },
            400,
            403,
            409,
            503,
        ),
    )
    def post(self, request: Request, pk: int) -> Response:
        series = RecurringSeries.objects.filter(pk=pk).first()
        if series is None:
            raise HttpNotFound()
        done = services.cancel_recurring(series, user=request.user)
        return sent(
            serializers.SeriesSerializer(done).data,
            unknown=done.cancel_state == RecurringSeries.CANCEL_UNKNOWN,
        )


class DirectOrderCreateView(ContractView):
    """``POST direct-orders/``: create a direct order on the service (staff, add permission)."""

    paycollect_permissions = (permissions.CAN_ADD_DIRECT_ORDER,)
    serializer_class = DirectOrderSerializer

    @extend_schema(
        operation_id="create_direct_order",
        request=DirectOrderSerializer,
        responses=answers(
            {
                201: OpenApiResponse(
                    serializers.DirectOrderViewSerializer, description=_("Created: send its payment_link.")
                ),
                202: OpenApiResponse(
                    serializers.DirectOrderViewSerializer,
                    description=_(
                        "Sent, no answer: state unknown; look for it in the service's dashboard before "
                        "creating it again."
                    ),
                ),
            },
            400,
            403,
            503,
        ),
        examples=[
            OpenApiExample(
                "An order",
                value={
                    "name": "Hall rental",
                    "amount": "750.00",
                    "payment_methods": ["card"],
                    "customer_name": "Mona Ali",
                    "customer_email": "mona@example.com",
                    "customer_mobile": "+201001234567",
                },
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> Response:
        data = self.validated(DirectOrderSerializer)
        order = services.create_direct_order(user=request.user, **data)
        return sent(
            serializers.DirectOrderViewSerializer(order).data,
            unknown=order.state == DirectOrder.UNKNOWN,
            done=status.HTTP_201_CREATED,
        )


class DirectOrderDetailView(ContractView):
    """``GET direct-orders/<id>/`` (staff, view permission)."""

    paycollect_permissions = (permissions.CAN_VIEW_DIRECT_ORDER,)
    serializer_class = serializers.DirectOrderViewSerializer

    @extend_schema(
        operation_id="get_direct_order",
        responses=answers(
            {
                200: serializers.DirectOrderViewSerializer,
                404: OpenApiResponse(description=_("No such order.")),
            },
            403,
        ),
    )
    def get(self, request: Request, pk: int) -> Response:
        order = DirectOrder.objects.filter(pk=pk).first()
        if order is None:
            raise HttpNotFound()
        return Response(serializers.DirectOrderViewSerializer(order).data)


__all__ = [
    "CaptureView",
    "DirectOrderCreateView",
    "DirectOrderDetailView",
    "PaymentDetailView",
    "PaymentListView",
    "PromocodeView",
    "QuoteView",
    "RefundView",
    "SeriesCancelView",
]
