"""``manage.py paycollect_reconcile [--community ID] [--older-than 30m]``: settle what is uncertain, now."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import reconciliation
from ..arguments import age


class Command(BaseCommand):
    help = (
        "Fetch transactions pending for too long, abandon payment starts of unknown outcome, settle "
        "cancellations of unknown outcome, and report refunds, captures and orders that need review "
        "and recurring charges we never heard of. Exits with status 1 when an item failed."
    )

    #: Without --verbosity 2, a progress line every this many items of a phase.
    PROGRESS_EVERY = 100

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--community", metavar="ID", help="only this community (default: all)")
        parser.add_argument(
            "--older-than",
            type=age,
            default=timedelta(minutes=30),
            metavar="AGE",
            help="only what has been uncertain for this long: 30m, 2h, 1d (default 30m)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = int(options["verbosity"])
        phase = ""

        def progress(step: reconciliation.Progress) -> None:
            nonlocal phase
            if step.phase != phase:
                phase = step.phase
                if verbosity:
                    self.stdout.write(f"{phase}: {step.total} to check")
            finding = step.finding
            line = f"  [{step.done}/{step.total}] {finding}"
            if finding.error:
                self.stderr.write(line)
            elif finding.changed or finding.needs_review or verbosity >= 2:
                self.stdout.write(line)
            elif verbosity and (step.done % self.PROGRESS_EVERY == 0 or step.done == step.total):
                self.stdout.write(f"  [{step.done}/{step.total}]")

        summary = reconciliation.reconcile(
            community_id=options["community"], older_than=options["older_than"], progress=progress
        )
        if not summary.fetched and not summary.findings and verbosity:
            self.stdout.write("Nothing to reconcile.")
        for line in summary.lines():
            self.stdout.write(line)
        if summary.errors:
            raise CommandError(
                f"{len(summary.errors)} item(s) could not be reconciled (see above)", returncode=1
            )
