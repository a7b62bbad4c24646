"""The ``PAYCOLLECT`` setting, read lazily on every access so ``override_settings`` works.

Every key, its default and its meaning are listed in :data:`DEFAULTS` (and in the settings
reference of the docs). A key we do not know is an error, not a silent typo. This is the one reader
of the app's settings: every tunable is a key here, or an internal constant documented where it is
declared.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.conf import settings as django_settings
from django.utils.translation import gettext_lazy as _

from .exceptions import PayCollectConfigurationError, lazy_text

DEFAULTS: dict[str, Any] = {
    # Where the service is. The testing and live environments differ only here (and in the keys).
    "BASE_URL": None,
    # The community configured here works with no Community row at all.
    "COMMUNITY_ID": None,
    "API_KEY": None,
    # (username, password) or "username:password"; only dashboard statistics needs them.
    "BASIC_CREDENTIALS": None,
    # The API payment (variable_amount_id) used by start_payment when none is given.
    "VARIABLE_AMOUNT_ID": None,
    # (connect seconds, read seconds). Pay can take over ten seconds on the service.
    "TIMEOUT": (5.0, 30.0),
    "MAX_NETWORK_RETRIES": 2,
    # POST or GET: the spec lists both for promocode validation.
    "PROMOCODE_METHOD": "POST",
    # Secret path tokens of the callback URL, a list so they can be rotated (first is current).
    "CALLBACK_TOKENS": [],
    # True when the community's fees are added in the bill: prepare amount is called first.
    "FEES_IN_BILL": False,
    # Where the browser return sends the customer (a path, a URL or a URL name).
    "SUCCESS_URL": "/",
    "FAILURE_URL": "/",
    # (connect, read) seconds of the fetch made while the returning customer waits; no retries.
    "RETURN_TIMEOUT": (2.0, 3.0),
    # Seconds: browser returns and the status page fetch a transaction at most once per this long.
    "RETURN_FETCH_INTERVAL": 3.0,
    # Callbacks larger than this are refused with 413.
    "MAX_CALLBACK_BYTES": 65536,
    # Seconds: a callback received or queued but not verified this long after it was due is stuck, and
    # the sweep (beat, every minute) queues it again, whatever the broker's visibility timeout.
    "CALLBACK_REQUEUE_AFTER": 300,
    # Seconds: callbacks make at most one fetch of a transaction per this long, across processes.
    "CALLBACK_FETCH_INTERVAL": 5,
    # Callbacks a web process holds, committed and waiting for its publisher thread to hand them to the
    # worker (the request never waits for the broker); when it is full, a callback is published in its
    # request. 0: every callback is published in its request.
    "CALLBACK_PUBLISH_BUFFER": 10_000,
    # Seconds: a web process publishes at most once per this long, so a burst goes in few messages; a
    # callback after a quiet spell goes at once.
    "CALLBACK_PUBLISH_LINGER": 0.05,
    # Proxies (addresses or networks) whose X-Forwarded-For is believed when storing a client IP.
    "TRUSTED_PROXIES": (),
    # An optional shared secret the service echoes in the callback body: the field's name and its values.
    "CALLBACK_SECRET_FIELD": "",
    "CALLBACK_SECRET": [],
    # Keys that encrypt stored secrets: the first encrypts, all decrypt. Empty: derived from SECRET_KEY.
    "ENCRYPTION_KEYS": [],
    # Store request bodies in ApiCall rows (secrets never, and names, e-mail addresses and phones masked).
    "STORE_REQUEST_BODIES": True,
    # Reconciliation: fetches of open transactions at once (threads; 1 on SQLite: database connections),
    # and the age (seconds; None: never) past which an open transaction is no longer fetched but listed for
    # a person.
    "RECONCILE_CONCURRENCY": 4,
    "RECONCILE_GIVE_UP_AFTER": 7 * 86400,
    "DEFAULT_CURRENCY": "EGP",
    "DEFAULT_PAY_USING": "card",
    # The largest amount a payment, direct order, refund, fee computation or promocode check may name, in any
    # currency: a few digits too many (a typo, a unit mistake) are refused before anything is stored or sent.
    "MAX_AMOUNT": Decimal("1000000.00"),
    # The REST API (django_paycollect.api): a dotted path to the function that turns a payable reference
    # sent by a device into what it costs (see the API docs); required when the API is mounted.
    "PAYABLE_RESOLVER": None,
    # Requests per user (or per address, anonymous) to start payments and to ask for quotes or promocodes,
    # as DRF rates ("10/minute"); None for a scope lifts its limit.
    "API_THROTTLE_RATES": {"paycollect_payments": "10/minute", "paycollect_quotes": "60/minute"},
    # Payments per page of the API's lists (?page_size= may ask for fewer, or up to 100).
    "API_PAGE_SIZE": 20,
}


class PayCollectSettings:
    """Attribute access to ``settings.PAYCOLLECT`` merged over :data:`DEFAULTS`."""

    def _user(self) -> Mapping[str, Any]:
        value = getattr(django_settings, "PAYCOLLECT", {})
        if not isinstance(value, Mapping):
            raise PayCollectConfigurationError("settings.PAYCOLLECT must be a dict")
        return value

    def unknown_keys(self) -> list[str]:
        return sorted(set(self._user()) - set(DEFAULTS))

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            close = difflib.get_close_matches(name, DEFAULTS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise AttributeError(f"PAYCOLLECT has no key {name}{hint}")
        return self._user().get(name, DEFAULTS[name])

    def or_default(self, name: str) -> Any:
        """The key's value, or its default when it is set to None: for values that must never be missing
        where a request is being answered (a callback's size limit, a return's timeout)."""
        value = getattr(self, name)
        return DEFAULTS[name] if value is None else value

    def require(self, name: str) -> Any:
        value = getattr(self, name)
        if value in (None, "", [], ()):
            raise PayCollectConfigurationError(lazy_text(REQUIRED, name=name))
        return value


#: A setting that must be set and is not (staff read it in the admin, in its language).
REQUIRED = _("settings.PAYCOLLECT['%(name)s'] is required")

paycollect_settings = PayCollectSettings()
