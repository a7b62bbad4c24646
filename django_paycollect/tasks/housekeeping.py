"""Reconciliation (fanned out in chunks on the project's runner) and pruning."""

from __future__ import annotations

import logging
from typing import Any

from .. import reconciliation
from ..reconciliation.pruning import BATCH_SIZE
from .delivery import REDELIVERABLE, recording_task_id
from .runners import job, send

logger = logging.getLogger("django_paycollect.tasks")


@job("reconcile", **REDELIVERABLE)
def reconcile(self: Any, community_id: str | None = None, older_than: str = "30m") -> dict[str, Any]:
    """Settle what is uncertain (see ``reconciliation.reconcile``); returns the summary."""
    with recording_task_id(self):
        summary = reconciliation.reconcile(
            community_id=community_id,
            older_than=reconciliation.parse_age(older_than),
            # Large backlogs go to every worker in chunks rather than through this one task.
            fan_out=lambda pks: send("reconcile_chunk", pks),
        )
    for line in summary.lines():
        logger.info("%s", line)
    return summary.as_dict()


@job("reconcile_chunk", **REDELIVERABLE)
def reconcile_chunk(self: Any, pks: list[int]) -> dict[str, Any]:
    """Fetch the open transactions among ``pks``: a chunk of a large reconcile run."""
    with recording_task_id(self):
        summary = reconciliation.reconcile_chunk(pks)
    for finding in summary.findings:
        logger.info("reconciliation: %s", finding)
    return summary.as_dict()


@job("prune", **REDELIVERABLE)
def prune(
    self: Any,
    older_than: str = "90d",
    include_unprocessed: bool = False,
    batch_size: int = BATCH_SIZE,
) -> dict[str, Any]:
    """Delete old ApiCall and ReceivedCallback rows in batches (see ``reconciliation.prune``)."""
    result = reconciliation.prune(
        reconciliation.parse_age(older_than, allow_zero=False),
        include_unprocessed=include_unprocessed,
        batch_size=batch_size,
    )
    return result.as_dict()
