"""The example project's REST API against its own OpenAPI schema. The schema's own examples must be what the
example project accepts; then schemathesis generates requests from the schema (valid ones and invalid ones),
each sent as an anonymous caller, a member and a superuser, and no answer may be a server error or differ from
what the schema documents (status, content type, headers, body). OPTIONS answers every endpoint.

The site runs as a deployment runs it, in its own process with its own settings and SQLite file, the sandbox
mounted in place of the service (``migrate``, ``demo_setup``, ``runserver``), on a loopback port: nothing
leaves this machine. How many requests: ``tests/hypothesis_profiles.py`` (the quick profile sends fewer).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests

pytest.importorskip("drf_spectacular", reason="the api extra is not installed")
schemathesis = pytest.importorskip("schemathesis", reason="the test extra is not installed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.example_project import ROOT  # noqa: E402
from tests.hypothesis_profiles import examples  # noqa: E402
from tests.servers import free_port  # noqa: E402

EXAMPLE = ROOT / "example_project"
#: What the machine's environment may hold that the example project must not see.
_SCRUBBED = ("PAYCOLLECT_", "CLUBSITE_", "CELERY_", "DJANGO_", "DATABASE_URL")
PASSWORD = "schema-check-password-0123"
#: Fail on a server error and on anything the schema does not document; nothing else (a valid-looking body
#: the payable hook refuses is a documented 400, not a failure).
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
#: Every operation of the schema (tests/api/test_schema.py checks that these are all of them).
OPERATIONS = [
    ("/api/quotes/", "POST"),
    ("/api/promocodes/validate/", "POST"),
    ("/api/payments/", "GET"),
    ("/api/payments/", "POST"),
    ("/api/payments/{uuid}/", "GET"),
    ("/api/payments/{uuid}/refunds/", "POST"),
    ("/api/payments/{uuid}/capture/", "POST"),
    ("/api/series/{id}/cancel/", "POST"),
    ("/api/direct-orders/", "POST"),
    ("/api/direct-orders/{id}/", "GET"),
]
ROLES = ("anonymous", "member", "staff")
STAFF_PATHS = (
    "/api/payments/{uuid}/refunds/",
    "/api/payments/{uuid}/capture/",
    "/api/series/",
    "/api/direct-orders/",
)


@dataclass
class ExampleSite:
    url: str
    schema: dict[str, Any]
    sessions: dict[str, requests.Session]


def _environment(url: str, database: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SCRUBBED)}
    env.update(
        DJANGO_SETTINGS_MODULE="clubsite.settings",
        CLUBSITE_SITE_URL=url,
        CLUBSITE_DB=str(database),
        CLUBSITE_DEBUG="1",
        CLUBSITE_SANDBOX="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def _signed_in(url: str, username: str | None) -> requests.Session:
    """A session as a browser holds it: signed in through the login page, with the CSRF header DRF's
    session authentication asks of every POST."""
    session = requests.Session()
    if username is not None:
        login = f"{url}/accounts/login/"
        session.get(login, timeout=30).raise_for_status()
        answer = session.post(
            login,
            data={
                "username": username,
                "password": PASSWORD,
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            allow_redirects=False,
            timeout=30,
        )
        assert answer.status_code == 302, answer.text[:500]
        session.headers["X-CSRFToken"] = session.cookies["csrftoken"]  # rotated at login
    return session


def _manage(env: dict[str, str], log: Any, *command: str) -> None:
    done = subprocess.run(  # noqa: S603 (our own manage.py)
        [sys.executable, str(EXAMPLE / "manage.py"), *command],
        env=env,
        cwd=EXAMPLE,
        stdout=log,
        stderr=subprocess.STDOUT,
        timeout=300,
    )
    assert done.returncode == 0, f"manage.py {command[0]} failed: see {log.name}"


def _serve(workdir: Path, log: Any) -> tuple[str, subprocess.Popen[bytes], requests.Response]:
    """``demo_setup`` for the site's URL (it seeds the sandbox with it), then ``runserver`` there until the
    schema answers; on another port when the one found free was taken meanwhile."""
    for _attempt in range(3):
        url = f"http://127.0.0.1:{free_port()}"
        env = _environment(url, workdir / "clubsite.sqlite3")
        _manage(env, log, "demo_setup")
        process = subprocess.Popen(  # noqa: S603
            [
                sys.executable,
                str(EXAMPLE / "manage.py"),
                "runserver",
                url.removeprefix("http://"),
                "--noreload",
            ],
            env=env,
            cwd=EXAMPLE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            try:
                schema = requests.get(f"{url}/api/schema/", params={"format": "json"}, timeout=5)
                if schema.status_code == 200:
                    return url, process, schema
            except requests.RequestException:
                pass
            time.sleep(0.2)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
    raise AssertionError(f"the example site did not start: see {log.name}")


@pytest.fixture
def example_site(tmp_path: Path, example_migrated: Path) -> Iterator[ExampleSite]:
    users = (
        "from django.contrib.auth import get_user_model; User = get_user_model(); "
        f"User.objects.create_superuser('schema-staff', 'schema-staff@example.com', {PASSWORD!r}); "
        f"User.objects.create_user('schema-member', 'schema-member@example.com', {PASSWORD!r}, "
        "first_name='Mona', last_name='Ali')"
    )
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        env = _environment("http://127.0.0.1", tmp_path / "clubsite.sqlite3")
        shutil.copyfile(example_migrated, tmp_path / "clubsite.sqlite3")
        _manage(env, log, "shell", "-c", users)
        url, process, schema = _serve(tmp_path, log)
    try:
        sessions = {
            "anonymous": _signed_in(url, None),
            "member": _signed_in(url, "schema-member"),
            "staff": _signed_in(url, "schema-staff"),
        }
        yield ExampleSite(url=url, schema=schema.json(), sessions=sessions)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    log_text = log_path.read_text(errors="replace")
    assert "Traceback" not in log_text, log_text[-5000:]


def _answers_as_documented(site: ExampleSite, schema: Any, path: str, method: str) -> None:
    """Requests generated from the schema for one operation, each sent as every role; raises the first
    answer that is a server error or differs from the schema."""
    operation = schema[path][method]
    cases = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
    )
    statuses: dict[str, set[int]] = {role: set() for role in ROLES}

    @settings(
        max_examples=examples(30),
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def every_role_gets_a_documented_answer(case: Any) -> None:
        for role in ROLES:
            # The role's cookies over those generated for the schema's cookieAuth (a session cookie that
            # signs no one in: the anonymous caller keeps it). No session object: nothing a response sets
            # (a junk session cookie deleted) carries over to the next request.
            session = site.sessions[role]
            answer = case.call_and_validate(
                base_url=site.url,
                cookies=session.cookies.get_dict(),
                headers={"X-CSRFToken": session.headers["X-CSRFToken"]} if role != "anonymous" else None,
                checks=CHECKS,
                timeout=30,
            )
            statuses[role].add(answer.status_code)

    every_role_gets_a_documented_answer()
    # The run reached past authentication, for whom the operation is; never for an anonymous caller.
    assert not {status for status in statuses["anonymous"] if status < 400}, statuses
    allowed = "staff" if path.startswith(STAFF_PATHS) else "member"
    assert statuses[allowed] - {403}, statuses


@pytest.mark.fuzz
def test_every_answer_of_the_example_api_is_what_its_schema_documents(example_site: ExampleSite) -> None:
    # The schema's examples first: the throttles count what the generated requests send after them.
    _the_schemas_examples_are_accepted(example_site)
    schema = schemathesis.openapi.from_dict(example_site.schema)
    failures = []
    for path, method in OPERATIONS:
        try:
            _answers_as_documented(example_site, schema, path, method)
        except (Exception, BaseExceptionGroup) as failure:  # every operation runs; all failures are reported
            failures.append(f"--- {method} {path}\n{failure}")
    assert not failures, "\n\n".join(failures)
    # OPTIONS, which the schema does not list, answers every endpoint too: with the permissions of its
    # other methods, never with a server error.
    for path, _method in OPERATIONS:
        concrete = path.replace("{uuid}", "3f1c2a9e-8b4d-4c6e-9f0a-1b2c3d4e5f60").replace("{id}", "1")
        for role in ROLES:
            answer = example_site.sessions[role].options(f"{example_site.url}{concrete}", timeout=30)
            expected = (
                403 if role == "anonymous" or (role == "member" and path.startswith(STAFF_PATHS)) else 200
            )
            assert answer.status_code == expected, (role, path, answer.status_code, answer.text[:300])
    # Every role was still signed in at the end (nothing sent logged one out).
    for role, expected in (("anonymous", 403), ("member", 200), ("staff", 200)):
        answer = example_site.sessions[role].get(f"{example_site.url}/api/payments/", timeout=30)
        assert answer.status_code == expected, (role, answer.text)


def _request_examples(schema: dict[str, Any], path: str, method: str) -> list[dict[str, Any]]:
    body = schema["paths"][path][method]["requestBody"]["content"]["application/json"]
    return [example["value"] for example in body["examples"].values()]


def _response_example(schema: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    content = schema["paths"][path][method]["responses"][status]["content"]["application/json"]
    [example] = content["examples"].values()
    value: dict[str, Any] = example["value"]
    return value


def _the_schemas_examples_are_accepted(example_site: ExampleSite) -> None:
    """Each request example of the schema, sent to the example project, is accepted; the quote's and the
    promocode's answers are the schema's answer examples."""
    schema, url, member = example_site.schema, example_site.url, example_site.sessions["member"]

    [quote] = _request_examples(schema, "/api/quotes/", "post")
    answer = member.post(f"{url}/api/quotes/", json=quote, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json() == _response_example(schema, "/api/quotes/", "post", "200")

    [promocode] = _request_examples(schema, "/api/promocodes/validate/", "post")
    answer = member.post(f"{url}/api/promocodes/validate/", json=promocode, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json() == _response_example(schema, "/api/promocodes/validate/", "post", "200")

    [start] = _request_examples(schema, "/api/payments/", "post")
    answer = member.post(f"{url}/api/payments/", json=start, timeout=30)
    assert answer.status_code in (200, 201), answer.text
    started = _response_example(schema, "/api/payments/", "post", "201")
    assert Decimal(answer.json()["amount"]) == Decimal(started["amount"])
    assert answer.json()["reference"].startswith("membership-")
    assert answer.json()["state"] == started["state"]

    # The staff examples: accepted as bodies (a refund of a payment that does not exist is a 404, not a 400).
    staff = example_site.sessions["staff"]
    missing = "3f1c2a9e-8b4d-4c6e-9f0a-1b2c3d4e5f60"
    for refund in _request_examples(schema, "/api/payments/{uuid}/refunds/", "post"):
        answer = staff.post(f"{url}/api/payments/{missing}/refunds/", json=refund, timeout=30)
        assert answer.status_code == 404, (refund, answer.text)
    [order] = _request_examples(schema, "/api/direct-orders/", "post")
    answer = staff.post(f"{url}/api/direct-orders/", json=order, timeout=30)
    assert answer.status_code == 201, answer.text
