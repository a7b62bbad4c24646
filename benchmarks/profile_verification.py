"""Where a callback's verification spends its CPU, step by step, beside the same work through the ORM.

The profile behind the verification figures of ``callback_intake_gunicorn.py``: one process, no broker,
no queue, so what it shows is the code's own cost. Starts the standalone sandbox and, on a SQLite file of its
own, ``--callbacks`` payments started here and completed at the service, each with a stored callback. Then:

- **the app**: ``callback_ledger.run_verification`` of each, under ``cProfile``;
- **the ORM job** (``_support/orm_work.py``, the bare pipeline's task): fetch with ``requests``, store the
  envelope and the status in one ``atomic()``, mark the callback with ``update()``.

Prints the CPU per verification of each (``time.process_time``: this process alone, the sandbox is another)
and the app's steps as docs/architecture.md names them (claim, fetch, apply, mark) with what each holds, so a
miss of the verification target is explained by where the time goes. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import Measure, print_measures, setup_django, temp_workdir, write_section
from django_paycollect.sandbox.testing import SandboxControl, start_sandbox

BILLING = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}
#: The app's steps, each the functions (module, name) whose cumulative time it is, in the order they run.
STEPS = (
    ("reads: the callback and its transaction", None),
    ("1 claim: the right to fetch and the attempt, one commit", ("callback_ledger.py", "claim_fetch")),
    ("2 fetch: the client's request and answer", ("client.py", "get_transaction")),
    ("2 fetch: the envelope's row built (secrets scrubbed)", ("calls.py", "_record")),
    ("3 apply: lock, envelope stored, status machine, save(), one commit", ("sync.py", "apply_fetched")),
    ("   of which the status change's row and signals queued", ("status.py", "set_local_status")),
    ("4 mark: the callback processed (in apply's commit)", ("callback_ledger.py", "mark_verified")),
    ("signals sent after the commit", ("common.py", "send")),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callbacks", type=int, default=200, help="verifications of each kind (default 200)")
    args = parser.parse_args()
    with temp_workdir() as workdir:
        sandbox = start_sandbox(Path(workdir) / "sandbox")
        try:
            measures, details = run(Path(workdir), sandbox.info, args.callbacks)
        finally:
            sandbox.stop()
    print_measures(measures)
    print("\n".join(details))
    write_section(
        "profile_verification",
        "Where a verification's CPU goes",
        summary=(
            f"{args.callbacks} verifications of callbacks of payments completed at the standalone sandbox, "
            "in one process on SQLite (no broker, no queue: the code's own cost), under `cProfile`, beside "
            "the ORM job of the bare pipeline (`benchmarks/_support/orm_work.py`). CPU of this process "
            "alone (`time.process_time`); the profiler's own overhead is in both. The steps are the "
            "callback path's in docs/architecture.md."
        ),
        measures=measures,
        details=details,
    )
    return 0


def run(workdir: Path, info: dict[str, Any], count: int) -> tuple[list[Measure], list[str]]:
    setup_django(workdir)
    from django.conf import settings
    from django.utils import timezone

    from benchmarks._support.orm_work import Fetcher
    from django_paycollect import services
    from django_paycollect.models import ReceivedCallback
    from django_paycollect.services.callback_ledger import run_verification

    community = str(info["community_id"])
    settings.PAYCOLLECT = {
        **settings.PAYCOLLECT,
        "BASE_URL": info["base_url"],
        "COMMUNITY_ID": community,
        "API_KEY": info["api_key"],
        "VARIABLE_AMOUNT_ID": int(info["variable_amount_id"]),
    }
    control = SandboxControl(info["base_url"])

    def stored() -> tuple[str, int]:
        txn = services.start_payment(amount=Decimal("104.50"), billing_data=BILLING)
        assert txn.uuid
        control.complete(txn.uuid)
        callback = ReceivedCallback.objects.create(
            state=ReceivedCallback.QUEUED,
            transaction_uuid=txn.uuid,
            claimed_status="SUCCESSFUL",
            merchant_id=community,
            dedupe_key=f"{txn.uuid}|SUCCESSFUL",
            received_at=timezone.now(),
            queued_at=timezone.now(),
            body="{}",
        )
        return txn.uuid, callback.pk

    print(f"storing {2 * count} payments completed at the sandbox, each with its callback...")
    ours = [stored() for _ in range(count)]
    theirs = [stored() for _ in range(count)]

    profile = cProfile.Profile()
    started = time.process_time()
    profile.enable()
    for _uuid, pk in ours:
        assert run_verification(pk).state == ReceivedCallback.PROCESSED
    profile.disable()
    app_cpu = (time.process_time() - started) / count

    fetcher = Fetcher(str(info["base_url"]), community, str(info["api_key"]))
    orm_profile = cProfile.Profile()
    started = time.process_time()
    orm_profile.enable()
    for uuid, pk in theirs:
        fetcher.fetch_and_store(uuid)
        ReceivedCallback.objects.filter(pk=pk).update(
            state=ReceivedCallback.PROCESSED, processed_at=timezone.now()
        )
    orm_profile.disable()
    orm_cpu = (time.process_time() - started) / count

    stats = pstats.Stats(profile)
    total = sum(entry[3] for key, entry in stats.stats.items() if key[2] == "run_verification") / count  # type: ignore[attr-defined]
    measures = [
        Measure(
            "CPU per verification, one process (the app's run_verification)",
            f"{app_cpu * 1e6:.0f} µs",
            f"{orm_cpu * 1e6:.0f} µs (the ORM job: fetch, envelope and status in one atomic(), update())",
            orm_cpu / app_cpu,
            "(reported: the profile below says where the difference goes)",
            None,
        )
    ]
    details = [
        f"the app's steps, cumulative time per verification under the profiler ({total * 1e6:.0f} µs):"
    ]
    accounted = 0.0
    for label, where in STEPS:
        if where is None:
            continue
        spent = _cumulative(stats, *where) / count
        if not label.startswith("   "):
            accounted += spent
        details.append(f"  {label}: {spent * 1e6:.0f} µs ({spent / total:.0%})")
    details.insert(
        1, f"  reads: the callback and its transaction, and the rest: {(total - accounted) * 1e6:.0f} µs"
    )
    orm_stats = pstats.Stats(orm_profile)
    orm_total = _cumulative(orm_stats, "orm_work.py", "fetch_and_store") / count
    details.append(f"the ORM job under the profiler: {orm_total * 1e6:.0f} µs, of which")
    for label, where in (
        ("fetch (requests)", ("orm_work.py", "fetch")),
        ("envelope and status in one atomic()", ("orm_work.py", "store")),
    ):
        spent = _cumulative(orm_stats, *where) / count
        details.append(f"  {label}: {spent * 1e6:.0f} µs ({spent / orm_total:.0%})")
    return measures, details


def _cumulative(stats: pstats.Stats, filename: str, function: str) -> float:
    """Seconds under ``function`` of a file named ``filename`` (not counting recursive re-entries)."""
    return sum(
        entry[3]
        for (path, _line, name), entry in stats.stats.items()  # type: ignore[attr-defined]
        if name == function and path.endswith(filename)
    )


if __name__ == "__main__":
    sys.exit(main())
