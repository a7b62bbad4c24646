"""The sandbox's settings: ``settings.PAYCOLLECT_SANDBOX`` (a dict) over these defaults.

Brand names of networks and providers are placeholders in the spec, so the sandbox keeps them as configurable
values with neutral defaults; nothing in the sandbox hard-codes a real name.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

# pay_using keys of the networks whose literal names are brand names in the spec.
NETWORK_KEYS = ("bill_network", "kiosk_network", "digital_scheme", "installment_provider", "phone_wallet")

DEFAULTS: dict[str, Any] = {
    # The control API (_control/) lets anyone reset data, move the clock and inject faults: off unless asked.
    "CONTROL_API": False,
    # True on a staging site whose sandbox is driven from outside with DEBUG off: the system check
    # paycollect_sandbox.E001 (control API reachable without DEBUG) becomes the warning W001.
    "STAGING": False,
    # Sandbox dashboard pages (communities, API payment URLs, callbacks, outbox, journal) and the demo
    # merchant. They show the sandbox's credentials and change where its API payments send customers and
    # callbacks: None (the default) turns them on with DEBUG only; True also without DEBUG, for staff only.
    "DASHBOARD": None,
    # True lets visitors who are not staff use the dashboard with DEBUG off too (the standalone runner, which
    # has no users). Secrets stay hidden from them.
    "DASHBOARD_PUBLIC": False,
    # Literal values used for the spec's placeholders; neutral by default.
    "NETWORK_NAMES": {key: key for key in NETWORK_KEYS},
    # wallet_processor of create_community: one of three processors (two banks and a mobile operator).
    "WALLET_PROCESSORS": ["first_bank", "second_bank", "mobile_operator"],
    # pay_using value for the generic mobile-wallet option (not shown by the spec).
    "WALLET_PAY_USING": "wallet",
    # Deliver callbacks from a background thread of the serving process.
    "CALLBACK_WORKER": True,
    # Seconds to wait before each retry; the number of entries is the number of retries.
    "CALLBACK_RETRY_DELAYS": [1.0, 5.0, 30.0, 120.0, 600.0],
    "CALLBACK_TIMEOUT": 5.0,
    # Key naming the transaction UUID in callback bodies: "transaction_uuid" (the spec's field table),
    # "transaction_id" (the spec's example body) or "both".
    "CALLBACK_UUID_KEY": "transaction_uuid",
    # Where the request journal lives: "database" (shared by every process serving the sandbox) or
    # "memory" (one process only, no write per request: the standalone runner's choice).
    "JOURNAL_STORAGE": "database",
    # Request journal entries kept (oldest pruned).
    "JOURNAL_MAX_ENTRIES": 2000,
    "LOGO_MAX_BYTES": 2 * 1024 * 1024,
    # Pay's original_amount is required by the spec. Some clients never send it (the service's own Node
    # SDK among them): False accepts such a payment, for integrators whose live account does.
    "REQUIRE_ORIGINAL_AMOUNT": True,
    # The largest amount an operation accepts (the service's maximum is not shown): above it, a 400 naming the
    # field. The app's PAYCOLLECT["MAX_AMOUNT"] default, but a setting of its own: the sandbox is the service.
    "MAX_AMOUNT": Decimal("1000000.00"),
}

CALLBACK_UUID_KEYS = ("transaction_uuid", "transaction_id", "both")


@dataclass(frozen=True)
class SandboxSettings:
    control_api: bool
    staging: bool
    dashboard: bool | None
    dashboard_public: bool
    network_names: dict[str, str]
    wallet_processors: list[str]
    wallet_pay_using: str
    callback_worker: bool
    callback_retry_delays: list[float]
    callback_timeout: float
    callback_uuid_key: str
    journal_storage: str
    journal_max_entries: int
    logo_max_bytes: int
    require_original_amount: bool
    max_amount: Decimal


_cached: SandboxSettings | None = None


def _forget(*, setting: str, **kwargs: Any) -> None:
    global _cached
    if setting == "PAYCOLLECT_SANDBOX":
        _cached = None


setting_changed.connect(_forget)


def get_settings() -> SandboxSettings:
    """Read once per process (every request asks); tests' settings overrides reset it."""
    global _cached
    if _cached is None:
        _cached = _read_settings()
    return _cached


def _read_settings() -> SandboxSettings:
    user: dict[str, Any] = dict(getattr(settings, "PAYCOLLECT_SANDBOX", {}) or {})
    merged = {**DEFAULTS, **user}
    names = {**DEFAULTS["NETWORK_NAMES"], **(user.get("NETWORK_NAMES") or {})}
    return SandboxSettings(
        control_api=bool(merged["CONTROL_API"]),
        staging=bool(merged["STAGING"]),
        dashboard=None if merged["DASHBOARD"] is None else bool(merged["DASHBOARD"]),
        dashboard_public=bool(merged["DASHBOARD_PUBLIC"]),
        network_names={key: str(value) for key, value in names.items()},
        wallet_processors=[str(v) for v in merged["WALLET_PROCESSORS"]],
        wallet_pay_using=str(merged["WALLET_PAY_USING"]),
        callback_worker=bool(merged["CALLBACK_WORKER"]),
        callback_retry_delays=[float(v) for v in merged["CALLBACK_RETRY_DELAYS"]],
        callback_timeout=float(merged["CALLBACK_TIMEOUT"]),
        callback_uuid_key=str(merged["CALLBACK_UUID_KEY"]),
        journal_storage="memory" if merged["JOURNAL_STORAGE"] == "memory" else "database",
        journal_max_entries=int(merged["JOURNAL_MAX_ENTRIES"]),
        logo_max_bytes=int(merged["LOGO_MAX_BYTES"]),
        require_original_amount=bool(merged["REQUIRE_ORIGINAL_AMOUNT"]),
        max_amount=Decimal(str(merged["MAX_AMOUNT"])),
    )


def dashboard_on() -> bool:
    """Whether the dashboard pages answer at all: the setting, or DEBUG when it is left unset (read on each
    call, as DEBUG may change in tests)."""
    dashboard = get_settings().dashboard
    return bool(settings.DEBUG) if dashboard is None else dashboard


def pay_using_values() -> list[str]:
    """Every pay_using value the sandbox knows, lower case (the spec shows card, kiosk and network names)."""
    conf = get_settings()
    names = conf.network_names
    values = [
        "card",
        "kiosk",
        names["bill_network"],
        names["digital_scheme"],
        names["installment_provider"],
        names["phone_wallet"],
        conf.wallet_pay_using,
    ]
    return [v.lower() for v in values]


def community_payment_method_names() -> dict[str, str]:
    """payment_methods names of create_community (lower case) -> pay_using value."""
    names = get_settings().network_names
    return {
        "card": "card",
        "kiosk": "kiosk",
        names["digital_scheme"].lower(): names["digital_scheme"].lower(),
        names["bill_network"].lower(): names["bill_network"].lower(),
        names["installment_provider"].lower(): names["installment_provider"].lower(),
    }
