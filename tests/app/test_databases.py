"""One database story, on PostgreSQL (where a lock outside its transaction is refused, and a replica can lag):
every atomic block, row lock and decision read of the app's models uses the database the project's router
gives for writing them.

Two routers a project really has:

- ``SecondDatabase`` puts the app's models, and the models they point to (users, content types), on a database
  of their own (``payments``); the sandbox's own models stay on ``default``. Before, ``start_payment``, the
  admin's refund and direct orders answered 500 *after the service accepted the payment* (an atomic block
  opened on ``default``, the lock taken on ``payments``), and the payment's uuid was lost.
- ``ReplicaReads`` sends the app's reads to ``replica``, a database that never receives a write: a replica as
  far behind as one can be. A decision made on it finds nothing and goes wrong; made on the primary, the
  flows hold.

A router that splits the app's models from the models they point to is refused by check ``paycollect.E021``.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core import checks
from django.db import connections
from django.test.utils import override_settings

from django_paycollect import services
from django_paycollect.checks import check_one_database
from django_paycollect.models import ApiCall, DirectOrder, ReceivedCallback, Refund, Transaction
from django_paycollect.reconciliation import reconcile
from django_paycollect.services.callback_ledger import run_verification, store_callback
from tests.support.admin import logged_in, refund_page, staff
from tests.support.payments import BILLING

ALL = ["default", "payments", "replica"]
pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True, databases=ALL)]

OURS = {"paycollect", "auth", "contenttypes"}


class SecondDatabase:
    """The app's models and the models they point to on ``payments``; everything else on ``default``."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return "payments" if model._meta.app_label in OURS else None

    db_for_write = db_for_read

    def allow_relation(self, first: Any, second: Any, **hints: Any) -> bool:
        return True


class AppAloneOnSecondDatabase(SecondDatabase):
    """What a project gets wrong: the app's models moved, the user model they point to left behind."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return "payments" if model._meta.app_label == "paycollect" else None

    db_for_write = db_for_read


class ReplicaReads:
    """The app's reads on ``replica`` (never written: no row is there), its writes on ``default``."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return "replica" if model._meta.app_label == "paycollect" else None

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return "default"

    def allow_relation(self, first: Any, second: Any, **hints: Any) -> bool:
        return True


def second_database() -> Any:
    return override_settings(DATABASE_ROUTERS=[f"{__name__}.SecondDatabase"])


def replica_reads() -> Any:
    return override_settings(DATABASE_ROUTERS=[f"{__name__}.ReplicaReads"])


def rows(model: Any, alias: str) -> Any:
    return model._default_manager.using(alias)


def pay_and_verify(sb: Any) -> Transaction:
    """A payment started, paid at the service and verified from its callback: the flow a site runs most."""
    txn = services.start_payment(amount=Decimal("100.00"), billing_data=BILLING)
    assert txn.status == Transaction.PENDING
    sb.control.complete(txn.uuid)
    stored = store_callback(transaction_uuid=txn.uuid.upper(), claimed_status="SUCCESSFUL")
    assert stored.to_verify is not None
    assert run_verification(stored.to_verify).state == ReceivedCallback.PROCESSED
    return txn


def test_the_app_on_a_second_database_pays_refunds_and_verifies_there(paycollect_in_process, signal_log):
    with second_database():
        assert check_one_database() == []
        txn = pay_and_verify(paycollect_in_process)
        refund = services.refund(txn, Decimal("30.00"))
        order = services.create_direct_order(
            name="Invoice 7",
            amount=Decimal("500.00"),
            payment_methods=["card"],
            customer_name="Omar Said",
            customer_email="omar@example.com",
            customer_mobile="+201001112222",
        )
        synced = services.sync_transaction(txn)
        summary = reconcile(older_than=timedelta(0))
    assert refund.state == Refund.SUCCEEDED
    assert order.state == DirectOrder.CREATED
    assert synced.status == Transaction.SUCCESSFUL
    assert summary.errors == []
    stored = rows(Transaction, "payments").get(pk=txn.pk)
    assert stored.status == Transaction.SUCCESSFUL
    assert rows(Refund, "payments").filter(transaction_id=txn.pk).count() == 1
    assert rows(DirectOrder, "payments").count() == 1
    assert rows(ApiCall, "payments").filter(operation="get_transaction").exists()
    # Nothing of the app's was written to the default database.
    assert not rows(Transaction, "default").exists()
    assert not rows(ReceivedCallback, "default").exists()
    assert signal_log.count("payment_succeeded") == 1
    assert signal_log.count("refund_succeeded") == 1


def test_the_admins_refund_on_a_second_database_is_no_500(
    paycollect_in_process, client, django_user_model, atomic_requests
):
    with second_database():
        txn = pay_and_verify(paycollect_in_process)
        logged_in(client, staff(django_user_model, "view_transaction", "refund_transaction"))
        page_url, _page = refund_page(client, [txn])
        response = client.post(page_url, {f"amount_{txn.pk}": "30.00", f"shown_{txn.pk}": "100.00"})
    assert response.status_code == 302
    assert rows(Refund, "payments").get(transaction_id=txn.pk).state == Refund.SUCCEEDED


def test_signals_follow_the_commit_of_the_app_s_database(paycollect_in_process, signal_log):
    """On another alias than ``default``, on_commit must be asked of that alias: otherwise the signal is sent
    at once, before (or without) the commit it announces."""
    with second_database():
        txn = services.start_payment(amount=Decimal("100.00"), billing_data=BILLING)
        paycollect_in_process.control.complete(txn.uuid)
        seen: list[bool] = []

        def receiver(sender: Any, transaction: Transaction, **kwargs: Any) -> None:
            seen.append(connections["payments"].in_atomic_block)

        from django_paycollect import signals

        signals.payment_succeeded.connect(receiver)
        try:
            services.sync_transaction(txn)
        finally:
            signals.payment_succeeded.disconnect(receiver)
    assert seen == [False]  # sent once, after the commit


def test_a_router_that_leaves_what_the_app_points_to_behind_is_refused_before_any_payment():
    with override_settings(DATABASE_ROUTERS=[f"{__name__}.AppAloneOnSecondDatabase"]):
        found = check_one_database()
        everything = checks.run_checks(tags=[checks.Tags.database], databases=ALL)
    [error] = found
    assert error.id == "paycollect.E021"
    assert "'payments'" in error.msg
    assert "auth.User on 'default'" in error.msg
    assert "paycollect.E021" in [message.id for message in everything]


def test_decisions_are_made_on_the_primary_never_on_a_lagging_replica(paycollect_in_process, signal_log):
    with replica_reads():
        txn = pay_and_verify(paycollect_in_process)
        # A browser return, a sync and reconciliation decide on the row too.
        services.sync_transaction(uuid=txn.uuid)
        refund = services.refund(txn, Decimal("10.00"), expected_refundable=Decimal("100.00"))
        summary = reconcile(older_than=timedelta(0))
    assert refund.state == Refund.SUCCEEDED
    assert summary.errors == []
    stored = rows(Transaction, "default").get(pk=txn.pk)
    assert stored.status == Transaction.SUCCESSFUL
    # One payment: the replica's missing rows never made the app create a second one from a fetch.
    assert rows(Transaction, "default").count() == 1
    assert not rows(Transaction, "replica").exists()
    assert signal_log.count("payment_succeeded") == 1
