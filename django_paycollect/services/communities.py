"""Communities and the dashboard's statistics."""

from __future__ import annotations

from typing import Any

from ..conf import paycollect_settings
from ..models import ApiCall, StatisticsSnapshot
from ..models.fields import json_safe
from .calls import guarded_write, recorded_read
from .common import primary, require_autocommit
from .config import community_config, get_client


def create_community(*, logo: Any, name: str, user: Any = None, **fields: Any) -> ApiCall:
    """Create a community on the service (multipart, with its png or jpg logo). Never resent.

    The service answers with an empty ``data``: its id and keys come from its dashboard, and are
    entered into a Community row afterwards. Returns the call's ApiCall row (there is no other):
    ``outcome_unknown`` set when it was sent and no usable answer came back (reconciliation reports it
    for a person to look up). Refused, :class:`PaymentRefused`; never sent, :class:`ServiceUnavailable`.
    """
    require_autocommit("create_community")
    return guarded_write(
        "create_community",
        config=lambda _: community_config(None) if paycollect_settings.COMMUNITY_ID else None,
        claim=lambda: None,  # nothing stored before: the ApiCall row is the record
        send=lambda client, _: client.create_community(name=name, logo=logo, **fields),
        links=lambda _: {},
        record=lambda _, sent: sent.call,
    )


def fetch_statistics(community_id: str | None = None) -> StatisticsSnapshot:
    """Read the community's dashboard statistics and keep them as a snapshot."""
    config = community_config(community_id)
    client = get_client(config)
    envelope, _ = recorded_read(
        "dashboard_statistics", config, lambda: client.dashboard_statistics(community_id=config.community_id)
    )
    stats = envelope.result
    return primary(StatisticsSnapshot).create(
        community_id=config.community_id,
        balance=stats.balance,
        total_settled=stats.total_settled,
        total_number_of_transactions=stats.total_number_of_transactions,
        total_collected_transactions=stats.total_collected_transactions,
        weekly_collected_transactions=stats.weekly_collected_transactions,
        raw=json_safe(envelope.data),
    )
