"""The README is a newcomer's first screen: what the service and the app are, the two set-up commands, one
screenshot, and the rest sent to the docs (it was 362 lines repeating them, with a settings table that missed
five keys)."""

from __future__ import annotations

import re
from pathlib import Path

from django_paycollect.conf import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_it_opens_with_what_the_service_and_the_app_are():
    opening = README.split("```")[0]
    assert "Payment Collection Service" in opening
    assert "Django app" in opening


def test_the_first_code_block_starts_with_the_two_set_up_commands():
    first_block = README.split("```")[1].splitlines()
    assert first_block[1].startswith("make demo")
    assert first_block[2].startswith("make test")


def test_it_shows_one_screenshot_that_exists():
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", README)
    assert len(images) == 1
    assert images[0].startswith("docs/_static/screenshots/")
    assert (ROOT / images[0]).is_file()


def test_it_stays_short_and_sends_the_settings_to_the_reference():
    assert len(README.splitlines()) <= 150
    assert "(docs/settings.md)" in README
    # A table of PAYCOLLECT keys here would have to list them all: the reference does.
    listed = set(re.findall(r"^\| `([A-Z_]+)`", README, flags=re.MULTILINE))
    assert not listed or listed >= set(DEFAULTS), sorted(set(DEFAULTS) - listed)


def test_every_link_of_it_leads_to_a_file_of_the_repository():
    links = [link for link in re.findall(r"\]\(([^)#]+)", README) if "://" not in link]
    missing = [link for link in links if not (ROOT / link).exists()]
    assert links
    assert not missing
