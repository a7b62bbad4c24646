"""The example project's supervision files (example_project/deploy/): systemd units and a compose file for the
web processes, the Celery worker and beat (and, in compose, PostgreSQL and Redis), and the units of the site
without a broker: a db_worker and timers running the periodic jobs' commands at the beat schedule's intervals.
Each restarts what it runs when it exits, and runs a command that works: each unit's command is run here,
from the checkout, with the shipped environment file, gunicorn with ``--check-config`` (it loads the
configuration and the site), Celery and ``manage.py`` with ``--help`` (they load the app and parse the
command's options); the timers' commands are also run for real, and the site then knows its periodic jobs
ran. ``systemd-analyze verify`` reads every unit and timer where systemd is installed. The docs include these
files, so they cannot drift. Docker is not run here: the compose file is read as YAML and checked."""

from __future__ import annotations

import configparser
import datetime as dt
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from celery.schedules import crontab

from django_paycollect.models import HousekeepingRun
from django_paycollect.schedules import BEAT_SCHEDULE
from tests.example_project import ROOT, run_example
from tests.support.example_site import copy_of

yaml = pytest.importorskip("yaml")  # PyYAML: a dependency of the api extra's drf-spectacular

DEPLOY = ROOT / "example_project" / "deploy"
UNITS = {"web": "clubsite-web.service", "worker": "clubsite-worker.service", "beat": "clubsite-beat.service"}
#: Where the units expect the checkout and its virtualenv.
CHECKOUT = "/srv/clubsite"
VENV_BIN = f"{CHECKOUT}/.venv/bin/"
#: What proves each program's command works without starting it.
DRY_RUN = {"gunicorn": "--check-config", "celery": "--help", "python": "--help"}
#: The site without a broker (PAYCOLLECT["TASK_RUNNER"] = "django"): its worker, and the periodic jobs'
#: timers, each starting the oneshot service of the same name: {timer: (its beat entry, its command)}.
DB_WORKER = "clubsite-db-worker.service"
TIMERS = {
    "clubsite-sweep.timer": ("paycollect-sweep-callbacks", ["paycollect_process_callbacks", "--stuck"]),
    "clubsite-reconcile.timer": ("paycollect-reconcile", ["paycollect_reconcile"]),
    "clubsite-prune.timer": ("paycollect-prune", ["paycollect_prune"]),
}
#: systemd's time spans as the timers write them ("1min", "15min", "2h").
SPANS = {"s": 1, "sec": 1, "min": 60, "h": 3600, "d": 86400}


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
    # Its worker and beat are Celery's, whatever the environment file says (the site without a broker).
    assert environment["CLUBSITE_TASK_RUNNER"] == "celery"
    assert environment_file()["CLUBSITE_TASK_RUNNER"] == "django"
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
    # xlsx: the admin's and paycollect_export's spreadsheets; redis: the worker's and beat's broker client;
    # tasks: db_worker, for the site on Django's task framework.
    assert {"api", "xlsx", "redis", "tasks"} <= set(extras.split(","))
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
    units = [*UNITS.values(), DB_WORKER, *TIMERS, *(timer_service(timer) for timer in TIMERS)]
    for path in [*(f"systemd/{name}" for name in units), "compose.yaml", "clubsite.env.example"]:
        assert f"```{{literalinclude}} ../example_project/deploy/{path}\n" in docs, path


# --- the site without a broker: a db_worker and the timers ----------------------------------------------


def timer_service(timer: str) -> str:
    return timer.removesuffix(".timer") + ".service"


def span(text: str) -> dt.timedelta:
    """One systemd time span of the forms the timers use: ``1min``, ``15min``, ``30s``, ``2h``."""
    match = re.fullmatch(r"(\d+)\s*([a-z]+)", text.strip())
    assert match, text
    assert match[2] in SPANS, text
    return dt.timedelta(seconds=int(match[1]) * SPANS[match[2]])


def test_the_db_worker_restarts_what_it_runs_and_its_command_works():
    parsed = unit(DB_WORKER)
    service = parsed["Service"]
    assert service["Restart"] == "always"
    assert float(service["RestartSec"]) > 0
    assert parsed["Unit"]["StartLimitIntervalSec"] == "0"
    assert parsed["Install"]["WantedBy"] == "multi-user.target"
    web = unit(UNITS["web"])["Service"]
    for key in ("User", "Group", "WorkingDirectory", "EnvironmentFile"):
        assert service[key] == web[key], key
    # No broker: it needs the database only.
    assert "redis" not in parsed["Unit"]["After"]
    # Longer than the payment app's read TIMEOUT (30 s), so a running verification ends before the kill.
    assert int(service["TimeoutStopSec"]) > 30
    command = command_of(service)
    assert command[:3] == ["python", "manage.py", "db_worker"]
    done = run_dry(command)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("timer", sorted(TIMERS))
def test_each_timer_runs_its_job_as_often_as_its_beat_entry(timer):
    entry = BEAT_SCHEDULE[TIMERS[timer][0]]
    parsed = unit(timer)
    assert parsed["Timer"]["Unit"] == timer_service(timer)
    assert parsed["Install"]["WantedBy"] == "timers.target"
    schedule = entry["schedule"]
    if isinstance(schedule, dt.timedelta):
        # Every interval from the last start (and once that long after boot): a run still going is not
        # started twice, as beat's expires keeps runs from piling up.
        assert span(parsed["Timer"]["OnUnitActiveSec"]) == schedule
        assert span(parsed["Timer"]["OnBootSec"]) == schedule
        # systemd's default accuracy (a minute) would be as long as the sweep's interval.
        assert span(parsed["Timer"]["AccuracySec"]) <= dt.timedelta(seconds=1)
    else:
        # A crontab entry: the same time of day, made up after the machine was off.
        assert isinstance(schedule, crontab)
        [(hour, minute)] = [(h, m) for h in schedule.hour for m in schedule.minute]
        assert parsed["Timer"]["OnCalendar"] == f"*-*-* {hour:02d}:{minute:02d}:00"
        assert parsed["Timer"]["Persistent"] == "true"


@pytest.mark.parametrize("timer", sorted(TIMERS))
def test_each_timers_service_runs_the_jobs_command_once_and_the_command_works(timer):
    entry_name, job = TIMERS[timer]
    service = unit(timer_service(timer))["Service"]
    # oneshot: the timer waits for the run to end before it counts to the next.
    assert service["Type"] == "oneshot"
    assert "Restart" not in service  # the timer starts it again, not systemd's restart
    web = unit(UNITS["web"])["Service"]
    for key in ("User", "Group", "WorkingDirectory", "EnvironmentFile"):
        assert service[key] == web[key], key
    command = command_of(service)
    assert command[:2] == ["python", "manage.py"]
    assert command[2 : 2 + len(job)] == job
    # The beat entry's arguments, as the command spells them.
    for name, value in BEAT_SCHEDULE[entry_name].get("kwargs", {}).items():
        option = "--" + name.replace("_", "-")
        assert command[command.index(option) + 1] == value, option
    done = run_dry(command)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_command_the_project_does_not_have_fails_the_dry_run():
    # --help proves the command exists in the site; argparse answers --help before it looks at the other
    # options, so the timers' commands are also run for real below, and db_worker's options parsed.
    assert run_dry(["python", "manage.py", "paycollect_no_such_command"]).returncode != 0


def test_running_the_timers_commands_records_the_runs_as_beat_does(example_migrated, tmp_path):
    """The site whose periodic jobs run from the timers, not beat: once the sweep's and reconciliation's
    services have run, its database check no longer says they have not run (paycollect.I001) and warns of
    nothing late (W007), and ``paycollect_report`` says when each ran. Run for real, as systemd runs them:
    the shipped environment file on a migrated copy of the site's database."""
    database = copy_of(example_migrated, tmp_path / "site.sqlite3")
    # The machine's PostgreSQL and Redis of the shipped file replaced by the copy (run_example sets the key).
    skipped = ("DATABASE_URL", "CELERY_BROKER_URL", "CLUBSITE_SECRET_KEY")
    environ = {k: v for k, v in environment_file().items() if k not in skipped}
    environ["CLUBSITE_DB"] = str(database)

    def manage(*argv: str) -> subprocess.CompletedProcess[str]:
        done = run_example("example_project/manage.py", *argv, **environ)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    manage("migrate", "--noinput", "-v", "0")  # django-tasks-db's table: the file runs the Django runner
    checked = manage("check", "--database", "default")
    assert "(paycollect.I001)" in checked.stdout + checked.stderr  # the migration's rows: not run yet
    for timer in sorted(TIMERS):
        command = command_of(unit(timer_service(timer))["Service"])
        assert command[:2] == ["python", "manage.py"]
        manage(*command[2:])
    checked = manage("check", "--database", "default")
    output = checked.stdout + checked.stderr
    assert "paycollect.I001" not in output
    assert "paycollect.W007" not in output
    report = json.loads(manage("paycollect_report", "--json").stdout)["housekeeping"]
    for job in (HousekeepingRun.SWEEP, HousekeepingRun.RECONCILIATION):
        assert report[job]["last_run_at"] is not None, job
        assert report[job]["late"] is False, job


def _copied_for_verify(directory: Path, names: list[str]) -> list[Path]:
    """The units with this virtualenv's programs in place of /srv/clubsite/.venv/bin (verify checks that
    each command exists)."""
    copies = []
    for name in names:
        text = (DEPLOY / "systemd" / name).read_text().replace(VENV_BIN, f"{Path(sys.executable).parent}/")
        copies.append(directory / name)
        copies[-1].write_text(text)
    return copies


def test_systemd_analyze_verifies_every_unit_and_timer(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian's systemd package); the units are parsed above")
    names = sorted(path.name for path in (DEPLOY / "systemd").iterdir())
    assert {DB_WORKER, *TIMERS, *(timer_service(timer) for timer in TIMERS), *UNITS.values()} <= set(names)

    def verify(paths: list[Path]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 (our own files)
            [analyze, "verify", "--man=no", *map(str, paths)], capture_output=True, text=True, check=False
        )

    done = verify(_copied_for_verify(tmp_path, names))
    # systemd ignores an unknown key or a value it cannot parse with a line on stderr, and exits 0.
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr
    # What it catches: a misspelt key and a bad value (stderr), a timer with no time (the exit status).
    broken = tmp_path / "broken"
    broken.mkdir()
    [sweep] = _copied_for_verify(broken, ["clubsite-sweep.service"])
    sweep.write_text(sweep.read_text().replace("Type=oneshot", "Type=oneshot\nRestart=sometimes"))
    assert "Restart=sometimes" in sweep.read_text()
    assert "restart specifier" in verify([sweep]).stderr
    [timer] = _copied_for_verify(broken, ["clubsite-prune.timer"])
    timer.write_text(timer.read_text().replace("03:30:00", "25:30:00"))
    assert verify([timer]).returncode != 0
