"""The example project's ``demo_setup`` gives its accounts the published passwords only with DEBUG on: with
DEBUG off (a site others may reach) each account gets a random password, printed once."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.example_project import run_example

PUBLISHED = {"demo": "demo-password-123", "member": "member-password-123"}

SIGN_IN = """
import json, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
import django
django.setup()
from django.contrib.auth import authenticate
tried = json.loads(sys.argv[1])
print(json.dumps([authenticate(username=name, password=password) is not None for name, password in tried]))
"""


@pytest.fixture
def database(example_migrated: Path, tmp_path: Path) -> Path:
    """An empty, migrated database of the example's own."""
    return Path(shutil.copyfile(example_migrated, tmp_path / "site.sqlite3"))


def demo_setup(database: Path, debug: str, *args: str) -> tuple[int, str]:
    done = run_example(
        "example_project/manage.py", "demo_setup", *args, CLUBSITE_DEBUG=debug, CLUBSITE_DB=str(database)
    )
    return done.returncode, done.stdout + done.stderr


def signs_in(database: Path, *tried: tuple[str, str]) -> list[bool]:
    """Whether each (username, password) signs in."""
    done = run_example("-c", SIGN_IN, json.dumps(tried), CLUBSITE_DEBUG="0", CLUBSITE_DB=str(database))
    assert done.returncode == 0, done.stderr
    answer: list[bool] = json.loads(done.stdout.splitlines()[-1])
    return answer


def test_with_debug_off_the_published_passwords_are_refused_and_random_ones_printed(database):
    status, output = demo_setup(database, "0")
    assert status == 0, output
    assert "the published password of 'demo' is refused" in output
    assert "the published password of 'member' is refused" in output
    for published in PUBLISHED.values():
        assert published not in output
    staff = re.search(r"staff login +demo / (\S+)", output)
    member = re.search(r"member login member / (\S+)\)", output)
    assert staff, output
    assert member, output
    assert len(staff.group(1)) >= 16
    assert staff.group(1) != member.group(1)

    printed = [("demo", staff.group(1)), ("member", member.group(1))]
    assert signs_in(database, *PUBLISHED.items(), *printed) == [False, False, True, True]


def test_with_debug_off_a_password_of_ones_own_must_pass_the_validators(database):
    status, output = demo_setup(database, "0", "--password", "password")
    assert status != 0
    assert "--password:" in output
    assert "too common" in output

    status, output = demo_setup(database, "0", "--password", "a staging password of my own")
    assert status == 0, output
    assert signs_in(database, ("demo", "a staging password of my own")) == [True]


def test_with_debug_on_the_demo_keeps_its_published_passwords(database):
    status, output = demo_setup(database, "1")
    assert status == 0, output
    assert "staff login        demo / demo-password-123" in output
    assert "member login member / member-password-123" in output
    assert "password of" not in output
    assert signs_in(database, *PUBLISHED.items()) == [True, True]
