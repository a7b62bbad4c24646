"""``manage.py paycollect_prune --older-than 90d [--dry-run] [--include-unprocessed]``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import reconciliation
from ...reconciliation.pruning import BATCH_SIZE
from ..arguments import positive_age


class Command(BaseCommand):
    help = (
        "Delete API call records and received callbacks older than --older-than, in batches (each its own "
        "short transaction). Callbacks never processed (received, queued, failed) are kept unless "
        "--include-unprocessed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than", type=positive_age, required=True, metavar="AGE", help="e.g. 90d, 12w, 36h"
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="count what would be deleted, delete nothing"
        )
        parser.add_argument(
            "--include-unprocessed",
            action="store_true",
            help="delete old callbacks that were never processed too",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=BATCH_SIZE,
            metavar="N",
            help=f"rows per transaction (default {BATCH_SIZE})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = int(options["verbosity"])

        def progress(name: str, deleted: int, total: int) -> None:
            self.stdout.write(f"  {name}: {deleted}/{total} deleted")

        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        result = reconciliation.prune(
            options["older_than"],
            dry_run=options["dry_run"],
            include_unprocessed=options["include_unprocessed"],
            batch_size=options["batch_size"],
            progress=progress if verbosity else None,  # and without progress, no count before the batches
        )
        if verbosity:  # 0 is for scripts and cron: nothing printed but errors
            for line in result.lines():
                self.stdout.write(line)
