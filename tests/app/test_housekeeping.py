"""A stopped beat is seen: the sweep and reconciliation record when they last ran, and the admin index, the
payments dashboard, ``paycollect_report`` and the check ``paycollect.W007`` say when either is late (more
than ``LATE_AFTER_INTERVALS`` of the interval of its beat entry without a run)."""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import sqlite3
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from celery import current_app
from celery.schedules import crontab
from django.core.checks import INFO, run_checks
from django.core.management import call_command
from django.utils import timezone

from django_paycollect import reconciliation, reporting, tasks
from django_paycollect.models import HousekeepingRun, ReceivedCallback
from django_paycollect.reporting.health import LATE_AFTER_INTERVALS
from django_paycollect.schedules import BEAT_SCHEDULE, beat_interval
from django_paycollect.services.housekeeping import record_run
from tests.example_project import run_example
from tests.support.admin import staff

pytestmark = pytest.mark.django_db

SWEEP, RECONCILIATION = HousekeepingRun.SWEEP, HousekeepingRun.RECONCILIATION
DASHBOARD = "/admin/paycollect/dashboard/"


@pytest.fixture(autouse=True)
def no_rows() -> None:
    """Each test says which jobs ran when (the migration's rows, or another test's runs, would be here)."""
    HousekeepingRun.objects.all().delete()


@pytest.fixture
def schedule() -> Iterator[Any]:
    """``schedule({...})`` sets the Celery app's beat entries (CELERY_BEAT_SCHEDULE) for the test."""
    before = current_app.conf.beat_schedule

    def set_to(entries: dict[str, Any]) -> None:
        current_app.conf.beat_schedule = entries

    yield set_to
    current_app.conf.beat_schedule = before


def ran(job: str, ago: dt.timedelta | None, watched: dt.timedelta = dt.timedelta(days=30)) -> None:
    now = timezone.now()
    HousekeepingRun.objects.create(
        job=job, last_run_at=None if ago is None else now - ago, watched_since=now - watched
    )


def late() -> dict[str, bool]:
    return {job.job: job.late for job in reporting.housekeeping()}


def minutes(n: float) -> dt.timedelta:
    return dt.timedelta(minutes=n)


# --- recorded by every run ---------------------------------------------------------------------------------


def test_the_sweep_task_records_its_run_in_one_statement_without_a_row_or_with_one():
    before = timezone.now()
    tasks.sweep_callbacks.apply().get()
    first = HousekeepingRun.objects.get(job=SWEEP).last_run_at
    assert first is not None
    assert first >= before
    tasks.sweep_callbacks.apply().get()
    second = HousekeepingRun.objects.get(job=SWEEP)
    assert second.last_run_at is not None
    assert second.last_run_at >= first
    assert second.watched_since == first  # made by the first run, kept since
    assert not HousekeepingRun.objects.filter(job=RECONCILIATION).exists()


@pytest.mark.django_db(transaction=True)
def test_reconciliation_records_its_run_by_task_and_by_command(paycollect_in_process):
    tasks.reconcile.apply().get()
    by_task = HousekeepingRun.objects.get(job=RECONCILIATION).last_run_at
    assert by_task is not None
    call_command("paycollect_reconcile", stdout=io.StringIO())
    assert HousekeepingRun.objects.get(job=RECONCILIATION).last_run_at > by_task
    assert HousekeepingRun.objects.count() == 1


def test_the_commands_stuck_run_is_a_run_of_the_sweep_and_its_dry_run_is_not():
    call_command("paycollect_process_callbacks", "--stuck", "--dry-run", stdout=io.StringIO())
    assert not HousekeepingRun.objects.exists()
    call_command("paycollect_process_callbacks", "--stuck", stdout=io.StringIO())
    assert HousekeepingRun.objects.get(job=SWEEP).last_run_at is not None


def test_the_migration_watches_both_jobs_from_the_tables_creation():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    release = ("paycollect", "0001_initial")
    state = MigrationExecutor(connection).loader.project_state(release)
    model = state.apps.get_model("paycollect", "HousekeepingRun")
    migration = MigrationExecutor(connection).loader.get_migration(*release)
    [*_, seed] = migration.operations
    seed.code(state.apps, SimpleNamespace(connection=connection))  # it reads only the editor's connection
    rows = {row.job: row for row in model.objects.all()}
    assert sorted(rows) == [RECONCILIATION, SWEEP]
    assert all(row.last_run_at is None for row in rows.values())
    assert all(timezone.now() - row.watched_since < minutes(1) for row in rows.values())


# --- late: from the interval of the beat entry --------------------------------------------------------------


def test_late_after_three_intervals_without_a_run():
    assert LATE_AFTER_INTERVALS == 3
    ran(SWEEP, minutes(2.9))  # the sweep runs every minute (BEAT_SCHEDULE)
    ran(RECONCILIATION, minutes(46))  # every 15 minutes
    assert late() == {SWEEP: False, RECONCILIATION: True}
    HousekeepingRun.objects.filter(job=SWEEP).update(last_run_at=timezone.now() - minutes(3.1))
    assert late() == {SWEEP: True, RECONCILIATION: True}


def test_a_job_never_run_is_never_late_only_not_run_yet():
    """A site where beat never ran (a development site, the demo, a site before its beat starts) is not a
    beat that stopped: nothing is late, however long the jobs have been watched (the migration's rows)."""
    ran(SWEEP, None, watched=dt.timedelta(days=30))
    ran(RECONCILIATION, None, watched=minutes(30))
    found = {job.job: job for job in reporting.housekeeping()}
    assert late() == {SWEEP: False, RECONCILIATION: False}
    assert found[SWEEP].never_run
    assert found[SWEEP].idle_for is not None  # watched: the metrics still say for how long
    assert reporting.housekeeping_not_run_yet(list(found.values())) == (
        "The periodic jobs (the callback sweep and reconciliation) have not run yet on this site."
    )
    HousekeepingRun.objects.all().delete()
    assert late() == {SWEEP: False, RECONCILIATION: False}
    assert "have not run yet" in (reporting.housekeeping_not_run_yet(reporting.housekeeping()) or "")
    ran(SWEEP, minutes(1))
    assert reporting.housekeeping_not_run_yet(reporting.housekeeping()) == (
        "Reconciliation has not run yet on this site."
    )
    ran(RECONCILIATION, minutes(1))
    assert reporting.housekeeping_not_run_yet(reporting.housekeeping()) is None


def test_the_interval_is_the_projects_beat_entry(schedule):
    ran(SWEEP, minutes(20))
    ran(RECONCILIATION, dt.timedelta(hours=20))
    schedule(
        {
            "sweep, every ten minutes": {"task": "paycollect.sweep_callbacks", "schedule": 600},
            "reconcile, hourly": {"task": "paycollect.reconcile", "schedule": crontab(minute=0)},
            "reconcile, daily for another community": {
                "task": "paycollect.reconcile",
                "schedule": crontab(hour=4, minute=0),
                "kwargs": {"community_id": "c-2"},
            },
        }
    )
    assert beat_interval("paycollect.sweep_callbacks") == minutes(10)
    assert beat_interval("paycollect.reconcile") == dt.timedelta(hours=1)  # the most frequent entry
    assert late() == {SWEEP: False, RECONCILIATION: True}
    schedule({})  # no entry names them: BEAT_SCHEDULE's intervals
    assert (
        beat_interval("paycollect.sweep_callbacks") == BEAT_SCHEDULE["paycollect-sweep-callbacks"]["schedule"]
    )
    assert late() == {SWEEP: True, RECONCILIATION: True}


# --- every surface says so ---------------------------------------------------------------------------------


def ids() -> list[str]:
    return sorted(m.id for m in run_checks(databases=["default"]) if m.id == "paycollect.W007")


def test_the_database_check_warns_once_per_late_job():
    ran(SWEEP, minutes(1))
    ran(RECONCILIATION, minutes(10))
    assert ids() == []
    HousekeepingRun.objects.update(last_run_at=timezone.now() - dt.timedelta(hours=2))
    messages = [m for m in run_checks(databases=["default"]) if m.id == "paycollect.W007"]
    assert len(messages) == 2
    assert "The callback sweep last ran 2 h 0 min ago" in messages[0].msg
    assert "paycollect_process_callbacks --stuck" in (messages[0].hint or "")
    assert [m.id for m in run_checks(databases=[]) if m.id == "paycollect.W007"] == []  # a database check


def not_run_notes() -> list[Any]:
    return [m for m in run_checks(databases=["default"]) if m.id == "paycollect.I001"]


def test_a_site_where_beat_never_ran_says_so_once_as_information_never_as_a_warning():
    ran(SWEEP, None, watched=dt.timedelta(days=3))
    ran(RECONCILIATION, None, watched=dt.timedelta(days=3))
    assert ids() == []
    [note] = not_run_notes()
    assert note.level == INFO
    assert note.msg == (
        "The periodic jobs (the callback sweep and reconciliation) have not run yet on this site."
    )
    assert "celery beat" in (note.hint or "")
    assert "BEAT_SCHEDULE" in (note.hint or "")
    assert "paycollect_process_callbacks --stuck" in (note.hint or "")
    assert "paycollect_reconcile" in (note.hint or "")
    assert [m.id for m in run_checks(databases=[]) if m.id == "paycollect.I001"] == []  # a database check


def test_w007_only_for_a_job_that_ran_and_then_stopped():
    ran(SWEEP, minutes(10))  # ran, then stopped: late
    ran(RECONCILIATION, None, watched=dt.timedelta(days=3))  # never ran: not late, said once
    [warning] = [m for m in run_checks(databases=["default"]) if m.id == "paycollect.W007"]
    assert warning.msg.startswith("The callback sweep last ran 10 min")
    [note] = not_run_notes()
    assert note.msg == "Reconciliation has not run yet on this site."
    HousekeepingRun.objects.update(last_run_at=timezone.now())
    assert ids() == []
    assert not_run_notes() == []


def test_the_admin_index_warns_those_who_may_see_the_dashboard(client, django_user_model):
    ran(SWEEP, dt.timedelta(hours=1))
    ran(RECONCILIATION, minutes(5))
    client.force_login(staff(django_user_model, "view_dashboard"))
    page = client.get("/admin/").content.decode()
    assert 'id="paycollect-late-jobs"' in page
    assert 'data-job="sweep"' in page
    assert "The callback sweep last ran 1 h 0 min ago, though it should run every 1 min" in page
    assert 'data-job="reconciliation"' not in page
    assert f'href="{DASHBOARD}#paycollect-housekeeping"' in page

    client.force_login(staff(django_user_model, "view_transaction", username="clerk"))
    assert "paycollect-late-jobs" not in client.get("/admin/").content.decode()
    client.force_login(staff(django_user_model, "view_dashboard", username="other"))
    HousekeepingRun.objects.update(last_run_at=timezone.now())
    assert "paycollect-late-jobs" not in client.get("/admin/").content.decode()


def test_the_dashboard_warns_and_says_when_each_job_last_ran(admin_client, monkeypatch):
    # The clock stands still: a loaded machine must not turn 20.0 s into 20.1 s.
    stopped = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: stopped)
    ran(SWEEP, dt.timedelta(seconds=20))
    ran(RECONCILIATION, dt.timedelta(hours=3))
    page = admin_client.get(DASHBOARD).content.decode()
    warnings = page.split('id="paycollect-late-jobs"')[1].split("</ul>")[0]
    assert 'data-job="reconciliation"' in warnings
    assert "Reconciliation last ran 3 h 0 min ago, though it should run every 15 min" in warnings
    assert 'data-job="sweep"' not in warnings
    table = page.split('id="paycollect-housekeeping-table"')[1].split("</table>")[0]
    assert "20.0 s ago" in table
    assert "on time" in table
    assert "late" in table


def test_the_dashboard_and_the_index_say_calmly_that_the_jobs_have_not_run_yet(admin_client):
    ran(SWEEP, None, watched=dt.timedelta(days=3))
    ran(RECONCILIATION, None, watched=dt.timedelta(days=3))
    page = admin_client.get(DASHBOARD).content.decode()
    assert "paycollect-late-jobs" not in page
    assert "is celery beat running" not in page
    assert page.count('id="paycollect-jobs-not-run"') == 1
    note = page.split('id="paycollect-jobs-not-run"')[1].split("</p>")[0]
    assert "The periodic jobs (the callback sweep and reconciliation) have not run yet on this site." in note
    assert "celery beat" in note
    assert "paycollect_process_callbacks --stuck" in note
    assert 'class="messagelist"' not in note
    table = page.split('id="paycollect-housekeeping-table"')[1].split("</table>")[0]
    assert table.count("not run yet") == 2
    assert "paycollect-warning" not in table
    assert "paycollect-late-jobs" not in admin_client.get("/admin/").content.decode()

    HousekeepingRun.objects.update(last_run_at=timezone.now())
    assert "paycollect-jobs-not-run" not in admin_client.get(DASHBOARD).content.decode()


def test_the_demo_warns_of_nothing_where_beat_never_ran(example_migrated, tmp_path):
    """The example project as ``make demo`` runs it (Celery eager, no beat), up for an hour: its database
    checks warn of nothing; the jobs not run yet are one line of information."""
    database = tmp_path / "demo.sqlite3"
    shutil.copyfile(example_migrated, database)
    with sqlite3.connect(database) as connection:
        connection.execute(
            "UPDATE paycollect_housekeepingrun SET watched_since = ?",
            [(timezone.now() - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")],
        )
        assert connection.execute("SELECT COUNT(*) FROM paycollect_housekeepingrun").fetchone() == (2,)
    checked = run_example(
        "example_project/manage.py", "check", "--database", "default", CLUBSITE_DB=str(database)
    )
    output = checked.stdout + checked.stderr
    assert checked.returncode == 0, output
    assert "WARNINGS" not in output
    assert "paycollect.W007" not in output
    assert output.count("(paycollect.I001)") == 1, output


def test_on_djangos_task_framework_the_warnings_name_the_timers_commands_not_beat(settings, admin_client):
    """A site on Django's task framework has no beat: its periodic jobs are the commands its timers (or cron)
    run. A stopped timer is told with the command to look for, never with celery beat."""
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "django"}
    ran(SWEEP, dt.timedelta(hours=1))
    ran(RECONCILIATION, dt.timedelta(hours=2))
    warnings = {job.job: job.warning() for job in reporting.housekeeping()}
    assert warnings[SWEEP] == (
        "The callback sweep last ran 1 h 0 min ago, though it should run every 1 min: is its timer or cron "
        "line running manage.py paycollect_process_callbacks --stuck?"
    )
    assert warnings[RECONCILIATION] == (
        "Reconciliation last ran 2 h 0 min ago, though it should run every 15 min: is its timer or cron line "
        "running manage.py paycollect_reconcile?"
    )
    how = reporting.housekeeping_how_to_start()
    assert "celery" not in how.lower()
    assert "paycollect_process_callbacks --stuck" in how
    assert "paycollect_reconcile" in how
    assert "timers" in how
    page = admin_client.get(DASHBOARD).content.decode()
    assert "is its timer or cron line running manage.py paycollect_reconcile?" in page
    assert "celery beat" not in page
    assert "Run by the timers or cron lines of their commands" in page
    # The checks' hints too: W007 for the late jobs, W005 for the callbacks the sweep should have queued.
    ReceivedCallback.objects.create(
        state=ReceivedCallback.QUEUED,
        transaction_uuid="3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60",
        claimed_status="SUCCESSFUL",
        received_at=timezone.now() - dt.timedelta(hours=3),
        next_attempt_at=timezone.now() - dt.timedelta(hours=2),
    )
    hints = {m.id: m.hint or "" for m in run_checks(databases=["default"])}
    assert "celery" not in hints["paycollect.W007"].lower() + hints["paycollect.W005"].lower()
    assert "systemd timers or cron" in hints["paycollect.W007"]
    assert "db_worker" in hints["paycollect.W005"]

    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "TASK_RUNNER": "celery"}
    hints = {m.id: m.hint or "" for m in run_checks(databases=["default"])}
    assert "start celery beat" in hints["paycollect.W007"]
    assert "Is celery beat running" in hints["paycollect.W005"]
    assert "is celery beat running" in reporting.housekeeping()[0].warning()
    assert "start celery beat" in reporting.housekeeping_how_to_start()


def test_the_report_says_so_in_text_and_json():
    ran(SWEEP, dt.timedelta(days=2))
    out = io.StringIO()
    call_command("paycollect_report", "--community", "c-1", stdout=out)
    text = out.getvalue()
    assert "Periodic jobs" in text
    assert "LATE" in text
    assert "Warning: The callback sweep last ran 2 d 0 h ago" in text
    assert "not run yet" in text  # reconciliation: no row
    out = io.StringIO()
    call_command("paycollect_report", "--community", "c-1", "--json", stdout=out)
    data = json.loads(out.getvalue())["housekeeping"]
    assert data[SWEEP]["late"] is True
    assert data[SWEEP]["interval_seconds"] == "60.000000"
    assert data[SWEEP]["late_after_seconds"] == "180.000000"
    assert data[RECONCILIATION] == {
        "last_run_at": None,
        "interval_seconds": "900.000000",
        "late": False,
        "late_after_seconds": "2700.000000",
    }


def test_record_run_is_the_one_writer(django_assert_num_queries):
    with django_assert_num_queries(1):
        record_run(SWEEP)
    with django_assert_num_queries(1):
        record_run(SWEEP)
    assert HousekeepingRun.objects.count() == 1
    assert "record_run" in (reconciliation.reconcile.__doc__ or "")
