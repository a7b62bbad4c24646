"""The quick start (docs/quickstart.md), followed as written: its files and commands are read from the page
itself, run in an empty directory (a new ``django-admin startproject``), and the shop they make takes a
payment on the sandbox in Chromium. So the page cannot drift from what works.

What the page's blocks mean (CONTRIBUTING.md, "The quick start is tested"): a ``{code-block}`` with a
``:caption:`` is a step; a plain fence is an illustration. A caption that is a path writes that file (relative
to the directory the commands are in at that point), ``<path>, at the end`` appends to it. A ``console`` block
captioned ``Terminal ...`` runs its ``$`` lines (``\\`` continues one) in bash, ``cd`` moving the directory;
every output line the page shows under a command must be in what it printed (a line ``...`` stands for lines
not shown). Captioned ``... (keep it
running)``, the command runs in the background: it is ready once it has printed the first output line the page
shows. The package is the one installed in this virtualenv (CI's wheel stage installs the built wheel); the
ports 8000 and 8001 the page uses are replaced by free ones.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .support import ROOT, free_port, needs_browser, screenshot

try:
    from playwright.sync_api import expect
except ImportError:  # the tests are skipped (needs_browser), or fail where the browser is required
    expect = None  # type: ignore[assignment]

QUICKSTART = ROOT / "docs" / "quickstart.md"
#: The sample's user, as the page creates it.
USERNAME, PASSWORD = "mona", "mona-password-123"
#: Environment variables of the machine that must not reach the new project: it must be the page's.
_SCRUBBED_PREFIXES = ("PAYCOLLECT_", "CLUBSITE_", "CELERY_", "DJANGO_", "DATABASE_URL")

_DIRECTIVE = re.compile(r"^```\{code-block\}\s+(?P<language>\S+)\s*$")
_OPTION = re.compile(r"^:(?P<name>[\w-]+):\s*(?P<value>.*)$")
_FILE_CAPTION = re.compile(r"^(?P<path>[\w.-]+(?:/[\w.-]+)*)(?P<append>, at the end)?$")
_BACKGROUND = " (keep it running)"


@dataclass
class Command:
    line: int
    text: str
    output: list[str] = field(default_factory=list)
    background: bool = False


@dataclass
class FileStep:
    line: int
    path: str
    text: str
    append: bool


def steps(markdown: str) -> list[FileStep | Command]:
    """The page's steps, in order: the files it writes and the commands it runs."""
    found: list[FileStep | Command] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        directive = _DIRECTIVE.match(lines[index])
        index += 1
        if directive is None:
            continue
        start = index
        options: dict[str, str] = {}
        while index < len(lines) and (option := _OPTION.match(lines[index])):
            options[option["name"]] = option["value"].strip()
            index += 1
        body: list[str] = []
        while index < len(lines) and lines[index] != "```":
            body.append(lines[index])
            index += 1
        index += 1
        caption = options.get("caption")
        if caption is None:
            continue
        while body and not body[0].strip():
            body.pop(0)
        if directive["language"] == "console":
            assert caption.startswith("Terminal"), (
                f"line {start}: a console step's caption names its terminal"
            )
            found += _commands(start, body, background=caption.endswith(_BACKGROUND))
            continue
        written = _FILE_CAPTION.match(caption)
        assert written, f"line {start}: {caption!r} is neither a file nor 'Terminal ...'"
        found.append(FileStep(start, written["path"], "\n".join(body) + "\n", bool(written["append"])))
    return found


def _commands(line: int, body: list[str], *, background: bool) -> list[Command]:
    commands: list[Command] = []
    continued = False
    for text in body:
        if continued:
            commands[-1].text += "\n" + text
        elif text.startswith("$ "):
            commands.append(Command(line, text[2:], background=background))
        elif text.strip() and text.strip() != "...":  # "...": lines not shown
            assert commands, f"line {line}: output before any command"
            commands[-1].output.append(text.strip())
        continued = text.endswith("\\") and bool(commands)
    return commands


def test_the_quickstart_page_is_made_of_steps_this_test_understands() -> None:
    found = steps(QUICKSTART.read_text())
    files = {step.path for step in found if isinstance(step, FileStep)}
    commands = [step.text for step in found if isinstance(step, Command)]
    # The whole sample: settings, Celery, the app's model, views, receivers, URLs and every template it uses.
    assert {
        "shop/settings.py",
        "shop/celery.py",
        "shop/__init__.py",
        "shop/urls.py",
        "orders/models.py",
        "orders/views.py",
        "orders/urls.py",
        "orders/receivers.py",
        "orders/apps.py",
        "orders/templates/orders/orders.html",
        "orders/templates/orders/checkout.html",
        "orders/templates/orders/result.html",
        "orders/templates/registration/login.html",
    } <= files
    templates = {
        name
        for step in found
        if isinstance(step, FileStep)
        for name in re.findall(r"""["'](\w+/[\w/]+\.html)["']""", step.text)
    }
    # Nothing referenced but not defined: every template a view renders is one of the page's files.
    assert templates
    assert templates <= {path.split("/templates/", 1)[-1] for path in files}
    # The sandbox first, then the settings that read what it wrote, then migrate.
    sandbox = next(i for i, text in enumerate(commands) if "django_paycollect.sandbox" in text)
    migrate = next(i for i, text in enumerate(commands) if "manage.py migrate" in text)
    assert commands[0].startswith("django-admin startproject")
    assert sandbox < migrate
    settings = next(step for step in found if isinstance(step, FileStep) and step.path == "shop/settings.py")
    assert "sandbox.json" in settings.text
    assert "--info-file sandbox.json" in commands[sandbox]


# --- the page, followed -------------------------------------------------------------------------------------


class Follower:
    """Runs the page's steps in ``root``; stops what it started in the background."""

    def __init__(self, root: Path, ports: dict[str, int], *, from_environment: bool = False) -> None:
        self.cwd = root
        # As the page's production note says: the service's values from the environment, each a text as a
        # shell sets it (VARIABLE_AMOUNT_ID "1", not 1), instead of the sandbox's file.
        self.from_environment = from_environment
        self.ports = ports
        self.background: list[tuple[subprocess.Popen[bytes], Path]] = []
        env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED_PREFIXES)}
        # `python` and `django-admin` are this virtualenv's, with the package installed.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("PYTHONPATH", None)
        self.env = env

    def local(self, text: str) -> str:
        """``text`` with this run's free ports for the page's 8000 (the shop) and 8001 (the sandbox)."""
        for page_port, port in self.ports.items():
            text = text.replace(f"127.0.0.1:{page_port}", f"127.0.0.1:{port}")
            text = text.replace(f"--port {page_port}", f"--port {port}")
        return text

    def run(self, step: FileStep | Command) -> None:
        if isinstance(step, FileStep):
            path = self.cwd / step.path
            path.parent.mkdir(parents=True, exist_ok=True)
            text = self.local(step.text)
            if step.append:
                assert path.exists(), f"line {step.line}: {step.path} to add to is not there"
                text = path.read_text() + "\n" + text
            path.write_text(text)
            return
        command = self.local(step.text)
        self._environment_from_the_sandbox_file()
        if command.startswith("cd "):
            self.cwd = (self.cwd / command[3:].strip()).resolve()
            assert self.cwd.is_dir(), f"line {step.line}: {command}"
        elif step.background:
            self._start(step, command)
        else:
            done = subprocess.run(  # noqa: S603 (the page's own commands)
                ["bash", "-c", command],  # noqa: S607
                cwd=self.cwd,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            printed = done.stdout + done.stderr
            assert done.returncode == 0, f"line {step.line}: {command}\n{printed}"
            for expected in map(self.local, step.output):
                assert expected in printed, (
                    f"line {step.line}: {command} did not print {expected!r}\n{printed}"
                )

    def _environment_from_the_sandbox_file(self) -> None:
        info = self.cwd / "sandbox.json"
        if not self.from_environment or not info.exists():
            return
        for name, value in json.loads(info.read_text()).items():
            if value is not None and not isinstance(value, dict | list):
                self.env[f"PAYCOLLECT_{name.upper()}"] = str(value)
        info.rename(self.cwd / "sandbox.json.read-into-the-environment")

    def _start(self, step: Command, command: str) -> None:
        assert step.output, f"line {step.line}: a command kept running shows the line that says it is ready"
        log_path = self.cwd / f".background-{len(self.background)}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(  # noqa: S603
                ["bash", "-c", command],  # noqa: S607
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: runserver's reloader has a child
            )
        self.background.append((process, log_path))
        ready = self.local(step.output[0])
        deadline = time.monotonic() + 90
        while ready not in log_path.read_text(errors="replace"):
            assert process.poll() is None, f"line {step.line}: {command} exited\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"line {step.line}: {command} never said {ready!r}"
            time.sleep(0.2)

    def stop(self) -> None:
        for process, _ in self.background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=15)

    def logs(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-3000:] for _, path in self.background)


@pytest.fixture(params=["sandbox file", "environment"])
def shop(browser_available: None, tmp_path: Path, request: Any) -> Iterator[tuple[str, Follower]]:
    """The quick start's shop, built and running as the page says, its settings read from the sandbox's file
    or from the environment as text; its URL."""
    ports = {"8000": free_port(), "8001": free_port()}
    follower = Follower(tmp_path, ports, from_environment=request.param == "environment")
    try:
        for step in steps(QUICKSTART.read_text()):
            follower.run(step)
        yield f"http://127.0.0.1:{ports['8000']}", follower
    finally:
        follower.stop()


@pytest.mark.browser
@needs_browser
def test_the_quickstart_shop_takes_a_payment_on_the_sandbox(page: Any, shop: tuple[str, Follower]) -> None:
    url, follower = shop
    try:
        _walk(page, url)
    except BaseException:
        print(follower.logs())
        raise


def _walk(page: Any, url: str) -> None:
    # Someone not signed in is sent to the sign-in page, never an error.
    for path in ("/orders/1/pay/", "/orders/paid/?transaction_uuid=x", "/orders/failed/", "/orders/"):
        response = page.goto(f"{url}{path}")
        assert response.status == 200, path
        assert page.url.startswith(f"{url}/accounts/login/?next="), path
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("#login button[type=submit]")
    page.wait_for_url(f"{url}/orders/")
    expect(page.locator("#orders")).to_contain_text("None yet.")

    # An order, its checkout: the app's rules first, on their fields.
    page.click("#buy")
    page.wait_for_url(re.compile(r"/orders/\d+/pay/$"))
    page.fill("#id_name", "Mona")
    page.fill("#id_email", "mona@example.com")
    page.fill("#id_phone_number", "01001234567")
    page.click("#checkout button[type=submit]")
    expect(page.locator("#checkout")).to_contain_text("Enter a first and a last name, separated by a space.")
    expect(page.locator("#checkout")).to_contain_text("Start with + and the country code")

    # Paid on the sandbox's page: back through the app's return view to SUCCESS_URL.
    page.fill("#id_name", "Mona Ali")
    page.fill("#id_phone_number", "+201001234567")
    page.click("#checkout button[type=submit]")
    page.wait_for_url(re.compile(r"/pay/[0-9a-f-]+/"))
    expect(page.locator("#total")).to_contain_text("150.00")
    page.click("button.pay")
    page.wait_for_url(re.compile(r"/orders/paid/\?transaction_uuid="), timeout=30_000)
    expect(page.locator("#result")).to_have_text("Paid, thank you!")
    screenshot(page, "quickstart-paid")
    page.click("text=Your orders")
    expect(page.locator("#orders")).to_contain_text("Gift card, 150.00 EGP: paid")

    # Declined: FAILURE_URL, and the order can be paid again.
    page.click("#buy")
    page.wait_for_url(re.compile(r"/orders/\d+/pay/$"))
    page.fill("#id_name", "Mona Ali")
    page.fill("#id_email", "mona@example.com")
    page.fill("#id_phone_number", "+201001234567")
    page.click("#checkout button[type=submit]")
    page.wait_for_url(re.compile(r"/pay/[0-9a-f-]+/"))
    page.click("button.decline")
    page.wait_for_url(re.compile(r"/orders/failed/\?transaction_uuid="), timeout=30_000)
    expect(page.locator("#result")).to_have_text("Your payment did not go through")
    page.click("text=Try again")
    page.wait_for_url(re.compile(r"/orders/\d+/pay/$"))

    # Nobody else's payment shows: another uuid is a 404.
    response = page.goto(f"{url}/orders/paid/?transaction_uuid=0b0b0b0b-1111-4222-8333-444455556666")
    assert response.status == 404
