"""The second project every headline runs in: a project that listens to its models' saves.

Audit, history and search libraries connect a ``post_save`` receiver with no sender (every model of the
project), and django-simple-history keeps a history row of each save of the models registered with it.
With ``PAYCOLLECT_BENCH_PROJECT=receivers`` the benchmark settings install ``simple_history`` and this app,
whose ``ready`` connects such a global receiver and registers ``Transaction`` with simple-history; the
history table is made by :func:`create_history_table` (a benchmark's database has no migration for it).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_save

#: Saves heard, by model label: what a global receiver of an audit library would write down.
HEARD: Counter[str] = Counter()


def audit(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    HEARD[sender._meta.label] += 1


class ReceiversConfig(AppConfig):
    name = "benchmarks._support.receivers"
    label = "paycollect_bench_receivers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from simple_history import register

        from django_paycollect.models import Transaction

        post_save.connect(audit, dispatch_uid="paycollect-bench-audit")  # no sender: every model
        if not hasattr(Transaction, "history"):
            register(Transaction)


def create_history_table() -> None:
    """Create simple-history's table for ``Transaction`` on the default database, if it is missing."""
    from django.db import connection

    from django_paycollect.models import Transaction

    history = Transaction.history.model  # type: ignore[attr-defined]
    if history._meta.db_table not in connection.introspection.table_names():
        with connection.schema_editor() as editor:
            editor.create_model(history)
