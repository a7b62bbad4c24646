"""The documentation site (docs/_build/html, built by ``make docs``) in Chromium: the quick start on a laptop,
a wide screen and a phone. Screenshots: test-artifacts/browser/docs-quickstart-<width>.png."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .support import REQUIRE_BROWSER, ROOT, needs_browser, new_page, screenshot

pytestmark = [pytest.mark.browser, needs_browser]

QUICKSTART = ROOT / "docs" / "_build" / "html" / "quickstart.html"
#: (width, height) of a 1280-px laptop, a 1440-px screen and a phone.
SCREENS = [(1280, 800), (1440, 900), (390, 844)]
PHONE = 600  # narrower than this is a phone layout


@pytest.fixture(params=SCREENS, ids=[f"{width}px" for width, _ in SCREENS])
def docs_page(request: pytest.FixtureRequest, chromium: Any) -> Iterator[Any]:
    if not QUICKSTART.exists():
        message = f"{QUICKSTART} is missing: run make docs first"
        if REQUIRE_BROWSER:
            pytest.fail(message)
        pytest.skip(message)
    width, height = request.param
    for page in new_page(request, chromium, viewport={"width": width, "height": height}):
        page.goto(QUICKSTART.as_uri())
        yield page


def test_the_quick_start_starts_on_the_first_screen_and_reads_well(docs_page: Any) -> None:
    page = docs_page
    viewport = page.viewport_size
    width, height = viewport["width"], viewport["height"]
    screenshot(page, f"docs-quickstart-{width}")

    # The text starts on the first screen: no navigation block pushes it down (a dark block filled it).
    title = page.locator("article h1").first
    first_paragraph = page.locator("article p").first
    assert title.inner_text().startswith("Quick start")
    for element in (title, first_paragraph):
        box = element.bounding_box()
        assert box is not None
        assert 0 <= box["y"] < height / 3, (element, box)
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width
    text_width = first_paragraph.bounding_box()["width"]
    assert text_width <= 800, "lines of more than about 100 characters are hard to read"
    assert text_width >= width - 60 if width < PHONE else text_width >= 560

    # Nothing makes the page scroll sideways; code that is wider than a phone scrolls inside its block.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    blocks = page.evaluate(
        """() => [...document.querySelectorAll('article pre')].map(pre => ({
            overflows: pre.scrollWidth > pre.clientWidth,
            scrolls: ['auto', 'scroll'].includes(getComputedStyle(pre).overflowX),
            text: pre.innerText.slice(0, 60),
        }))"""
    )
    assert len(blocks) >= 10
    for block in blocks:
        if width >= PHONE:
            assert not block["overflows"], f"clipped at {width} px: {block['text']!r}"
        else:
            assert block["scrolls"] or not block["overflows"], block["text"]

    # Every code block has its copy button.
    assert page.locator("div.highlight button.copybtn").count() == page.locator("div.highlight").count()

    contents = page.locator(".toc-tree")
    if width >= PHONE:
        # Laptop and wide screen: navigation on the left, "on this page" beside the text, no phone header.
        assert not page.locator(".mobile-header").is_visible()
        assert page.locator(".sidebar-tree").get_by_role("link", name="Quick start").is_visible()
        assert contents.is_visible()
        box = contents.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= width
        assert box["x"] > first_paragraph.bounding_box()["x"] + text_width
        assert contents.get_by_role("link", name="1. Install").is_visible()
    else:
        # Phone: one column; the page's contents open from the header's button.
        assert page.locator(".mobile-header").is_visible()
        page.locator(".toc-header-icon").click()
        page.wait_for_function(
            "document.querySelector('.toc-drawer').getBoundingClientRect().right <= window.innerWidth"
        )
        assert contents.get_by_role("link", name="1. Install").is_visible()
        screenshot(page, f"docs-quickstart-{width}-contents")
