"""What every view of the API shares: the error contract's answers, the app's permissions and throttles,
validation into field errors by path, the caller's payments, and the answer of a state-changing call."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext_lazy as _
from rest_framework import generics, status
from rest_framework.exceptions import NotFound as HttpNotFound
from rest_framework.exceptions import ParseError
from rest_framework.metadata import SimpleMetadata
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle

from ... import services
from ...client import PromocodeValidated
from ...conf import paycollect_settings
from ...exceptions import NotFound, PaymentRefused, lazy_text
from ...ids import canonical_uuid, looks_like_uuid
from ...models import Transaction
from ...problem_messages import PROMOCODE_UNKNOWN
from .. import permissions
from ..errors import contract_response, field_errors, invalid
from ..payables import Payable

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


#: What a query parameter holding a NUL character is told (no text of ours may hold one).
NUL_REFUSED = _("Must not contain a NUL character.")


class ContractMetadata(SimpleMetadata):
    """What OPTIONS answers. A view that reads no body (a capture, a cancellation) has no serializer to
    describe: DRF's metadata would fail on it (a 500); it lists no fields instead."""

    def determine_actions(self, request: Request, view: Any) -> dict[str, Any]:
        if getattr(view, "serializer_class", None) is None:
            return {}
        actions: dict[str, Any] = super().determine_actions(request, view)
        return actions


class ExactJSONParser(JSONParser):
    """JSON whose numbers with a fraction or an exponent are kept as their text, never made floats: ``10.10``
    reads as ``"10.10"``, so an amount sent as a JSON number is read by the same grammar, and to the same
    value, as one sent as a string (docs/money.md). JSON is UTF-8 (RFC 8259); NaN and Infinity are refused."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return json.loads(stream.read(), parse_float=str, parse_constant=_not_json)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class ContractView(generics.GenericAPIView):  # type: ignore[type-arg]
    """Answers the service layer's errors (see :mod:`..errors`); the app's throttles join the project's; JSON
    is read exactly (:class:`ExactJSONParser`), the project's other parsers as they are."""

    metadata_class = ContractMetadata
    paycollect_permissions: Sequence[type[BasePermission]] = (permissions.IsCustomer,)
    paycollect_throttles: Sequence[type[BaseThrottle]] = ()

    def get_permissions(self) -> list[BasePermission]:
        return [permission() for permission in self.paycollect_permissions]

    def get_parsers(self) -> list[BaseParser]:
        others = [parser for parser in super().get_parsers() if parser.media_type != JSONParser.media_type]
        return [ExactJSONParser(), *others]

    def get_throttles(self) -> list[BaseThrottle]:
        return [*super().get_throttles(), *(throttle() for throttle in self.paycollect_throttles)]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # PostgreSQL refuses a text holding NUL (a 500 when a filter reads it): refused here, naming the
        # parameter, for every view. Body values are read by serializers, whose text fields refuse it.
        refused = {
            name: [str(NUL_REFUSED)]
            for name, values in request.query_params.lists()
            if "\x00" in name or any("\x00" in value for value in values)
        }
        if refused:
            raise Invalid(refused)

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
    except NotFound as unknown:  # the service does not know the code at all
        raise PaymentRefused({"promocode": [PROMOCODE_UNKNOWN]}) from unknown
    except PaymentRefused as refused:
        errors: dict[str, list[str]] = {}
        for path, messages in field_errors(refused).items():
            errors.setdefault(phone_field if path == "phone_number" else "promocode", []).extend(messages)
        raise PaymentRefused(errors) from refused
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
    """Pages by number. A page that is not there (``?page=0``, ``?page=abc``, past the last) is a 400 naming
    ``page``, as the schema documents a bad query parameter: DRF's 404 would say the list is not there."""

    page_size_query_param = "page_size"
    max_page_size = 100
    page_query_description = _(  # type: ignore[assignment]  # DRF's own are lazy too
        "A page number, from 1 (or last). A page that is not there is a 400 naming page."
    )
    page_size_query_description = _(  # type: ignore[assignment]
        "Results per page, at most 100 (more gives 100; anything but a whole number from 1 gives the "
        "default)."
    )

    def get_page_size(self, request: Request) -> int | None:
        self.page_size = int(paycollect_settings.API_PAGE_SIZE)
        return super().get_page_size(request)

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        try:
            return super().paginate_queryset(queryset, request, view)
        except HttpNotFound:
            asked = request.query_params.get(self.page_query_param, "")
            try:
                number = int(asked)  # as Django's paginator reads it
            except ValueError:
                number = 0
            problem: StrOrPromise
            if number < 1:
                problem = _("Must be a page number: a whole number from 1, or last.")
            else:
                pages = self.django_paginator_class(queryset, self.get_page_size(request) or 1).num_pages
                problem = lazy_text(
                    _("There is no page %(page)d; the last is page %(last)d."), page=number, last=pages
                )
            raise Invalid({self.page_query_param: [problem]}) from None
