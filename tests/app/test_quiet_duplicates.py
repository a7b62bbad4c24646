"""A flood of redeliveries and of fetch claims that another verification holds leaves PostgreSQL's log quiet.

A redelivered callback (its ``dedupe_key`` stored already) and a claim of the right to fetch a uuid that was
fetched moments ago are everyday events: the statements say ``ON CONFLICT``, so neither is a unique
violation, which PostgreSQL would log as an ERROR with the whole INSERT each time.

Counted two ways, on the flooding connections only: every database error that reaches Django (an execute
wrapper, whatever the server's logging), and the ERROR entries the server wrote for those connections'
backends, read through SQL where the server writes its log as ``.ci/postgres.sh`` starts it (a file in its
data directory, or the logging collector's). The behaviour stays as it was: each redelivery is stored as a
duplicate of the one original, and one verification fetches while the others wait for the interval.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import DatabaseError, connection

from django_paycollect.models import FetchMark, ReceivedCallback, Transaction
from django_paycollect.services.callback_ledger import run_verification, store_callback

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CB = ReceivedCallback
THREADS = 8
ROUNDS = 25


class ServerLog:
    """The part of PostgreSQL's log written after ``start()``, read through SQL (superuser), or None."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.offset = 0

    def start(self) -> None:
        with connection.cursor() as cursor:
            try:
                cursor.execute("SELECT pg_current_logfile(), current_setting('log_line_prefix')")
                current, prefix = cursor.fetchone()
                # Without the logging collector the server writes to the file pg_ctl -l named; the test
                # servers (.ci/postgres.sh, tests/worker's) put it in the data directory as server.log.
                name = current or "server.log"
                cursor.execute("SELECT size FROM pg_stat_file(%s, true)", [name])
                row = cursor.fetchone()
            except DatabaseError:  # not a superuser, or no such function: the other count still holds
                return
        if row is None or row[0] is None or "%p" not in prefix:
            return
        self.name, self.offset = name, int(row[0])

    def errors_of(self, pids: set[int]) -> list[str]:
        """The ERROR lines the backends ``pids`` logged since ``start()``."""
        assert self.name is not None
        with connection.cursor() as cursor:
            cursor.execute("SELECT size FROM pg_stat_file(%s)", [self.name])
            size = int(cursor.fetchone()[0])
            cursor.execute("SELECT pg_read_file(%s, %s, %s)", [self.name, self.offset, size - self.offset])
            text = cursor.fetchone()[0] or ""
        ours = re.compile(r"\[({})\]".format("|".join(str(pid) for pid in pids)))
        return [line for line in text.splitlines() if "ERROR:" in line and ours.search(line)]


@pytest.fixture
def server_log() -> ServerLog:
    log = ServerLog()
    log.start()
    return log


class Flood:
    """Threads released together, each on its own database connection, counting the database errors that
    reach Django on it; their backends' pids, for the server's log."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.pids: set[int] = set()
        self.lock = threading.Lock()

    def _count(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        try:
            return execute(sql, params, many, context)
        except DatabaseError as exc:
            with self.lock:
                self.errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            raise

    @contextmanager
    def counted(self) -> Iterator[None]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = int(cursor.fetchone()[0])
        with self.lock:
            self.pids.add(pid)
        with connection.execute_wrapper(self._count):
            yield

    def run(self, work: Callable[[int], None]) -> None:
        barrier = threading.Barrier(THREADS)
        failures: list[BaseException] = []

        def thread(n: int) -> None:
            try:
                with self.counted():
                    barrier.wait()
                    work(n)
            except BaseException as exc:
                failures.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=thread, args=(n,)) for n in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not failures, failures


def test_a_flood_of_redeliveries_and_held_fetch_claims_raises_no_database_error_and_logs_none(
    paycollect_live, pay, server_log, settings
):
    sb = paycollect_live
    settings.PAYCOLLECT = {**settings.PAYCOLLECT, "CALLBACK_FETCH_INTERVAL": 600}
    txn = pay("100.00")
    sb.control.complete(txn.uuid, "SUCCESSFUL")
    original = store_callback(transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL").callback_id
    assert run_verification(original).state == CB.PROCESSED  # the fetch: the right is taken now
    flood = Flood()

    def work(n: int) -> None:
        for i in range(ROUNDS):
            # A redelivery of the verified callback: a duplicate of it, and nothing to verify.
            stored = store_callback(transaction_uuid=txn.uuid, claimed_status="SUCCESSFUL")
            assert stored.to_verify is None
            # A callback claiming another status: news, whose verification finds the right to fetch taken.
            news = store_callback(transaction_uuid=txn.uuid, claimed_status=f"CLAIM-{n}-{i}")
            assert run_verification(news.callback_id).retry_in is not None

    flood.run(work)

    logged = server_log.errors_of(flood.pids) if server_log.name else None
    print(
        f"\n{THREADS * ROUNDS} redeliveries and {THREADS * ROUNDS} held fetch claims: "
        f"{len(flood.errors)} database errors raised to Django, "
        f"{'unread' if logged is None else len(logged)} ERROR lines in the server's log"
    )
    assert flood.errors == [], flood.errors[:5]
    if logged is not None:
        assert logged == [], logged[:5]
    # Behaviour as before: every redelivery a duplicate of the original; one fetch; the news waiting.
    duplicates = CB.objects.filter(state=CB.DUPLICATE)
    assert duplicates.count() == THREADS * ROUNDS
    assert set(duplicates.values_list("duplicate_of", flat=True)) == {original}
    assert CB.objects.get(pk=original).state == CB.PROCESSED
    waiting = CB.objects.filter(state=CB.QUEUED, claimed_status__startswith="CLAIM-")
    assert waiting.count() == THREADS * ROUNDS
    assert all("fetched moments ago" in outcome for outcome in waiting.values_list("outcome", flat=True))
    assert len(sb.control.journal("fetch_transaction")) == 1
    assert FetchMark.objects.count() == 1
    assert Transaction.objects.get(pk=txn.pk).status_changes.filter(to_status="SUCCESSFUL").count() == 1


@pytest.mark.skipif(not os.environ.get("CI"), reason="a developer's server may log elsewhere")
def test_the_server_log_is_read_in_ci(server_log):
    """In CI the log check above does run: .ci/postgres.sh writes the log where it is read."""
    assert server_log.name is not None
