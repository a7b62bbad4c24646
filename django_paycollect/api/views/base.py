"""What every view of the API shares: the error contract's answers, the app's permissions and throttles,
validation into field errors by path, the caller's payments, and the answer of a state-changing call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import generics, status
from rest_framework.exceptions import NotFound as HttpNotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle

from ... import services
from ...client import PromocodeValidated
from ...conf import paycollect_settings
from ...exceptions import PaymentRefused
from ...ids import canonical_uuid, looks_like_uuid
from ...models import Transaction
from .. import permissions
from ..errors import contract_response, field_errors, invalid
from ..payables import Payable


class ContractView(generics.GenericAPIView):  # type: ignore[type-arg]
    """Answers the service layer's errors (see :mod:`..errors`); the app's throttles join the project's."""

    paycollect_permissions: Sequence[type[BasePermission]] = (permissions.IsCustomer,)
    paycollect_throttles: Sequence[type[BaseThrottle]] = ()

    def get_permissions(self) -> list[BasePermission]:
        return [permission() for permission in self.paycollect_permissions]

    def get_throttles(self) -> list[BaseThrottle]:
        return [*super().get_throttles(), *(throttle() for throttle in self.paycollect_throttles)]

    def handle_exception(self, exc: Exception) -> Response:
        answer = invalid(exc.detail) if isinstance(exc, Invalid) else contract_response(exc)
        return answer if answer is not None else super().handle_exception(exc)

    def validated(self, serializer_class: type[Any]) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.data)
        if not serializer.is_valid():
            raise Invalid(serializer.errors)
        return dict(serializer.validated_data)


class Invalid(Exception):
    """Bad input found by a view: answered as field errors by dotted path."""

    def __init__(self, detail: Any) -> None:
        super().__init__("invalid")
        self.detail = detail


def billing_for(request: Request, payable: Payable, given: dict[str, str] | None) -> dict[str, str]:
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


def checked_promocode(
    payable: Payable, code: str, phone_number: str, *, phone_field: str
) -> PromocodeValidated:
    """A promocode the customer typed, checked by the service for this payable's amount. A refusal of the
    phone (none sent and none known, or malformed) is the error of ``phone_field``, the request's field
    that carries it; every other refusal (unknown, expired, not for this amount or currency) is the
    ``promocode`` field's."""
    try:
        found = services.validate_promocode(
            code, amount=payable.amount, phone_number=phone_number, currency=payable.currency
        )
    except PaymentRefused as refused:  # NotFound included: the service does not know the code
        errors: dict[str, list[str]] = {}
        for path, messages in field_errors(refused).items():
            errors.setdefault(phone_field if path == "phone_number" else "promocode", []).extend(messages)
        raise PaymentRefused(errors) from refused
    if found.promocode_id is None:
        raise PaymentRefused({"promocode": [_("This promocode cannot be used.")]})
    return found


def owned_payment(request: Request, uuid: str, *, anyone: bool = False) -> Transaction:
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
