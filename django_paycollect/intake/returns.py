"""Browser returns: what the customer's browser brings back after paying, never trusted.

Its uuid (or the service's numeric id of a transaction we stored) only says which transaction to look
at; the status comes from the service, fetched while the customer waits (short timeout, no retries, at
most once per ``RETURN_FETCH_INTERVAL`` per transaction), and only a public status is ever shown:
PENDING, SUCCESSFUL or FAILED.
"""

from __future__ import annotations

import logging

from .. import services
from ..conf import paycollect_settings
from ..exceptions import NotFound
from ..ids import canonical_uuid
from ..models import ReceivedCallback, Transaction
from ..services.callback_ledger import community_of
from ..services.common import primary, unique
from ..services.upserts import take_fetch_turn

logger = logging.getLogger("django_paycollect.returns")

PUBLIC_PENDING, PUBLIC_SUCCESSFUL, PUBLIC_FAILED = "PENDING", "SUCCESSFUL", "FAILED"


def public_status(txn: Transaction | None) -> str:
    """The only thing a return shows: SUCCESSFUL or FAILED as the service said them, else PENDING.

    REJECTED and ABANDONED are our own words for a payment that never got a uuid (refused at the start,
    or a start with an unknown outcome): the service said nothing about a charge, so they read PENDING.
    """
    if txn is None:
        return PUBLIC_PENDING
    if txn.status == Transaction.SUCCESSFUL:
        return PUBLIC_SUCCESSFUL
    return PUBLIC_FAILED if txn.status == Transaction.FAILED else PUBLIC_PENDING


def verified_status(uuid: str) -> str:
    """The status of transaction ``uuid`` as the service says, for a customer's browser.

    * A transaction of ours still open, or FAILED (it may become SUCCESSFUL on a second try on the same
      payment page), is fetched; when the service is slow or down, it stays as stored.
    * A uuid we do not store is fetched only when a callback named it (a direct order's payment, a
      renewal); otherwise it is PENDING, as an open transaction would be: the service is not asked about
      uuids we never issued nor heard of.
    * A uuid the service does not know stays PENDING too: that is no evidence that nothing was charged.
    """
    uuid = canonical_uuid(uuid)
    txn = unique(Transaction, uuid=uuid)
    if txn is not None and txn.status not in (*Transaction.OPEN_STATUSES, Transaction.FAILED):
        return public_status(txn)  # SUCCESSFUL never moves again (nor does a payment without a uuid)
    heard_of = None
    if txn is None:
        heard_of = (
            primary(ReceivedCallback)
            .filter(transaction_uuid=uuid)
            .exclude(state=ReceivedCallback.INVALID)
            .only("merchant_id")
            .first()
        )
        if heard_of is None:
            return PUBLIC_PENDING
    # At most one fetch per transaction per interval from returns and the status endpoint, across processes,
    # so that polling pages (or someone replaying a uuid) cannot make us hammer the service.
    interval = paycollect_settings.seconds("RETURN_FETCH_INTERVAL") or 0.0
    if interval > 0 and take_fetch_turn(uuid, interval, by="return") is None:
        return public_status(txn)
    try:
        txn = services.sync_transaction(
            txn,
            uuid=uuid,
            community_id=community_of(heard_of.merchant_id) if heard_of is not None else None,
            source="return",
            timeout=paycollect_settings.timeout("RETURN_TIMEOUT"),
            max_network_retries=0,  # the customer is waiting: the page polls instead of us retrying
        )
    except NotFound:
        # The service does not know it (yet, or under this community): that says nothing about a
        # charge, so a transaction of ours stays as it is and a uuid we only heard of stays PENDING.
        pass
    except Exception as error:  # the customer sees the waiting page, never an error
        logger.warning("return for %s: the service could not be read (%s)", uuid, type(error).__name__)
    return public_status(txn)


def uuid_for_service_id(service_id: int) -> str | None:
    """The uuid of the one transaction of ours whose service id (Pay's ``transaction_id``, a fetched ``id``)
    is ``service_id``; None when there is none, or more than one (ids of several environments). Only a
    pointer into what we stored: the status still comes from a fetch."""
    found = primary(Transaction).filter(service_id=service_id, uuid__isnull=False)
    uuids = list(found.values_list("uuid", flat=True)[:2])
    return uuids[0] if len(uuids) == 1 else None
