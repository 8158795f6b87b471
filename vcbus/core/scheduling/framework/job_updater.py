"""PodGroup phase and conditions at session close.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/job_updater.go`` (``UpdateAll``,
``isPodGroupStatusUpdated``) and ``session.go`` ``getPodGroupPhase`` (B3.8):
1. running tasks and an Unschedulable condition this session → Unknown;
2. scheduled (Running, Bound, Failed, Succeeded, Releasing with a node) ≥ minMember →
   Completed when every scheduled task finished, else Running;
3. otherwise Pending, unless the PodGroup is Inqueue (it stays Inqueue).

Deliberate deviations:
- A dependent job compares with its wait-create-adjusted minimum (docs/design.md#dependent-jobs),
  and a Running (or Unknown) dependent job with pods scheduled does not fall back to Pending when a
  later stage's pods appear: enqueue admitted it on the whole job's minResources
  (docs/design.md#dependent-jobs), so its later stages are not admitted again (else the job would
  wait for room for all its stages beside its own running ones: half-started, and counted twice).
- A PodGroup without pods keeps its phase.
- Only PodGroups whose phase or allocator conditions changed are returned, as values.
- ``status_updates`` adds what ``podgroups.status`` carries (docs/design.md#pending-reasons): one
  ``Unschedulable`` condition with the highest-ranked reason among enqueue's rejections of this
  session, the allocator's last ``Unschedulable`` condition and a dependent job's missing stages,
  ranked by :func:`vcbus.core.reasons.reason_rank`. Volcano records these as events and
  a gang condition. ``WillBindTimeout`` comes from the allocator's ``WillBind`` condition: a
  dependent job whose reservation for its later stages timed out (vcbus, will-bind).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import (
    INFEASIBLE,
    SCHEDULED,
    UNSCHEDULABLE,
    WAITING_FOR_DEPENDENCY,
    WILL_BIND_TIMEOUT,
    reason_rank,
)
from vcbus.core.scheduling.framework.conf import ENQUEUE_SIDE_ACTIONS
from vcbus.core.scheduling.framework.results import PodGroupStatusUpdate, PodGroupUpdate
from vcbus.core.scheduling.model import JobInfo, TaskStatus
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState

SCHEDULED_CONDITIONS = (
    Condition(
        type=SCHEDULED,
        status="True",
        reason=SCHEDULED,
        message="tasks in gang are ready to be scheduled",
    ),
)
"""The allocator conditions the gang plugin gives a job whose gang is ready."""


class ClosingSession(Protocol):
    """What the PodGroup updates read from a session at close (``Session`` has it all)."""

    @property
    def jobs(self) -> Mapping[JobKey, JobInfo]:
        """The session's jobs."""
        ...

    @property
    def snapshot(self) -> ClusterSnapshot:
        """The cluster state the session opened on (the PodGroups' previous phases)."""
        ...

    @property
    def unschedulable(self) -> AbstractSet[JobKey]:
        """Jobs given an Unschedulable condition this session."""
        ...

    @property
    def job_conditions(self) -> Mapping[JobKey, tuple[Condition, ...]]:
        """Allocator conditions set this session."""
        ...

    @property
    def enqueue_reasons(self) -> Mapping[JobKey, Mapping[str, str]]:
        """Why enqueue left a job Pending: reason code → message."""
        ...

    @property
    def actions(self) -> Sequence[str]:
        """The actions the session ran."""
        ...

    def unsettled_jobs(self) -> list[JobKey]:
        """Every job but the settled ones (``settled``), by job key."""
        ...

    def infeasibility(self, job: JobInfo) -> str | None:
        """Why ``job`` could never run on this cluster, or ``None``."""
        ...


def pod_group_phase(job: JobInfo, *, unschedulable: bool) -> PodGroupPhase:
    """Return the phase a PodGroup should have now (``getPodGroupPhase``)."""
    if not job.task_count:
        return job.phase
    if job.count(TaskStatus.RUNNING) and unschedulable:
        return PodGroupPhase.UNKNOWN
    releasing = job.releasing_scheduled_task_num()
    scheduled = job.scheduled_task_num() + releasing
    if scheduled >= job.gang_min:
        finished = job.count(TaskStatus.SUCCEEDED, TaskStatus.FAILED)
        if scheduled > 0 and releasing == 0 and finished == scheduled:
            return PodGroupPhase.COMPLETED
        return PodGroupPhase.RUNNING
    if job.phase is PodGroupPhase.INQUEUE:
        return job.phase
    if job.dependent and scheduled > 0 and job.phase in _ADMITTED:
        return job.phase
    return PodGroupPhase.PENDING


def settled(job: JobInfo, state: PodGroupState) -> bool:
    """Whether a job just built from ``state`` is settled: nothing at close changes it.

    Its PodGroup is Running with no reason condition, the job is not dependent, every task
    is Running, its gang is ready and its allocator conditions are the ones the gang gives
    a ready job (``SCHEDULED_CONDITIONS``). While a session leaves it untouched (its tasks
    not made, ``Session.unsettled_jobs``), each close pass leaves it as it is: the gang
    gives it the conditions it has, it has no ``WillBind`` condition to add or drop, its
    phase stays Running and it has no reason condition, so no update names it; and
    allocate finds it valid with nothing pending. Those passes walk the unsettled jobs.
    """
    return (
        state.phase is PodGroupPhase.RUNNING
        and job.phase is PodGroupPhase.RUNNING
        and not state.status_conditions
        and not job.dependent
        and not job.podgroup.stages
        and job.task_count > 0
        and job.count(TaskStatus.RUNNING) == job.task_count
        and job.check_task_ready()
        and job.is_ready()
        and job.conditions == SCHEDULED_CONDITIONS
        and pod_group_phase(job, unschedulable=False) is PodGroupPhase.RUNNING
    )


_ADMITTED = frozenset({PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN})
_WAITING = frozenset({PodGroupPhase.PENDING, PodGroupPhase.INQUEUE})


def phases(ssn: ClosingSession) -> dict[JobKey, PodGroupPhase]:
    """Each job's phase at close (``pod_group_phase``), by job key.

    Computed once per session and read by both ``update_all`` and ``status_updates``.
    """
    unschedulable = ssn.unschedulable
    return {
        key: pod_group_phase(ssn.jobs[key], unschedulable=key in unschedulable)
        for key in ssn.unsettled_jobs()
    }


def update_all(
    ssn: ClosingSession, closing: Mapping[JobKey, PodGroupPhase] | None = None
) -> tuple[PodGroupUpdate, ...]:
    """Return the PodGroups whose phase or allocator conditions changed (``UpdateAll``).

    Args:
        ssn: the closing session.
        closing: the jobs' phases at close (``phases``); computed here when omitted.
    """
    if closing is None:
        closing = phases(ssn)
    updates = []
    for key, phase in closing.items():
        job = ssn.jobs[key]
        snapshot_state = ssn.snapshot.podgroups.get(key)
        previous = snapshot_state.phase if snapshot_state is not None else job.phase
        conditions = ssn.job_conditions.get(key, job.conditions)
        conditions_changed = conditions != job.conditions
        if phase is previous and not conditions_changed:
            continue
        updates.append(
            PodGroupUpdate(
                job=key,
                podgroup=job.name,
                phase=phase,
                previous_phase=previous,
                conditions=conditions,
                conditions_changed=conditions_changed,
            )
        )
    return tuple(updates)


def reason_conditions(
    ssn: ClosingSession, job: JobInfo, phase: PodGroupPhase
) -> tuple[Condition, ...]:
    """Return the one reason condition of a PodGroup in ``phase``, or none.

    Candidates: enqueue's rejections of this session, the allocator's ``Unschedulable``
    condition known from the snapshot, its will-bind timeout, ``Infeasible`` when no node
    could ever hold the job (in podgroup-enqueue's sessions, which publish the reasons),
    and, for a dependent job, its stages without pods.
    """
    if phase is PodGroupPhase.COMPLETED:
        return ()
    candidates: list[Condition] = [
        Condition(type=UNSCHEDULABLE, status="True", reason=reason, message=message)
        for reason, message in sorted(ssn.enqueue_reasons.get(job.key, {}).items())
    ]
    candidates.extend(
        c for c in job.conditions if c.type == UNSCHEDULABLE and c.status == "True" and c.reason
    )
    candidates.extend(
        Condition(type=UNSCHEDULABLE, status="True", reason=c.reason, message=c.message)
        for c in job.conditions
        if c.reason == WILL_BIND_TIMEOUT
    )
    if (
        phase in _WAITING
        and job.min_available > 0
        and ENQUEUE_SIDE_ACTIONS & set(ssn.actions)
        and (why := ssn.infeasibility(job)) is not None
    ):
        candidates.append(
            Condition(type=UNSCHEDULABLE, status="True", reason=INFEASIBLE, message=why)
        )
    if job.dependent and job.wait_create > 0:
        present = set(job.roles())
        waiting = sorted(r for r, m in job.task_min_available.items() if m > 0 and r not in present)
        candidates.append(
            Condition(
                type=UNSCHEDULABLE,
                status="True",
                reason=WAITING_FOR_DEPENDENCY,
                message=f"tasks {', '.join(waiting)} wait for their dependencies (dependsOn)",
            )
        )
    if not candidates:
        return ()
    return (min(candidates, key=lambda c: (reason_rank(c.reason), c.reason, c.message)),)


def status_updates(
    ssn: ClosingSession, closing: Mapping[JobKey, PodGroupPhase] | None = None
) -> tuple[PodGroupStatusUpdate, ...]:
    """Return the PodGroups whose phase or reason condition changed (``podgroups.status``).

    Args:
        ssn: the closing session.
        closing: the jobs' phases at close (``phases``); computed here when omitted.
    """
    if closing is None:
        closing = phases(ssn)
    updates = []
    for key, phase in closing.items():
        job = ssn.jobs[key]
        state = ssn.snapshot.podgroups.get(key)
        previous = state.phase if state is not None else job.phase
        previous_conditions = state.status_conditions if state is not None else ()
        conditions = reason_conditions(ssn, job, phase)
        if phase is previous and conditions == previous_conditions:
            continue
        updates.append(
            PodGroupStatusUpdate(
                job=key,
                podgroup=job.name,
                uid=job.podgroup.uid,
                phase=phase,
                previous_phase=previous,
                conditions=conditions,
                previous_conditions=previous_conditions,
            )
        )
    return tuple(updates)
