"""Why a job is where it is: one rule for every command (docs/design.md#pending-reasons).

The candidates are the PodGroup's ``Unschedulable`` condition on ``podgroups.status``
(podgroup-enqueue's ranked reason), the allocator's on ``podgroups.conditions``, and the
job's own ``WaitingForDependency`` condition on ``jobs.status``; they are ranked by
:func:`vcbus.core.reasons.reason_rank`, ties keeping that order.

:func:`job_reason`:

- a job in a final phase: its own phase condition (why it ended);
- any other job: the highest-ranked candidate, else its own phase condition. A job's own
  ``PodGroupPending`` condition ("PodGroup … is not enqueued yet") is the job controller's
  view, which lags the PodGroup's: once ``podgroups.status`` says the PodGroup is enqueued
  (Inqueue or further), the job's pods are what it waits for, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vcbus.contracts.objects import Condition, PodGroupPhase
from vcbus.core.reasons import (
    EVICTION_CONDITIONS,
    PODGROUP_PENDING,
    PODS_PENDING,
    UNSCHEDULABLE,
    WAITING_FOR_DEPENDENCY,
    reason_rank,
)
from vcbus.core.views.phases import FINAL_PHASES

_ENQUEUED = frozenset(
    {PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN, PodGroupPhase.COMPLETED}
)


@dataclass(frozen=True, slots=True)
class Reason:
    """A reason code and its message, and the topic it was read from."""

    code: str
    message: str
    source: str

    def text(self) -> str:
        """``code: message`` (just the code without a message)."""
        return f"{self.code}: {self.message}" if self.message else self.code


def reason_candidates(
    *,
    podgroup: Sequence[Condition] = (),
    allocator: Sequence[Condition] = (),
    job: Sequence[Condition] = (),
) -> list[Reason]:
    """Every reason a job waits, highest-ranked first, duplicates dropped.

    Args:
        podgroup: the PodGroup's conditions on ``podgroups.status``.
        allocator: the allocator's conditions on ``podgroups.conditions``.
        job: the job's conditions on ``jobs.status``.

    Returns:
        The candidates, ranked; ties keep the order of the arguments.
    """
    found = [
        Reason(c.reason, c.message, source)
        for source, conditions in (
            ("podgroups.status", podgroup),
            ("podgroups.conditions", allocator),
        )
        for c in conditions
        if c.type == UNSCHEDULABLE and c.status == "True" and c.reason
    ]
    found += [
        Reason(c.reason, c.message, "jobs.status")
        for c in job
        if c.reason == WAITING_FOR_DEPENDENCY
    ]
    unique: dict[tuple[str, str], Reason] = {}
    for reason in found:
        unique.setdefault((reason.code, reason.message), reason)
    return sorted(unique.values(), key=lambda r: reason_rank(r.code))


def own_condition(phase: str, conditions: Sequence[Condition]) -> Condition | None:
    """The job's own condition for its phase, else its last one with a reason.

    A past eviction is never that last one: ``Preempted`` and ``Reclaimed`` say what
    happened to the job, not why it waits.
    """
    for condition in conditions:
        if condition.type == phase and condition.reason:
            return condition
    return next(
        (c for c in reversed(conditions) if c.reason and c.type not in EVICTION_CONDITIONS),
        None,
    )


def job_reason(
    phase: str,
    *,
    job: Sequence[Condition] = (),
    podgroup_phase: str = "",
    podgroup: Sequence[Condition] = (),
    allocator: Sequence[Condition] = (),
) -> Reason | None:
    """Why a job is where it is (the rule in the module docstring).

    ``get``, ``describe``, ``submit --wait``, ``up``, the dashboard and ``simulate`` all
    say it with this.

    Args:
        phase: the job's phase.
        job: its conditions on ``jobs.status``.
        podgroup_phase: its PodGroup's phase on ``podgroups.status`` (``""``: unknown).
        podgroup: its PodGroup's conditions on ``podgroups.status``.
        allocator: the allocator's conditions on ``podgroups.conditions``.

    Returns:
        The reason, or ``None`` when nothing says.
    """
    own = own_condition(phase, job)
    if phase in FINAL_PHASES and own is not None:
        return Reason(own.reason, own.message, "jobs.status")
    ranked = reason_candidates(podgroup=podgroup, allocator=allocator, job=job)
    if ranked:
        return ranked[0]
    if own is None:
        return None
    if own.reason == PODGROUP_PENDING and podgroup_phase in _ENQUEUED:
        return Reason(
            PODS_PENDING,
            f"PodGroup is {podgroup_phase}; the job's minimum pods are not all started yet",
            "podgroups.status",
        )
    return Reason(own.reason, own.message, "jobs.status")
