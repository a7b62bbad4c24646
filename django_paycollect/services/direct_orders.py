"""Direct orders: created once, through the guarded write."""

from __future__ import annotations

from typing import Any

from .. import signals
from ..client import Envelope, PayCollectClient
from ..client.types import DirectOrderCreated
from ..models import DirectOrder
from ..models.fields import json_safe
from ..serializers import DirectOrderSerializer
from .calls import Sent, guarded_write
from .common import lock_row, primary, recorded_user, require_autocommit, send_after_commit, validated
from .config import community_config


def create_direct_order(*, user: Any = None, **fields: Any) -> DirectOrder:
    """Create a direct order on the service; returns it with ``payment_link`` (or flagged unknown).

    ``fields`` are the spec's Direct order fields (see ``DirectOrderSerializer``); ``recurring`` is
    ``{"expiry_date": ..., "minimum_days_between_payments": ...}``. Returns the order, CREATED or
    UNKNOWN; refused, :class:`PaymentRefused` (the REJECTED order as ``record`` when the service refused
    it); never sent, :class:`ServiceUnavailable`.
    """
    require_autocommit("create_direct_order")
    # None, these keywords' default, leaves them out; the serializer reads an amount given (null refused).
    optional = ("discount_amount", "vat_percentage")
    fields = {name: value for name, value in fields.items() if not (name in optional and value is None)}
    data = validated(DirectOrderSerializer, fields)
    config = community_config(data.pop("community_id"))
    terms = data.pop("recurring")
    order = primary(DirectOrder).create(
        community_id=config.community_id,
        **{name: data[name] for name in DirectOrder.SPEC_FIELDS},
        discount_currency=data["currency"] if data["discount_amount"] is not None else "",
        custom_fields=json_safe(data["custom_fields"]),
        allow_recurring_payments=bool(terms),
        expiry_date=terms["expiry_date"] if terms else None,
        minimum_days_between_payments=terms["minimum_days_between_payments"] if terms else None,
        merchant_reference=data["merchant_reference"],
        created_by=recorded_user(user),
    )

    def send(client: PayCollectClient, order: DirectOrder) -> Envelope[DirectOrderCreated]:
        spec = {name: getattr(order, name) for name in DirectOrder.SPEC_FIELDS}
        spec.update({name: spec[name] or None for name in DirectOrder.SENT_WHEN_SET})
        spec["callback_url"] = data["callback_url"] or None  # the row keeps it without its token
        return client.create_direct_order(
            community_id=config.community_id,
            allow_recurring_payments=True if terms else None,
            expiry_date=order.expiry_date,
            minimum_days_between_payments=order.minimum_days_between_payments,
            custom_fields=data["custom_fields"] or None,
            **spec,
        )

    def record(order: DirectOrder, sent: Sent[DirectOrderCreated]) -> DirectOrder:
        order = lock_row(DirectOrder, order.pk)
        if sent.envelope is not None:
            created = sent.envelope.result
            order.state = DirectOrder.CREATED
            order.payment_id = created.payment_id or ""
            order.payment_link = created.payment_link or ""
            order.service_message = created.message or ""
            order.raw = json_safe(sent.envelope.data)
            send_after_commit(signals.direct_order_created, sender=DirectOrder, direct_order=order)
        else:
            order.state = DirectOrder.UNKNOWN if sent.unknown else DirectOrder.REJECTED
            order.service_message = sent.error_text
        order.save()
        return order

    return guarded_write(
        "create_direct_order",
        config=lambda _: config,
        claim=lambda: order,  # created above, NEW until the service answers
        send=send,
        links=lambda order: {"direct_order": order},
        record=record,
    )
