"""Reconciliation and pruning: the periodic housekeeping behind ``paycollect_reconcile``, ``paycollect_prune``
and their Celery tasks.

:func:`reconcile` looks for everything we are unsure about and asks the service, through the service
layer only (which fetches, locks, applies and signals):

* transactions still open (PENDING, or NEW with a uuid) that nobody heard of for ``older_than``:
  fetched again (``services.sync_transaction``), so a lost callback costs a delay, not a payment;
* starts of unknown outcome (NEW, no uuid): the service has no lookup by our reference, so they are
  closed as ABANDONED (``services.abandon_unknown_start``) and the reference can be paid again;
* cancellations of unknown outcome: settled from the parent's ``recurring.active``
  (``services.settle_unknown_cancel``);
* refunds and captures of unknown outcome, and those left pending by a process that stopped
  mid-call: the spec's transaction shows neither, so their transaction is fetched again and they are
  reported as needing review (resolved in the admin, ``services.resolve_refund``); so are direct
  orders whose creation had an unknown outcome;
* active recurring series: charges the service executed that we never heard of
  (``services.missed_charges``) are reported.

An item that fails is counted and reported; the run goes on. Runs may overlap (beat and a manual
command): every step is idempotent under the service layer's row locks. Each kind of doubt is one named
step (:mod:`~django_paycollect.reconciliation.steps`); pruning is
:mod:`~django_paycollect.reconciliation.pruning`.
"""

from __future__ import annotations

from .ages import format_age, parse_age
from .pruning import PruneResult, prune
from .report import Finding, Progress, ProgressCallback, Summary
from .steps import give_up_after, open_at_the_service, reconcile, reconcile_chunk

__all__ = [
    "Finding",
    "Progress",
    "ProgressCallback",
    "PruneResult",
    "Summary",
    "format_age",
    "give_up_after",
    "open_at_the_service",
    "parse_age",
    "prune",
    "reconcile",
    "reconcile_chunk",
]
