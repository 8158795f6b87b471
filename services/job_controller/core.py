"""The job-controller's pure core: ``decide(record, event, ctx, conf) -> Step``.

Reads ``jobs.admitted``, ``podgroups.status``, ``pods.status`` and the shell's ``Tick``;
writes ``podgroups``, ``pods`` and ``jobs.status``. It plays volcano@HEAD
``pkg/controllers/job`` (``job_controller_handler.go`` turns informer events into
requests, ``job_controller.go`` ``processNextReq`` resolves and runs them,
``job_controller_actions.go`` ``syncJob``/``killJob`` perform them); the phase table is
:mod:`services.job_controller.machine`, the policies :mod:`services.job_controller.policies`.

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
- A refused binding only clears the pod's node: it raises no request.
- Job uids and pod uids are derived, not random: a pod uid changes with the job version
  and the record generation, so a pod re-created under the same name is another pod.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import assert_never

import msgspec

from contracts._base import Event, derive_event_id
from contracts.events.jobs_admitted import JobAbortAccepted, JobAdmitted, JobDeleteAccepted
from contracts.events.jobs_status import JobDeleted
from contracts.events.podgroups import PodGroupCreated, PodGroupDeleted, PodGroupUpdated
from contracts.events.podgroups_status import PodGroupPhaseChanged
from contracts.events.pods import PodCreated, PodDeleted
from contracts.events.pods_status import BindingRefused, PodPhaseChanged
from contracts.keys import JobKey, pod_key, split_key
from contracts.objects.job import JobPhase, TaskSpec
from contracts.objects.meta import Condition
from contracts.objects.pod import PodPhase
from contracts.objects.podgroup import PodGroupPhase
from services.job_controller import machine, policies
from services.job_controller.machine import Operation
from services.job_controller.podgroup import build_podgroup, same_spec
from services.job_controller.pods import build_pod, dependency_gate
from services.job_controller.policies import Action, PolicyEvent, Request
from services.job_controller.state import JobRecord, PodState, StatusView, remember_event
from services.job_controller.status import count_pods, status_event, status_view
from services.job_controller.update import UPDATE_REJECTED, update_error
from shared.step import Ctx, Step, Tick

__all__ = [
    "FOLLOW_UPS",
    "ControllerConf",
    "ControllerInput",
    "decide",
    "job_key_of",
    "next_deadline",
]

FOLLOW_UPS = 8
"""At most this many follow-up syncs after an action changed the phase."""

ControllerInput = (
    JobAdmitted
    | JobDeleteAccepted
    | JobAbortAccepted
    | PodGroupPhaseChanged
    | PodPhaseChanged
    | BindingRefused
    | Tick
)
"""Everything the job-controller reacts to."""

next_deadline = policies.next_deadline


@dataclass(frozen=True, slots=True)
class ControllerConf:
    """Configuration of the job-controller core.

    Attributes:
        priority_classes: priority class name → value (DESIGN §3).
        default_scheduler_name: scheduler of pods whose template and job name none.
    """

    priority_classes: Mapping[str, int] = field(default_factory=dict)
    default_scheduler_name: str = "volcano"


def _tag(kind: type[Event]) -> str:
    tag = kind.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


class _Work:
    """The mutable scratch of one ``decide`` call: the record so far and the events to emit."""

    def __init__(self, record: JobRecord, ctx: Ctx, conf: ControllerConf) -> None:
        self.record = record
        self.ctx = ctx
        self.conf = conf
        self.emits: list[Event] = []
        self.terminating = 0
        self.held: StatusView | None = None

    # -- bookkeeping -------------------------------------------------------------------

    def update(self, **changes: object) -> None:
        self.record = msgspec.structs.replace(self.record, **changes)

    def next_generation(self) -> int:
        generation = self.record.generation
        self.update(generation=generation + 1)
        return generation

    def job_event_id(self, kind: type[Event]) -> str:
        generation = self.next_generation()
        return derive_event_id(_tag(kind), self.record.job_key, f"{self.record.uid}:{generation}")

    def step(self) -> Step[JobRecord | None]:
        self.flush()
        return Step(self.record, tuple(self.emits))

    # -- status ------------------------------------------------------------------------

    def hold_status(self) -> None:
        """Note the status after an operation; publish the previous one if the phase moved on."""
        view = status_view(self.record, self.terminating)
        if self.held is not None and self.held.phase != view.phase:
            self.flush()
        self.held = view

    def flush(self, extra: tuple[Condition, ...] = ()) -> None:
        view = self.held
        self.held = None
        if view is None or (view == self.record.last_status and not extra):
            return
        event = status_event(
            self.record,
            view,
            generation=self.next_generation(),
            now=self.ctx.now,
            trace_id=self.ctx.trace_id,
            extra=extra,
        )
        self.emits.append(event)
        self.update(last_status=view)

    # -- PodGroup ----------------------------------------------------------------------

    def ensure_podgroup(self) -> None:
        """Create the PodGroup if missing, else update it (``createOrUpdatePodGroup``)."""
        record = self.record
        current = record.podgroup
        if current is None:
            first = record.version == 0 and record.retry_count == 0
            created = build_podgroup(
                record.job_key,
                record.job,
                record.uid,
                self.conf.priority_classes,
                created_at=record.created_at if first else self.ctx.now,
                podgroup_uid=derive_event_id(
                    "podgroup.uid", record.job_key, f"{record.uid}:{record.version}"
                ),
            )
            self.emits.append(
                PodGroupCreated(
                    event_id=self.job_event_id(PodGroupCreated),
                    occurred_at=self.ctx.now,
                    podgroup=created,
                )
            )
            self.update(
                podgroup=created, podgroup_phase=None, podgroup_reason="", podgroup_message=""
            )
            return
        wanted = build_podgroup(
            record.job_key,
            record.job,
            record.uid,
            self.conf.priority_classes,
            created_at=current.creation_timestamp,
            podgroup_uid=current.uid,
        )
        if not same_spec(current, wanted):
            self.emits.append(
                PodGroupUpdated(
                    event_id=self.job_event_id(PodGroupUpdated),
                    occurred_at=self.ctx.now,
                    podgroup=wanted,
                )
            )
            self.update(podgroup=wanted)

    def delete_podgroup(self) -> bool:
        current = self.record.podgroup
        if current is None:
            return False
        self.emits.append(
            PodGroupDeleted(
                event_id=self.job_event_id(PodGroupDeleted),
                occurred_at=self.ctx.now,
                job=self.record.job_key,
                name=current.name,
            )
        )
        self.update(podgroup=None, podgroup_phase=None, podgroup_reason="", podgroup_message="")
        return True

    # -- pods --------------------------------------------------------------------------

    def _sorted_pods(self, pods: list[PodState]) -> tuple[PodState, ...]:
        order = {task.name: position for position, task in enumerate(self.record.job.spec.tasks)}
        return tuple(
            sorted(pods, key=lambda pod: (order.get(pod.task, len(order)), pod.task, pod.index))
        )

    def create_pod(self, task: TaskSpec, index: int) -> None:
        record = self.record
        namespace, job_name = split_key(record.job_key)
        name = f"{job_name}-{task.name}-{index}"
        key = pod_key(namespace, name)
        generation = self.next_generation()
        # Readable and unique: the job incarnation, the pod, the job version, the generation.
        uid = f"{record.uid[:8]}-{name}-v{record.version}-g{generation}"
        assert record.podgroup is not None
        pod = build_pod(
            job_key=record.job_key,
            job=record.job,
            task=task,
            index=index,
            uid=uid,
            podgroup=record.podgroup.name,
            version=record.version,
            retry_count=record.retry_count,
            priority_classes=self.conf.priority_classes,
            default_scheduler=self.conf.default_scheduler_name,
            now=self.ctx.now,
        )
        self.emits.append(
            PodCreated(
                event_id=derive_event_id(_tag(PodCreated), key, uid),
                occurred_at=self.ctx.now,
                pod=pod,
            )
        )
        state = PodState(name=name, task=task.name, index=index, uid=uid, version=record.version)
        self.update(pods=self._sorted_pods([*self.record.pods, state]))
        # Volcano raises PodPending when a pod is added: a PodPending policy with a
        # timeout starts its timer now (``addPod``).
        request = Request(
            event=PolicyEvent.POD_PENDING,
            task=task.name,
            pod=name,
            pod_uid=uid,
            version=record.version,
        )
        resolution = policies.resolve_action(self.record.job, request, self.record.version)
        if resolution.delay is not None:
            self.update(
                timers=policies.add_timer(
                    self.record.timers, request, resolution, self.ctx.now, self.record.version
                )
            )

    def delete_pods(self, doomed: Callable[[PodState], bool]) -> int:
        namespace, _ = split_key(self.record.job_key)
        kept: list[PodState] = []
        deleted = 0
        for pod in self.record.pods:
            if not doomed(pod):
                kept.append(pod)
                continue
            key = pod_key(namespace, pod.name)
            self.emits.append(
                PodDeleted(
                    event_id=derive_event_id(_tag(PodDeleted), key, pod.uid),
                    occurred_at=self.ctx.now,
                    job=self.record.job_key,
                    pod=key,
                    task=pod.task,
                )
            )
            deleted += 1
        if deleted:
            self.update(pods=tuple(kept))
        return deleted

    # -- operations (``syncJob``, ``killJob``) -----------------------------------------

    def sync(self) -> int:
        """Volcano ``syncJob``: PodGroup, then pods once the PodGroup left Pending."""
        record = self.record
        if record.phase in (JobPhase.PENDING, JobPhase.RUNNING):
            self.ensure_podgroup()
        record = self.record
        if record.podgroup is None or record.podgroup_phase in (None, PodGroupPhase.PENDING):
            return 0
        replicas = {task.name: task.replicas for task in record.job.spec.tasks}
        deleted = self.delete_pods(lambda pod: pod.index >= replicas.get(pod.task, 0))
        before = self.record.pods
        for task in record.job.spec.tasks:
            if dependency_gate(record.job, task, before) is not None:
                continue
            existing = {pod.index for pod in self.record.pods if pod.task == task.name}
            for index in range(task.replicas):
                if index not in existing:
                    self.create_pod(task, index)
        return deleted

    def kill(self, retain: frozenset[PodPhase], target: Callable[[PodState], bool] | None) -> int:
        """Volcano ``killJob`` (``target is None``) or a targeted kill."""
        record = self.record
        keep = machine.effective_retain(retain, record.retry_count, record.job)
        deleted = self.delete_pods(
            lambda pod: (target is None or target(pod)) and pod.phase not in keep
        )
        if target is None and (self.delete_podgroup() or deleted):
            version = self.record.version + 1
            self.update(version=version, timers=policies.keep_current(self.record.timers, version))
        return deleted

    # -- the state machine -------------------------------------------------------------

    def execute(self, action: Action, request: Request) -> None:
        """Run one cell of the phase table and apply its status rule."""
        record = self.record
        cell = machine.plan(record.phase, action)
        match cell.operation:
            case Operation.SYNC:
                self.terminating = self.sync()
            case Operation.FULL_KILL:
                self.terminating = self.kill(cell.retain, None)
            case Operation.TARGETED_KILL:
                self.terminating = self.kill(cell.retain, _targets(self.record, action, request))
            case _:
                assert_never(cell.operation)
        if cell.count_retry:
            self.update(retry_count=self.record.retry_count + 1)
        counts = count_pods(self.record, self.terminating)
        verdict = machine.evaluate(
            cell.rule, cell.target, self.record.job, counts, self.record.retry_count
        )
        if verdict is not None and verdict.phase is not self.record.phase:
            message = verdict.message or _describe(action, request, self.record)
            self.update(phase=verdict.phase, phase_reason=verdict.reason, phase_message=message)
        self.hold_status()

    def run(self, action: Action, request: Request) -> None:
        """Execute an action, then the follow-up syncs a phase change brings."""
        before = self.record.phase
        self.execute(action, request)
        if action is not Action.SYNC_JOB:
            self.update(timers=policies.cancel_same_scope(self.record.timers, action, request))
        for _ in range(FOLLOW_UPS):
            if self.record.phase is before:
                break
            before = self.record.phase
            self.execute(
                Action.SYNC_JOB, Request(event=PolicyEvent.OUT_OF_SYNC, source="job status changed")
            )

    def dispatch(self, request: Request) -> None:
        """Resolve a request's action; run it now, or start its policy timer."""
        resolution = policies.resolve_action(self.record.job, request, self.record.version)
        if resolution.delay is not None:
            timers = policies.add_timer(
                self.record.timers, request, resolution, self.ctx.now, self.record.version
            )
            self.update(timers=timers)
            return
        self.run(resolution.action, request)


def _targets(record: JobRecord, action: Action, request: Request) -> Callable[[PodState], bool]:
    """Return which pods a targeted kill deletes (RestartTask / RestartPod / RestartPartition)."""
    if action is Action.RESTART_TASK:
        return lambda pod: bool(request.task) and pod.task == request.task
    requested = record.pod(request.pod)
    if requested is None:
        return lambda pod: False
    if action is Action.RESTART_PARTITION:
        task = next((t for t in record.job.spec.tasks if t.name == requested.task), None)
        size = task.partition_policy.partition_size if task and task.partition_policy else 0
        if size > 0:
            partition = requested.index // size
            return lambda pod: pod.task == requested.task and pod.index // size == partition
    return lambda pod: pod.name == requested.name


def _describe(action: Action, request: Request, record: JobRecord) -> str:
    """Say which action moved the job, and because of what."""
    because = request.source or (
        f"{request.event} of {request.pod}" if request.pod else str(request.event or "sync")
    )
    text = f"{action} on {because}"
    if action in (
        Action.RESTART_JOB,
        Action.RESTART_TASK,
        Action.RESTART_POD,
        Action.RESTART_PARTITION,
    ):
        text += f" (retry {record.retry_count} of maxRetry {machine.max_retry(record.job)})"
    return text


# -- handlers ------------------------------------------------------------------------------


def _admit(event: JobAdmitted, ctx: Ctx, conf: ControllerConf) -> Step[JobRecord | None]:
    uid = event.job.metadata.uid or derive_event_id(
        "job.uid", event.job_key, f"{event.event_id}:{event.occurred_at.isoformat()}"
    )
    record = JobRecord(
        job_key=event.job_key,
        job=event.job,
        spec_digest=event.spec_digest,
        uid=uid,
        created_at=event.job.metadata.creation_timestamp or event.occurred_at,
    )
    work = _Work(remember_event(record, event.event_id), ctx, conf)
    work.run(Action.SYNC_JOB, Request(event=PolicyEvent.OUT_OF_SYNC, source="job admitted"))
    return work.step()


def _readmit(
    record: JobRecord, event: JobAdmitted, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    record = remember_event(record, event.event_id)
    if event.spec_digest in (record.spec_digest, record.rejected_digest):
        return Step(record)
    work = _Work(record, ctx, conf)
    error = update_error(record.job, event.job)
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
        return work.step()
    work.update(job=event.job, spec_digest=event.spec_digest, rejected_digest="")
    work.run(Action.SYNC_JOB, Request(event=PolicyEvent.OUT_OF_SYNC, source="job updated"))
    return work.step()


def _delete(
    record: JobRecord, event: JobDeleteAccepted, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    work = _Work(remember_event(record, event.event_id), ctx, conf)
    work.delete_pods(lambda pod: True)
    work.delete_podgroup()
    work.emits.append(
        JobDeleted(
            event_id=work.job_event_id(JobDeleted), occurred_at=ctx.now, job_key=record.job_key
        )
    )
    return Step(None, tuple(work.emits))


def _podgroup_phase(
    record: JobRecord, event: PodGroupPhaseChanged, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    if record.podgroup is None or event.podgroup != record.podgroup.name:
        return Step(record)
    reason, message = "", ""
    for condition in event.conditions:
        if condition.reason:
            reason, message = condition.reason, condition.message
    record = remember_event(record, event.event_id)
    if (event.phase, reason, message) == (
        record.podgroup_phase,
        record.podgroup_reason,
        record.podgroup_message,
    ):
        return Step(record)
    work = _Work(record, ctx, conf)
    work.update(podgroup_phase=event.phase, podgroup_reason=reason, podgroup_message=message)
    if event.phase is PodGroupPhase.UNKNOWN:
        # Volcano raises JobUnknown with no job version (0): B2.1 rule 4 applies.
        request = Request(event=PolicyEvent.JOB_UNKNOWN, version=0, source="PodGroup phase Unknown")
    else:
        request = Request(source=f"PodGroup phase {event.phase}")
    work.dispatch(request)
    return work.step()


def _pod_event(old: PodState, new: PodState, record: JobRecord, reason: str) -> PolicyEvent | None:
    """Return the bus event a pod status change raises (``job_controller_handler.go``)."""
    if new.phase is PodPhase.FAILED and old.phase is not PodPhase.FAILED:
        return PolicyEvent.POD_EVICTED if reason == "Evicted" else PolicyEvent.POD_FAILED
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
    done = sum(
        1
        for pod in record.task_pods(task_name)
        if pod.phase is PodPhase.SUCCEEDED and pod.index < task.replicas
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
    restarts = sum(
        pod.restarts
        for pod in record.task_pods(task_name)
        if pod.phase in (PodPhase.RUNNING, PodPhase.PENDING)
    )
    return restarts >= limit


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
    )
    record = remember_event(record, event.event_id)
    if new == old:
        return Step(record)
    work = _Work(record, ctx, conf)
    work.update(pods=tuple(new if pod.name == new.name else pod for pod in record.pods))
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
    work.update(timers=policies.cancel_for_pod_event(work.record.timers, request))
    work.dispatch(request)
    return work.step()


def _binding_refused(record: JobRecord, event: BindingRefused) -> Step[JobRecord | None]:
    old = record.pod(split_key(event.pod)[1])
    if old is None or (event.pod_uid and event.pod_uid != old.uid):
        return Step(record)
    record = remember_event(record, event.event_id)
    if old.node is None:
        return Step(record)
    new = msgspec.structs.replace(old, node=None)
    return Step(
        msgspec.structs.replace(
            record, pods=tuple(new if pod.name == new.name else pod for pod in record.pods)
        )
    )


def _tick(record: JobRecord, tick: Tick, ctx: Ctx, conf: ControllerConf) -> Step[JobRecord | None]:
    due = policies.due_timers(record, tick.now)
    if not due:
        return Step(record)
    work = _Work(record, ctx, conf)
    for timer in due:
        if timer not in work.record.timers:
            continue
        current = policies.is_timer_current(work.record, timer)
        work.record = policies.without_timer(work.record, timer)
        if current:
            request = policies.request_of(timer)
            assert request.action is not None
            work.run(request.action, request)
    return work.step()


def decide(
    record: JobRecord | None, event: ControllerInput, ctx: Ctx, conf: ControllerConf
) -> Step[JobRecord | None]:
    """Decide what one input does to one job.

    Pure and deterministic: time comes from ``ctx``, ids are derived from the record. An
    event whose id was applied already changes nothing and emits nothing; so does an
    input that would not change the job (the same phase again, a stale pod status).

    Args:
        record: the job's record, ``None`` when the controller does not know the job.
        event: the input.
        ctx: the clock's time and the input's trace id.
        conf: priority classes and defaults.

    Returns:
        The new record (``None`` once the job is deleted) and the events to publish, in
        order: PodGroup and pod events first, then the job status.
    """
    if record is not None and not isinstance(event, Tick) and record.has_applied(event.event_id):
        return Step(record)
    match event:
        case JobAdmitted():
            return (
                _admit(event, ctx, conf) if record is None else _readmit(record, event, ctx, conf)
            )
        case JobDeleteAccepted():
            return Step(None) if record is None else _delete(record, event, ctx, conf)
        case JobAbortAccepted():
            if record is None:
                return Step(None)
            work = _Work(remember_event(record, event.event_id), ctx, conf)
            work.run(
                Action.ABORT_JOB,
                Request(
                    event=PolicyEvent.COMMAND_ISSUED,
                    action=Action.ABORT_JOB,
                    source="abort command",
                ),
            )
            return work.step()
        case PodGroupPhaseChanged():
            return Step(None) if record is None else _podgroup_phase(record, event, ctx, conf)
        case PodPhaseChanged():
            return Step(None) if record is None else _pod_phase(record, event, ctx, conf)
        case BindingRefused():
            return Step(None) if record is None else _binding_refused(record, event)
        case Tick():
            return Step(None) if record is None else _tick(record, event, ctx, conf)
        case _:
            assert_never(event)


def job_key_of(event: ControllerInput) -> JobKey | None:
    """Return the job an input is about (``None`` for a ``Tick``, which the shell addresses)."""
    match event:
        case JobAdmitted() | JobDeleteAccepted() | JobAbortAccepted():
            return event.job_key
        case PodGroupPhaseChanged() | PodPhaseChanged() | BindingRefused():
            return event.job
        case Tick():
            return None
        case _:
            assert_never(event)
