"""The Arabic admin laid out for right to left, measured in Chromium: the payments dashboard's charts draw no
label over a bar nor over the plot, and the JSON, body and traceback blocks of a transaction's, a callback's
and a recorded call's pages read left to right (``dir="ltr"``) inside the right-to-left page. And the demo,
where beat never runs, warns of nothing: its dashboard says calmly, once, that the periodic jobs have not run.

The club site answers in Arabic (``LANGUAGE_CODE = "ar"``; the browser asks for French, which it does not
offer). A membership is paid through the sandbox first, so each chart has bars.
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from typing import Any

import pytest

from .flows import login, paid_membership, unique_email
from .support import ClubSite, needs_browser, screenshot

pytestmark = [pytest.mark.browser, needs_browser]

#: Every text of a chart against every bar and the plot: the boxes (getBoundingClientRect) that overlap, by
#: more than half a pixel each way.
OVERLAPS = """chart => {
    const box = element => element.getBoundingClientRect();
    const overlap = (a, b) =>
        Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
        Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
    const texts = [...chart.querySelectorAll(':scope > g text, :scope > text')]
        .filter(text => text.textContent.trim());
    const bars = [...chart.querySelectorAll('.paycollect-bars rect')];
    const found = [];
    for (const text of texts) {
        for (const bar of bars) {
            if (overlap(box(text), box(bar))) {
                found.push({text: text.textContent, bar: bar.querySelector('title').textContent});
            }
        }
    }
    // The plot's horizontal span (its grid lines, or the bars' axis and their longest reach): the value
    // axis's labels stay outside it.
    const grid = [...chart.querySelectorAll('.paycollect-grid line')].map(box);
    for (const text of chart.querySelectorAll('.paycollect-grid text')) {
        const t = box(text);
        for (const line of grid) {
            if (Math.min(t.right, line.right) - Math.max(t.left, line.left) > 0.5) {
                found.push({text: text.textContent, bar: 'the plot'});
                break;
            }
        }
    }
    return {found, texts: texts.length, bars: bars.length};
}"""

#: Each code block of the page: its dir attribute, its computed direction and alignment.
CODE_BLOCKS = """() => [...document.querySelectorAll('#content pre, #content code')].map(block => ({
    text: block.textContent.slice(0, 40),
    dir: block.getAttribute('dir'),
    direction: getComputedStyle(block).direction,
    align: getComputedStyle(block).textAlign,
}))"""


def labels_over_bars(page: Any, chart_id: str) -> list[dict[str, str]]:
    measured = page.eval_on_selector(f"#{chart_id}", OVERLAPS)
    assert measured["bars"], f"{chart_id}: no bar drawn"
    assert measured["texts"], f"{chart_id}: no text drawn"
    found: list[dict[str, str]] = measured["found"]
    return found


def assert_code_blocks_left_to_right(page: Any) -> int:
    """Every pre and code block of the page is ``dir="ltr"``, and so computed, aligned to its left."""
    assert page.get_attribute("html", "dir") == "rtl", page.url
    blocks = page.evaluate(CODE_BLOCKS)
    for block in blocks:
        assert block["dir"] == "ltr", (page.url, block)
        assert block["direction"] == "ltr", (page.url, block)
        assert block["align"] in ("left", "start"), (page.url, block)
    return len(blocks)


def test_the_arabic_dashboard_draws_no_label_over_a_bar(page_fr: Any, site_ar: ClubSite) -> None:
    page, site = page_fr, site_ar
    paid_membership(page, site, email=unique_email("arabic-charts"))
    login(page, site, "/admin/paycollect/dashboard/?days=7")
    assert page.get_attribute("html", "dir") == "rtl"
    charts = ("paycollect-chart-daily", "paycollect-chart-status", "paycollect-chart-callbacks")
    over = {chart: labels_over_bars(page, chart) for chart in charts}
    assert over == {chart: [] for chart in charts}
    # Mirrored: the status chart's row labels right of their bars, as an Arabic reader starts a row.
    label = page.locator("#paycollect-chart-status .paycollect-row-labels text").first.bounding_box()
    bar = page.locator("#paycollect-chart-status .paycollect-bars rect").first.bounding_box()
    assert label["x"] >= bar["x"] + bar["width"], (label, bar)
    screenshot(page, "admin-dashboard-ar", full_page=True)


def test_arabic_admin_pages_show_json_bodies_and_tracebacks_left_to_right(
    page_fr: Any, site_ar: ClubSite
) -> None:
    page, site = page_fr, site_ar
    uuid = paid_membership(page, site, email=unique_email("arabic-code"))
    login(page, site, f"/admin/paycollect/transaction/?q={uuid}")
    page.click("#result_list tbody th a")
    page.wait_for_url(re.compile(r"/admin/paycollect/transaction/\d+/change/"))
    assert assert_code_blocks_left_to_right(page) >= 1  # the last fetched object, as JSON
    raw = page.locator("div.field-raw_display pre")
    assert raw.count() == 1
    assert raw.inner_text().lstrip().startswith("{")
    # Its lines start at the block's left edge: the opening brace is its leftmost character.
    brace_x = raw.evaluate(
        """pre => { const range = document.createRange(); const text = pre.firstChild;
            const at = text.textContent.indexOf('{'); range.setStart(text, at); range.setEnd(text, at + 1);
            return range.getBoundingClientRect().left - pre.getBoundingClientRect().left; }"""
    )
    assert brace_x < 20, brace_x
    screenshot(page, "admin-transaction-json-ar", full_page=True)

    # The callback the service sent for it: its headers, its body and its traceback (a dash: none).
    page.goto(f"{site.url}/admin/paycollect/receivedcallback/")
    page.click("#result_list tbody th a")
    page.wait_for_url(re.compile(r"/admin/paycollect/receivedcallback/\d+/change/"))
    assert assert_code_blocks_left_to_right(page) >= 2

    # A recorded call to the service: its request and its answer's data.
    page.goto(f"{site.url}/admin/paycollect/apicall/")
    page.click("#result_list tbody th a")
    page.wait_for_url(re.compile(r"/admin/paycollect/apicall/\d+/change/"))
    assert assert_code_blocks_left_to_right(page) >= 1


def test_the_arabic_demo_up_for_an_hour_without_beat_warns_of_nothing(
    page_fr: Any, site_ar: ClubSite
) -> None:
    page, site = page_fr, site_ar
    # The demo has been up for an hour: its periodic jobs, watched since the migration, never ran.
    an_hour_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    with sqlite3.connect(site.database, timeout=30) as connection:
        connection.execute(
            "UPDATE paycollect_housekeepingrun SET watched_since = ? WHERE last_run_at IS NULL", [an_hour_ago]
        )
    login(page, site, "/admin/")
    assert page.locator(".messagelist .warning").count() == 0
    assert page.locator("#paycollect-late-jobs").count() == 0
    page.goto(f"{site.url}/admin/paycollect/dashboard/")
    assert page.locator(".messagelist .warning").count() == 0
    assert page.locator("#paycollect-late-jobs").count() == 0
    note = page.locator("#paycollect-jobs-not-run")
    assert note.count() == 1
    assert "celery beat" in note.inner_text()
    assert page.locator("#paycollect-housekeeping-table .paycollect-warning").count() == 0
