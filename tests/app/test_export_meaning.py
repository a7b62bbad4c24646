"""What an export means, the same with and without a period (issue 33): ``--by completed`` (the default) is
always what completed (payments paid, refunds that succeeded), every other row only behind an explicit choice
(``--by created``, which lists every status, or ``--status``); exporting rows needs the permission to view
them; a day out of the range an export can read is a usage error, never a traceback.

The ledger is the dashboard's prepared one (``tests/app/test_dashboard.py``).
"""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from unittest import mock

import pytest
from django.core.management import CommandError, call_command

from django_paycollect.models import Refund, Transaction
from django_paycollect.reporting import exports
from tests.app import test_dashboard
from tests.app.test_dashboard import NOW
from tests.app.test_exports import csv_rows, export_csv, streamed, total
from tests.support.admin import logged_in, staff, url

cairo = test_dashboard.cairo
ledger = test_dashboard.ledger

pytestmark = pytest.mark.django_db


def command(*args: str) -> list[dict[str, str]]:
    out = io.StringIO()
    call_command("paycollect_export", *args, stdout=out)
    return csv_rows(out.getvalue())


def test_without_a_period_completed_lists_only_paid_payments_as_with_one(ledger):
    scope = {"community_id": "club-a", "currency": "EGP"}
    everything = export_csv("transactions", **scope)
    assert {row["status"] for row in everything} == {Transaction.SUCCESSFUL}
    assert all(row["completed"] for row in everything)
    # A finance person summing `amount` reads what was collected, never failed or pending payments.
    paid = Transaction.objects.filter(community_id="club-a", currency="EGP", succeeded_at__isnull=False)
    assert total(everything, "amount") == sum(t.total_amount for t in paid)
    # The command says the same, with and without --by completed.
    assert command("transactions", "--community", "club-a", "--currency", "EGP") == everything
    assert (
        command("transactions", "--by", "completed", "--community", "club-a", "--currency", "EGP")
        == everything
    )


def test_completed_refunds_are_the_refunds_that_succeeded_with_or_without_a_period(ledger):
    week = exports.ExportPeriod(dt.date(2026, 3, 9), dt.date(2026, 3, 15))
    for period in (None, week):
        rows = export_csv("refunds", period=period)
        assert rows, period
        assert {row["status"] for row in rows} == {Refund.SUCCEEDED}, period


def test_every_status_only_by_an_explicit_choice(ledger):
    scope = ["--community", "club-a", "--currency", "EGP"]
    created = command("transactions", "--by", "created", *scope)
    assert {Transaction.FAILED, Transaction.PENDING, Transaction.SUCCESSFUL} <= {r["status"] for r in created}
    failed = command("transactions", "--by", "created", "--status", "FAILED", *scope)
    assert {r["status"] for r in failed} == {Transaction.FAILED}
    assert total(failed, "amount") == Decimal("1020.00")
    either = command("transactions", "--by", "created", "--status", "FAILED", "--status", "PENDING", *scope)
    assert {r["status"] for r in either} == {Transaction.FAILED, Transaction.PENDING}
    refunds = command("refunds", "--by", "created", "--status", "failed")
    assert {r["status"] for r in refunds} == {Refund.FAILED}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["transactions", "--status", "PAID"], "Unknown status 'PAID'"),
        (["refunds", "--status", "SUCCESSFUL"], "Unknown status 'SUCCESSFUL'"),
        (["transactions", "--until", "9999-12-31"], "9999-12-31"),
        (["transactions", "--since", "9999-12-31"], "9999-12-31"),
        (["transactions", "--since", "0001-01-01"], "0001-01-01"),
        (["renewals", "--by", "created", "--until", "9999-12-31"], "9999-12-31"),
    ],
)
def test_the_command_refuses_statuses_and_days_it_cannot_read_as_usage_errors(ledger, args, message):
    with pytest.raises(CommandError, match=message):
        command(*args)


def test_a_period_out_of_range_is_an_export_error_not_an_overflow():
    with pytest.raises(exports.ExportError, match="9999-12-31"):
        exports.ExportPeriod(None, dt.date.max)
    with pytest.raises(exports.ExportError, match="0001-01-01"):
        exports.ExportPeriod(dt.date.min, None)


DASHBOARD_EXPORT = "/admin/paycollect/dashboard/export/"
SCOPE = {"community": "club-a", "currency": "EGP", "days": "7"}


def test_the_dashboard_export_needs_the_permission_to_view_the_rows(ledger, client, django_user_model):
    logged_in(client, staff(django_user_model, "view_dashboard", "export_transaction"))
    with mock.patch("django.utils.timezone.now", return_value=NOW):
        page = client.get(url("dashboard"), SCOPE)
        for name in exports.EXPORTS:
            response = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": name, "format": "csv"})
            assert response.status_code == 403, name
            assert not getattr(response, "streaming", False)
    # No links to downloads it would refuse.
    assert b'id="paycollect-exports"' not in page.content


def test_each_dashboard_export_needs_its_own_rows_view_permission(ledger, client, django_user_model):
    user = staff(django_user_model, "view_dashboard", "export_transaction", "view_refund", username="refunds")
    logged_in(client, user)
    with mock.patch("django.utils.timezone.now", return_value=NOW):
        refunds = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "refunds", "format": "csv"})
        payments = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "transactions", "format": "csv"})
    assert total(csv_rows(streamed(refunds)), "refund_amount") == Decimal("120.00")
    assert payments.status_code == 403
    logged_in(client, staff(django_user_model, "view_dashboard", "export_transaction", "view_transaction",
                            username="payments"))  # fmt: skip
    with mock.patch("django.utils.timezone.now", return_value=NOW):
        payments = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "transactions", "format": "csv"})
        renewals = client.get(DASHBOARD_EXPORT, {**SCOPE, "export": "renewals", "format": "csv"})
    assert total(csv_rows(streamed(payments)), "amount") == Decimal("1280.49")
    assert total(csv_rows(streamed(renewals)), "amount") == Decimal("49.99")
