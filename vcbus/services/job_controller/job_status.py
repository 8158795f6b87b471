"""The job status the controller publishes: counts, per-task counts and the condition.

Port of the counting in volcano@HEAD ``pkg/controllers/job/job_controller_actions.go``
(``classifyAndAddUpPodBaseOnPhase``, ``calcPodStatus``).

Deliberate deviations from Volcano:

- Counts are always recomputed from the pods the controller knows (Volcano keeps the
  previous counters while the PodGroup is Pending). ``terminating`` is the number of pods
  deleted by the operation that produced the status: in vcbus a deleted pod is gone
  once its ``PodDeleted`` is published.
- Every status carries one condition with a reason code and a message
  (docs/design.md#pending-reasons): ``PodGroupPending`` (with the PodGroup's own reason when enqueue
  gave one), ``WaitingForDependency`` (naming the waiting tasks), ``PodsPending``, ``Running``, and
  for the other phases the reason of the transition (``Completed``, ``Failed`` with why,
  ``Restarting``, ``Aborting`` ...).
"""

from __future__ import annotations

from datetime import datetime

from vcbus.contracts._base import Event, derive_event_id, tag_of
from vcbus.contracts.events.jobs_status import JobStatusChanged, TaskCounts
from vcbus.contracts.keys import split_key
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import PODGROUP_PENDING, PODS_PENDING, WAITING_FOR_DEPENDENCY
from vcbus.services.job_controller.job_pods import waiting_tasks
from vcbus.services.job_controller.machine import Counts
from vcbus.services.job_controller.pod_index import summary
from vcbus.services.job_controller.podgroup import podgroup_name
from vcbus.services.job_controller.state import JobRecord, StatusView


def count_pods(record: JobRecord, terminating: int = 0) -> Counts:
    """Count the job's pods by phase, in all and per task (spec order).

    Args:
        record: the job's record.
        terminating: pods deleted by the operation being accounted.

    Returns:
        The counts.
    """
    # Per task: (pending, running, succeeded, failed, unknown), kept per pods tuple.
    per_task = summary(record.pods).counts
    pending = running = succeeded = failed = unknown = 0
    tasks: dict[str, TaskCounts] = {}
    for name in [spec.name for spec in record.job.spec.tasks] + sorted(per_task):
        found = per_task.get(name)
        if found is not None and name not in tasks:
            p, r, s, f, u = found
            tasks[name] = TaskCounts(pending=p, running=r, succeeded=s, failed=f, unknown=u)
            pending, running, succeeded = pending + p, running + r, succeeded + s
            failed, unknown = failed + f, unknown + u
    return Counts(
        pending=pending,
        running=running,
        succeeded=succeeded,
        failed=failed,
        unknown=unknown,
        terminating=terminating,
        tasks=tasks,
    )


def condition_of(record: JobRecord, counts: Counts) -> tuple[str, str]:
    """Return the reason code and message that explain the job's phase now.

    Args:
        record: the job's record.
        counts: its pod counts.

    Returns:
        ``(reason, message)``.
    """
    phase = record.phase
    job = record.job
    minimum = job.spec.min_available
    if phase is JobPhase.PENDING and (
        record.podgroup is None or record.podgroup_phase in (None, PodGroupPhase.PENDING)
    ):
        name = (
            record.podgroup.name
            if record.podgroup
            else podgroup_name(split_key(record.job_key)[1], record.uid)
        )
        state = record.podgroup_phase.value if record.podgroup_phase else "not enqueued yet"
        message = f"PodGroup {name} is {state}"
        if record.podgroup_reason:
            message += f": {record.podgroup_reason}"
            if record.podgroup_message:
                message += f": {record.podgroup_message}"
        return PODGROUP_PENDING, message
    if phase in (JobPhase.PENDING, JobPhase.RUNNING):
        gates = waiting_tasks(job, record.pods)
        if gates:
            return WAITING_FOR_DEPENDENCY, "; ".join(gate.describe() for gate in gates)
        started = counts.running + counts.succeeded + counts.failed
        if phase is JobPhase.PENDING:
            return (
                PODS_PENDING,
                f"{started} of {minimum} minimum pods started, {counts.pending} pending",
            )
        replicas = sum(task.replicas for task in job.spec.tasks)
        return (
            "Running",
            f"{counts.running} running, {counts.succeeded} succeeded, "
            f"{counts.failed} failed of {replicas} pods",
        )
    return record.phase_reason or phase.value, record.phase_message


def status_view(
    record: JobRecord, terminating: int = 0, *, counts: Counts | None = None
) -> StatusView:
    """Return the job's status as it would be published now.

    Args:
        record: the job's record.
        terminating: pods deleted by the operation being accounted.
        counts: ``count_pods(record, terminating)`` when the caller has it already.

    Returns:
        The status view.
    """
    if counts is None:
        counts = count_pods(record, terminating)
    reason, message = condition_of(record, counts)
    return StatusView(
        phase=record.phase,
        min_available=record.job.spec.min_available,
        pending=counts.pending,
        running=counts.running,
        succeeded=counts.succeeded,
        failed=counts.failed,
        terminating=counts.terminating,
        unknown=counts.unknown,
        retry_count=record.retry_count,
        version=record.version,
        task_status_count=tuple(counts.tasks.items()),
        reason=reason,
        message=message,
    )


def status_event(
    record: JobRecord,
    view: StatusView,
    *,
    generation: int,
    now: datetime,
    trace_id: str,
    extra: tuple[Condition, ...] = (),
) -> JobStatusChanged:
    """Build the ``JobStatusChanged`` that publishes ``view``.

    Args:
        record: the job's record (its ``last_status`` gives the previous phase).
        view: the status to publish.
        generation: the record generation that makes the event id.
        now: the event time.
        trace_id: the trace of the input that caused it.
        extra: conditions added after the phase condition (e.g. ``UpdateRejected``).

    Returns:
        The event.
    """
    previous = record.last_status.phase if record.last_status else None
    return JobStatusChanged(
        event_id=derive_event_id(
            tag_of(JobStatusChanged), record.job_key, f"{record.uid}:{generation}"
        ),
        occurred_at=now,
        job=record.job_key,
        phase=view.phase,
        previous_phase=previous,
        min_available=view.min_available,
        pending=view.pending,
        running=view.running,
        succeeded=view.succeeded,
        failed=view.failed,
        terminating=view.terminating,
        unknown=view.unknown,
        retry_count=view.retry_count,
        version=view.version,
        task_status_count=dict(view.task_status_count),
        conditions=(
            Condition(
                type=view.phase.value, status="True", reason=view.reason, message=view.message
            ),
            *((record.eviction,) if record.eviction is not None else ()),
            *extra,
        ),
        trace_id=trace_id,
    )


def counts_superseded(event: Event) -> tuple[str, bool] | None:
    """A job's status is published once per batch, besides every phase change.

    A ``JobStatusChanged`` that changes no phase (new counts) is replaced by a later status
    of the same job in the same batch; one that changes the phase is always published, so
    a reader still sees every ``previous_phase`` → ``phase`` step.
    """
    if not isinstance(event, JobStatusChanged):
        return None
    return event.job, event.phase == event.previous_phase
