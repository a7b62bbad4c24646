"""Fetch-transaction throughput of the standalone sandbox, beside a minimal Django view on the same server.

Starts ``python -m django_paycollect.sandbox`` on a free loopback port (temporary SQLite file), creates and
completes one transaction, then drives both URLs with the same keep-alive HTTP clients for the same time, in
alternating rounds (medians compared):

- ``GET /api/v1/communities/<id>/transactions/<uuid>/`` (authentication, fault check, lookup, envelope,
  journal entry), and
- ``GET /_health`` (the smallest view the runner has: same server, same middleware, no database).

Prints requests per second of each and their ratio; the target is a ratio of at most 2.
``--strict`` makes a missed target exit with status 1. Run by ``make bench``, never by the tests.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import Measure, write_section
from django_paycollect.sandbox.testing import start_sandbox

TARGET_RATIO = 2.0


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a process (Linux /proc), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _drive(
    host: str, port: int, path: str, headers: dict[str, str], seconds: float, threads: int
) -> tuple[float, int]:
    """Requests per second over ``seconds`` with ``threads`` persistent connections, and the request count."""
    counts = [0] * threads
    failures: list[str] = []
    start_gate = threading.Barrier(threads + 1)
    stop_at = [0.0]

    def worker(index: int) -> None:
        connection = http.client.HTTPConnection(host, port, timeout=30)
        start_gate.wait()
        while time.monotonic() < stop_at[0]:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                failures.append(f"{response.status} {body[:200]!r}")
                return
            counts[index] += 1
        connection.close()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    stop_at[0] = time.monotonic() + seconds
    started = time.monotonic()
    start_gate.wait()
    for thread in workers:
        thread.join()
    elapsed = time.monotonic() - started
    if failures:
        raise SystemExit(f"benchmark request failed: {failures[0]}")
    return sum(counts) / elapsed, sum(counts)


def _json_request(
    host: str, port: int, method: str, path: str, body: object, headers: dict[str, str]
) -> dict:  # type: ignore[type-arg]
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.request(
        method, path, body=json.dumps(body), headers={"Content-Type": "application/json", **headers}
    )
    response = connection.getresponse()
    payload = json.loads(response.read())
    connection.close()
    if response.status >= 300:
        raise SystemExit(f"{method} {path} answered {response.status}: {payload}")
    return payload  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="measuring time per round and URL (default 2)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds; medians are compared (default 3)"
    )
    parser.add_argument("--threads", type=int, default=4, help="parallel keep-alive connections (default 4)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the ratio misses the target")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as workdir:
        sandbox = start_sandbox(Path(workdir))
        try:
            parts = urlsplit(sandbox.base_url)
            host, port = parts.hostname or "127.0.0.1", parts.port or 80
            info = sandbox.info
            key = {"x-api-key": info["api_key"]}
            started = _json_request(
                host,
                port,
                "POST",
                "/api/v1/payments/pay/variable-amount",
                {
                    "community_id": info["community_id"],
                    "amount": 104.5,
                    "original_amount": 100,
                    "variable_amount_id": info["variable_amount_id"],
                    "billing_data": {
                        "name": "Mona Ali",
                        "email": "mona@example.com",
                        "phone_number": "+201001234567",
                    },
                },
                key,
            )
            tx = started["data"]["transaction_uuid"]
            _json_request(
                host, port, "POST", f"/_control/transactions/{tx}/complete", {"outcome": "SUCCESSFUL"}, {}
            )
            fetch_path = f"/api/v1/communities/{info['community_id']}/transactions/{tx}/"

            # Warm both paths (imports, template-free code paths, SQLite page cache).
            _drive(host, port, fetch_path, key, 0.5, args.threads)
            _drive(host, port, "/_health", {}, 0.5, args.threads)

            # Alternating rounds, medians: load from anything else on the machine hits both sides alike.
            # The server's CPU time per request is measured too: it does not depend on that load.
            rates: dict[str, list[float]] = {"minimal": [], "fetch": []}
            cpu: dict[str, list[float]] = {"minimal": [], "fetch": []}
            pid = int(info["pid"])
            for _ in range(args.rounds):
                for name, path, headers in (("minimal", "/_health", {}), ("fetch", fetch_path, key)):
                    before = _cpu_seconds(pid)
                    rate, count = _drive(host, port, path, headers, args.seconds, args.threads)
                    after = _cpu_seconds(pid)
                    rates[name].append(rate)
                    if before is not None and after is not None and count:
                        cpu[name].append((after - before) / count * 1e6)
            minimal, fetch = statistics.median(rates["minimal"]), statistics.median(rates["fetch"])
        finally:
            sandbox.stop()

    ratio = minimal / fetch if fetch else float("inf")
    verdict = "within" if ratio <= TARGET_RATIO else "MISSES"
    print(f"threads {args.threads}, {args.rounds} rounds of {args.seconds:g} s per URL, medians:")
    print(f"minimal Django view   {minimal:9.0f} req/s")
    print(f"sandbox fetch         {fetch:9.0f} req/s")
    print(f"ratio                 {ratio:9.2f}x  ({verdict} the {TARGET_RATIO:g}x target)")
    measures = [
        Measure(
            "sandbox fetch throughput",
            f"{fetch:.0f} req/s",
            f"minimal view {minimal:.0f} req/s",
            ratio,
            f"≤ {TARGET_RATIO:g} (minimal / fetch)",
            ratio <= TARGET_RATIO,
        )
    ]
    if cpu["minimal"] and cpu["fetch"]:
        cpu_minimal, cpu_fetch = statistics.median(cpu["minimal"]), statistics.median(cpu["fetch"])
        print(
            f"server CPU per request: minimal {cpu_minimal:.0f} us, fetch {cpu_fetch:.0f} us "
            f"({cpu_fetch / cpu_minimal:.2f}x)"
        )
        measures.append(
            Measure(
                "sandbox server CPU per fetch",
                f"{cpu_fetch:.0f} µs",
                f"minimal view {cpu_minimal:.0f} µs",
                cpu_fetch / cpu_minimal,
                "(reported)",
                None,
            )
        )
    write_section(
        "sandbox_fetch",
        "Sandbox fetch throughput",
        summary=(
            f"The standalone sandbox's fetch-transaction endpoint beside its smallest view (`/_health`), "
            f"{args.threads} keep-alive client threads, {args.rounds} alternating rounds of "
            f"{args.seconds:g} s per URL, medians (the ratio is minimal / fetch: lower is better)."
        ),
        measures=measures,
    )
    return 1 if args.strict and ratio > TARGET_RATIO else 0


if __name__ == "__main__":
    sys.exit(main())
