"""The ``PAYCOLLECT`` setting, read lazily on every access so ``override_settings`` works.

Every key, its default and its meaning are listed in :data:`DEFAULTS` (and in the settings
reference of the docs). A key we do not know is an error, not a silent typo. This is the one reader
of the app's settings: every tunable is a key here, or an internal constant documented where it is
declared. A key whose value needs reading has one accessor here, which the system checks use too.
"""

from __future__ import annotations

import difflib
import ipaddress
import logging
import math
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

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
    # a person. 8: enough threads to cover a service answering in about 20 ms while each fetch takes some 2 ms
    # of the process's own CPU (latency over that time), which a 2-core worker sustains (docs/settings.md).
    "RECONCILE_CONCURRENCY": 8,
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
    # Prometheus metrics (reporting.metrics): None is on when prometheus-client is installed (the "metrics"
    # extra); True or False to say so.
    "METRICS": None,
    # Bearer tokens the metrics view accepts, a list so they can be rotated; empty: it answers 401 to all.
    "METRICS_TOKENS": [],
}


#: Keys read as seconds: zero or more (``SECONDS_FROM_ZERO``), the others above zero (and None: never, for
#: RECONCILE_GIVE_UP_AFTER alone); keys read as whole numbers, each with the least allowed; timeouts.
SECONDS_FROM_ZERO = ("CALLBACK_FETCH_INTERVAL", "CALLBACK_PUBLISH_LINGER", "RETURN_FETCH_INTERVAL")
SECONDS = (*SECONDS_FROM_ZERO, "CALLBACK_REQUEUE_AFTER", "RECONCILE_GIVE_UP_AFTER")
COUNTS = dict.fromkeys(("RECONCILE_CONCURRENCY", "MAX_CALLBACK_BYTES"), 1)
COUNTS |= dict.fromkeys(("CALLBACK_PUBLISH_BUFFER", "MAX_NETWORK_RETRIES"), 0)
TIMEOUTS = ("TIMEOUT", "RETURN_TIMEOUT")

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
logger = logging.getLogger("django_paycollect.settings")
#: What was logged as unreadable already: a broken setting is logged once per process, not per request.
_reported: set[str] = set()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def reading(name: str, value: Any) -> Any:
    """``value`` of the key ``name`` as the app uses it (seconds, a count, a timeout); ValueError: why not."""
    if name in TIMEOUTS:
        pair = list(value) if isinstance(value, (list, tuple)) else []
        if len(pair) == 2 and all(_number(part) and part > 0 for part in pair):
            return float(pair[0]), float(pair[1])
        raise ValueError("it must be (connect seconds, read seconds), both above zero")
    if name in COUNTS:
        if isinstance(value, int) and not isinstance(value, bool) and value >= COUNTS[name]:
            return value
        raise ValueError(f"it must be a whole number, at least {COUNTS[name]}")
    if value is None and name == "RECONCILE_GIVE_UP_AFTER":
        return None
    from_zero = name in SECONDS_FROM_ZERO
    if _number(value) and (value > 0 or (value == 0 and from_zero)):
        return float(value)
    raise ValueError(f"it must be a number of seconds, {'at least' if from_zero else 'more than'} 0")


@lru_cache(maxsize=16)
def read_networks(entries: tuple[str, ...]) -> tuple[tuple[str, IPNetwork | None], ...]:
    """Each entry of ``TRUSTED_PROXIES`` with its network, or None (logged, and check ``paycollect.E008``)."""
    read: list[tuple[str, IPNetwork | None]] = []
    for entry in entries:
        try:
            read.append((entry, ipaddress.ip_network(entry.strip(), strict=False)))
        except ValueError:
            _log_once(f"PAYCOLLECT['TRUSTED_PROXIES'] entry {entry!r} is not an address or network; ignored")
            read.append((entry, None))
    return tuple(read)


def _log_once(text: str) -> None:
    # Logged, not raised: a typo in a setting must not make us drop callbacks (the system checks refuse it).
    if text not in _reported:
        _reported.add(text)
        logger.error(text)


class PayCollectSettings:
    """Attribute access to ``settings.PAYCOLLECT`` merged over :data:`DEFAULTS`."""

    def _user(self) -> Mapping[str, Any]:
        value = getattr(django_settings, "PAYCOLLECT", {})
        if type(value) is not dict and not isinstance(value, Mapping):  # the usual dict, first: read often
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

    def texts(self, name: str) -> tuple[str, ...]:
        """A key of one text or a list of them, as texts (one text is one entry, never its letters)."""
        value = getattr(self, name)
        listed = isinstance(value, (list, tuple, set, frozenset))
        return tuple(map(str, value)) if listed else () if value is None else (str(value),)

    def seconds(self, name: str) -> float | None:
        """A key of :data:`SECONDS` (None: never, for ``RECONCILE_GIVE_UP_AFTER``)."""
        return cast("float | None", self._read(name))

    def count(self, name: str) -> int:
        """A key of :data:`COUNTS`."""
        return cast(int, self._read(name))

    def timeout(self, name: str) -> tuple[float, float]:
        """A key of :data:`TIMEOUTS`: (connect seconds, read seconds)."""
        return cast("tuple[float, float]", self._read(name))

    def trusted_proxies(self) -> tuple[IPNetwork, ...]:
        """``TRUSTED_PROXIES`` as networks, without the entries :func:`read_networks` cannot read."""
        read = read_networks(self.texts("TRUSTED_PROXIES"))
        return tuple(network for _, network in read if network is not None)

    def basic_credentials(self) -> str:
        """``BASIC_CREDENTIALS``, a (username, password) pair or ``username:password``, as the latter."""
        value = self.BASIC_CREDENTIALS or ""
        return ":".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)

    def problem(self, name: str) -> str | None:
        """Why the key's value cannot be read (:func:`reading`), or None: check ``paycollect.E010``."""
        try:
            reading(name, getattr(self, name))
        except ValueError as error:
            return str(error)
        return None

    def _read(self, name: str) -> Any:
        value = getattr(self, name)
        try:
            return reading(name, value)
        except ValueError as error:
            _log_once(f"PAYCOLLECT['{name}'] is {value!r}: {error}; the default is used")
            return reading(name, DEFAULTS[name])

    def require(self, name: str) -> Any:
        value = getattr(self, name)
        if value in (None, "", [], ()):
            raise PayCollectConfigurationError(lazy_text(REQUIRED, name=name))
        return value


#: A setting that must be set and is not (staff read it in the admin, in its language).
REQUIRED = _("settings.PAYCOLLECT['%(name)s'] is required")

paycollect_settings = PayCollectSettings()


def metrics_available() -> bool:
    """Whether prometheus-client (the ``metrics`` extra) can be imported."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


def metrics_enabled() -> bool:
    """Whether the app's Prometheus collector is on: ``METRICS`` True, or None (the default) with
    prometheus-client installed. True without it is check ``paycollect.E014``, and stays off."""
    value = paycollect_settings.METRICS
    return (value is True or value is None) and metrics_available()
