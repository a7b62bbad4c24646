"""The standalone sandbox with payments started and completed there: made once per ``make bench`` and copied.

Starting and completing a payment takes two HTTP calls, some 12 ms on the quiet 2-core machine: the 3,600
payments of a project's verification rounds took 45 s, paid again by the second project and by
``task_runners.py``. Measures only fetch them, so a copy of the sandbox's SQLite file serves as well as a new
one: ``PAYCOLLECT_BENCH_SHARED`` names a directory (``make bench`` and :func:`~benchmarks._support.
for_each_project` make one for their run) where the first script keeps the file and its payments' uuids; the
next copies it and pays only what it needs beyond them. The sandbox keeps its identity (community id, API
key) in the file, and moves its demo URLs to the new port on start (``seed.ensure_seeded``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}
AMOUNT = Decimal("104.50")
#: Threads paying at once: the sandbox serves a thread per request, SQLite writes one at a time.
PAYING_THREADS = 4


def sandbox_with_payments(
    workdir: Path,
    stack: contextlib.ExitStack,
    count: int,
    *,
    kind: str = "completed",
    completed: Callable[[int], bool] | None = None,
) -> tuple[Any, list[str]]:
    """A standalone sandbox (stopped when ``stack`` closes) holding at least ``count`` payments started and
    completed there (those whose index ``completed`` accepts, when given: name that ``kind`` of sandbox),
    no callback URL on its API payment (nothing delivered in the background); returns it and the uuids of
    the first ``count``."""
    from django_paycollect.sandbox.testing import SandboxControl, start_sandbox

    shared = os.environ.get("PAYCOLLECT_BENCH_SHARED")
    kept = Path(shared) / f"sandbox-{kind}.sqlite3" if shared else None
    listed = Path(shared) / f"sandbox-{kind}.json" if shared else None
    uuids: list[str] = []
    (workdir / "sandbox").mkdir(parents=True, exist_ok=True)
    if kept and listed and kept.exists() and listed.exists():
        shutil.copyfile(kept, workdir / "sandbox" / "sandbox.sqlite3")
        uuids = json.loads(listed.read_text())
    sandbox = start_sandbox(workdir / "sandbox")
    stack.callback(sandbox.stop)
    info = sandbox.info
    SandboxControl(info["base_url"]).configure_api_payment(int(info["variable_amount_id"]), callback_url="")
    if len(uuids) < count:
        uuids += pay(info, count - len(uuids), completed, start=len(uuids))
        if kept and listed:
            # SQLite's backup API: a consistent copy while the sandbox runs (its WAL included).
            source, target = sqlite3.connect(info["db"]), sqlite3.connect(kept)
            try:
                source.backup(target)
            finally:
                source.close()
                target.close()
            listed.write_text(json.dumps(uuids))
    elif count:
        print(f"({count} payments at the sandbox: a copy of those paid earlier in this run)", flush=True)
    return sandbox, uuids[:count]


def pay(
    info: dict[str, Any], count: int, completed: Callable[[int], bool] | None = None, *, start: int = 0
) -> list[str]:
    """``count`` payments started at the sandbox of ``info`` and completed there (those whose index, from
    ``start``, ``completed`` accepts, when given), as many at once as :data:`PAYING_THREADS`; their
    uuids."""
    from django_paycollect.client import PayCollectClient
    from django_paycollect.sandbox.testing import SandboxControl

    client = PayCollectClient(str(info["base_url"]), api_key=str(info["api_key"]))
    control = SandboxControl(str(info["base_url"]))

    def paid(number: int) -> str:
        started = client.pay(
            community_id=str(info["community_id"]),
            amount=AMOUNT,
            original_amount=AMOUNT,
            variable_amount_id=int(info["variable_amount_id"]),
            billing_data=BILLING,
        )
        uuid = str(started.result.transaction_uuid)
        if completed is None or completed(number):
            control.complete(uuid)
        return uuid

    print(f"paying {count} transactions at the sandbox...", flush=True)
    began = time.monotonic()
    with ThreadPoolExecutor(PAYING_THREADS) as pool:
        uuids = list(pool.map(paid, range(start, start + count)))
    print(f"(paying: {time.monotonic() - began:.0f} s)", flush=True)
    return uuids


def store_pending(community_id: str, uuids: list[str], *, settle: bool = True, **fields: Any) -> None:
    """The payments of ``uuids`` stored here PENDING, as ``services.start_payment`` leaves them (with
    ``fields``); then, with ``settle``, the database vacuumed and checkpointed, so that PostgreSQL's
    background work does not fall in the rounds."""
    from django.db import connection

    from django_paycollect.models import Transaction

    Transaction.objects.bulk_create(
        Transaction(
            uuid=uuid,
            community_id=community_id,
            status=Transaction.PENDING,
            service_status=Transaction.PENDING,
            total_amount=AMOUNT,
            original_amount=AMOUNT,
            **fields,
        )
        for uuid in uuids
    )
    if settle and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
            cursor.execute("CHECKPOINT")


@contextlib.contextmanager
def shared_directory() -> Iterator[str]:
    """``PAYCOLLECT_BENCH_SHARED`` for what runs inside: the one already set, else a new temporary directory
    removed on exit."""
    if os.environ.get("PAYCOLLECT_BENCH_SHARED"):
        yield os.environ["PAYCOLLECT_BENCH_SHARED"]
        return
    import tempfile

    directory = tempfile.mkdtemp(prefix="paycollect-bench-shared-")
    os.environ["PAYCOLLECT_BENCH_SHARED"] = directory
    try:
        yield directory
    finally:
        del os.environ["PAYCOLLECT_BENCH_SHARED"]
        shutil.rmtree(directory, ignore_errors=True)
