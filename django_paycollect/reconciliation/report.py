"""What a reconciliation run found and did: a :class:`Finding` per item worth reading, and the summary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from .ages import format_age


@dataclass
class Finding:
    """What reconciliation did with one item, or why it needs a person."""

    phase: str
    kind: str  # transaction, refund, capture, series, direct_order, api_call
    object_id: int
    label: str
    outcome: str
    #: Status moved, start abandoned, cancellation settled: something changed.
    changed: bool = False
    needs_review: bool = False
    error: bool = False

    def __str__(self) -> str:
        return f"{self.kind} {self.label}: {self.outcome}"


@dataclass
class Progress:
    """Passed to the ``progress`` callable after each item: ``done`` of ``total`` in ``phase``."""

    phase: str
    done: int
    total: int
    finding: Finding


@dataclass
class Summary:
    community_id: str | None
    older_than: timedelta
    started_at: datetime = field(default_factory=timezone.now)
    finished_at: datetime | None = None
    #: Transactions fetched again (open ones, and those of refunds and captures to review).
    fetched: int = 0
    #: Of which the status moved.
    changed: int = 0
    abandoned: int = 0
    cancels_settled: int = 0
    missed_charges: int = 0
    #: Open transactions older than ``RECONCILE_GIVE_UP_AFTER``: no longer fetched, left to a person.
    given_up: int = 0
    #: Chunks of open transactions handed to other workers (``reconcile_chunk`` tasks), and their rows.
    chunks: int = 0
    chunked: int = 0
    #: Every finding worth reading: changes, reviews, errors (not the "still pending" ones).
    findings: list[Finding] = field(default_factory=list)

    @property
    def needs_review(self) -> list[Finding]:
        return [f for f in self.findings if f.needs_review]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.error]

    @property
    def seconds(self) -> float:
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable (the reconcile task's result)."""
        data = asdict(self)
        findings = data.pop("findings")  # last, after the counts
        return data | {
            "older_than": format_age(self.older_than),
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "needs_review": len(self.needs_review),
            "errors": len(self.errors),
            "findings": findings,
        }

    def lines(self) -> list[str]:
        scope = f"community {self.community_id}" if self.community_id else "all communities"
        lines = [
            f"Reconciliation of {scope} (older than {format_age(self.older_than)}) "
            f"took {self.seconds:.1f} s:",
            f"  transactions fetched again: {self.fetched} ({self.changed} changed status)",
        ]
        if self.chunks:
            lines.append(
                f"  open transactions handed to other workers: {self.chunked} in {self.chunks} chunk(s)"
            )
        if self.given_up:
            lines.append(
                "  open for longer than RECONCILE_GIVE_UP_AFTER, no longer fetched (need a person): "
                f"{self.given_up}"
            )
        lines += [
            f"  unknown starts abandoned: {self.abandoned}",
            f"  unknown cancellations settled: {self.cancels_settled}",
            f"  recurring charges we never heard of: {self.missed_charges}",
            f"  need review: {len(self.needs_review)}",
        ]
        lines += [f"    - {f}" for f in self.needs_review]
        lines.append(f"  errors: {len(self.errors)}")
        lines += [f"    - {f}" for f in self.errors]
        return lines


ProgressCallback = Callable[[Progress], None]
