"""Lifecycle policies: which action a request triggers, and when (Volcano's job_controller_util.go).

Ports volcano@HEAD ``pkg/controllers/job/job_controller_util.go`` ``applyPolicies`` (with
``getEventlist``/``checkEventExist``) and the delayed-action bookkeeping of
``pkg/controllers/job/job_controller.go`` (``AddDelayActionForJob``,
``CleanPodDelayActionsIfNeed``, ``executeDelayAction``, ``cleanupDelayActions``).

Deliberate deviations from Volcano:

- Delayed actions are data in the record (:class:`~vcbus.services.job_controller.state.PolicyTimer`)
  and run when the shell delivers a ``Tick`` at :func:`next_deadline`, instead of
  goroutines with a context timeout.
- A request's exit code is ``None`` when the pod did not fail, so exit-code policies
  match only failed pods (Volcano compares against 0, which validation forbids anyway).
- Rule 3 of B2.1 (job UID differs) has no counterpart: a record holds one job incarnation.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import msgspec

from vcbus.contracts.objects.job import Job, JobPhase, LifecyclePolicy
from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.job_controller.state import JobRecord, PolicyTimer


class PolicyEvent(enum.StrEnum):
    """Volcano bus events (``bus/v1alpha1`` ``Event``)."""

    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    JOB_UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    JOB_UPDATED = "JobUpdated"


class Action(enum.StrEnum):
    """Volcano bus actions (``bus/v1alpha1`` ``Action``)."""

    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"


INTERNAL_EVENTS = frozenset(
    {PolicyEvent.OUT_OF_SYNC, PolicyEvent.COMMAND_ISSUED, PolicyEvent.POD_RUNNING}
)
"""Events that never match a policy: they always mean ``SyncJob``."""

POD_EVENTS = frozenset(
    {
        PolicyEvent.POD_PENDING,
        PolicyEvent.POD_RUNNING,
        PolicyEvent.POD_FAILED,
        PolicyEvent.POD_EVICTED,
    }
)


class ActionScope(enum.Enum):
    """What an action acts on (Volcano ``GetActionType``): timers of one scope cancel together."""

    JOB = "job"
    TASK = "task"
    POD = "pod"
    PARTITION = "partition"


def action_scope(action: Action) -> ActionScope:
    """Return the scope of an action."""
    match action:
        case Action.RESTART_TASK:
            return ActionScope.TASK
        case Action.RESTART_POD:
            return ActionScope.POD
        case Action.RESTART_PARTITION:
            return ActionScope.PARTITION
        case _:
            return ActionScope.JOB


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What happened, as the controller's work queue would carry it (Volcano ``apis.Request``).

    A Struct, not a frozen dataclass: one is made per input, and a Struct is quicker to make.

    Attributes:
        event: the bus event (``None`` when the change raises no event, e.g. a pod bound).
        task: the task of the pod concerned, if any.
        pod: the pod's name, if any.
        pod_uid: the pod's uid, if any.
        exit_code: the exit code of a failed pod.
        version: the job version the request was raised under (the pod's version; 0 for a
            PodGroup phase change; ``None`` when not applicable).
        action: an explicit action (a command); it wins over every policy.
        source: a short human description for condition messages.
    """

    event: PolicyEvent | None = None
    task: str = ""
    pod: str = ""
    pod_uid: str = ""
    exit_code: int | None = None
    version: int | None = None
    action: Action | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Resolution:
    """The action a request resolves to, and the delay of the policy that chose it."""

    action: Action
    delay: timedelta | None = None
    policy: LifecyclePolicy | None = None


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str) -> timedelta | None:
    """Parse a Go duration (``90s``, ``1m30s``, ``1.5h``), as ``metav1.Duration`` is written.

    Args:
        text: the duration text.

    Returns:
        The duration, or ``None`` when the text is empty or not a duration.
    """
    text = text.strip()
    if not text or text == "0":
        return None
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    position = 0
    seconds = 0.0
    for match in _DURATION.finditer(body):
        if match.start() != position:
            return None
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(body) or position == 0:
        return None
    return timedelta(seconds=sign * seconds)


def policy_events(policy: LifecyclePolicy) -> tuple[str, ...]:
    """Return the events of a policy: ``events`` then ``event`` (Volcano ``getEventlist``)."""
    return (*policy.events, policy.event) if policy.event else policy.events


def policy_matches(policy: LifecyclePolicy, request: Request) -> bool:
    """Tell whether a policy applies to a request (B2.1 rules 5 and 6).

    An event policy matches when its events contain the request's event or ``*``; for
    ``PodPending`` only a policy with a ``timeout`` matches. An exit-code policy matches
    the exit code of a failed pod.
    """
    events = policy_events(policy)
    if events and request.event is not None:
        matched = request.event in events or PolicyEvent.ANY in events
        if matched and request.event is PolicyEvent.POD_PENDING:
            matched = policy.timeout is not None and parse_duration(policy.timeout) is not None
        if matched:
            return True
    return (
        policy.exit_code is not None
        and request.exit_code is not None
        and policy.exit_code == request.exit_code
    )


def _resolution(policy: LifecyclePolicy) -> Resolution:
    try:
        action = Action(policy.action)
    except ValueError:
        return Resolution(Action.SYNC_JOB)
    delay = parse_duration(policy.timeout) if policy.timeout is not None else None
    return Resolution(action, delay if delay is not None and delay > timedelta(0) else None, policy)


def resolve_action(job: Job, request: Request, current_version: int) -> Resolution:
    """Resolve the action of a request (Volcano ``applyPolicies``, job_controller_util.go).

    First rule that applies: an explicit action; an internal or absent event → SyncJob;
    a request raised under an older job version → SyncJob; the first matching policy of
    the request's task; the first matching job-level policy; else SyncJob.

    Args:
        job: the job whose policies apply.
        request: the request.
        current_version: the job's ``status.version``.

    Returns:
        The action, with the policy's delay when it has a ``timeout``.
    """
    if request.action is not None:
        return Resolution(request.action)
    if request.event is None or request.event in INTERNAL_EVENTS:
        return Resolution(Action.SYNC_JOB)
    if request.version is not None and request.version < current_version:
        return Resolution(Action.SYNC_JOB)
    if request.task:
        for task in job.spec.tasks:
            if task.name == request.task:
                for policy in task.policies:
                    if policy_matches(policy, request):
                        return _resolution(policy)
                break
    for policy in job.spec.policies:
        if policy_matches(policy, request):
            return _resolution(policy)
    return Resolution(Action.SYNC_JOB)


def add_timer(
    timers: tuple[PolicyTimer, ...],
    request: Request,
    resolution: Resolution,
    now: datetime,
    version: int,
) -> tuple[PolicyTimer, ...]:
    """Schedule a delayed action, one per pod (Volcano ``AddDelayActionForJob``).

    An equal timer already pending for the same pod (same pod uid and action) is kept with
    its original deadline; any other timer of that pod is replaced.
    """
    assert resolution.delay is not None
    for timer in timers:
        if timer.pod == request.pod:
            same_pod = not timer.pod_uid or not request.pod_uid or timer.pod_uid == request.pod_uid
            if same_pod and timer.action == resolution.action:
                return timers
    timer = PolicyTimer(
        deadline=now + resolution.delay,
        action=resolution.action,
        event=request.event or "",
        task=request.task,
        pod=request.pod,
        pod_uid=request.pod_uid,
        version=version,
    )
    kept = tuple(t for t in timers if t.pod != request.pod)
    return tuple(sorted((*kept, timer), key=lambda t: (t.deadline, t.pod)))


def cancel_for_pod_event(
    timers: tuple[PolicyTimer, ...], request: Request
) -> tuple[PolicyTimer, ...]:
    """Drop the timers a pod event makes obsolete (Volcano ``CleanPodDelayActionsIfNeed``).

    Any pod event other than ``PodPending`` cancels that pod's ``PodPending`` timer (same
    pod uid); ``PodRunning`` also cancels its ``PodFailed``/``PodEvicted`` timers.
    """
    if not timers or request.event not in POD_EVENTS or request.event is PolicyEvent.POD_PENDING:
        return timers

    def obsolete(timer: PolicyTimer) -> bool:
        if timer.pod != request.pod:
            return False
        if timer.event == PolicyEvent.POD_PENDING:
            return timer.pod_uid == request.pod_uid
        return request.event is PolicyEvent.POD_RUNNING and timer.event in (
            PolicyEvent.POD_FAILED,
            PolicyEvent.POD_EVICTED,
        )

    return tuple(timer for timer in timers if not obsolete(timer))


def cancel_same_scope(
    timers: tuple[PolicyTimer, ...], action: Action, request: Request
) -> tuple[PolicyTimer, ...]:
    """Drop pending timers of the same scope as an action just executed (``cleanupDelayActions``).

    Job-scope actions cancel every job-scope timer; task-scope ones the timers of the same
    task; pod- and partition-scope ones the timers of the same pod.
    """
    scope = action_scope(action)

    def covered(timer: PolicyTimer) -> bool:
        try:
            timer_scope = action_scope(Action(timer.action))
        except ValueError:
            return False
        if timer_scope is not scope:
            return False
        if scope is ActionScope.TASK:
            return timer.task == request.task
        if scope in (ActionScope.POD, ActionScope.PARTITION):
            return timer.pod == request.pod and (
                not request.pod_uid or timer.pod_uid == request.pod_uid
            )
        return True

    return tuple(timer for timer in timers if not covered(timer))


def keep_current(timers: Iterable[PolicyTimer], version: int) -> tuple[PolicyTimer, ...]:
    """Drop timers raised under another job version (they would be ignored when due)."""
    return tuple(timer for timer in timers if timer.version == version)


def due_timers(record: JobRecord, now: datetime) -> tuple[PolicyTimer, ...]:
    """Return the timers due at ``now``, by deadline then pod name."""
    return tuple(
        sorted((t for t in record.timers if t.deadline <= now), key=lambda t: (t.deadline, t.pod))
    )


def is_timer_current(record: JobRecord, timer: PolicyTimer) -> bool:
    """Tell whether a due timer still applies (Volcano ``executeDelayAction`` checks).

    It must have been raised under the current job version, and a ``PodPending`` timer
    needs its pod still there, with the same uid, still Pending.
    """
    if timer.version != record.version:
        return False
    if timer.event == PolicyEvent.POD_PENDING:
        pod = record.pod(timer.pod)
        return pod is not None and pod.uid == timer.pod_uid and pod.phase is PodPhase.PENDING
    return True


def request_of(timer: PolicyTimer) -> Request:
    """Return the request a timer was raised for, carrying its action explicitly."""
    known = {member.value for member in PolicyEvent}
    event = PolicyEvent(timer.event) if timer.event in known else None
    return Request(
        event=event,
        task=timer.task,
        pod=timer.pod,
        pod_uid=timer.pod_uid,
        version=timer.version,
        action=Action(timer.action),
        source=f"{timer.event} of {timer.pod or 'the job'} after its policy timeout",
    )


FINISHED_PHASES = frozenset({JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.TERMINATED})
"""The phases ``ttlSecondsAfterFinished`` counts from: volcano@HEAD
``pkg/controllers/garbagecollector/garbagecollector.go`` ``isJobFinished`` (an Aborted job
may be resumed, so it is not finished)."""


def ttl_expiry(record: JobRecord) -> datetime | None:
    """When a finished job with ``ttlSecondsAfterFinished`` is deleted (None: never).

    Port of the garbage collector's ``processTTL``/``timeLeft``: the job's finish time plus
    its TTL; a TTL of 0 deletes it as it finishes.
    """
    ttl = record.job.spec.ttl_seconds_after_finished
    if ttl is None or record.finished_at is None or record.phase not in FINISHED_PHASES:
        return None
    return record.finished_at + timedelta(seconds=ttl)


def next_deadline(record: JobRecord | None) -> datetime | None:
    """Return when the shell should deliver the next ``Tick`` for this job, if ever.

    Args:
        record: the job's record.

    Returns:
        The earliest pending policy deadline or TTL expiry, or ``None``.
    """
    if record is None:
        return None
    deadlines = [timer.deadline for timer in record.timers]
    if (expiry := ttl_expiry(record)) is not None:
        deadlines.append(expiry)
    return min(deadlines, default=None)


def without_timer(record: JobRecord, timer: PolicyTimer) -> JobRecord:
    """Return the record without one timer."""
    return msgspec.structs.replace(record, timers=tuple(t for t in record.timers if t != timer))
