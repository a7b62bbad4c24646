"""Staff endpoints, each behind the model permission the admin asks for the same act: refunds, captures,
cancelling a recurring series, direct orders."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import status
from rest_framework.exceptions import NotFound as HttpNotFound
from rest_framework.request import Request
from rest_framework.response import Response

from ... import services
from ...models import DirectOrder, RecurringSeries, Refund, Transaction
from ...serializers import DirectOrderSerializer
from ...urls import service_urls
from .. import permissions, serializers
from ..schema import OpenApiExample, OpenApiResponse, answers, extend_schema
from .base import ContractView, owned_payment, sent


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
            (400, 403, 404, 409, 503),
        ),
        examples=[
            OpenApiExample(
                "Part of it", value={"amount": "25.00", "expected_refundable": "100.00"}, request_only=True
            ),
            # "All" is said by leaving the amount out, never by a null or a blank amount (a 400).
            OpenApiExample("All that is left", value={"expected_refundable": "100.00"}, request_only=True),
        ],
    )
    def post(self, request: Request, uuid: str) -> Response:
        data = self.validated(serializers.RefundRequestSerializer)
        txn = owned_payment(request, uuid, anyone=True)
        refund = services.refund(
            txn,
            data.get("amount", services.ALL_REFUNDABLE),  # left out: all that is still refundable
            user=request.user,
            expected_refundable=data.get("expected_refundable"),
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
            (400, 403, 404, 409, 503),
        ),
    )
    def post(self, request: Request, uuid: str) -> Response:
        txn = services.capture(owned_payment(request, uuid, anyone=True), user=request.user)
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
            (400, 403, 409, 503),
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
            (400, 403, 503),
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
        # Left out, the URLs are this site's return and callback views (as the admin's add form does).
        data.update({key: url for key, url in service_urls(request).items() if not data.get(key)})
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
            (403,),
        ),
    )
    def get(self, request: Request, pk: int) -> Response:
        order = DirectOrder.objects.filter(pk=pk).first()
        if order is None:
            raise HttpNotFound()
        return Response(serializers.DirectOrderViewSerializer(order).data)
