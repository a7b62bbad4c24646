"""Callback ingest through the full stack, beside a bare view inserting the same body; queries per ingest.

Both endpoints are driven through Django's real WSGI handler (``WSGIHandler``: request signals, the test
settings' six middleware, URL resolution, the view, the response and its ``close()``), in this process,
with no network in between, on a SQLite file (rollback journal, Django's defaults, a persistent
connection):

- ``POST /paycollect/callback/<token>/``: the app's callback view (token check, body read and parsed,
  claims validated, secrets scrubbed, stored as ``ReceivedCallback``, deduplicated by its unique key,
  verification handed on with ``transaction.on_commit``; the Celery task's ``apply_async`` is patched to
  a no-op that counts its calls), each body naming a new transaction;
- ``POST /bare/<token>/``: the baseline, a view that inserts the same body and the client address into a
  table of the same shape as ``ReceivedCallback`` (same columns, same indexes, created for the run:
  ``_support/bare.py``).

The same bodies go to both, in short alternating blocks (``--blocks`` of ``--block-size`` requests), so
that other load on the machine hits both alike; the median of the blocks' throughput ratios is compared.
Target: the full stack at least 0.8 of the bare view's throughput. Then the SQL statements of one new
callback and of one redelivery are counted (target 3 or fewer each), beside the bare view's.
``--strict`` makes a missed target exit with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import (
    Measure,
    exit_status,
    print_measures,
    setup_django,
    temp_workdir,
    write_section,
)

TARGET_RATIO = 0.8
TARGET_QUERIES = 3
TOKEN = "tests-callback-token-0123456789"  # noqa: S105  (tests.settings' CALLBACK_TOKENS)


def callback_body(community_id: str) -> bytes:
    """A callback as the service sends one (the spec's fields, a recurring block, two custom fields)."""
    return json.dumps(
        {
            "total_amount_piasters": 10450,
            "total_amount": 104.5,
            "transaction_uuid": str(uuid.uuid4()),
            "transaction_status": "SUCCESSFUL",
            "member_id": None,
            "payment_id": "4821",
            "merchant_id": community_id,
            "recurring": {"is_sub_payment": False, "parent_transaction": str(uuid.uuid4())},
            "Membership number": "A-10293",
            "Branch": "Heliopolis",
        }
    ).encode()


def environ(path: str, body: bytes) -> dict[str, Any]:
    """The WSGI environ a server (gunicorn, uWSGI) hands Django for a callback POST."""
    return {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "shop.example.com",
        "SERVER_PORT": "443",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "203.0.113.7",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "shop.example.com",
        "HTTP_USER_AGENT": "PayCollect-Callback/1.0",
        "HTTP_X_REQUEST_ID": "9f1c2a7e-5d1b-4c1e-9a55-3d1f0c6b7e21",
        "HTTP_ACCEPT": "*/*",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "https",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=40, help="alternating blocks per URL (default 40)")
    parser.add_argument("--block-size", type=int, default=100, help="requests per block (default 100)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    with temp_workdir() as workdir:
        setup_django(Path(workdir))
        from django.core.handlers.wsgi import WSGIHandler
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from benchmarks._support.bare import BareCallback
        from django_paycollect import tasks
        from django_paycollect.conf import paycollect_settings
        from django_paycollect.models import ReceivedCallback

        with connection.schema_editor() as editor:
            editor.create_model(BareCallback)
        community = paycollect_settings.COMMUNITY_ID
        handler = WSGIHandler()
        enqueued: list[Any] = []  # one message (its arguments) per callback: eager, none is held
        statuses: list[str] = []

        def start_response(status: str, headers: list[tuple[str, str]]) -> None:
            statuses.append(status)

        def post(path: str, body: bytes) -> bytes:
            response = handler(environ(path, body), start_response)
            try:
                return b"".join(response)
            finally:
                response.close()  # as a WSGI server does: request_finished, connection housekeeping

        full_path, bare_path = f"/paycollect/callback/{TOKEN}/", f"/bare/{TOKEN}/"

        def drive(path: str, bodies: list[bytes]) -> tuple[float, float]:
            """Requests per second, and CPU microseconds per request, for one block."""
            statuses.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            for body in bodies:
                post(path, body)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            wrong = [s for s in statuses if not s.startswith("200")]
            if wrong:
                raise SystemExit(f"{path} answered {wrong[0]}")
            return len(bodies) / wall, cpu / len(bodies) * 1e6

        # The Celery task is not under test: its apply_async only counts what the on_commit hook handed on.
        publish = mock.patch.object(tasks.process_callbacks, "apply_async", side_effect=enqueued.append)
        with publish:
            for path in (full_path, bare_path):  # warm-up: imports, caches, SQLite pages
                drive(path, [callback_body(community) for _ in range(200)])
            # Short blocks, alternating, so that a burst of other load on the machine hits both sides alike;
            # the ratio is the median of the blocks' ratios.
            rates: dict[str, list[float]] = {"full": [], "bare": []}
            cpu: dict[str, list[float]] = {"full": [], "bare": []}
            for block in range(args.blocks):
                bodies = [callback_body(community) for _ in range(args.block_size)]
                order = [("full", full_path), ("bare", bare_path)]
                for name, path in order if block % 2 == 0 else order[::-1]:
                    rate, cpu_us = drive(path, bodies)
                    rates[name].append(rate)
                    cpu[name].append(cpu_us)

            # Queries: one new callback, one redelivery of it, and the bare view, each counted alone.
            body = callback_body(community)
            counts: dict[str, list[str]] = {}
            for name, path, sent in (
                ("new", full_path, body),
                ("redelivery", full_path, body),
                ("bare", bare_path, body),
            ):
                # The request_started signal empties the query log: start from an empty one.
                connection.queries_log.clear()
                with CaptureQueriesContext(connection) as captured:
                    post(path, sent)
                counts[name] = [q["sql"] for q in captured.captured_queries]

        stored = ReceivedCallback.objects.filter(state=ReceivedCallback.QUEUED).count()
        expected = 200 + args.blocks * args.block_size + 1
        if stored != expected or len(enqueued) != expected:
            raise SystemExit(
                f"expected {expected} stored and enqueued callbacks, got {stored} and {len(enqueued)}"
            )

    full, bare = statistics.median(rates["full"]), statistics.median(rates["bare"])
    cpu_full, cpu_bare = statistics.median(cpu["full"]), statistics.median(cpu["bare"])
    ratio = statistics.median(f / b for f, b in zip(rates["full"], rates["bare"], strict=True))
    cpu_ratio = statistics.median(b / f for f, b in zip(cpu["full"], cpu["bare"], strict=True))
    n_new, n_dup, n_bare = len(counts["new"]), len(counts["redelivery"]), len(counts["bare"])
    measures = [
        Measure(
            "callback ingest throughput, full stack",
            f"{full:.0f} req/s",
            f"bare view {bare:.0f} req/s",
            ratio,
            f"≥ {TARGET_RATIO:g}",
            ratio >= TARGET_RATIO,
        ),
        Measure(
            "CPU per callback, full stack",
            f"{cpu_full:.0f} µs",
            f"bare view {cpu_bare:.0f} µs",
            cpu_ratio,
            "(reported)",
            None,
        ),
        Measure(
            "SQL statements per new callback",
            str(n_new),
            f"bare view {n_bare}",
            None,
            f"≤ {TARGET_QUERIES}",
            n_new <= TARGET_QUERIES,
        ),
        Measure(
            "SQL statements per redelivery",
            str(n_dup),
            f"bare view {n_bare}",
            None,
            f"≤ {TARGET_QUERIES}",
            n_dup <= TARGET_QUERIES,
        ),
    ]
    print(f"{args.blocks} alternating blocks of {args.block_size} requests per URL, medians:")
    print_measures(measures)

    def shorten(sql: str) -> str:
        return sql if len(sql) <= 150 else sql[:147] + "..."

    quartiles = statistics.quantiles([f / b for f, b in zip(rates["full"], rates["bare"], strict=True)], n=4)
    details = [
        f"throughput ratio per block (full / bare): quartiles {quartiles[0]:.2f}, {quartiles[1]:.2f}, "
        f"{quartiles[2]:.2f}",
        "statements of a new callback:",
        *(f"  {shorten(sql)}" for sql in counts["new"]),
        "statements of a redelivery:",
        *(f"  {shorten(sql)}" for sql in counts["redelivery"]),
    ]
    write_section(
        "callback_ingest",
        "Callback ingest",
        summary=(
            f"{args.blocks} alternating blocks of {args.block_size} callback POSTs per URL through Django's "
            "WSGI handler "
            "(middleware, URL routing, the callback view, store, dedupe, on_commit hand-on with the task's "
            "`apply_async` patched to a no-op) beside a bare view inserting the same bodies into a table of "
            "the same shape; SQLite file, persistent connection. Ratios are medians of the blocks' ratios; "
            "CPU is this process's CPU time per request (its ratio is bare / full)."
        ),
        measures=measures,
        details=details,
    )
    return exit_status(measures, args.strict)


if __name__ == "__main__":
    sys.exit(main())
