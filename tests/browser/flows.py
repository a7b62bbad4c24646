"""What a member or a staff member does in the club site, step by step, in a browser page."""

from __future__ import annotations

import itertools
import re
from decimal import Decimal
from typing import Any

from .support import STAFF_PASSWORD, STAFF_USERNAME, ClubSite

_serial = itertools.count(1)


def unique_email(prefix: str) -> str:
    return f"{prefix}-{next(_serial)}@example.com"


def money(text: str) -> Decimal:
    """``"2308.25 EGP"`` -> ``Decimal("2308.25")``."""
    found = re.search(r"-?\d+(?:\.\d+)?", text.replace(",", ""))
    assert found, f"no amount in {text!r}"
    return Decimal(found.group())


def join(
    page: Any,
    site: ClubSite,
    *,
    email: str,
    plan: str = "standard",
    billing: str = "yearly",
    pay_using: str = "card",
    name: str = "Mona Ali",
    phone: str = "+201001234567",
    promocode: str = "",
) -> None:
    """Fill the checkout form and submit it: the page is then the membership's review page."""
    page.goto(f"{site.url}/join/")
    page.check(f"input[name=plan][value={plan}]")
    page.check(f"input[name=billing][value={billing}]")
    page.check(f"input[name=pay_using][value={pay_using}]")
    page.fill("#id_name", name)
    page.fill("#id_email", email)
    page.fill("#id_phone_number", phone)
    page.fill("#id_promocode", promocode)
    page.click("#join-form button[type=submit]")
    page.wait_for_url(re.compile(r"/memberships/[0-9a-f-]+/$"))


def status_of(page: Any) -> str:
    value: str = page.get_attribute("#membership-state", "data-status")
    return value


def login(page: Any, site: ClubSite, next_path: str = "/admin/") -> None:
    page.goto(f"{site.url}/admin/login/?next={next_path}")
    page.fill("#id_username", STAFF_USERNAME)
    page.fill("#id_password", STAFF_PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{site.url}{next_path}")


def paid_membership(page: Any, site: ClubSite, *, email: str, plan: str = "standard") -> str:
    """A membership paid by card through the hosted page; returns its transaction uuid."""
    join(page, site, email=email, plan=plan)
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    uuid: str = page.inner_text("#transaction-uuid")
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/payment/thanks/"))
    assert status_of(page) == "paid"
    return uuid
