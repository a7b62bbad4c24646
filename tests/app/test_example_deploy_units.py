"""The example project's supervision files (example_project/deploy/): systemd units and a compose file for the
web processes, the Celery worker and beat (and, in compose, PostgreSQL and Redis). Each restarts what it runs
when it exits, and runs a command that works: each unit's command is run here, from the checkout, with the
shipped environment file, gunicorn with ``--check-config`` (it loads the configuration and the site) and
Celery with ``--help`` (it loads the Celery app and parses the command's options). The docs include these
files, so they cannot drift. Docker is not run here: the compose file is read as YAML and checked."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.example_project import ROOT

yaml = pytest.importorskip("yaml")  # PyYAML: a dependency of the api extra's drf-spectacular

DEPLOY = ROOT / "example_project" / "deploy"
UNITS = {"web": "clubsite-web.service", "worker": "clubsite-worker.service", "beat": "clubsite-beat.service"}
#: Where the units expect the checkout and its virtualenv.
CHECKOUT = "/srv/clubsite"
VENV_BIN = f"{CHECKOUT}/.venv/bin/"
#: What proves each program's command works without starting it.
DRY_RUN = {"gunicorn": "--check-config", "celery": "--help"}


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd's keys are case-sensitive
    parser.read_string((DEPLOY / "systemd" / name).read_text())
    return parser


def environment_file() -> dict[str, str]:
    pairs = {}
    for line in (DEPLOY / "clubsite.env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def command_of(service: configparser.SectionProxy) -> list[str]:
    """The unit's command, the virtualenv's path left out: ``["celery", "-A", "clubsite", ...]``."""
    argv = shlex.split(service["ExecStart"])
    assert argv[0].startswith(VENV_BIN), argv
    return [argv[0].removeprefix(VENV_BIN), *argv[1:]]


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def run_dry(command: list[str]) -> subprocess.CompletedProcess[str]:
    """``command`` with its dry-run option, from example_project/ with the shipped environment file, with this
    virtualenv's programs."""
    program = Path(sys.executable).parent / command[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAYCOLLECT_", "CLUBSITE_", "DJANGO_"))}
    env.update(environment_file())
    return subprocess.run(  # noqa: S603 (our own files)
        [str(program), *command[1:], DRY_RUN[command[0]]],
        cwd=ROOT / "example_project",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("role", sorted(UNITS))
def test_each_systemd_unit_restarts_what_it_runs_and_its_command_works(role):
    parsed = unit(UNITS[role])
    service = parsed["Service"]
    # always, not on-failure: a Celery worker may exit with status 0 after a broker outage (docs/celery.md).
    assert service["Restart"] == "always"
    assert float(service["RestartSec"]) > 0
    # systemd's default gives up after 5 starts in 10 s: a Redis outage must not end the supervision.
    assert parsed["Unit"]["StartLimitIntervalSec"] == "0"
    assert parsed["Install"]["WantedBy"] == "multi-user.target"
    assert service["WorkingDirectory"] == f"{CHECKOUT}/example_project"
    assert service["EnvironmentFile"] == "/etc/clubsite/clubsite.env"
    assert service["User"] == "clubsite"

    command = command_of(service)
    expected = {"web": ["gunicorn", "-c"], "worker": ["celery", "-A"], "beat": ["celery", "-A"]}[role]
    assert command[:2] == expected
    if command[0] == "celery":
        assert command[2:4] == ["clubsite", role]  # the app of example_project/clubsite/celery.py
    done = run_dry(command)
    assert done.returncode == 0, done.stdout + done.stderr


def test_beat_keeps_its_schedule_in_its_state_directory():
    service = unit(UNITS["beat"])["Service"]
    command = command_of(service)
    schedule = command[command.index("--schedule") + 1]
    assert schedule.startswith(f"/var/lib/{service['StateDirectory']}/")


def test_a_command_that_does_not_exist_fails_the_dry_run():
    # What the test above relies on: a wrong app path or option is caught, not printed as help.
    assert run_dry(["celery", "-A", "clubsite.no_such_app", "worker"]).returncode != 0
    assert run_dry(["celery", "-A", "clubsite", "worker", "--no-such-option"]).returncode != 0
    assert run_dry(["gunicorn", "-c", "gunicorn.conf.py", "clubsite.no_such_wsgi"]).returncode != 0


def test_the_compose_file_restarts_every_service_and_runs_the_units_commands():
    services = compose()["services"]
    assert {"web", "worker", "beat", "postgres", "redis"} <= set(services)
    for name, service in services.items():
        expected = ("on-failure",) if name == "migrate" else ("always", "unless-stopped")
        assert service.get("restart") in expected, name
    for role, name in UNITS.items():
        # The same command as the systemd unit's (checked to work above), in the same directory.
        assert services[role]["command"] == command_of(unit(name)["Service"]), role
        assert services[role]["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert services[role]["depends_on"]["redis"]["condition"] == "service_healthy"
        assert services[role]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert services[role]["env_file"] == ".env"
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    for name in ("postgres", "redis"):
        assert services[name]["healthcheck"]["test"], name


def test_the_compose_file_points_the_site_at_its_own_postgresql_and_redis():
    services = compose()["services"]
    environment = services["worker"]["environment"]
    database = r"postgres://club:\$\{POSTGRES_PASSWORD:\?[^}]*\}@postgres:5432/club"
    assert re.fullmatch(database, environment["DATABASE_URL"])
    assert environment["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert services["postgres"]["environment"]["POSTGRES_DB"] == "club"
    assert services["web"]["environment"]["GUNICORN_BIND"] == "0.0.0.0:8000"
    assert services["web"]["environment"]["DATABASE_URL"] == environment["DATABASE_URL"]
    assert "redis://redis:6379/0" in str(services["beat"]["environment"])


def test_the_image_is_built_from_the_checkout_and_runs_from_example_project():
    build = compose()["services"]["web"]["build"]
    context = (DEPLOY / build["context"]).resolve()
    assert context == ROOT
    dockerfile = (context / build["dockerfile"]).read_text()
    workdirs = re.findall(r"^WORKDIR (\S+)$", dockerfile, flags=re.MULTILINE)
    assert workdirs[-1] == unit(UNITS["web"])["Service"]["WorkingDirectory"]
    assert '\nCMD ["gunicorn", "-c", "gunicorn.conf.py"]\n' in dockerfile


def test_the_image_installs_the_extras_the_site_uses_and_the_committed_catalogues():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    [extras] = re.findall(r'pip install -e "\.\[([\w,]+)\]"', dockerfile)
    # xlsx: the admin's and paycollect_export's spreadsheets; redis: the worker's and beat's broker client.
    assert {"api", "xlsx", "redis"} <= set(extras.split(","))
    # The compiled catalogues are committed and copied with the checkout (the dockerignore keeps them).
    committed = subprocess.run(
        ["git", "ls-files", "*.mo"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(committed) >= 3, committed
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text()
    assert ".mo" not in ignored
    assert "locale" not in ignored
    assert "not in the repository" not in dockerfile
    assert "messages.py compile" not in dockerfile


def test_the_deployment_docs_include_the_files_themselves():
    docs = (ROOT / "docs" / "deployment.md").read_text()
    for path in [*(f"systemd/{name}" for name in UNITS.values()), "compose.yaml", "clubsite.env.example"]:
        assert f"```{{literalinclude}} ../example_project/deploy/{path}\n" in docs, path
