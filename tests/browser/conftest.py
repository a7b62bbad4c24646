"""Fixtures of the browser tests: the club site in its own process, Chromium, and a page per test.

Skipped unless /usr/bin/chromium exists and playwright is importable, so ``make test`` stays green on
machines without them; ``make test-browser`` (after ``bash .ci/browser.sh``) fails instead of skipping.
Collecting the tests needs no playwright.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .support import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    REQUIRE_BROWSER,
    ClubSite,
    browser_missing,
    new_page,
    start_club_site,
)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    # Keep each phase's report on the item, so the page fixture can tell a failed test.
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser_available() -> None:
    """Skip (or, under make test-browser, fail) when Chromium or playwright is missing."""
    missing = browser_missing()
    if missing and REQUIRE_BROWSER:
        pytest.fail(missing)
    if missing:
        pytest.skip(missing)
    for stale in ARTIFACTS.glob("FAILED-*.png"):
        stale.unlink()


@pytest.fixture(scope="session")
def club_site(
    browser_available: None, tmp_path_factory: pytest.TempPathFactory, example_migrated: Path
) -> Iterator[ClubSite]:
    site = start_club_site(Path(tmp_path_factory.mktemp("clubsite")), migrated=example_migrated)
    yield site
    site.stop()


@pytest.fixture(scope="session")
def club_site_ar(
    browser_available: None, tmp_path_factory: pytest.TempPathFactory, example_migrated: Path
) -> Iterator[ClubSite]:
    """The club site with ``LANGUAGE_CODE = "ar"``: Arabic for every visitor who asks for no language, and
    for the service's answers (the mounted sandbox)."""
    site = start_club_site(
        Path(tmp_path_factory.mktemp("clubsite-ar")), migrated=example_migrated, language="ar"
    )
    yield site
    site.stop()


@pytest.fixture(scope="session")
def chromium(browser_available: None) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(request: pytest.FixtureRequest, chromium: Any) -> Iterator[Any]:
    """A fresh browser context (cookies, session) and its page."""
    yield from new_page(request, chromium)


@pytest.fixture
def page_fr(request: pytest.FixtureRequest, chromium: Any) -> Iterator[Any]:
    """A page whose browser asks for French, which the club site does not offer: the site's LANGUAGE_CODE
    decides (Chromium always sends an Accept-Language)."""
    yield from new_page(request, chromium, locale="fr-FR")


@pytest.fixture
def page_without_script(request: pytest.FixtureRequest, chromium: Any) -> Iterator[Any]:
    yield from new_page(request, chromium, java_script_enabled=False)


@pytest.fixture
def site(club_site: ClubSite) -> Iterator[ClubSite]:
    """The club site; faults and callback plans a test leaves behind are cleared after it."""
    yield club_site
    club_site.control.clear_faults()


@pytest.fixture
def site_ar(club_site_ar: ClubSite) -> Iterator[ClubSite]:
    """The club site in Arabic (LANGUAGE_CODE = "ar"); faults and callback plans are cleared after a test."""
    yield club_site_ar
    club_site_ar.control.clear_faults()


def pytest_report_header(config: pytest.Config) -> str:
    missing = browser_missing()
    return f"browser tests: {'skipped, ' + missing if missing else 'Chromium at ' + CHROMIUM}"
