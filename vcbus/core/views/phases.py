"""Phases as the read model names them."""

from __future__ import annotations

from vcbus.contracts.objects import JobPhase

FINAL_PHASES: frozenset[str] = frozenset(
    {JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.ABORTED, JobPhase.TERMINATED}
)
"""The job phases a job never leaves."""

FAILED_PHASES: frozenset[str] = frozenset({JobPhase.FAILED, JobPhase.ABORTED, JobPhase.TERMINATED})
"""The final phases in which a job did not complete."""

DELETED = "Deleted"
"""The phase shown for a job or PodGroup that was deleted."""

REJECTED = "Rejected"
"""The phase shown for a submission that admission rejected."""
