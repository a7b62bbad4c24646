"""What the benchmarks share: Django on a temporary SQLite file, the machine's description, the result
lines, and ``docs/performance.md`` (each benchmark replaces its own section there after a run).

Not a benchmark itself: ``make bench`` runs ``benchmarks/*.py``, and this package is a directory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PERFORMANCE_MD = REPO / "docs" / "performance.md"

#: Sections of docs/performance.md, in the order of the issue's list (unknown ones go last).
SECTION_ORDER = (
    "budget",
    "callback_intake_gunicorn",
    "verification_queries",
    "reconcile_fetch",
    "admin_changelist",
    "admin_dashboard",
    "export",
    "prune_api_calls",
    "sandbox_fetch",
)


#: The two projects every headline runs in (``PAYCOLLECT_BENCH_PROJECT``): as the app's tests run it, and
#: with a global ``post_save`` receiver and django-simple-history on ``Transaction`` (``receivers.py``).
PROJECTS = {
    "plain": "a project with no save receivers",
    "receivers": "a project with a global post_save receiver and django-simple-history on Transaction",
}


def project() -> str:
    return os.environ.get("PAYCOLLECT_BENCH_PROJECT", "plain")


def add_project_argument(parser: Any) -> None:
    parser.add_argument(
        "--project",
        choices=[*PROJECTS, "both"],
        default="both",
        help="the project to measure in: plain, receivers (a global post_save receiver and "
        "django-simple-history on Transaction) or both, each in a process of its own (default both)",
    )
    parser.add_argument("--results", type=Path, help=argparse.SUPPRESS)


def for_each_project(script: str, args: Any, run_one: Any) -> dict[str, Any]:
    """``{project: results}``: ``run_one()`` here when ``args.project`` names one project, else this script
    run again per project in a process of its own (``--project NAME --results FILE``, the project's
    settings from ``PAYCOLLECT_BENCH_PROJECT``), its results read back as JSON."""
    if args.project != "both":
        os.environ["PAYCOLLECT_BENCH_PROJECT"] = args.project
        results = run_one()
        if args.results:
            args.results.write_text(json.dumps({"results": results, "postgres": _POSTGRES}))
        return {args.project: results}
    found: dict[str, Any] = {}
    for name in PROJECTS:
        with tempfile.TemporaryDirectory(prefix="paycollect-bench-results-") as directory:
            out = Path(directory) / "results.json"
            print(f"== {PROJECTS[name]} (--project {name})", flush=True)
            subprocess.run(  # noqa: S603  (this very script)
                [sys.executable, script, *sys.argv[1:], "--project", name, "--results", str(out)],
                env={**os.environ, "PAYCOLLECT_BENCH_PROJECT": name},
                check=True,
            )
            written = json.loads(out.read_text())
        _POSTGRES.update(written["postgres"])
        found[name] = written["results"]
    return found


def prepare_project() -> None:
    """What the project needs beyond the migrations: simple-history's table in the receivers project."""
    if project() == "receivers":
        from .receivers import create_history_table

        create_history_table()


# --- statistics ------------------------------------------------------------------------------------------


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank, as the dashboard computes its verification times."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered) + 0.5) - 1))]


@dataclass
class Rounds:
    """One figure measured in several rounds: its median, and the spread (the rounds' min and max)."""

    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def text(self, unit: str = "", digits: int = 2) -> str:
        lo, hi = min(self.values), max(self.values)
        return f"{self.median:.{digits}f}{unit} (rounds {lo:.{digits}f} to {hi:.{digits}f})"


def files_dir() -> str | None:
    """Where the benchmarks keep their SQLite files: ``PAYCOLLECT_BENCH_DIR``, else ``/dev/shm`` when it is
    writable (memory-backed: the disk's flush latency, which other jobs on a shared machine move twentyfold,
    must not decide a ratio), else the system's temporary directory."""
    configured = os.environ.get("PAYCOLLECT_BENCH_DIR")
    if configured:
        return configured
    shm = "/dev/shm"  # noqa: S108  (our own private temporary directory is created inside it)
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def temp_workdir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="paycollect-bench-", dir=files_dir())


def _filesystem(path: str) -> str:
    """The filesystem type holding ``path`` (Linux /proc/mounts), e.g. tmpfs or ext4."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    best = max(
        (m for m in mounts if len(m) > 2 and path.startswith(m[1])), key=lambda m: len(m[1]), default=None
    )
    return best[2] if best else "unknown"


def setup_django(workdir: Path, *, db_name: str = "bench.sqlite3", migrate: bool = True) -> Path:
    """Django (``benchmarks._support.settings``) on a SQLite file in ``workdir``; returns the file's path."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    db_path = workdir / db_name
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks._support.settings"
    os.environ["PAYCOLLECT_BENCH_DB"] = str(db_path)
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        prepare_project()
    return db_path


def fresh_postgres_database(spec: str, suffix: str) -> str:
    """Drop and create ``<dbname>_<suffix>`` on the server of ``spec``; return the spec pointing at it."""
    import psycopg

    host, port, name, user = spec.split(":")
    bench = f"{name}_{suffix}"
    with psycopg.connect(host=host, port=port, user=user, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{bench}"')
        conn.execute(f'CREATE DATABASE "{bench}"')
    return f"{host}:{port}:{bench}:{user}"


@contextmanager
def postgres_databases(*suffixes: str) -> Iterator[list[str]]:
    """New databases ``<dbname>_<suffix>`` for one benchmark, dropped on exit; yields their specs.

    On the server ``PAYCOLLECT_BENCH_POSTGRES`` names (``host:port:dbname:user``), used as it is: its
    settings are printed with the results, and figures of a server that is not durable are labelled so.
    Otherwise on a durable server of this run's own (``.ci/postgres.sh`` with ``PAYCOLLECT_PG_DURABLE=1``,
    on a free port; ``servers.start_postgres``), stopped on exit, so a benchmark leaves the machine as it
    found it. The test server (fsync off) is never taken for a headline: ``PAYCOLLECT_TEST_POSTGRES`` is
    not read here.
    """
    from .servers import start_postgres, stopped_on_exit

    with stopped_on_exit() as stack:
        configured = os.environ.get("PAYCOLLECT_BENCH_POSTGRES")
        if configured:
            note_postgres(configured)
        server = configured or start_postgres(stack)
        specs: list[str] = []
        try:
            specs += [fresh_postgres_database(server, suffix) for suffix in suffixes]
            yield specs
        finally:
            for spec in specs:
                _drop_database(spec)


#: The PostgreSQL servers this run used, by host:port: their durability settings (see :func:`note_postgres`).
_POSTGRES: dict[str, dict[str, str]] = {}


def postgres_settings(spec: str) -> dict[str, str]:
    """What decides what a commit costs on the server of ``spec``: version, fsync, synchronous_commit,
    full_page_writes, and the file system of its data directory (a tmpfs makes any fsync free)."""
    import psycopg

    host, port, _name, user = spec.split(":")
    names = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "data_directory")
    with psycopg.connect(host=host, port=port, user=user, dbname="postgres", autocommit=True) as conn:
        found = {name: str(conn.execute(f"SHOW {name}").fetchone()[0]) for name in names}  # type: ignore[index]
    found["file system"] = _filesystem(found.pop("data_directory"))
    return found


def durable(settings: dict[str, str]) -> bool:
    """Whether a commit waits for its log on a disk: fsync on, synchronous_commit not off, not in memory."""
    return (
        settings.get("fsync") == "on"
        and settings.get("synchronous_commit") != "off"
        and settings.get("file system") != "tmpfs"
    )


def note_postgres(spec: str) -> None:
    """Remember the settings of a server this run uses, for :func:`write_section`, and print them."""
    host, port = spec.split(":")[:2]
    key = f"{host}:{port}"
    if key in _POSTGRES:
        return
    try:
        _POSTGRES[key] = postgres_settings(spec)
    except Exception as exc:  # reported as unknown, never a reason to stop a run
        _POSTGRES[key] = {"error": f"{type(exc).__name__}: {exc}"}
    print(f"PostgreSQL {key}: {postgres_text(_POSTGRES[key])}", flush=True)


def postgres_text(settings: dict[str, str]) -> str:
    if "error" in settings:
        return f"settings unknown ({settings['error']})"
    shown = ", ".join(f"{name} {value}" for name, value in settings.items() if name != "server_version")
    kind = "durable" if durable(settings) else "NOT durable: the test server's settings, not a headline"
    return f"{settings['server_version']}, {shown} ({kind})"


@contextmanager
def postgres_database(suffix: str) -> Iterator[str]:
    """One database of :func:`postgres_databases`."""
    with postgres_databases(suffix) as (spec,):
        yield spec


def copy_postgres_database(source: str, target: str) -> None:
    """Make ``target``'s database a copy of ``source``'s (``CREATE DATABASE ... TEMPLATE``)."""
    import psycopg

    host, port, name, user = source.split(":")
    copy = target.split(":")[2]
    with psycopg.connect(host=host, port=port, user=user, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{name}"')


def _drop_database(spec: str) -> None:
    import psycopg

    try:
        from django.db import connections

        connections.close_all()  # ours; FORCE ends any other session (a child process killed midway)
    except Exception:  # noqa: S110 (Django may not be set up yet)
        pass
    host, port, name, user = spec.split(":")
    with psycopg.connect(host=host, port=port, user=user, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_cpu_seconds(spec: str) -> float | None:
    """User plus system CPU seconds of the PostgreSQL server of ``spec`` so far: the postmaster, the
    processes it runs (backends, writers, autovacuum) and those it has reaped (Linux /proc, the server on
    this machine and readable; None otherwise)."""
    import psycopg

    host, port, name, user = spec.split(":")
    try:
        with psycopg.connect(host=host, port=port, user=user, dbname=name) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        master = int((Path(row[0]) / "postmaster.pid").read_text().split()[0]) if row else 0
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # a process that ended meanwhile
            if int(stat.parent.name) == master:
                ticks += sum(int(value) for value in fields[11:15])  # its own, and its reaped children's
            elif int(fields[1]) == master:
                ticks += int(fields[11]) + int(fields[12])
    except (OSError, ValueError, psycopg.Error):
        return None
    return ticks / os.sysconf("SC_CLK_TCK") if master else None


def setup_django_on_postgres(spec: str, *, migrate: bool = True) -> None:
    """Django (``benchmarks._support.settings``) on the PostgreSQL database of ``spec``, migrated unless
    ``migrate`` is false (a process measuring a database another one built: the migrations' checks take
    seconds)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks._support.settings"
    os.environ["PAYCOLLECT_TEST_POSTGRES"] = spec  # read by the test settings the benchmarks' build on
    os.environ["PAYCOLLECT_BENCH_ON_POSTGRES"] = "1"
    note_postgres(spec)
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        migrated = _migrated_copy(spec)
        call_command("migrate", verbosity=0, interactive=False)  # nothing left to apply after a copy
        if migrated and not migrated.exists():
            partial = migrated.with_suffix(".partial")  # renamed once whole: never half a dump loaded
            _postgres_tool("pg_dump", spec, "--no-owner", "--file", str(partial))
            partial.replace(migrated)
        prepare_project()


def _postgres_tool(tool: str, spec: str, *arguments: str) -> None:
    """Run PostgreSQL's ``tool`` (``psql``, ``pg_dump``) of the newest installed version on ``spec``'s
    database."""
    host, port, name, user = spec.split(":")
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"))
    command = [str(found[-1]) if found else tool, "-h", host, "-p", port, "-U", user, "-d", name]
    subprocess.run([*command, *arguments], check=True, stdout=subprocess.DEVNULL)  # noqa: S603


def _migrated_copy(spec: str) -> Path | None:
    """Load the migrated database of an earlier script or project into ``spec``'s (``psql`` of the
    ``pg_dump`` :func:`setup_django_on_postgres` made after its ``migrate``, before anything else): one
    transaction, where the migrations commit one by one on a durable server, some seconds each time.
    Returns the dump's path, where it is (or is to be) kept, or None without ``PAYCOLLECT_BENCH_SHARED``."""
    shared = os.environ.get("PAYCOLLECT_BENCH_SHARED")
    if not shared:
        return None
    # The apps differ with django-tasks-db's (PAYCOLLECT_BENCH_TASKS): one dump for each.
    dump = Path(shared) / f"migrated-{os.environ.get('PAYCOLLECT_BENCH_TASKS') or 'plain'}.sql"
    if dump.exists():
        _postgres_tool("psql", spec, "-q", "-X", "-1", "-v", "ON_ERROR_STOP=1", "-f", str(dump))
    return dump


def timed_get(client: Any, url: str) -> tuple[Any, list[tuple[str, float]]]:
    """GET ``url`` with Django's test client: the response, and each statement it sent with its milliseconds.

    Counted by ``CaptureQueriesContext`` (the request_started signal empties the query log, so it starts
    from an empty one) and timed by ``connection.execute_wrapper``.
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    timings: list[float] = []

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            timings.append((time.perf_counter() - started) * 1000)

    connection.queries_log.clear()
    with connection.execute_wrapper(timed), CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}")
    sqls = [q["sql"] for q in captured.captured_queries]
    times = timings if len(timings) == len(sqls) else [float("nan")] * len(sqls)
    return response, list(zip(sqls, times, strict=True))


# --- the machine --------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _load() -> str:
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


#: The machine's load average when this run started (this module is imported first by every benchmark).
LOAD_AT_START = _load()


def machine() -> dict[str, str]:
    """CPU, cores, memory, OS, Python, Django, SQLite, load at the start and the end of the run."""
    import django

    load = _load()
    files = files_dir() or tempfile.gettempdir()
    return {
        "CPU": _cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": _memory_gib(),
        "OS": platform.platform(),
        "Python": platform.python_version(),
        "Django": django.get_version(),
        "SQLite": sqlite3.sqlite_version,
        "SQLite files in": f"{files} ({_filesystem(files)})",
        "load average (1, 5, 15 min) at the start": LOAD_AT_START,
        "load average (1, 5, 15 min) at the end": load,
    }


def now_text() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# --- results -------------------------------------------------------------------------------------------


@dataclass
class Measure:
    """One measure beside its baseline from the same run and its target."""

    name: str
    value: str
    baseline: str
    ratio: float | None
    target: str
    ok: bool | None  # None: reported, no target

    @property
    def verdict(self) -> str:
        return "—" if self.ok is None else ("OK" if self.ok else "MISSED")

    def line(self) -> str:
        ratio = f" ratio {self.ratio:.2f}" if self.ratio is not None else ""
        return f"{self.name}: {self.value} ({self.baseline}){ratio} — target {self.target}: {self.verdict}"


def print_measures(measures: Iterable[Measure]) -> None:
    for measure in measures:
        print(measure.line(), flush=True)


def exit_status(measures: Iterable[Measure], strict: bool) -> int:
    return 1 if strict and any(m.ok is False for m in measures) else 0


# --- docs/performance.md ----------------------------------------------------------------------------------

_SECTION = re.compile(r"<!-- bench:(?P<slug>[\w-]+) -->\n.*?<!-- /bench:(?P=slug) -->\n", re.DOTALL)

# "orphan": the page builds without warnings before docs/index.md lists it in a toctree, and still does after.
_HEADER = """\
---
orphan: true
---

# Performance

Written by `make bench`: every script in `benchmarks/` replaces its own section below with the results of
its last run (`benchmarks/README.md` says what each one measures and how to run one alone); the budget
section is written by hand. Each headline compares the app with **the same work done through Django's public
API**, measured in the same run (target: at least 0.8 of it), on a durable PostgreSQL, in two projects (one
with no save receivers; one with a global `post_save` receiver and django-simple-history on `Transaction`);
latencies are p50 and p95 of at least 300 samples per round, each figure the median of at least 3 rounds with
its spread. Hand-written floors are printed for information, never as targets. Nothing here is asserted by
the test suite; wall times depend on the machine, described next.
"""


def _machine_block(described: dict[str, str], when: str) -> str:
    rows = "\n".join(f"| {key} | {value} |" for key, value in described.items())
    return (
        f"## Machine\n\nThe machine of the last run ({when}); each section says when it was measured.\n\n"
        f"| | |\n|---|---|\n{rows}\n"
    )


def _table(measures: Sequence[Measure]) -> str:
    lines = [
        "| Measure | Result | Baseline (same run) | Ratio | Target | |",
        "|---|---|---|---|---|---|",
    ]
    for m in measures:
        ratio = f"{m.ratio:.2f}" if m.ratio is not None else "—"
        verdict = "**MISSED**" if m.ok is False else m.verdict
        lines.append(f"| {m.name} | {m.value} | {m.baseline} | {ratio} | {m.target} | {verdict} |")
    return "\n".join(lines) + "\n"


def write_section(
    slug: str,
    title: str,
    *,
    summary: str,
    measures: Sequence[Measure],
    details: Sequence[str] = (),
    command: str = "",
    notes: Sequence[str] = (),
    tables: Sequence[tuple[str, Sequence[Measure]]] = (),
) -> None:
    """Replace (or add) the section ``slug`` of docs/performance.md, and refresh the machine block.

    ``notes``: paragraphs after the table (why a target is missed, from this run's numbers); ``tables``:
    more tables after the first, each under its heading (the receivers project's)."""
    described = machine()
    when = now_text()
    load = described["load average (1, 5, 15 min) at the end"]
    by = command or "benchmarks/" + slug + ".py"
    body = [f"<!-- bench:{slug} -->", f"## {title}", ""]
    run = f"load average {LOAD_AT_START} at the start, {load} at the end"
    body += [f"Measured {when} by `{by}` ({run}). {summary}", ""]
    # Every PostgreSQL server of the run, with what decides the cost of a commit; figures of one that is not
    # durable are not headlines, and say so before the table.
    for settings in _POSTGRES.values():
        text = f"PostgreSQL {postgres_text(settings)}."
        body += [text if durable(settings) else f"**{text}**", ""]
    print(run, flush=True)
    for key, settings in _POSTGRES.items():
        print(f"PostgreSQL {key}: {postgres_text(settings)}", flush=True)
    if measures:
        body.append(_table(measures))
    for heading, more in tables:
        body += [f"### {heading}", "", _table(more)]
    for note in notes:
        body += [note, ""]
    if details:
        body += ["```text", *details, "```", ""]
    body.append(f"<!-- /bench:{slug} -->")
    section = "\n".join(body) + "\n"

    old = PERFORMANCE_MD.read_text() if PERFORMANCE_MD.exists() else ""
    sections = {match["slug"]: match[0] for match in _SECTION.finditer(old)}
    sections[slug] = section
    order = [s for s in SECTION_ORDER if s in sections] + sorted(set(sections) - set(SECTION_ORDER))
    text = _HEADER + "\n" + _machine_block(described, when) + "\n" + "\n".join(sections[s] for s in order)
    PERFORMANCE_MD.write_text(text)
    print(f"(results written to {PERFORMANCE_MD.relative_to(REPO)}, section {slug!r})", flush=True)
