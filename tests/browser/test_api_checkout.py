"""The club site's single-page checkout in Chromium: plain JavaScript on the REST API, end to end against
the mounted sandbox. Sign in, choose a plan (its price and fees come from the API), see a field error from the
API, start, pay on the service's hosted page in a second window, and watch the page turn to paid by polling.
Also the API's browsable schema, served without a CDN."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import pytest

from .support import MEMBER_PASSWORD, MEMBER_USERNAME, ClubSite, needs_browser, screenshot

try:
    from playwright.sync_api import expect
except ImportError:  # the tests are skipped (needs_browser), or fail where the browser is required
    expect = None  # type: ignore[assignment]

pytestmark = [pytest.mark.browser, needs_browser]


def sign_in(page: Any, site: ClubSite) -> None:
    page.goto(f"{site.url}/checkout/")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", MEMBER_USERNAME)
    page.fill("#id_password", MEMBER_PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{site.url}/checkout/")
    expect(page.locator("#checkout")).to_have_attribute("data-ready", "true")


def test_the_single_page_checkout_pays_through_the_api(page: Any, site: ClubSite) -> None:
    api_calls: list[str] = []
    page.on(
        "request",
        lambda request: (
            api_calls.append(f"{request.method} {request.url}") if "/api/" in request.url else None
        ),
    )
    sign_in(page, site)
    page.check("input[name=plan][value=junior]")
    page.check("input[name=billing][value=yearly]")
    # Sandbox card fees: 2.5 % + 2.00 on the price the server resolved (600.00).
    expect(page.locator("[data-quote=total]")).to_have_text("Total: 617.00 EGP")
    expect(page.locator("[data-quote=price]")).to_have_text("Price: 600.00 EGP")

    # No phone number: the API's 400 names billing_data.phone_number, shown by its field.
    page.click("#start")
    errors = page.locator('[data-errors-for="billing_data.phone_number"]')
    expect(errors).to_be_visible()
    expect(errors).not_to_be_empty()
    screenshot(page, "api-checkout-field-error", docs=True)

    page.fill("#phone_number", "+201001234567")
    page.click("#start")
    state = page.locator("#payment-state")
    expect(state).to_have_attribute("data-state", "open")
    screenshot(page, "api-checkout-started")

    with page.expect_popup() as opened:
        page.click("#open-payment")
    hosted = opened.value
    hosted.wait_for_url(re.compile(r"/sandbox/pay/"))
    hosted.click("button.pay")

    # The page learns it by polling GET /api/payments/<uuid>/ (the site verified it with the service).
    expect(state).to_have_attribute("data-state", "paid", timeout=30_000)
    hosted.close()
    expect(page.locator("#paid")).to_be_visible()
    expect(page.locator("#open-payment")).to_be_hidden()
    screenshot(page, "api-checkout-paid", docs=True)
    # The payment was for the member's membership (the hook's merchant object): the receivers marked it paid.
    with sqlite3.connect(site.database) as db:
        statuses = db.execute(
            "SELECT status FROM members_membership WHERE email = ? AND plan = 'junior'",
            ("member@example.com",),
        ).fetchall()
    assert statuses == [("paid",)]
    assert any(call.startswith("POST ") and call.endswith("/api/quotes/") for call in api_calls)
    assert sum(call.startswith("POST ") and call.endswith("/api/payments/") for call in api_calls) == 2
    assert any(re.search(r"GET .*/api/payments/[0-9a-f-]{36}/$", call) for call in api_calls)


def test_the_api_schema_is_browsable_without_a_cdn(page: Any, site: ClubSite) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{site.url}/api/docs/")
    expect(page.locator("#swagger-ui .opblock").first).to_be_visible()
    expect(page.locator("#swagger-ui")).to_contain_text("/api/payments/")
    assert requested
    assert all(url.startswith((site.url, "data:", "blob:")) for url in requested), [
        url for url in requested if not url.startswith(site.url)
    ]
