"""The job-controller's pure core: ``decide(record, event, ctx, conf) -> Step``.

Reads ``jobs.admitted``, ``podgroups.status``, ``pods.status`` and the shell's ``Tick``;
writes ``podgroups``, ``pods`` and ``jobs.status``. It plays volcano@HEAD
``pkg/controllers/job`` (``job_controller_handler.go`` turns informer events into
requests, ``job_controller.go`` ``processNextReq`` resolves and runs them,
``job_controller_actions.go`` ``syncJob``/``killJob`` perform them); the phase table is
:mod:`vcbus.services.job_controller.machine`, the policies
:mod:`vcbus.services.job_controller.policies`.

Deliberate deviations from Volcano:

- A job status update in Volcano re-queues the job (``OutOfSync`` → ``SyncJob``). Here,
  after an action changed the phase, the core runs ``SyncJob`` again in the same step until
  the phase holds (at most :data:`FOLLOW_UPS` times): Running →(RestartJob) Restarting →
  Pending happens in one step, and the Restarting status is still published.
- A status is published when it differs from the last one published; within one step a
  status is published before each phase change and at the end, so a phase passed through
  is seen once, with its latest counts.
- A full kill bumps ``version`` only when it deleted a pod or the PodGroup (Volcano bumps
  it on every kill, so a finished job's version grows with every event).
- The PodGroup is (re)created by a sync in Pending or Running (so after a restart, when the
  job is back to Pending), not by every sync.
- A refused binding clears the pod's node (it is placed again) and raises no request;
  a Pending job's sync that follows fails the job when the pod's gang can never be whole
  again (``machine.evaluate_broken_gang``: Volcano's kubelet would have failed the pod).
- A pod status Failed with reason ``Evicted`` raises ``PodEvicted`` (Volcano raises it
  when the pod object is deleted by someone else; in vcbus only the job-controller deletes
  pods, and the simulated cluster reports evictions as a failed status). When the status
  message says the capacity was ``Preempted`` or ``Reclaimed`` (``Preempted by job …``),
  the job gets a condition of that type and reason with the message, published with the
  status (at once, even when the policies change nothing) and kept on later statuses until
  another eviction replaces it.
- A status of a pod whose uid is not the current pod's (``pod_uid`` on the event) is stale
  and changes nothing; so is a phase change of a PodGroup that is not the job's current one.
- Job uids and pod uids are derived, not random: a pod uid changes with the job version
  and the number of times that pod was created, so a pod re-created under the same name is
  another pod, while replaying the same inputs (in any interleaving) gives the same uids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import assert_never

import msgspec

from vcbus.contracts._base import derive_event_id, tag_of
from vcbus.contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
)
from vcbus.contracts.events.jobs_status import JobDeleted, JobStatusChanged
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.keys import split_key
from vcbus.contracts.objects.job import JobPhase, TaskSpec
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import POD_EVICTED, PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.job_update import UPDATE_REJECTED, update_error
from vcbus.core.reasons import EVICTION_CONDITIONS
from vcbus.core.step import Ctx, Step, Tick
from vcbus.core.views.phases import FINAL_PHASES
from vcbus.services.job_controller import machine, policies
from vcbus.services.job_controller.conf import ControllerConf
from vcbus.services.job_controller.execution import FOLLOW_UPS, Execution
from vcbus.services.job_controller.job_status import status_view
from vcbus.services.job_controller.pod_index import SUCCEEDED, replace_pod, summary
from vcbus.services.job_controller.policies import Action, PolicyEvent, Request
from vcbus.services.job_controller.state import JobRecord, PodState, PolicyTimer

__all__ = [
    "FOLLOW_UPS",
    "ControllerConf",
    "ControllerInput",
    "decide",
    "next_deadline",
    "steps_pending",
]

ControllerInput = (
    JobAdmitted
    | JobDeleteAccepted
    | JobAbortAccepted
    | JobResumeAccepted
    | PodGroupPhaseChanged
    | PodPhaseChanged
    | BindingRefused
    | Tick
)
"""Everything the job-controller reacts to."""

next_deadline = policies.next_deadline


# -- handlers ------------------------------------------------------------------------------


def _taken(step: Step[JobRecord | None]) -> Step[JobRecord | None]:
    """Mark ``step`` as having taken its input, changed record or not.

    The shell then remembers the input's id, so a redelivery is skipped (idempotency by id).
    """
    return dataclasses.replace(step, taken=True)


def _admit(event: JobAdmitted, ctx: Ctx, conf: ControllerConf) -> Step[JobRecord | None]:
    uid = event.manifest.metadata.uid or derive_event_id(
        "job.uid", event.job, f"{event.event_id}:{event.occurred_at.isoformat()}"
    )
    record = JobRecord(
        job_key=event.job,
        job=event.manifest,
        spec_digest=event.spec_digest,
        admitted_digest=event.manifest_digest,
        uid=uid,
        created_at=event.manifest.metadata.creation_timestamp or event.occurred_at,
    )
    work = Execution(record, ctx, conf)
    work.run(Action.SYNC_JOB, Request(event=PolicyEvent.OUT_OF_SYNC, source="job admitted"))
    return _taken(work.step())


def _readmit(
    record: JobRecord, event: JobAdmitted, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    if event.spec_digest in (record.spec_digest, record.rejected_digest):
        return _taken(Step(record))
    work = Execution(record, ctx, conf)
    error = update_error(record.job, event.manifest)
    if error is not None:
        work.update(rejected_digest=event.spec_digest)
        work.held = status_view(work.record)
        work.flush(
            extra=(
                Condition(
                    type=UPDATE_REJECTED, status="True", reason=UPDATE_REJECTED, message=error
                ),
            )
        )
        return _taken(work.step())
    work.update(
        job=event.manifest,
        spec_digest=event.spec_digest,
        admitted_digest=event.manifest_digest,
        rejected_digest="",
    )
    work.run(Action.SYNC_JOB, Request(event=PolicyEvent.OUT_OF_SYNC, source="job updated"))
    return _taken(work.step())


def _deleted(record: JobRecord, ctx: Ctx, conf: ControllerConf) -> Step[JobRecord | None]:
    """The job gone: its pods and PodGroup deleted, then ``JobDeleted``."""
    work = Execution(record, ctx, conf)
    work.delete_pods(lambda pod: True)
    work.delete_podgroup()
    work.emits.append(
        JobDeleted(event_id=work.job_event_id(JobDeleted), occurred_at=ctx.now, job=record.job_key)
    )
    return _taken(Step(None, tuple(work.emits)))


def _deleted_unknown(event: JobDeleteAccepted, ctx: Ctx) -> Step[JobRecord | None]:
    """A delete of a job the controller does not hold (a rejected one): ``JobDeleted``.

    The readers then stop showing its rejection, as ``kubectl delete`` removes it.
    """
    deleted = JobDeleted(
        event_id=derive_event_id(tag_of(JobDeleted), event.job, event.event_id),
        occurred_at=ctx.now,
        job=event.job,
    )
    return _taken(Step(None, (deleted,)))


_COMMANDS: dict[type[JobAbortAccepted | JobResumeAccepted], tuple[Action, str]] = {
    JobAbortAccepted: (Action.ABORT_JOB, "abort command"),
    JobResumeAccepted: (Action.RESUME_JOB, "resume command"),
}
"""The action a user's command issues (Volcano ``bus/v1alpha1`` Command ``action``)."""


def _command(
    record: JobRecord, event: JobAbortAccepted | JobResumeAccepted, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    """Run a user's command as Volcano's ``CommandIssued`` request with its action.

    volcano@HEAD ``pkg/controllers/job/job_controller_handler.go`` ``handleCommands``
    turns a ``bus.volcano.sh`` Command into a request with ``Event: CommandIssued`` and the
    command's action (``vcctl job suspend`` issues ``AbortJob``, ``resume`` ``ResumeJob``).
    """
    action, source = _COMMANDS[type(event)]
    work = Execution(record, ctx, conf)
    work.run(action, Request(event=PolicyEvent.COMMAND_ISSUED, action=action, source=source))
    return _taken(work.step())


def _podgroup_phase(
    record: JobRecord, event: PodGroupPhaseChanged, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    if record.podgroup is None or event.podgroup != record.podgroup.name:
        return Step(record)
    if event.uid and record.podgroup.uid and event.uid != record.podgroup.uid:
        # Another incarnation of the PodGroup (a restart recreates it under the same name):
        # an old one's late phase, or a new one's read before the restart that makes it.
        return Step(record)
    reason, message = "", ""
    for condition in event.conditions:
        if condition.reason:
            reason, message = condition.reason, condition.message
    if (event.phase, reason, message) == (
        record.podgroup_phase,
        record.podgroup_reason,
        record.podgroup_message,
    ):
        return _taken(Step(record))
    work = Execution(record, ctx, conf)
    work.update(podgroup_phase=event.phase, podgroup_reason=reason, podgroup_message=message)
    if event.phase is PodGroupPhase.UNKNOWN:
        # Volcano raises JobUnknown with no job version (0): B2.1 rule 4 applies.
        request = Request(event=PolicyEvent.JOB_UNKNOWN, version=0, source="PodGroup phase Unknown")
    else:
        request = Request(source=f"PodGroup phase {event.phase}")
    work.dispatch(request)
    return _taken(work.step())


def _pod_event(old: PodState, new: PodState, record: JobRecord, reason: str) -> PolicyEvent | None:
    """Return the bus event a pod status change raises (``job_controller_handler.go``)."""
    if new.phase is PodPhase.FAILED and old.phase is not PodPhase.FAILED:
        return PolicyEvent.POD_EVICTED if reason == POD_EVICTED else PolicyEvent.POD_FAILED
    if new.phase is PodPhase.SUCCEEDED and old.phase is not PodPhase.SUCCEEDED:
        return PolicyEvent.TASK_COMPLETED if _task_completed(record, new.task) else None
    if new.phase is PodPhase.RUNNING and old.phase is not PodPhase.RUNNING:
        return PolicyEvent.POD_RUNNING
    if new.phase is PodPhase.PENDING and old.phase is not PodPhase.PENDING:
        return PolicyEvent.POD_PENDING
    if new.phase in (PodPhase.RUNNING, PodPhase.PENDING) and _task_failed(record, new.task):
        return PolicyEvent.TASK_FAILED
    return None


def _task_spec(record: JobRecord, name: str) -> TaskSpec | None:
    return next((task for task in record.job.spec.tasks if task.name == name), None)


def _task_completed(record: JobRecord, task_name: str) -> bool:
    """Volcano ``cache.TaskCompleted``: every replica of the task Succeeded."""
    task = _task_spec(record, task_name)
    if task is None:
        return False
    pods = summary(record.pods)
    if pods.top.get(task_name, -1) < task.replicas:  # no pod beyond the replicas
        return pods.counts.get(task_name, (0, 0, 0, 0, 0))[SUCCEEDED] >= task.replicas
    done = sum(
        1
        for pod in record.pods
        if pod.phase is PodPhase.SUCCEEDED and pod.task == task_name and pod.index < task.replicas
    )
    return done >= task.replicas


def _task_failed(record: JobRecord, task_name: str) -> bool:
    """Volcano ``cache.TaskFailed``: restarts of the task's live pods reached its maxRetry."""
    task = _task_spec(record, task_name)
    if task is None:
        return False
    limit = task.max_retry or machine.DEFAULT_MAX_RETRY
    if limit < 0:
        return False
    return summary(record.pods).live_restarts.get(task_name, 0) >= limit


def _pod_phase(
    record: JobRecord, event: PodPhaseChanged, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    old = record.pod(split_key(event.pod)[1])
    if old is None or (event.pod_uid and event.pod_uid != old.uid):
        return Step(record)
    new = msgspec.structs.replace(
        old,
        phase=event.phase,
        node=event.node if event.node is not None else old.node,
        exit_code=event.exit_code if event.exit_code is not None else old.exit_code,
        restarts=max(old.restarts, event.restart_count),
        refused=False,
    )
    if new == old:
        return _taken(Step(record))
    work = Execution(record, ctx, conf)
    work.update(pods=replace_pod(record.pods, new))
    bus_event = _pod_event(old, new, work.record, event.reason)
    failed = bus_event in (PolicyEvent.POD_FAILED, PolicyEvent.POD_EVICTED)
    request = Request(
        event=bus_event,
        task=new.task,
        pod=new.name,
        pod_uid=new.uid,
        exit_code=event.exit_code if failed else None,
        version=new.version,
        source=f"{bus_event or 'phase ' + str(new.phase)} of pod {new.name}"
        + (f" (exit code {event.exit_code})" if failed and event.exit_code is not None else ""),
    )
    timers = policies.cancel_for_pod_event(work.record.timers, request)
    if timers != work.record.timers:
        work.update(timers=timers)
    eviction = _eviction_condition(event) if bus_event is PolicyEvent.POD_EVICTED else None
    if eviction is not None:
        work.update(eviction=eviction)
    emitted = len(work.emits)
    work.dispatch(request)
    if eviction is not None:
        work.flush()
        if not any(isinstance(e, JobStatusChanged) for e in work.emits[emitted:]):
            work.held = work.record.last_status or status_view(work.record)
            work.flush(force=True)
    return _taken(work.step())


def _eviction_condition(event: PodPhaseChanged) -> Condition | None:
    """The victim's condition for an ``Evicted`` status whose message names its cause."""
    cause = event.message.split(" ", 1)[0]
    if cause not in EVICTION_CONDITIONS:  # the scheduler names the cause first
        return None
    return Condition(type=cause, status="True", reason=cause, message=event.message[:1024])


def _binding_refused(
    record: JobRecord, event: BindingRefused, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    """The pod waits to be placed again; a gang it can no longer join fails (``SyncJob``).

    A refused binding raises no request in Volcano (its kubelet would fail the pod); the
    sync that follows only finds the job Failed when the refused pod's gang can never be
    whole again (``machine.evaluate_broken_gang``), else it changes nothing.
    """
    old = record.pod(split_key(event.pod)[1])
    if old is None or (event.pod_uid and event.pod_uid != old.uid):
        return Step(record)
    if old.node is None and old.refused:
        return _taken(Step(record))
    new = msgspec.structs.replace(old, node=None, refused=True)
    work = Execution(record, ctx, conf)
    work.update(pods=replace_pod(record.pods, new))
    if record.phase is JobPhase.PENDING:
        work.dispatch(Request(source=f"binding of pod {new.name} refused"))
    return _taken(work.step())


def _tick(record: JobRecord, tick: Tick, ctx: Ctx, conf: ControllerConf) -> Step[JobRecord | None]:
    expiry = policies.ttl_expiry(record)
    if expiry is not None and expiry <= tick.now:
        return _deleted(record, ctx, conf)  # ttlSecondsAfterFinished: the garbage collector's
    due = policies.due_timers(record, tick.now)
    if tick.resync:
        return _resync(record, due, ctx, conf)
    if not due:
        return Step(record)
    work = Execution(record, ctx, conf)
    _fire(work, due)
    return work.step()


def _resync(
    record: JobRecord, due: Sequence[PolicyTimer], ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    """The periodic sweep's step: fire the timers due, then ``SyncJob`` (Volcano's resync).

    Whatever input was lost, a job whose record calls for a step (a PodGroup Inqueue with
    pods missing, pods whose phases move the job on) gets it here. A record that calls
    for nothing is returned as it was: the sweep keeps nothing and publishes nothing.
    """
    if not steps_pending(record):
        return Step(record)
    work = Execution(record, ctx, conf)
    _fire(work, due)
    work.run(Action.SYNC_JOB, Request(event=PolicyEvent.OUT_OF_SYNC, source="resync"))
    step = work.step()
    return step if step.emit else Step(record)


def steps_pending(record: JobRecord) -> bool:
    """Whether the job may still take a step without a new input (its phase is not final).

    An ``Aborted`` job waits for a command, a final one for its deletion.
    """
    return record.phase not in FINAL_PHASES


def _fire(work: Execution, due: Sequence[PolicyTimer]) -> None:
    for timer in due:
        if timer not in work.record.timers:
            continue
        current = policies.is_timer_current(work.record, timer)
        work.record = policies.without_timer(work.record, timer)
        if current:
            request = policies.request_of(timer)
            assert request.action is not None
            work.run(request.action, request)


def decide(
    record: JobRecord | None, event: ControllerInput, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    """Decide what one input does to one job.

    Pure and deterministic: time comes from ``ctx``, ids are derived from the record. An
    input that would not change the job (the same phase again, a stale pod status)
    changes nothing and emits nothing. An event whose id was applied already never comes
    here: the shell (``vcbus.core.runtime.reactor``) remembers the ids of the inputs a step
    took (``Step.taken``, or a changed record or events) and skips a redelivery.

    Args:
        record: the job's record, ``None`` when the controller does not know the job.
        event: the input.
        ctx: the clock's time and the input's trace id.
        conf: priority classes and defaults.

    Returns:
        The new record (``None`` once the job is deleted) and the events to publish, in
        order: PodGroup and pod events first, then the job status.
    """
    match event:
        case JobAdmitted():
            return (
                _admit(event, ctx, conf) if record is None else _readmit(record, event, ctx, conf)
            )
        case JobDeleteAccepted():
            return _deleted_unknown(event, ctx) if record is None else _deleted(record, ctx, conf)
        case JobAbortAccepted() | JobResumeAccepted():
            return Step(None) if record is None else _command(record, event, ctx, conf)
        case PodGroupPhaseChanged():
            return Step(None) if record is None else _podgroup_phase(record, event, ctx, conf)
        case PodPhaseChanged():
            return Step(None) if record is None else _pod_phase(record, event, ctx, conf)
        case BindingRefused():
            return Step(None) if record is None else _binding_refused(record, event, ctx, conf)
        case Tick():
            return Step(None) if record is None else _tick(record, event, ctx, conf)
        case _:
            assert_never(event)
