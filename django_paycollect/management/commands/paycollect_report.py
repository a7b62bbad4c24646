"""``manage.py paycollect_report [--community ID] [--currency EGP] [--days 30] [--json]``: the dashboard's
figures (``reporting.report``) as text or JSON."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ... import reporting
from ...conf import paycollect_settings
from ...reporting.figures import DEFAULT_PERIOD
from ...reporting.report import duration_text
from ..arguments import currency, days


class Command(BaseCommand):
    help = (
        "Print the payments dashboard's figures for a community, a currency and a period: collected and "
        "refunded per day, payments by status, the success rate, callback health, what needs a person and "
        "the service's latest statistics beside our ledger. --json for machines (amounts as exact text)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--community", metavar="ID", help="the community (default: PAYCOLLECT's)")
        parser.add_argument(
            "--currency", type=currency, help="the currency (default: PAYCOLLECT['DEFAULT_CURRENCY'])"
        )
        parser.add_argument(
            "--days",
            type=days,
            default=DEFAULT_PERIOD,
            help=f"the period: today and the days before it (default {DEFAULT_PERIOD})",
        )
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        community = options["community"] or paycollect_settings.COMMUNITY_ID
        if not community:
            raise CommandError("No community: give --community, or set PAYCOLLECT['COMMUNITY_ID'].")
        code = options["currency"] or str(paycollect_settings.DEFAULT_CURRENCY)
        found = reporting.report(str(community), code, options["days"])
        if options["json"]:
            self.stdout.write(json.dumps(found.as_dict(), indent=2, ensure_ascii=False))
            return
        for line in lines(found):
            self.stdout.write(line)


def lines(r: reporting.Report) -> list[str]:
    """The report as text, section by section (the admin page's order)."""
    span, cur = r.period, r.currency
    out = [
        _(
            "Payments report: %(community)s, %(currency)s, %(days)d days: %(first)s to %(last)s (%(tz)s), "
            "as of %(now)s"
        )
        % {
            "community": r.community_id,
            "currency": cur,
            "days": span.days,
            "first": span.first_day.isoformat(),
            "last": span.last_day.isoformat(),
            "tz": span.time_zone,
            "now": _at(span.end),
        },
        "",
        ngettext(
            "Collected: %(amount)s %(currency)s in %(count)d payment "
            "(renewal charges %(renewals)s in %(rcount)d)",
            "Collected: %(amount)s %(currency)s in %(count)d payments "
            "(renewal charges %(renewals)s in %(rcount)d)",
            r.collected.count,
        )
        % {
            "amount": r.collected.amount,
            "currency": cur,
            "count": r.collected.count,
            "renewals": r.renewals.amount,
            "rcount": r.renewals.count,
        },
        ngettext(
            "Refunded: %(amount)s %(currency)s in %(count)d refund",
            "Refunded: %(amount)s %(currency)s in %(count)d refunds",
            r.refunded.count,
        )
        % {"amount": r.refunded.amount, "currency": cur, "count": r.refunded.count},
        _("Net: %(amount)s %(currency)s") % {"amount": r.net, "currency": cur},
        _("Success rate: %(rate)s (successful among successful and failed payments started in the period)")
        % {"rate": "—" if r.success_rate is None else f"{r.success_rate} %"},
        "",
        _("Per day"),
        _table(
            [_("Day"), _("Collected"), _("Payments"), _("Renewals"), _("Refunded"), _("Refunds"), _("Net")],
            [
                [
                    day.date.isoformat(),
                    str(day.collected.amount),
                    str(day.collected.count),
                    str(day.renewals.amount),
                    str(day.refunded.amount),
                    str(day.refunded.count),
                    str(day.net),
                ]
                for day in r.days
            ],
        ),
        "",
        _("Payments started in the period, by status"),
        _table(
            [_("Status"), _("Payments"), _("Amount")],
            [[line.status, str(line.started.count), str(line.started.amount)] for line in r.by_status],
        ),
        "",
        _("Callbacks (the whole site)"),
        _table(
            [_("Figure"), _("Count")],
            [
                [_("Received in the period"), str(r.callbacks.received)],
                [_("Verified"), str(r.callbacks.verified)],
                [_("Verification failed"), str(r.callbacks.failed)],
                [_("Duplicate deliveries"), str(r.callbacks.duplicates)],
                [_("Invalid"), str(r.callbacks.invalid)],
                [_("Waiting for verification now"), str(r.callbacks.waiting)],
                [_("Stuck now"), str(r.callbacks.stuck)],
            ],
        ),
        _("Oldest stuck callback: %(age)s") % {"age": duration_text(r.callbacks.oldest_stuck_age)},
        _("Receipt to verification: %(percentiles)s")
        % {
            "percentiles": ", ".join(
                f"p{p} {duration_text(value)}" for p, value in r.callbacks.verification_time.items()
            )
        },
        "",
        _("Needs a person (any date, any currency)"),
        _table([_("What"), _("How many")], [[item.label, str(item.count)] for item in r.attention]),
        "",
        *_housekeeping_lines(r),
        "",
    ]
    out += _statistics_lines(r)
    return out


def _housekeeping_lines(r: reporting.Report) -> list[str]:
    """When the sweep and reconciliation last ran; what is late is said in full under the table."""
    rows = []
    for job in r.housekeeping:
        ran = job.last_run_at
        if ran is None:
            last = _("never")
        else:
            last = _("%(when)s (%(age)s ago)") % {"when": _at(ran), "age": duration_text(job.idle_for)}
        state = _("LATE") if job.late else _("not run yet") if ran is None else _("on time")
        rows.append([job.label, duration_text(job.interval), last, state])
    out = [
        _("Periodic jobs"),
        _table([_("Job"), _("Every"), _("Last ran"), _("State")], rows),
    ]
    out += [_("Warning: %(text)s") % {"text": job.warning()} for job in r.housekeeping if job.late]
    return out


def _statistics_lines(r: reporting.Report) -> list[str]:
    comparison, cur = r.statistics, r.currency
    snapshot = comparison.snapshot
    title = _("The service's statistics beside our ledger")
    if snapshot is None:
        return [title, _("No statistics have been fetched from the service for this community yet.")]

    def text(value: Any) -> str:
        return "—" if value is None else str(value)

    def signed(value: Any) -> str:
        return "—" if value is None else (f"+{value}" if value > 0 else str(value))

    ledger = comparison.ledger
    rows = [
        [
            _("Transactions (every currency)"),
            text(snapshot.total_number_of_transactions),
            str(ledger.transactions),
            signed(comparison.transactions_difference),
        ],
        [
            _("Total collected, ours before refunds (%(currency)s)") % {"currency": cur},
            text(snapshot.total_collected_transactions),
            str(ledger.collected),
            signed(comparison.collected_difference),
        ],
        [
            _("Total collected, ours after refunds (%(currency)s)") % {"currency": cur},
            text(snapshot.total_collected_transactions),
            str(ledger.collected_net),
            signed(comparison.collected_net_difference),
        ],
        [_("Collected this week"), text(snapshot.weekly_collected_transactions), "—", "—"],
        [_("Balance"), text(snapshot.balance), "—", "—"],
        [_("Total settled"), text(snapshot.total_settled), "—", "—"],
    ]
    out = [
        title,
        _("Snapshot taken %(when)s (%(age)s before this report)")
        % {
            "when": _at(snapshot.taken_at),
            "age": duration_text(r.period.end - snapshot.taken_at),
        },
        _table([_("Figure"), _("The service"), _("Our ledger"), _("Difference")], rows),
    ]
    others = [code for code in ledger.currencies if code != cur]
    if others:
        out.append(
            _("This community also has payments in %(others)s: the service's figures name no currency.")
            % {"others": ", ".join(others)}
        )
    return out


def _at(moment: Any) -> str:
    """A moment as the report writes it, in the site's time zone."""
    return (timezone.localtime(moment) if timezone.is_aware(moment) else moment).strftime("%Y-%m-%d %H:%M")


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first left-aligned, the others right-aligned."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first, *rest = cells
        return "  ".join(
            [f"  {first:<{widths[0]}}", *(f"{c:>{w}}" for c, w in zip(rest, widths[1:], strict=True))]
        )

    return "\n".join(line(row) for row in [header, *rows])
