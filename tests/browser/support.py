"""The club site (example_project) served for the browser tests, and what they share.

The site runs in its own process with its own settings (``clubsite.settings``: the tests' settings are
not the site's), on a free loopback port, with a temporary SQLite file: ``migrate``, then
``demo_setup``, then ``runserver --noreload`` (threaded). Chromium is Debian's, driven by Playwright
for Python through ``executable_path``: Playwright never downloads a browser here.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from django_paycollect.sandbox.testing import SandboxControl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_project"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
DOCS_SCREENSHOTS = ROOT / "docs" / "_static" / "screenshots"
#: Set to 1 (``make test-browser`` does) to fail instead of skipping when the browser is missing.
REQUIRE_BROWSER = os.environ.get("PAYCOLLECT_REQUIRE_BROWSER") == "1"
#: Set to 1 to copy the documentation's screenshots into docs/_static/screenshots/ (then commit them).
UPDATE_SCREENSHOTS = os.environ.get("PAYCOLLECT_UPDATE_SCREENSHOTS") == "1"

CHROMIUM = os.environ.get("PAYCOLLECT_TEST_CHROMIUM", "/usr/bin/chromium")
#: Flags for a headless Chromium on a machine with a closed network (and as root, hence no sandbox).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1200, "height": 760}

STAFF_USERNAME = "demo"
STAFF_PASSWORD = "demo-password-123"  # the demo's published credentials (demo_setup)
MEMBER_USERNAME = "member"
MEMBER_PASSWORD = "member-password-123"  # the demo member's, also published (demo_setup)

# Environment variables of the machine that must not reach the site: it must be the demo.
_SCRUBBED_PREFIXES = ("PAYCOLLECT_", "CLUBSITE_", "CELERY_", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")


def browser_missing() -> str:
    """Why the browser tests cannot run here ("" when they can)."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (Debian: apt-get install chromium; see .ci/browser.sh)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[browser]')"
    return ""


needs_browser = pytest.mark.skipif(
    bool(browser_missing()) and not REQUIRE_BROWSER, reason=browser_missing() or "browser available"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ClubSite:
    """The running example project."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    database: Path

    @property
    def control(self) -> SandboxControl:
        """The mounted sandbox's control API (complete payments, plan callbacks, inject faults)."""
        return SandboxControl(f"{self.url}/sandbox")

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def site_environment(url: str, database: Path, language: str = "en") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(
        DJANGO_SETTINGS_MODULE="clubsite.settings",
        CLUBSITE_SITE_URL=url,
        CLUBSITE_DB=str(database),
        # The language of visitors (and of the service's answers) that ask for none: LANGUAGE_CODE.
        CLUBSITE_LANGUAGE_CODE=language,
        CLUBSITE_DEBUG="1",  # runserver serves the admin's static files only with DEBUG
        CLUBSITE_SANDBOX="1",
        # Failed callback deliveries are retried soon, so a test never waits minutes.
        CLUBSITE_SANDBOX_CALLBACK_RETRY_DELAYS="0.5,1,2",
        PYTHONUNBUFFERED="1",
    )
    return env


def start_club_site(
    workdir: Path,
    *,
    migrated: Path | None = None,
    language: str = "en",
    startup_timeout: float = 60.0,
    log_path: Path | None = None,
) -> ClubSite:
    """migrate (or copy ``migrated``, the run's migrated database: tests/support/example_site.py), demo_setup,
    then serve the site (``LANGUAGE_CODE = language``) on a free loopback port until it answers. Its output
    goes to ``log_path`` (default: the browser artifacts' server log)."""
    workdir.mkdir(parents=True, exist_ok=True)
    database = workdir / "clubsite.sqlite3"
    for stale in workdir.glob("clubsite.sqlite3*"):
        stale.unlink()
    if migrated is not None:
        shutil.copyfile(migrated, database)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = site_environment(url, database, language)
    manage = [sys.executable, str(EXAMPLE / "manage.py")]
    if log_path is None:
        log_path = ARTIFACTS / ("server.log" if language == "en" else f"server-{language}.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        commands = (
            [["demo_setup"]]
            if migrated is not None
            else [["migrate", "--noinput", "-v", "0"], ["demo_setup"]]
        )
        for command in commands:
            done = subprocess.run(  # noqa: S603 (our own manage.py)
                [*manage, *command], env=env, cwd=EXAMPLE, stdout=log, stderr=subprocess.STDOUT, timeout=300
            )
            if done.returncode != 0:
                raise RuntimeError(f"manage.py {command[0]} failed:\n{log_path.read_text(errors='replace')}")
        process = subprocess.Popen(  # noqa: S603
            [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
            env=env,
            cwd=EXAMPLE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    site = ClubSite(url=url, process=process, log_path=log_path, database=database)
    deadline = time.monotonic() + startup_timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the club site exited with status {process.returncode}:\n{site.log_tail()}")
        try:
            if requests.get(f"{url}/", timeout=2).status_code == 200:
                return site
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            site.stop()
            raise RuntimeError(
                f"the club site did not answer within {startup_timeout:g} s:\n{site.log_tail()}"
            )
        time.sleep(0.2)


def screenshot(page: Any, name: str, *, docs: bool = False, full_page: bool = False) -> Path:
    """Save ``test-artifacts/browser/<name>.png``; with ``docs``, also the documentation's copy when
    PAYCOLLECT_UPDATE_SCREENSHOTS=1 (so ordinary runs leave the committed PNGs alone)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page, animations="disabled", caret="hide")
    if docs and UPDATE_SCREENSHOTS:
        DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_SCREENSHOTS / f"{name}.png")
    return path


def new_page(request: pytest.FixtureRequest, chromium: Any, **options: Any) -> Iterator[Any]:
    """A page in a fresh context; a screenshot of it is kept when the test fails. The browser asks for
    English (Accept-Language) unless ``locale`` says otherwise."""
    options.setdefault("viewport", VIEWPORT)
    options.setdefault("locale", "en-US")
    context = chromium.new_context(timezone_id="UTC", **options)
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    failed = getattr(request.node, "report_call", None)
    if failed is not None and failed.failed:
        screenshot(page, f"FAILED-{request.node.name}", full_page=True)
    context.close()
