"""PodGroup phase and conditions at session close.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/job_updater.go`` (``UpdateAll``,
``isPodGroupStatusUpdated``) and ``session.go`` ``getPodGroupPhase`` (B3.8):
1. running tasks and an Unschedulable condition this session → Unknown;
2. scheduled (Running, Bound, Failed, Succeeded, Releasing with a node) ≥ minMember →
   Completed when every scheduled task finished, else Running;
3. otherwise Pending, unless the PodGroup is Inqueue (it stays Inqueue).

Deliberate deviations:
- A dependent job compares with its wait-create-adjusted minimum (SPEC A5).
- A PodGroup without pods keeps its phase.
- Only PodGroups whose phase or allocator conditions changed are returned, as values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.objects.podgroup import PodGroupPhase
from shared.scheduling.framework.results import PodGroupUpdate
from shared.scheduling.model import JobInfo, TaskStatus

if TYPE_CHECKING:
    from shared.scheduling.framework.session import Session


def pod_group_phase(job: JobInfo, *, unschedulable: bool) -> PodGroupPhase:
    """Return the phase a PodGroup should have now (``getPodGroupPhase``)."""
    if not job.tasks:
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
    if job.phase is not PodGroupPhase.INQUEUE:
        return PodGroupPhase.PENDING
    return job.phase


def update_all(ssn: Session) -> tuple[PodGroupUpdate, ...]:
    """Return the PodGroups whose phase or allocator conditions changed (``UpdateAll``)."""
    updates = []
    for key in sorted(ssn.jobs):
        job = ssn.jobs[key]
        snapshot_state = ssn.snapshot.podgroups.get(key)
        previous = snapshot_state.phase if snapshot_state is not None else job.phase
        phase = pod_group_phase(job, unschedulable=key in ssn.unschedulable)
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
