"""``manage.py paycollect_export transactions|refunds|renewals ...``: a thin caller of reporting.exports."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import IO, Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...reporting import exports
from ..arguments import currency


def day(text: str) -> Any:
    """A day, ``YYYY-MM-DD`` (read by ``reporting.exports.parse_day``)."""
    try:
        return exports.parse_day(text)
    except exports.ExportError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Command(BaseCommand):
    help = (
        "Export transactions, refunds or the renewals of recurring series as CSV or XLSX. By default "
        "(--by completed) only what completed, with or without a period: payments paid, refunds that "
        "succeeded, renewal charges paid, put in a period by their completion time; --by created lists "
        "every status, by creation time; --status keeps only the statuses named. A period is days in the "
        "site's time zone (--since and --until, both included; without them, all time). To standard "
        "output unless --output."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("export", choices=sorted(exports.EXPORTS), help="what to export")
        parser.add_argument("--since", type=day, metavar="YYYY-MM-DD", help="the first day (included)")
        parser.add_argument("--until", type=day, metavar="YYYY-MM-DD", help="the last day (included)")
        parser.add_argument(
            "--by",
            choices=exports.BASES,
            default=exports.DEFAULT_BASIS,
            help=(
                "completed (default): only payments paid, refunds that succeeded and renewal charges "
                "paid, in the period by their completion time; created: every row, whatever its status, "
                "in the period by its creation time"
            ),
        )
        parser.add_argument(
            "--status",
            action="append",
            default=[],
            metavar="STATUS",
            help=(
                "only rows of this status, as the export's status column writes it (SUCCESSFUL, FAILED, "
                "PENDING ... for payments; succeeded, failed, pending, unknown for refunds); repeat for more"
            ),
        )
        parser.add_argument("--community", metavar="ID", help="only this community (default: every one)")
        parser.add_argument("--currency", type=currency, help="only this currency (default: every one)")
        parser.add_argument("--format", choices=exports.FORMATS, default="csv", help="csv (default) or xlsx")
        parser.add_argument("--output", metavar="FILE", help="write to FILE (default: standard output)")
        parser.add_argument(
            "--without-pii",
            action="store_true",
            help="leave out the customer's name, e-mail, phone, member id",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        export = exports.EXPORTS[options["export"]]
        try:
            period = exports.ExportPeriod(options["since"], options["until"])
            community = exports.known_community(options["community"]) if options["community"] else None
            file_format = exports.check_format(options["format"])
            queryset = exports.selection(
                export,
                period=period,
                basis=options["by"],
                community_id=community,
                currency=options["currency"],
                statuses=options["status"],
            )
        except exports.ExportError as exc:
            raise CommandError(str(exc)) from None
        pieces = exports.chunks(export, queryset, file_format, include_pii=not options["without_pii"])
        if options["output"]:
            try:
                with open(options["output"], "wb") as target:
                    self._write(pieces, target)
            except OSError as exc:
                raise CommandError(f"cannot write {options['output']}: {exc.strerror}") from None
            return
        # Bytes to standard output: the CSV is UTF-8 whatever the terminal's encoding, and an XLSX is binary.
        # OutputWrapper hands attributes on to the stream it wraps: a console's has the bytes beneath it.
        binary = getattr(self.stdout, "buffer", None)
        if binary is None and file_format == "xlsx":
            raise CommandError("XLSX is binary: give --output FILE (this standard output takes only text)")
        if binary is not None:
            self._write(pieces, binary)
        else:  # a text stream (StringIO under call_command): the CSV as text, nothing added to it
            for piece in pieces:
                self.stdout.write(piece.decode("utf-8"), ending="")
            self.stdout.flush()

    def _write(self, pieces: Iterable[Any], target: IO[Any]) -> None:
        for piece in pieces:
            target.write(piece)
        target.flush()
