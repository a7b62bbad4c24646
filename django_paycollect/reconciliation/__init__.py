"""Reconciliation and pruning: the periodic housekeeping behind ``paycollect_reconcile``, ``paycollect_prune``
and their tasks.

:func:`reconcile` looks for everything we are unsure about and asks the service, through the service layer
only (which fetches, locks, applies and signals), one named step per kind of doubt
(:mod:`~django_paycollect.reconciliation.steps`; docs/celery.md lists them in order). An item that fails is
counted and reported; the run goes on. Runs may overlap (beat and a manual command): every step is idempotent
under the service layer's row locks. Pruning is :mod:`~django_paycollect.reconciliation.pruning`.
"""

from __future__ import annotations

from .ages import format_age, parse_age
from .pruning import PruneResult, prune
from .report import Finding, Progress, ProgressCallback, Summary
from .steps import give_up_after, given_up, open_at_the_service, reconcile, reconcile_chunk

__all__ = [
    "Finding",
    "Progress",
    "ProgressCallback",
    "PruneResult",
    "Summary",
    "format_age",
    "give_up_after",
    "given_up",
    "open_at_the_service",
    "parse_age",
    "prune",
    "reconcile",
    "reconcile_chunk",
]
