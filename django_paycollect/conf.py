"""The one reader of the ``PAYCOLLECT`` setting, read lazily on every access so ``override_settings`` works.

Every key is in :data:`DEFAULTS` (and docs/settings.md); a key we do not know is an error, not a silent typo.
A key whose value needs reading has one accessor here, which the system checks use too.
"""

from __future__ import annotations

import difflib
import ipaddress
import logging
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

from django.conf import settings as django_settings
from django.utils.translation import gettext_lazy as _

from .client.types import CURRENCIES
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
    # Seconds: a callback not verified this long after it was due is stuck, and the sweep queues it again.
    "CALLBACK_REQUEUE_AFTER": 300,
    # Seconds: callbacks make at most one fetch of a transaction per this long, across processes.
    "CALLBACK_FETCH_INTERVAL": 5,
    # Callbacks a web process holds for its publisher thread (full, or 0: published in their request).
    "CALLBACK_PUBLISH_BUFFER": 10_000,
    # Seconds: a web process publishes at most once per this long, so a burst goes in few messages.
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
    # Reconciliation: fetches of open transactions at once (threads; 1 on SQLite; why 8: docs/settings.md),
    # and the age (seconds; None: never) past which an open transaction is only listed for a person.
    "RECONCILE_CONCURRENCY": 8,
    "RECONCILE_GIVE_UP_AFTER": 7 * 86400,
    "DEFAULT_CURRENCY": "EGP",
    "DEFAULT_PAY_USING": "card",
    # The largest amount anything may name, in any currency: a few digits too many are refused before use.
    "MAX_AMOUNT": Decimal("1000000.00"),
    # The dotted path of the function that prices a payable reference; required when the REST API is mounted.
    "PAYABLE_RESOLVER": None,
    # The REST API's DRF rates ("10/minute", per user or address; None: no limit) of payments and of quotes.
    "API_THROTTLE_RATES": {"paycollect_payments": "10/minute", "paycollect_quotes": "60/minute"},
    # Payments per page of the API's lists (?page_size= may ask for fewer, or up to 100).
    "API_PAGE_SIZE": 20,
    # Prometheus metrics: True, False, or None: on when prometheus-client (the "metrics" extra) is installed.
    "METRICS": None,
    # Bearer tokens the metrics view accepts, a list so they can be rotated; empty: it answers 401 to all.
    "METRICS_TOKENS": [],
    # What runs the background jobs: "celery", or "django" (Django's task framework, TASKS["default"]).
    "TASK_RUNNER": "celery",
    # With "django": True to let the immediate backend run the jobs in their requests outside DEBUG (E023).
    "ALLOW_IMMEDIATE_TASKS": False,
}


#: Keys read as seconds: zero or more (``SECONDS_FROM_ZERO``), the others above zero (and None: never, for
#: RECONCILE_GIVE_UP_AFTER alone); keys read as whole numbers, each with the least allowed; timeouts.
SECONDS_FROM_ZERO = ("CALLBACK_FETCH_INTERVAL", "CALLBACK_PUBLISH_LINGER", "RETURN_FETCH_INTERVAL")
SECONDS = (*SECONDS_FROM_ZERO, "CALLBACK_REQUEUE_AFTER", "RECONCILE_GIVE_UP_AFTER")
COUNTS = dict.fromkeys(("RECONCILE_CONCURRENCY", "MAX_CALLBACK_BYTES", "API_PAGE_SIZE"), 1)
COUNTS |= dict.fromkeys(("CALLBACK_PUBLISH_BUFFER", "MAX_NETWORK_RETRIES"), 0)
TIMEOUTS = ("TIMEOUT", "RETURN_TIMEOUT")
#: Keys of one text or a list of them (one text, or bytes, is one entry, never its letters); of these,
#: ``ENCRYPTION_KEYS`` keeps bytes as bytes. A list key whose order means something takes no set.
LISTS = ("CALLBACK_TOKENS", "TRUSTED_PROXIES", "CALLBACK_SECRET", "ENCRYPTION_KEYS", "METRICS_TOKENS")
UNORDERED = ("TRUSTED_PROXIES", "CALLBACK_SECRET", "METRICS_TOKENS")
#: Keys of one text (None allowed where None is the default), True or False, and the rest by their kind.
TEXTS: tuple[str, ...] = ("BASE_URL", "COMMUNITY_ID", "API_KEY", "SUCCESS_URL", "FAILURE_URL")
TEXTS += ("CALLBACK_SECRET_FIELD", "DEFAULT_PAY_USING")
FLAGS = ("FEES_IN_BILL", "STORE_REQUEST_BODIES", "METRICS", "ALLOW_IMMEDIATE_TASKS")
#: Whose values are never shown (in a check's message, in a log).
SECRET_KEYS: tuple[str, ...] = ("API_KEY", "BASIC_CREDENTIALS", "CALLBACK_TOKENS", "CALLBACK_SECRET")
SECRET_KEYS += ("ENCRYPTION_KEYS", "METRICS_TOKENS")
#: Keys with checks of their own (``paycollect.E011``, ``E013``, ``E015``); every other key that cannot be
#: read is ``paycollect.E010``.
OWN_CHECKS = ("MAX_AMOUNT", "METRICS", "METRICS_TOKENS")
#: Keys of one of a few texts, in any case: what may run the background jobs, the methods, the currencies.
TASK_RUNNERS = ("celery", "django")
CHOICES = {"TASK_RUNNER": TASK_RUNNERS, "PROMOCODE_METHOD": ("POST", "GET"), "DEFAULT_CURRENCY": CURRENCIES}
#: How True and False may be spelled in a text (as the environment gives them).
FLAG_TEXTS = dict.fromkeys(("true", "yes", "on", "1"), True)
FLAG_TEXTS |= dict.fromkeys(("false", "no", "off", "0"), False)
_WHOLE = re.compile(r"[0-9]+")
_RATE = re.compile(r"([0-9]+)/([a-z]+)")

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
logger = logging.getLogger("django_paycollect.settings")
#: What was logged as unreadable already: a broken setting is logged once per process, not per request.
_reported: set[str] = set()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: Any) -> str:
    """One text: a str, or bytes in UTF-8; ValueError for anything else (a list, a number, None)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            raise ValueError("it must be a text; these bytes are not UTF-8") from None
    raise ValueError(f"it must be a text, not {type(value).__name__}")


def _as_number(value: Any) -> Any:
    """A number, or a text spelling one (as the environment gives it: ``"30"``, ``"0.5"``); else as given."""
    if isinstance(value, (str, bytes, bytearray)):
        try:
            text = _text(value).strip()
            return int(text) if _WHOLE.fullmatch(text) else float(text) if text else value
        except ValueError:
            return value
    if isinstance(value, Decimal) and value.is_finite():
        return float(value)
    return value


def _entries(name: str, value: Any) -> tuple[Any, ...]:
    """A list key: one text (or bytes) is one entry; a list or tuple its entries; None and "" none."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, bytearray)):
        listed: tuple[Any, ...] = (value,)
    elif isinstance(value, (list, tuple)) or (isinstance(value, (set, frozenset)) and name in UNORDERED):
        listed = tuple(value)
    else:
        order = " (its order says which is current: not a set)" if isinstance(value, (set, frozenset)) else ""
        raise ValueError(f"it must be one text or a list of them{order}")
    if name == "ENCRYPTION_KEYS":
        if not all(isinstance(entry, (str, bytes, bytearray)) for entry in listed):
            raise ValueError("each key must be a text or bytes")
        return tuple(bytes(key) if isinstance(key, bytearray) else key for key in listed if key)
    return tuple(text for text in map(_text, listed) if text)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, (str, bytes, bytearray)):
        read = FLAG_TEXTS.get(_text(value).strip().lower())
        if read is not None:
            return read
    raise ValueError("it must be True or False (or a text: true, false, yes, no, on, off, 1, 0)")


def reading(name: str, value: Any) -> Any:
    """``value`` of the key ``name`` as the app uses it; ValueError: why it cannot be read (never the value).

    Every key is read by its kind: a list key takes one text as one entry, a number may be given as the text
    the environment gives (``"1"``), a flag as ``"true"`` or ``"0"``.
    """
    if name in TIMEOUTS:
        pair = [_as_number(part) for part in value] if isinstance(value, (list, tuple)) else []
        if len(pair) == 2 and all(_number(part) and part > 0 for part in pair):
            return float(pair[0]), float(pair[1])
        raise ValueError("it must be (connect seconds, read seconds), both above zero")
    if name in COUNTS:
        value = _as_number(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= COUNTS[name]:
            return value
        raise ValueError(f"it must be a whole number, at least {COUNTS[name]}")
    if name in SECONDS:
        if value is None and name == "RECONCILE_GIVE_UP_AFTER":
            return None
        value, from_zero = _as_number(value), name in SECONDS_FROM_ZERO
        if _number(value) and (value > 0 or (value == 0 and from_zero)):
            return float(value)
        raise ValueError(f"it must be a number of seconds, {'at least' if from_zero else 'more than'} 0")
    if name in LISTS:
        return _entries(name, value)
    if name in FLAGS:
        return None if value is None and name == "METRICS" else _flag(value)
    return _read_other(name, value)


def _read_other(name: str, value: Any) -> Any:
    if value is None and DEFAULTS[name] is None:
        return None
    if name == "VARIABLE_AMOUNT_ID":
        value = _as_number(value)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        if value == "":
            return None  # an environment variable set to nothing: not configured
        raise ValueError("it must be a whole number above zero (the API payment's id)")
    if name == "COMMUNITY_ID" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # an id given as a number is the same id
    if name in TEXTS:
        text = _text(value)
        if DEFAULTS[name] is None:
            return text.strip() or None
        if not text.strip() and DEFAULTS[name]:
            raise ValueError("it must not be blank")
        return text
    if name == "BASIC_CREDENTIALS":
        pair = isinstance(value, (list, tuple))
        joined = ":".join(map(_text, value)) if pair and len(value) == 2 else None if pair else _text(value)
        if joined is not None and (joined == "" or ":" in joined):
            return joined or None
        raise ValueError("it must be (username, password) or the text username:password")
    if name in CHOICES:
        text = _text(value).strip()
        chosen = text.lower() if name == "TASK_RUNNER" else text.upper()
        if chosen in CHOICES[name]:
            return chosen
        listed = (
            " or ".join(CHOICES[name]) if name == "PROMOCODE_METHOD" else f"one of {', '.join(CHOICES[name])}"
        )
        raise ValueError(f"it must be {listed}")
    if name == "PAYABLE_RESOLVER":
        return value if callable(value) else _text(value)
    if name == "API_THROTTLE_RATES":
        return _rates(value)
    return value  # MAX_AMOUNT: read by amounts.max_amount, checked by paycollect.E011


def _rates(value: Any) -> dict[str, str | None]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError('it must be a dict of scope to rate, e.g. {"paycollect_payments": "10/minute"}')
    rates: dict[str, str | None] = {}
    for scope, rate in value.items():
        if rate is None:
            rates[str(scope)] = None
            continue
        found = _RATE.fullmatch(_text(rate).strip().lower()) if isinstance(rate, (str, bytes)) else None
        if found is None or found[2][0] not in "smhd":
            raise ValueError(f"the rate of {scope!s} must be None or requests/period, e.g. 10/minute")
        rates[str(scope)] = found[0]
    return rates


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


def shown(name: str, value: Any) -> str:
    """How a check or a log shows the value of ``name``: never a secret's."""
    return "set to a value that cannot be read" if name in SECRET_KEYS else f"{value!r}"


class PayCollectSettings:
    """Attribute access to ``settings.PAYCOLLECT`` merged over :data:`DEFAULTS`, each key as :func:`reading`
    reads it: ``paycollect_settings.CALLBACK_TOKENS`` is a tuple of texts however the setting spells it."""

    def _user(self) -> Mapping[str, Any]:
        value = getattr(django_settings, "PAYCOLLECT", {})
        if type(value) is not dict and not isinstance(value, Mapping):  # the usual dict, first: read often
            raise PayCollectConfigurationError("settings.PAYCOLLECT must be a dict")
        return value

    def unknown_keys(self) -> list[str]:
        return sorted(set(self._user()) - set(DEFAULTS))

    def raw(self, name: str) -> Any:
        """The key's value as the settings file gives it (for the checks), or its default."""
        if name not in DEFAULTS:
            close = difflib.get_close_matches(name, DEFAULTS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise AttributeError(f"PAYCOLLECT has no key {name}{hint}")
        return self._user().get(name, DEFAULTS[name])

    def __getattr__(self, name: str) -> Any:
        value = self.raw(name)
        try:
            return reading(name, value)
        except ValueError as error:
            if name == "ENCRYPTION_KEYS":
                # Never another key than the one configured: values would be encrypted with a key the site
                # does not hold (check paycollect.E010 names it at start).
                raise PayCollectConfigurationError(
                    f"PAYCOLLECT['ENCRYPTION_KEYS'] cannot be read: {error}"
                ) from None
            _log_once(f"PAYCOLLECT['{name}'] is {shown(name, value)}: {error}; the default is used")
            return reading(name, DEFAULTS[name])

    def texts(self, name: str) -> tuple[str, ...]:
        """A key of :data:`LISTS` (one text or a list of them), as texts."""
        return tuple(entry if isinstance(entry, str) else entry.decode() for entry in getattr(self, name))

    def seconds(self, name: str) -> float | None:
        """A key of :data:`SECONDS` (None: never, for ``RECONCILE_GIVE_UP_AFTER``)."""
        return cast("float | None", getattr(self, name))

    def count(self, name: str) -> int:
        """A key of :data:`COUNTS`."""
        return cast(int, getattr(self, name))

    def timeout(self, name: str) -> tuple[float, float]:
        """A key of :data:`TIMEOUTS`: (connect seconds, read seconds)."""
        return cast("tuple[float, float]", getattr(self, name))

    def encryption_keys(self) -> tuple[bytes, ...]:
        """``ENCRYPTION_KEYS`` as bytes (a text in UTF-8), first the current one; empty when not set."""
        return tuple(key.encode() if isinstance(key, str) else key for key in self.ENCRYPTION_KEYS)

    def trusted_proxies(self) -> tuple[IPNetwork, ...]:
        """``TRUSTED_PROXIES`` as networks, without the entries :func:`read_networks` cannot read."""
        read = read_networks(self.texts("TRUSTED_PROXIES"))
        return tuple(network for _, network in read if network is not None)

    def basic_credentials(self) -> str:
        """``BASIC_CREDENTIALS``, a (username, password) pair or ``username:password``, as the latter."""
        return cast("str | None", self.BASIC_CREDENTIALS) or ""

    def problem(self, name: str) -> str | None:
        """Why the key's value cannot be read (:func:`reading`), or None: check ``paycollect.E010``."""
        try:
            reading(name, self.raw(name))
        except ValueError as error:
            return str(error)
        return None

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
