"""``manage.py paycollect_process_callbacks [--stuck | --failed | --ids 1 2] [--older-than 1m]``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q, QuerySet
from django.utils import timezone

from ... import services
from ...models import HousekeepingRun, ReceivedCallback
from ...services.callback_ledger import REPROCESSABLE_STATES, stuck_filter
from ...services.housekeeping import record_run
from ..arguments import age


class Command(BaseCommand):
    help = (
        "Verify stored callbacks again, here and now, through the service layer: by default those "
        "received or queued whose verification was due more than --older-than ago (a broker down, a "
        "worker lost); with --stuck those the periodic sweep would queue again (received, or due more "
        "than CALLBACK_REQUEUE_AFTER ago: the sweep's equivalent when no worker or beat runs); with "
        "--failed those whose verification failed; with --ids exactly those. "
        "Exits with status 1 when one still fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--stuck",
            action="store_true",
            help="what the sweep queues again: received, or queued and overdue by CALLBACK_REQUEUE_AFTER",
        )
        which.add_argument("--failed", action="store_true", help="callbacks whose verification failed")
        which.add_argument("--ids", nargs="+", type=int, metavar="ID", help="these callbacks (by id)")
        parser.add_argument(
            "--older-than",
            type=age,
            default=timedelta(minutes=1),
            metavar="AGE",
            help="without --stuck, --failed or --ids: due at least this long ago (default 1m)",
        )
        parser.add_argument("--dry-run", action="store_true", help="list them, process nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = int(options["verbosity"])
        selected = self._selected(options)
        ids = list(selected.order_by("received_at", "pk").values_list("pk", flat=True))
        if options["stuck"] and not options["dry_run"]:
            # The sweep's equivalent (cron on a site without beat): recorded as a run of the sweep, so the
            # admin and the checks do not call it late.
            record_run(HousekeepingRun.SWEEP)
        if options["ids"]:
            for missing in sorted(set(options["ids"]) - set(ids)):
                state = ReceivedCallback.objects.filter(pk=missing).values_list("state", flat=True).first()
                why = f"is {state}, nothing to verify" if state else "does not exist"
                self.stderr.write(f"callback #{missing} {why}; skipped")
        if not ids:
            if verbosity:
                self.stdout.write("No callbacks to process.")
            return
        if verbosity:
            self.stdout.write(f"{len(ids)} callback(s) to process")
        counts: dict[str, int] = {}
        for done, pk in enumerate(ids, start=1):
            callback = ReceivedCallback.objects.get(pk=pk)
            claims = f"{callback.transaction_uuid} claims {callback.claimed_status}"
            label = f"[{done}/{len(ids)}] callback #{pk} ({claims})"
            if options["dry_run"]:
                self.stdout.write(f"{label}: {callback.state}, would be processed")
                continue
            # The claim makes a concurrent run (or a redelivery) skip it rather than verify it twice.
            # Failed ones and those asked for by id are verified afresh (now, even if fetched moments
            # ago); the others hand on the question they were queued with.
            afresh = bool(options["failed"] or options["ids"])
            state = services.reprocess_callback(pk, afresh=afresh, here=True)
            if state is None:
                counts["skipped"] = counts.get("skipped", 0) + 1
                self.stdout.write(f"{label}: taken by someone else meanwhile; skipped")
                continue
            counts[state] = counts.get(state, 0) + 1
            after = ReceivedCallback.objects.get(pk=pk)
            if state == ReceivedCallback.PROCESSED:
                if verbosity:
                    self.stdout.write(f"{label}: processed: {after.outcome}")
            elif state == ReceivedCallback.QUEUED:
                # Deferred: its transaction was fetched moments ago for another callback.
                self.stdout.write(f"{label}: still queued: {after.outcome}")
            else:
                self.stderr.write(f"{label}: {state}: {after.error or 'see the admin'}")
        if options["dry_run"]:
            self.stdout.write(f"Dry run: {len(ids)} callback(s) would be processed.")
            return
        summary = ", ".join(f"{count} {state}" for state, count in sorted(counts.items()))
        self.stdout.write(f"Processed {len(ids)} callback(s): {summary}.")
        failed = len(ids) - sum(
            counts.get(state, 0) for state in (ReceivedCallback.PROCESSED, ReceivedCallback.QUEUED, "skipped")
        )
        if failed:
            raise CommandError(f"{failed} callback(s) could not be verified (see above)", returncode=1)

    def _selected(self, options: dict[str, Any]) -> QuerySet[ReceivedCallback]:
        if options["ids"]:
            return ReceivedCallback.objects.filter(pk__in=options["ids"], state__in=REPROCESSABLE_STATES)
        if options["failed"]:
            return ReceivedCallback.objects.filter(state=ReceivedCallback.FAILED)
        if options["stuck"]:
            return ReceivedCallback.objects.filter(stuck_filter())
        if options["older_than"] <= timedelta(0):
            # A callback just stored is being handed to its task right now: not for us to take.
            raise CommandError("--older-than must be more than zero without --stuck, --failed or --ids")
        cutoff = timezone.now() - options["older_than"]
        return ReceivedCallback.objects.filter(
            Q(next_attempt_at__lt=cutoff) | Q(next_attempt_at__isnull=True, received_at__lt=cutoff),
            state__in=ReceivedCallback.WAITING_STATES,
        )
