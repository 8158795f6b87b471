"""Why a job failed or restarted, in one look: the pods that failed and the policies that acted.

Folded from the job's own records (its partition of ``pods.status`` and ``jobs.status``,
in the order each topic holds them), as :mod:`vcbus.core.views.events` folds its events:

- each pod that ended ``Failed`` (a :class:`PodFailure`: pod, task, index, node, exit
  code, reason, message, when), once per incarnation (uid), the newest
  :data:`MAX_FAILURES` kept and the older ones counted;
- each lifecycle policy that moved the job (a :class:`PolicyAction`: the phase it entered —
  ``Restarting``, ``Aborting``, ``Terminating``, ``Completing``, ``Failed`` — and the
  job-controller's message, such as ``RestartJob on PodFailed of default/x-task-0 (retry 1
  of maxRetry 3)``).

:func:`acting_policies` names the job's lifecycle policies that matched the failed pods.

Only the job's newest life counts: a ``JobDeleted`` clears what came before, so a job
submitted again under the same name starts with its own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from vcbus.contracts import Event, JobDeleted, JobStatusChanged, PodPhaseChanged, Topic, key_of
from vcbus.contracts.objects import JobPhase, PodPhase
from vcbus.contracts.objects.job import JobSpec, LifecyclePolicy

MAX_FAILURES = 20
"""Failed pods kept per job (the newest); older ones are counted."""
MAX_ACTIONS = 20
"""Policy actions kept per job (the newest)."""
ACTED = frozenset(
    {
        JobPhase.RESTARTING,
        JobPhase.ABORTING,
        JobPhase.TERMINATING,
        JobPhase.COMPLETING,
        JobPhase.FAILED,
    }
)
"""The job phases a lifecycle policy (or maxRetry) moves a job into."""


@dataclass(frozen=True, slots=True)
class PodFailure:
    """One pod that ended Failed."""

    at: datetime
    pod: str
    task: str
    index: int | None
    node: str
    exit_code: int | None
    reason: str
    message: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PolicyAction:
    """The job entering a phase a policy chose, with the job-controller's word on why."""

    at: datetime
    phase: str
    reason: str
    message: str


@dataclass(slots=True)
class Failures:
    """A job's failed pods and the policies that acted, newest last."""

    pods: deque[PodFailure] = field(default_factory=lambda: deque(maxlen=MAX_FAILURES))
    actions: deque[PolicyAction] = field(default_factory=lambda: deque(maxlen=MAX_ACTIONS))
    omitted: int = 0
    """Failed pods not kept (older than the newest :data:`MAX_FAILURES`)."""
    _seen: set[str] = field(default_factory=set)
    _phase: str = ""
    _deleted_at: datetime | None = None

    def apply(self, event: Event) -> None:
        """Fold one of the job's events (those of an earlier job deleted are dropped)."""
        if self._deleted_at is not None and event.occurred_at <= self._deleted_at:
            return  # the deleted job's last step: its pods' ends as it was deleted
        match event:
            case JobDeleted():
                self.pods.clear()
                self.actions.clear()
                self.omitted = 0
                self._seen.clear()
                self._phase = ""
                self._deleted_at = event.occurred_at
            case PodPhaseChanged() if event.phase is PodPhase.FAILED:
                seen = event.pod_uid or f"{event.pod}@{event.occurred_at.isoformat()}"
                if seen in self._seen:
                    return
                if len(self._seen) >= 4 * MAX_FAILURES:
                    self._seen.clear()  # bounded: an incarnation repeats its last word only
                self._seen.add(seen)
                if len(self.pods) == MAX_FAILURES:
                    self.omitted += 1
                self.pods.append(
                    PodFailure(
                        at=event.occurred_at,
                        pod=event.pod,
                        task=event.task,
                        index=pod_index(event.pod),
                        node=str(event.node or ""),
                        exit_code=event.exit_code,
                        reason=event.reason,
                        message=event.message,
                        uid=event.pod_uid,
                    )
                )
            case JobStatusChanged():
                phase = str(event.phase)
                if phase != self._phase and phase in ACTED:
                    condition = next((c for c in event.conditions if c.type == phase), None)
                    self.actions.append(
                        PolicyAction(
                            at=event.occurred_at,
                            phase=phase,
                            reason=condition.reason if condition else "",
                            message=condition.message if condition else "",
                        )
                    )
                self._phase = phase
            case _:
                pass


def job_failures(key: str, records: Iterable[tuple[Topic, Event]]) -> Failures:
    """The failures of job ``key`` from its records (others' are ignored), in time order.

    The topics are read one after the other, so their records are folded by their time
    (stably: one topic's order is kept), as the events are sorted.
    """
    mine = [
        event
        for topic, event in records
        if topic in (Topic.PODS_STATUS, Topic.JOBS_STATUS) and key_of(event) == key
    ]
    mine.sort(key=lambda event: event.occurred_at)
    failures = Failures()
    for event in mine:
        failures.apply(event)
    return failures


def pod_index(pod: str) -> int | None:
    """A pod's index: the number after the last ``-`` of its name (Volcano's naming)."""
    tail = pod.rpartition("-")[2]
    return int(tail) if tail.isdigit() else None


DEFAULT_MAX_RETRY = 3
"""Volcano's ``DefaultMaxRetry``: what a ``maxRetry`` of 0 counts as."""


def acting_policies(spec: JobSpec, failures: Failures) -> list[str]:
    """The lifecycle policies that match the failed pods, as ``PodFailed -> RestartJob (job)``.

    A task's own policies are looked at before the job's (Volcano's order); a policy matches
    a failed pod by its event (``PodFailed``, ``*``) or by the pod's exit code.
    """
    tasks = {task.name: task for task in spec.tasks}
    found: dict[str, None] = {}
    for failure in failures.pods:
        task = tasks.get(failure.task)
        scoped = [(f"task {failure.task}", p) for p in (task.policies if task else ())]
        for scope, policy in [*scoped, *(("job", p) for p in spec.policies)]:
            if _matches(policy, failure):
                found[f"{_trigger(policy)} -> {policy.action or '-'} ({scope})"] = None
                break
    return list(found)


def _matches(policy: LifecyclePolicy, failure: PodFailure) -> bool:
    if policy.exit_code is not None:
        return failure.exit_code == policy.exit_code
    events = {policy.event, *policy.events} - {""}
    return bool(events & {"PodFailed", "*"})


def _trigger(policy: LifecyclePolicy) -> str:
    if policy.exit_code is not None:
        return f"exitCode {policy.exit_code}"
    return ",".join(e for e in (policy.event, *policy.events) if e)
