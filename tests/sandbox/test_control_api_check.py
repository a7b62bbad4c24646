"""The sandbox's control API is never open by accident: a system check refuses it with DEBUG off (a warning
when the settings acknowledge a staging sandbox), and the example project turns it on only with DEBUG or
an explicit opt-in."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from tests.example_project import run_example


def sandbox_checks(**settings: object) -> list[str]:
    with override_settings(**settings):
        return sorted(m.id for m in run_checks(databases=[]) if m.id.startswith("paycollect_sandbox."))


MOUNTED = {"ROOT_URLCONF": "tests.sandbox.urls"}


@pytest.mark.parametrize(
    ("debug", "sandbox", "urls", "expected"),
    [
        (False, {"CONTROL_API": True}, MOUNTED, ["paycollect_sandbox.E001"]),
        (False, {"CONTROL_API": True, "STAGING": True}, MOUNTED, ["paycollect_sandbox.W001"]),
        (True, {"CONTROL_API": True}, MOUNTED, []),
        (False, {"CONTROL_API": False}, MOUNTED, []),
        (False, {}, MOUNTED, []),  # off by default
        (False, {"CONTROL_API": True}, {"ROOT_URLCONF": "tests.urls"}, []),  # not mounted: not reachable
    ],
)
def test_a_reachable_control_api_without_debug_is_an_error(debug, sandbox, urls, expected):
    assert sandbox_checks(DEBUG=debug, PAYCOLLECT_SANDBOX=sandbox, **urls) == expected


#: Run in the example project: what its control API answers (no database needed when it is off).
ASK_IDENTITY = """
import django, os, sys
sys.path.insert(0, "example_project")
os.environ["DJANGO_SETTINGS_MODULE"] = "clubsite.settings"
django.setup()
from django.test import Client
print(Client(HTTP_HOST="127.0.0.1").get("/sandbox/_control/identity").status_code)
"""


def test_the_example_turns_the_control_api_on_only_with_debug_or_an_explicit_opt_in(tmp_path):
    live_like = run_example("example_project/manage.py", "check", CLUBSITE_DEBUG="0")
    assert live_like.returncode == 0, live_like.stderr
    assert "paycollect_sandbox" not in live_like.stdout + live_like.stderr
    asked = run_example("-c", ASK_IDENTITY, CLUBSITE_DEBUG="0", CLUBSITE_DB=str(tmp_path / "never.sqlite3"))
    assert asked.stdout.strip() == "404", asked.stderr  # off: nothing to read, nothing to complete

    staging = run_example(
        "example_project/manage.py", "check", CLUBSITE_DEBUG="0", CLUBSITE_SANDBOX_CONTROL_API="1"
    )
    assert staging.returncode == 0, staging.stderr
    assert "(paycollect_sandbox.W001)" in staging.stdout + staging.stderr

    demo = run_example("example_project/manage.py", "check", CLUBSITE_DEBUG="1")
    assert demo.returncode == 0, demo.stderr
    assert "paycollect_sandbox" not in demo.stdout + demo.stderr
