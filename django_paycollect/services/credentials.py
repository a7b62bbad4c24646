"""Trying the configured credentials against the service before going live (``paycollect_check_credentials``).

The spec has no operation that only checks credentials. Two reads need them and change nothing at the service:

- *Fetch transaction* (the API key, for one community): asked for the nil uuid, which no payment has, the
  service answers 404 once it accepted the key for this community; it answers 401 or 403 when it refuses the
  key, or the key is another community's (:class:`~django_paycollect.exceptions.CredentialsRefused`).
- *Dashboard statistics* (the API key and the basic credentials), tried only when basic credentials are
  configured and the key was accepted, so that a refusal there is the basic credentials'.

Both are recorded as every call is (``ApiCall``, secrets removed); nothing else is stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..conf import paycollect_settings
from ..exceptions import (
    CredentialsRefused,
    NotFound,
    PayCollectConfigurationError,
    ServiceLayerError,
    describe_error,
)
from ..models import Community
from .calls import recorded_read
from .config import community_config, get_client

#: The uuid asked for: no payment has it, so the service's 404 says it accepted the key.
NO_SUCH_TRANSACTION = "00000000-0000-0000-0000-000000000000"

ACCEPTED = "accepted"
REFUSED = "refused"
NOT_CONFIGURED = "not configured"
NOT_TRIED = "not tried"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class CredentialsCheck:
    """What the service said of one community's credentials: ``api_key`` and ``basic_credentials`` are
    :data:`ACCEPTED`, :data:`REFUSED`, :data:`NOT_CONFIGURED`, :data:`NOT_TRIED` or :data:`UNKNOWN` (no usable
    answer); ``problem`` says what to fix, or why nothing could be told (never a secret)."""

    community_id: str
    source: str
    api_key: str
    basic_credentials: str
    problem: str = ""

    @property
    def accepted(self) -> bool:
        return self.api_key == ACCEPTED and self.basic_credentials in (ACCEPTED, NOT_CONFIGURED)


def configured_communities() -> list[str]:
    """Every community this site has credentials for: ``PAYCOLLECT["COMMUNITY_ID"]`` (when set), then each
    Community row with an API key."""
    found: list[str] = []
    if paycollect_settings.COMMUNITY_ID:
        found.append(str(paycollect_settings.COMMUNITY_ID))
    rows = Community.objects.exclude(api_key_encrypted="").order_by("community_id")
    found += [cid for cid in rows.values_list("community_id", flat=True) if cid not in found]
    return found


def check_credentials(community_id: str | None = None) -> CredentialsCheck:
    """Try the credentials of ``community_id`` (None: the settings' community) with harmless reads.

    Raises :class:`PayCollectConfigurationError` when the site has no credentials for it at all (a missing
    setting, a key that cannot be decrypted)."""
    config = community_config(community_id)
    client = get_client(config)
    wanted = config.community_id

    try:
        recorded_read(
            "get_transaction",
            config,
            lambda: client.get_transaction(community_id=wanted, transaction_uuid=NO_SUCH_TRANSACTION),
        )
    except NotFound:
        pass  # the answer wanted: the key is this community's
    except CredentialsRefused as refused:
        return CredentialsCheck(wanted, config.source, REFUSED, NOT_TRIED, str(refused))
    except (ServiceLayerError, PayCollectConfigurationError) as error:
        return CredentialsCheck(wanted, config.source, UNKNOWN, NOT_TRIED, describe_error(error))
    if not config.basic_credentials:
        return CredentialsCheck(wanted, config.source, ACCEPTED, NOT_CONFIGURED)
    try:
        recorded_read(
            "dashboard_statistics", config, lambda: client.dashboard_statistics(community_id=wanted)
        )
    except CredentialsRefused as refused:
        return CredentialsCheck(wanted, config.source, ACCEPTED, REFUSED, str(refused))
    except (ServiceLayerError, PayCollectConfigurationError) as error:
        return CredentialsCheck(wanted, config.source, ACCEPTED, UNKNOWN, describe_error(error))
    return CredentialsCheck(wanted, config.source, ACCEPTED, ACCEPTED)
