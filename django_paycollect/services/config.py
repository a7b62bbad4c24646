"""Which community, with which credentials, and a pooled client for it."""

from __future__ import annotations

import contextvars
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from ..client import PayCollectClient
from ..conf import REQUIRED, paycollect_settings
from ..crypto import DecryptionError
from ..exceptions import PayCollectConfigurationError, lazy_text
from ..models import Community
from .common import unique


@dataclass(frozen=True)
class CommunityConfig:
    """Credentials of one community: from a Community row, or from PAYCOLLECT for the default one."""

    community_id: str
    api_key: str
    basic_credentials: str
    variable_amount_id: int | None
    #: Where the credentials come from, for what a refusal says to fix: "settings" or "community" (a row).
    source: str = "settings"

    def __repr__(self) -> str:  # never show the secrets
        return f"CommunityConfig({self.community_id!r})"


_community_cache: contextvars.ContextVar[dict[str, CommunityConfig] | None] = contextvars.ContextVar(
    "paycollect_community_cache", default=None
)


@contextmanager
def cached_communities() -> Iterator[None]:
    """Within the block, :func:`community_config` reads each community's row once (a reconciliation run
    fetches thousands of one community's transactions). Outside it, every call reads the row, so a key
    changed in the admin is used at once."""
    if _community_cache.get() is not None:
        yield
        return
    token = _community_cache.set({})
    try:
        yield
    finally:
        _community_cache.reset(token)


def community_config(community_id: str | None = None) -> CommunityConfig:
    default_id = paycollect_settings.COMMUNITY_ID
    wanted = community_id or default_id
    if not wanted:
        raise PayCollectConfigurationError(lazy_text(REQUIRED, name="COMMUNITY_ID"))
    cache = _community_cache.get()
    if cache is None:
        return _community_config(wanted, default_id)
    if wanted not in cache:
        cache[wanted] = _community_config(wanted, default_id)
    return cache[wanted]


def _community_config(wanted: str, default_id: str | None) -> CommunityConfig:
    # The credentials of the database that is written: a community just saved is there, not on a replica.
    row = unique(Community, community_id=wanted)
    if row is not None and row.api_key_encrypted:
        try:
            return CommunityConfig(
                wanted, row.api_key, row.basic_credentials, row.variable_amount_id, source="community"
            )
        except DecryptionError:
            raise PayCollectConfigurationError(
                _("The stored API key cannot be decrypted (see system check paycollect.E005).")
            ) from None
    if wanted == default_id:
        return CommunityConfig(
            wanted,
            paycollect_settings.require("API_KEY"),
            paycollect_settings.basic_credentials(),
            paycollect_settings.VARIABLE_AMOUNT_ID or (row.variable_amount_id if row else None),
        )
    unknown = _(
        "community %(community)s has no Community row with an API key and is not PAYCOLLECT['COMMUNITY_ID']"
    )
    raise PayCollectConfigurationError(lazy_text(unknown, community=wanted))


_clients = threading.local()


def get_client(
    config: CommunityConfig | None,
    *,
    timeout: tuple[float, float] | None = None,
    max_network_retries: int | None = None,
) -> PayCollectClient:
    """A client for the community, one per thread and configuration so connections are pooled.

    Without a community (``None``: creating a community needs no key), a client without credentials.
    """
    timeout = timeout or paycollect_settings.timeout("TIMEOUT")
    if max_network_retries is None:
        max_network_retries = paycollect_settings.count("MAX_NETWORK_RETRIES")
    api_key = config.api_key if config else ""
    basic_credentials = config.basic_credentials if config else ""
    base_url, method = paycollect_settings.require("BASE_URL"), paycollect_settings.PROMOCODE_METHOD
    read = (base_url, api_key, basic_credentials, timeout, max_network_retries, method)
    fingerprint = hashlib.sha256(repr(read).encode()).hexdigest()
    cache: dict[str, PayCollectClient] = getattr(_clients, "cache", None) or {}
    _clients.cache = cache
    if (client := cache.get(fingerprint)) is not None:
        return client
    if len(cache) >= 32:
        # Settings changed many times (tests, key rotation): drop the old pools.
        for stale in cache.values():
            stale.close()
        cache.clear()
    client = cache[fingerprint] = PayCollectClient(
        base_url,
        api_key=api_key or None,
        basic_credentials=basic_credentials or None,
        timeout=timeout,
        max_network_retries=max_network_retries,
        promocode_method=method,
    )
    return client
