"""The payable hook: what a reference sent by a device costs, decided on the server.

``PAYCOLLECT["PAYABLE_RESOLVER"]`` is the dotted path of a function ``resolve(request, reference)``
returning a :class:`Payable` (or None for a reference it does not know), or raising :class:`PayableRefused`
with a reason the customer may read. The device only ever names what it wants to buy; the amount, the
currency and the object paid for come from here, so a tampered request cannot change a price.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Model
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _

from ..conf import paycollect_settings
from ..exceptions import PayCollectConfigurationError


@dataclass(frozen=True)
class Payable:
    """What the resolver answers for a reference.

    ``amount`` is a ``Decimal`` (never a float). ``merchant_reference`` is what the transaction is stored
    under (default: the reference asked for); it makes starting idempotent, so make it name one purchase of
    one customer (an order's number, ``f"membership-{pk}"``), never a product every customer buys.
    ``billing_data`` holds defaults for the customer's ``name``, ``email`` and ``phone_number``, completed by
    the request's.
    """

    amount: Decimal
    currency: str | None = None
    merchant_object: Model | None = None
    merchant_reference: str = ""
    billing_data: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    pay_using: str | None = None
    recurring: Mapping[str, Any] | None = None


class PayableRefused(Exception):
    """Raised by a resolver that knows the reference but will not sell it now (sold out, not this
    customer's): the message is shown to the customer as the reference's error."""

    def __init__(self, message: Any = "") -> None:
        super().__init__(message or _("This cannot be paid now."))
        self.message = message or _("This cannot be paid now.")


Resolver = Callable[[Any, str], Payable | None]


def resolver() -> Resolver:
    """The configured resolver; :class:`PayCollectConfigurationError` when it is missing or not callable."""
    path = paycollect_settings.PAYABLE_RESOLVER
    if not path:
        raise PayCollectConfigurationError(
            "settings.PAYCOLLECT['PAYABLE_RESOLVER'] is required by the REST API."
        )
    if callable(path):
        return path  # type: ignore[no-any-return]
    try:
        found = import_string(str(path))
    except ImportError as error:
        raise PayCollectConfigurationError(
            f"settings.PAYCOLLECT['PAYABLE_RESOLVER'] = {path!r} cannot be imported: {error}"
        ) from error
    if not callable(found):
        raise PayCollectConfigurationError(
            f"settings.PAYCOLLECT['PAYABLE_RESOLVER'] = {path!r} is not callable."
        )
    return found  # type: ignore[no-any-return]


def resolve(request: Any, reference: str) -> Payable:
    """The payable of ``reference`` for this request. Raises :class:`PayableRefused` when the resolver does
    not know it or refuses it, :class:`PayCollectConfigurationError` when it answers something else."""
    found = resolver()(request, reference)
    if found is None:
        raise PayableRefused(_("There is nothing to pay under this reference."))
    if not isinstance(found, Payable):
        raise PayCollectConfigurationError(
            f"PAYCOLLECT['PAYABLE_RESOLVER'] returned {type(found).__name__}, not a Payable or None."
        )
    if not isinstance(found.amount, Decimal):
        # A float price would round differently on the way to piasters: a bug of the resolver, not input.
        raise PayCollectConfigurationError(
            f"PAYCOLLECT['PAYABLE_RESOLVER'] returned an amount of type {type(found.amount).__name__}, "
            "not a Decimal."
        )
    return found
