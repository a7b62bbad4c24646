"""The admin's payments dashboard in Chromium, with payments made through the club site and the sandbox.

Two memberships are paid on the sandbox's hosted page, one payment is declined, one is partly refunded
from the admin; then the dashboard's statistics button fetches the service's statistics and the page must
show what happened: the collected and refunded amounts moved by exactly those payments, and the service's
totals agree with our ledger. The dashboard is also shown without JavaScript and as printed.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from .flows import join, login, money, paid_membership, unique_email
from .support import ClubSite, needs_browser, screenshot

try:
    from playwright.sync_api import expect
except ImportError:  # the tests are skipped (needs_browser), or fail where the browser is required
    expect = None  # type: ignore[assignment]

pytestmark = [pytest.mark.browser, needs_browser]

DASHBOARD = "/admin/paycollect/dashboard/?days=7"


def figure(page: Any, name: str) -> tuple[Decimal, int]:
    """A figure of the dashboard's summary: its amount and the count under it."""
    text = page.inner_text(f"#figure-{name} dd")
    count = re.search(r"(\d+) (?:payment|refund)", text)
    return money(text), int(count.group(1)) if count else 0


def started(page: Any, status: str) -> int:
    return int(page.inner_text(f"#paycollect-by-status tr[data-status={status}] td.number >> nth=0"))


def test_the_dashboard_shows_what_came_in_through_the_sandbox(page: Any, site: ClubSite) -> None:
    login(page, site, DASHBOARD)
    collected, payments = figure(page, "collected")
    refunded, refunds = figure(page, "refunded")
    failed = started(page, "FAILED")

    # Two memberships paid on the hosted page, one declined.
    paid = [
        paid_membership(page, site, email=unique_email("dashboard"), plan="junior"),
        paid_membership(page, site, email=unique_email("dashboard"), plan="standard"),
    ]
    join(page, site, email=unique_email("dashboard-declined"))
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/sandbox/pay/"))
    page.click("button.decline")
    page.wait_for_url(re.compile(r"/payment/failed/"))
    amounts = [Decimal(str(site.control.transaction(uuid)["transaction"]["total_amount"])) for uuid in paid]

    # 20.00 of the first refunded from the admin's refund page.
    page.goto(f"{site.url}/admin/paycollect/transaction/")
    page.check(f"tr:has-text('{paid[0]}') input.action-select")
    page.select_option("select[name=action]", "refund")
    page.click("button[name=index]")
    page.locator("input[name^=amount_]").fill("20.00")
    page.click("input[type=submit][value='Refund through the service']")
    expect(page.locator("ul.messagelist")).to_contain_text("Refund: 1 succeeded")

    page.goto(f"{site.url}{DASHBOARD}")
    assert figure(page, "collected") == (collected + sum(amounts), payments + 2)
    assert figure(page, "refunded") == (refunded + Decimal("20.00"), refunds + 1)
    assert started(page, "FAILED") == failed + 1
    today = page.locator("#paycollect-days tbody tr").first
    assert money(today.locator("td").nth(3).inner_text()) >= Decimal("20.00")  # refunded today
    expect(page.locator("#paycollect-chart-daily rect.paycollect-collected").last).to_be_visible()
    expect(page.locator("#paycollect-chart-daily")).to_have_attribute("role", "img")

    # The service's statistics, fetched from the page, agree with our ledger.
    page.click("input[name=fetch_statistics]")
    expect(page.locator("ul.messagelist")).to_contain_text("were fetched")
    rows = page.locator("#paycollect-statistics-table tbody tr")
    assert rows.nth(0).locator("td").nth(2).inner_text() == "0"  # transactions: the service minus ours
    assert rows.nth(2).locator("td").nth(2).inner_text() == "0.00 EGP"  # collected, after refunds
    screenshot(page, "admin-dashboard", docs=True)
    page.locator("#paycollect-status h2").evaluate("heading => heading.scrollIntoView()")
    screenshot(page, "admin-dashboard-health", docs=True)
    screenshot(page, "admin-dashboard-full", full_page=True)

    # Printed: the admin's header, navigation and the forms go; the charts and tables stay.
    page.emulate_media(media="print")
    expect(page.locator("#header")).to_be_hidden()
    expect(page.locator(".paycollect-scope")).to_be_hidden()
    expect(page.locator("#paycollect-chart-daily")).to_be_visible()
    expect(page.locator("#paycollect-days")).to_be_visible()
    screenshot(page, "admin-dashboard-print", full_page=True)


def test_the_dashboard_needs_no_javascript(page_without_script: Any, site: ClubSite) -> None:
    page = page_without_script
    login(page, site, DASHBOARD)
    for chart in ("daily", "status", "callbacks"):
        expect(page.locator(f"#paycollect-chart-{chart}")).to_be_visible()
    # The period is chosen with a plain form.
    page.select_option("#id_days", "30")
    page.click(".paycollect-scope input[type=submit]")
    page.wait_for_url(re.compile(r"days=30"))
    assert page.locator("#paycollect-days tbody tr").count() == 30


def test_an_arabic_chart_draws_a_negative_amount_with_its_sign_before_the_digits(page: Any) -> None:
    """Right to left, a number's sign moves after its digits (``2,000-``) unless it is written as the language
    writes it: the daily chart, drawn in Arabic in Chromium, keeps every minus sign left of its digits."""
    import datetime as dt

    from django.template.loader import render_to_string
    from django.utils import translation

    from django_paycollect import reporting
    from django_paycollect.admin import charts

    def day(n: int, collected: str, refunded: str) -> reporting.Day:
        refunds = reporting.Tally(1, Decimal(refunded)) if Decimal(refunded) else reporting.Tally()
        return reporting.Day(
            dt.date(2026, 3, n), reporting.Tally(1, Decimal(collected)), refunds, reporting.Tally()
        )

    with translation.override("ar"):
        chart = charts.daily_chart([day(1, "1000", "0"), day(2, "500", "2000")], "EGP")
        svg = render_to_string("admin/paycollect/charts/daily.svg", {"chart": chart})
    page.set_content(
        f'<!doctype html><html lang="ar" dir="rtl"><meta charset="utf-8"><body>{svg}</body></html>'
    )
    signs = page.evaluate(
        """() => [...document.querySelectorAll('.paycollect-grid text')]
            .filter(text => text.textContent.includes('-'))
            .map(text => {
                const content = text.textContent;
                return {
                    label: content,
                    sign: text.getExtentOfChar(content.indexOf('-')).x,
                    digits: text.getExtentOfChar(content.length - 1).x,
                };
            })"""
    )
    assert signs, "no negative axis label drawn"
    for found in signs:
        assert found["sign"] < found["digits"], found
