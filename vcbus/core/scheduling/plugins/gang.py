"""Gang scheduling: a job runs only with its minimum of pods (and of each task) placed.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/gang/gang.go`` (``validJobFn``,
``jobOrderFn``, ``JobReady``, ``JobPipelined``, ``JobStarving``, ``preemptableFn``,
``OnSessionClose``) with the readiness rules of ``api/job_info.go`` (``model.JobInfo``).

Deliberate deviations:
- docs/design.md#task-level-gang, docs/design.md#dependent-jobs readiness (see ``model``): task
  minimums always enforced, wait-create roles of dependent jobs skipped.
- At close, conditions carry docs/design.md#pending-reasons reason codes and a short message
  (``gang 2/4 ready; 3 nodes Insufficient cpu``): ``GangUnschedulable``,
  ``WaitingForReservation`` (only locked nodes stood in the way), ``QueueClosed`` /
  ``QueueOverCapability`` (set by allocate); a ready job gets ``Scheduled``.
- Victims (``preemptableFn``/``reclaimableFn``): a job loses pods only while its
  ready count, and each task's, stays at its minimum, or loses all of them: a victim past
  the minimum is let through, and preempt/reclaim evict the rest of its job with it
  (``actions.eviction``), victims that keep their gang first. Volcano lets a job lose
  pods only while ``ready > minAvailable``, ignoring task minimums.
- PodGroups still Pending get no condition from gang: their reasons belong to the enqueue
  stage (A8 ranks ``QueueClosed``, ``QueueOverCapability``, ``ClusterOverused`` first).
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import (
    GANG_UNSCHEDULABLE,
    NOT_ENOUGH_PODS_OF_TASK,
    NOT_ENOUGH_TASKS,
    UNSCHEDULABLE,
    WAITING_FOR_RESERVATION,
)
from vcbus.core.scheduling.fit_errors import NODE_LOCKED_PREFIX, FitErrors
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.job_updater import SCHEDULED_CONDITIONS
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.votes import ValidateResult, Vote
from vcbus.core.scheduling.model import JobInfo, TaskInfo, TaskStatus

NAME = "gang"


def job_ready(job: JobInfo) -> bool:
    """``CheckTaskReady && IsReady`` (gang ``JobReady``)."""
    return job.check_task_ready() and job.is_ready()


def valid_job(job: JobInfo) -> ValidateResult | None:
    """Gang ``validJobFn``: every task minimum and the job minimum can still be met."""
    if not job.check_task_valid():
        return ValidateResult(
            passed=False,
            reason=NOT_ENOUGH_PODS_OF_TASK,
            message="Not enough valid pods of each task for gang-scheduling",
        )
    valid = job.valid_task_num()
    if valid < job.gang_min:
        return ValidateResult(
            passed=False,
            reason=NOT_ENOUGH_TASKS,
            message=(
                f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.gang_min}"
            ),
        )
    return None


class GangPlugin:
    """The ``gang`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        """Register validity, order, readiness, pipelining, starving and victim rules."""
        ssn.add_job_valid_fn(NAME, valid_job)
        ssn.add_job_order_fn(NAME, _job_order)
        ssn.add_job_ready_fn(NAME, job_ready)
        ssn.add_job_pipelined_fn(NAME, _job_pipelined)
        ssn.add_job_starving_fns(NAME, lambda job: job.is_starving())

        def victims(_: TaskInfo, candidates: Sequence[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
            """Victims that keep their job at its minimum, or whose whole job may go.

            A job loses pods only while its ready count stays at its minimum, and each
            task's ready count at the task's minimum (docs/design.md#task-level-gang); past that,
            its victims take the rest of the job with them (``actions.eviction.evict_gang_safe``).
            """
            return list(candidates), Vote.PERMIT

        ssn.add_preemptable_fn(NAME, victims)
        ssn.add_reclaimable_fn(NAME, victims)

    def on_session_close(self, ssn: Session) -> None:
        """Give each job with pods a ``Scheduled`` or ``Unschedulable`` condition."""
        for key in ssn.unsettled_jobs():  # a settled job has these conditions already
            job = ssn.jobs[key]
            if not job.task_count or job.phase is PodGroupPhase.PENDING:
                continue
            if job_ready(job):
                ssn.update_pod_group_condition(job, SCHEDULED_CONDITIONS)
                continue
            if job.ready_task_num() + job.releasing_scheduled_task_num() >= job.gang_min and (
                job.releasing_scheduled_task_num() > 0
            ):
                continue
            errors = _first_fit_errors(job)
            if errors is None and not job.blocked:
                continue
            reason, message = _reason(job, errors)
            ssn.update_pod_group_condition(
                job,
                (Condition(type=UNSCHEDULABLE, status="True", reason=reason, message=message),),
            )
            ssn.explain(job, reason, message)


def _job_order(left: JobInfo, right: JobInfo) -> int:
    """Not-ready jobs first (gang ``jobOrderFn``)."""
    left_ready, right_ready = left.is_ready(), right.is_ready()
    if left_ready == right_ready:
        return 0
    return 1 if left_ready else -1


def _job_pipelined(job: JobInfo) -> Vote:
    """``CheckTaskPipelined && IsPipelined`` → Permit, else Reject."""
    return Vote.PERMIT if job.check_task_pipelined() and job.is_pipelined() else Vote.REJECT


def _first_fit_errors(job: JobInfo) -> FitErrors | None:
    for uid in sorted(
        job.nodes_fit_errors, key=lambda u: job.tasks[u].key if u in job.tasks else u
    ):
        return job.nodes_fit_errors[uid]
    return None


def _reason(job: JobInfo, errors: FitErrors | None) -> tuple[str, str]:
    parts = [f"gang {job.ready_task_num()}/{job.gang_min} ready"]
    for role, minimum in sorted(job.task_min_available.items()):
        if minimum <= 0 or (job.dependent and role not in job.roles()):
            continue
        placed = job.role_count(role, _PLACED)
        if placed < minimum:
            parts.append(f"task {role} {placed}/{minimum}")
    if job.blocked:
        reason, text = job.blocked
        parts.append(text)
        return reason, "; ".join(parts)
    if errors is not None:
        parts.append(errors.summary())
        if errors.only(NODE_LOCKED_PREFIX):
            return WAITING_FOR_RESERVATION, "; ".join(parts)
    return GANG_UNSCHEDULABLE, "; ".join(parts)


_PLACED = (
    TaskStatus.BOUND,
    TaskStatus.BINDING,
    TaskStatus.RUNNING,
    TaskStatus.ALLOCATED,
    TaskStatus.SUCCEEDED,
)


def new(arguments: Arguments) -> GangPlugin:
    """Build the plugin."""
    return GangPlugin(arguments)
