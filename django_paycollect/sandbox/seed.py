"""Seed data: one community with credentials, API payments, promocodes and fee rules.

The seed's identity (community id, API key, basic credentials, variable_amount_id) is remembered in the
state row, so ``_control/reset`` recreates the very same credentials and a test fixture's values stay valid.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from decimal import Decimal
from typing import Any

from django.core.management.color import no_style
from django.db import connection, models, transaction

from . import fastpath, journal
from .conf import get_settings
from .models import (
    ApiPayment,
    CallbackAttempt,
    CallbackDelivery,
    Community,
    DirectOrder,
    Fault,
    FeeRule,
    JournalEntry,
    MerchantInboxItem,
    OutboxMessage,
    Promocode,
    RecurringSeries,
    Refund,
    Transaction,
)
from .state import get_state, now, writing

# Fee rules seeded globally: (pay_using key, percentage, fixed part in the main unit).
SEED_FEES: list[tuple[str, str, str]] = [
    ("card", "2.500", "2.00"),
    ("kiosk", "2.000", "5.00"),
    ("bill_network", "2.000", "3.00"),
    ("digital_scheme", "1.000", "0.00"),
    ("installment_provider", "3.000", "0.00"),
    ("phone_wallet", "1.500", "1.00"),
    ("wallet", "1.500", "1.00"),
]


def _credentials() -> dict[str, str]:
    return {
        "api_key": "sbx_" + secrets.token_hex(20),
        "basic_username": "sandbox-" + secrets.token_hex(3),
        "basic_password": secrets.token_urlsafe(18),
    }


def create_community(
    *,
    name: str,
    community_id: str | None = None,
    credentials: dict[str, str] | None = None,
    api_payment_id: int | None = None,
    redirect_url: str = "",
    callback_url: str = "",
    **fields: Any,
) -> tuple[Community, ApiPayment]:
    """A community with generated credentials and a default API payment (so it can take payments at once)."""
    creds = credentials or _credentials()
    with writing():
        community = Community.objects.create(
            community_id=community_id or str(uuid.uuid4()),
            name=name,
            api_key=creds["api_key"],
            api_key_sha256=hashlib.sha256(creds["api_key"].encode()).hexdigest(),
            basic_username=creds["basic_username"],
            basic_password=creds["basic_password"],
            created=now(),
            **fields,
        )
        api_payment = ApiPayment.objects.create(
            pk=api_payment_id,
            community=community,
            name="Default API payment",
            redirect_url=redirect_url,
            callback_url=callback_url,
        )
    return community, api_payment


#: The seeded API payment's URLs the standalone runner was started with (``--redirect-url``,
#: ``--callback-url``): kept in the identity, so a reset sets them again instead of the demo merchant's.
START_URLS = ("redirect_url", "callback_url")


def set_start_urls(*, redirect_url: str | None, callback_url: str | None) -> None:
    """Point the seeded API payment at the URLs given on the command line (what the merchant dashboard does),
    and remember them for :func:`reset`; URLs not given are the demo merchant's after a reset."""
    given = {name: url for name, url in zip(START_URLS, (redirect_url, callback_url), strict=True) if url}
    with writing():
        state = get_state()
        identity = {key: value for key, value in state.seed.items() if key not in START_URLS}
        if given:
            ApiPayment.objects.filter(pk=identity["variable_amount_id"]).update(**given)
        state.seed = {**identity, **given}
        state.save(update_fields=["seed"])


def seed(identity: dict[str, Any] | None, base_url: str) -> dict[str, Any]:
    """Create the seed rows (reusing ``identity`` when given) and return the identity to remember."""
    identity = dict(identity or {})
    base = (identity.get("base_url") or base_url).rstrip("/")
    start_urls = {key: str(identity[key]) for key in START_URLS if identity.get(key)}
    # The built-in demo merchant, so a payment made by hand shows its redirect and callback, unless the runner
    # was started with URLs of a site's own.
    demo_urls = {
        "redirect_url": f"{base}/_sandbox/merchant/return/" if base else "",
        "callback_url": f"{base}/_sandbox/merchant/callback/" if base else "",
    }
    names = get_settings().network_names
    with writing():
        creds: dict[str, str] = {
            k: str(identity[k]) for k in ("api_key", "basic_username", "basic_password") if k in identity
        }
        community, api_payment = create_community(
            name="Sandbox Club",
            community_id=identity.get("community_id"),
            credentials=creds if len(creds) == 3 else None,
            api_payment_id=identity.get("variable_amount_id"),
            **{**demo_urls, **start_urls},
            registered_name="Sandbox Club LLC",
            email="club@example.com",
            phone="+201000000000",
            app_modules=["Service", "Event"],
            payment_methods=[
                "card",
                "kiosk",
                names["bill_network"].lower(),
                names["digital_scheme"].lower(),
                names["installment_provider"].lower(),
                names["phone_wallet"].lower(),
            ],
            kiosk_processor=names["kiosk_network"],
            wallet_processor=get_settings().wallet_processors[0],
        )
        member_payment = ApiPayment.objects.create(
            pk=identity.get("member_variable_amount_id"),
            community=community,
            name="Membership fee (needs a member id)",
            requires_member_id=True,
        )
        # Explicit ids (kept across resets) do not advance PostgreSQL's sequence: move it past them,
        # or the next API payment created would collide.
        _reset_sequences(ApiPayment)
        for key, percentage, fixed in SEED_FEES:
            method = names.get(key, key).lower()
            if key == "wallet":
                method = get_settings().wallet_pay_using.lower()
            FeeRule.objects.create(
                payment_method=method, percentage=Decimal(percentage), fixed_amount=Decimal(fixed)
            )
        Promocode.objects.bulk_create(
            [
                Promocode(
                    community=community,
                    name="SAVE10",
                    kind=Promocode.Kind.PERCENTAGE,
                    value=Decimal("10"),
                    min_amount=Decimal("50.00"),
                ),
                Promocode(
                    community=community,
                    name="FLAT25",
                    kind=Promocode.Kind.VALUE,
                    value=Decimal("25.00"),
                    min_amount=Decimal("100.00"),
                ),
                Promocode(
                    community=community,
                    name="SMALL5",
                    kind=Promocode.Kind.VALUE,
                    value=Decimal("5.00"),
                    max_amount=Decimal("200.00"),
                ),
                Promocode(
                    community=community,
                    name="EXPIRED20",
                    kind=Promocode.Kind.VALUE,
                    value=Decimal("20.00"),
                    expires_on=dt.date(2020, 1, 1),
                ),
            ]
        )
        identity = {
            "base_url": base,
            "community_id": community.community_id,
            "api_key": community.api_key,
            "basic_username": community.basic_username,
            "basic_password": community.basic_password,
            "variable_amount_id": api_payment.pk,
            "member_variable_amount_id": member_payment.pk,
            **start_urls,
        }
        state = get_state()
        state.seed = identity
        state.save(update_fields=["seed"])
    return identity


def ensure_seeded(base_url: str) -> dict[str, Any]:
    """Seed on first start; later starts reuse the stored identity (and its data)."""
    state = get_state()
    if state.seed and Community.objects.filter(community_id=state.seed.get("community_id")).exists():
        if base_url and state.seed.get("base_url") != base_url.rstrip("/"):
            # A new port: point the seeded API payment's demo URLs at it.
            _move_demo_urls(state.seed, base_url.rstrip("/"))
            state.seed = {**state.seed, "base_url": base_url.rstrip("/")}
            state.save(update_fields=["seed"])
        return dict(state.seed)
    return seed(state.seed or None, base_url)


def _move_demo_urls(identity: dict[str, Any], base: str) -> None:
    old = str(identity.get("base_url") or "")
    if not old:
        return
    variable_amount_id = identity.get("variable_amount_id")
    if not old or variable_amount_id is None:
        return
    with writing():
        for api_payment in ApiPayment.objects.filter(pk=int(variable_amount_id)):
            api_payment.redirect_url = api_payment.redirect_url.replace(old, base, 1)
            api_payment.callback_url = api_payment.callback_url.replace(old, base, 1)
            api_payment.save()


# Children before parents, so each delete is one statement without cascades to collect.
_RESET_ORDER: list[type[models.Model]] = [
    JournalEntry,
    Fault,
    MerchantInboxItem,
    CallbackAttempt,
    CallbackDelivery,
    OutboxMessage,
    Refund,
    Transaction,
    RecurringSeries,
    DirectOrder,
    Promocode,
    FeeRule,
    ApiPayment,
    Community,
]


def reset() -> dict[str, Any]:
    """Wipe every record, the clock offset, faults, the callback plan and runtime config; reseed."""
    journal.clear()
    with writing():
        state = get_state()
        identity = dict(state.seed)
        fastpath.forget_communities()
        fastpath.forget_faults()
        for model in _RESET_ORDER:
            model._default_manager.all().delete()
        state.clock_offset_seconds = 0
        state.config = {}
        state.callback_plan = []
        state.save()
        # A request in flight during the reset may cache the old rows again: forget them after the commit too.
        transaction.on_commit(fastpath.forget_communities)
        transaction.on_commit(fastpath.forget_faults)
        return seed(identity or None, str(identity.get("base_url") or ""))


def _reset_sequences(*model_classes: type[models.Model]) -> None:
    statements = connection.ops.sequence_reset_sql(no_style(), list(model_classes))
    with connection.cursor() as cursor:
        for sql in statements:  # none on SQLite, which needs none
            cursor.execute(sql)
