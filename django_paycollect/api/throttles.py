"""DRF throttles of the API's costly calls, their rates read from ``PAYCOLLECT["API_THROTTLE_RATES"]``.

Starting payments and asking for quotes or promocodes each call the service: a throttle keeps one customer
(or one address, signed out) from turning the site into a load generator against it. A rate of None lifts a
scope's limit; a scope missing from the setting falls back to ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``.
The counts live in Django's default cache, as DRF's do: use a shared cache (Redis, Memcached) when the site
runs several processes.
"""

from __future__ import annotations

from typing import Any

from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle

from ..conf import DEFAULTS, paycollect_settings


class PayCollectRateThrottle(UserRateThrottle):
    """A per-user (or per-address) rate, read on every request so settings changes apply at once."""

    def get_rate(self) -> str | None:
        rates: dict[str, Any] = {
            **api_settings.DEFAULT_THROTTLE_RATES,
            **DEFAULTS["API_THROTTLE_RATES"],
            **(paycollect_settings.API_THROTTLE_RATES or {}),
        }
        rate = rates.get(str(self.scope))
        return None if rate is None else str(rate)


class PaymentsThrottle(PayCollectRateThrottle):
    scope = "paycollect_payments"


class QuotesThrottle(PayCollectRateThrottle):
    scope = "paycollect_quotes"
