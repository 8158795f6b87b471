"""The job phase machine: phase × action → operation and status rule.

Ports volcano@HEAD ``pkg/controllers/job/state/*.go`` (``pending.go``, ``running.go``,
``restarting.go``, ``aborting.go``, ``aborted.go``, ``completing.go``, ``terminating.go``,
``finished.go``, ``factory.go``, ``util.go``) and the retain logic of
``pkg/controllers/job/job_controller_actions.go`` ``killJob``.

In Volcano each state's ``Execute(action)`` calls ``SyncJob`` or ``KillJob`` with an
``UpdateStatusFn`` closure. Here the same table is data: :func:`plan` names the operation
(sync, full kill, targeted kill), the retain set and the status rule, and
:func:`evaluate` applies the rule to the counts the operation left. The core performs the
operation.

Deliberate deviations from Volcano:

- docs/design.md#task-level-gang: the B2.3 task check ("a task with a minimum that finished with
  fewer Succeeded pods fails the job") applies whenever a task has a minimum, not only when
  ``M ≥ T``; and Pending → Running also needs every task with a minimum and pods to have
  that many pods Running, Succeeded or Failed (tasks without pods yet, the later stages
  of a dependsOn job, are skipped: docs/design.md#dependent-jobs).
- ``maxRetry`` 0 (not defaulted by admission) counts as 3, Volcano's ``DefaultMaxRetry``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from vcbus.contracts.events.jobs_status import TaskCounts
from vcbus.contracts.objects.job import Job, JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.reasons import PODS_PENDING
from vcbus.services.job_controller.policies import Action

DEFAULT_MAX_RETRY = 3

RETAIN_NONE: frozenset[PodPhase] = frozenset()
"""``PodRetainPhaseNone``: a kill deletes every pod."""
RETAIN_SOFT: frozenset[PodPhase] = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})
"""``PodRetainPhaseSoft``: a kill keeps finished pods."""

_TARGETED = frozenset({Action.RESTART_TASK, Action.RESTART_POD, Action.RESTART_PARTITION})
_STOPS = {
    Action.ABORT_JOB: JobPhase.ABORTING,
    Action.COMPLETE_JOB: JobPhase.COMPLETING,
    Action.TERMINATE_JOB: JobPhase.TERMINATING,
}


class Operation(enum.Enum):
    """What a state does to the job's pods before its status rule runs."""

    SYNC = "sync"
    """``SyncJob``: create missing pods, delete extra ones, recount."""
    FULL_KILL = "full_kill"
    """``KillJob``: delete every pod not retained and the PodGroup, bump the version."""
    TARGETED_KILL = "targeted_kill"
    """Delete the pods of one task, pod or partition; keep the version and the PodGroup."""


class Rule(enum.Enum):
    """The ``UpdateStatusFn`` of a state."""

    KEEP = "keep"
    """Phase unchanged (``nil`` update function)."""
    SET = "set"
    """Move to the plan's target phase."""
    PENDING = "pending"
    """Pending → Running when enough pods run or finished."""
    RUNNING = "running"
    """Volcano's state/running.go: Completed, Failed, back to Pending, or stay."""
    RESTARTING = "restarting"
    """Rule R: Failed at maxRetry, else Pending once enough pods are gone."""
    DRAINED = "drained"
    """Move to the target phase once no pod is terminating, pending or running."""


@dataclass(frozen=True, slots=True)
class Plan:
    """One cell of the phase × action table."""

    operation: Operation
    rule: Rule
    retain: frozenset[PodPhase] = RETAIN_NONE
    target: JobPhase | None = None
    count_retry: bool = False


@functools.cache
def plan(phase: JobPhase, action: Action) -> Plan:
    """Return what ``action`` does in ``phase`` (Volcano's state/, ``state/*.go``).

    Args:
        phase: the job's current phase.
        action: the resolved action.

    Returns:
        The operation, retain set, status rule and whether the retry count goes up.
    """
    match phase:
        case JobPhase.PENDING | JobPhase.RUNNING:
            if action is Action.RESTART_JOB:
                return Plan(
                    Operation.FULL_KILL,
                    Rule.SET,
                    RETAIN_NONE,
                    JobPhase.RESTARTING,
                    count_retry=True,
                )
            if action in _TARGETED:
                return Plan(
                    Operation.TARGETED_KILL,
                    Rule.SET,
                    RETAIN_NONE,
                    JobPhase.RESTARTING,
                    count_retry=True,
                )
            if action in _STOPS:
                return Plan(Operation.FULL_KILL, Rule.SET, RETAIN_SOFT, _STOPS[action])
            rule = Rule.PENDING if phase is JobPhase.PENDING else Rule.RUNNING
            return Plan(Operation.SYNC, rule)
        case JobPhase.RESTARTING:
            if action is Action.SYNC_JOB:
                return Plan(Operation.SYNC, Rule.RESTARTING)
            if action in _TARGETED:
                return Plan(Operation.TARGETED_KILL, Rule.RESTARTING)
            return Plan(Operation.FULL_KILL, Rule.RESTARTING, RETAIN_NONE)
        case JobPhase.ABORTING | JobPhase.ABORTED:
            if action is Action.RESUME_JOB:
                return Plan(
                    Operation.FULL_KILL,
                    Rule.SET,
                    RETAIN_SOFT,
                    JobPhase.RESTARTING,
                    count_retry=True,
                )
            if phase is JobPhase.ABORTING:
                return Plan(Operation.FULL_KILL, Rule.DRAINED, RETAIN_SOFT, JobPhase.ABORTED)
            return Plan(Operation.FULL_KILL, Rule.KEEP, RETAIN_SOFT)
        case JobPhase.COMPLETING:
            return Plan(Operation.FULL_KILL, Rule.DRAINED, RETAIN_SOFT, JobPhase.COMPLETED)
        case JobPhase.TERMINATING:
            return Plan(Operation.FULL_KILL, Rule.DRAINED, RETAIN_SOFT, JobPhase.TERMINATED)
        case JobPhase.COMPLETED | JobPhase.FAILED | JobPhase.TERMINATED:
            return Plan(Operation.FULL_KILL, Rule.KEEP, RETAIN_SOFT)


def max_retry(job: Job) -> int:
    """Return the job's ``maxRetry`` (0 counts as Volcano's default, 3)."""
    return job.spec.max_retry or DEFAULT_MAX_RETRY


def effective_retain(
    retain: frozenset[PodPhase], retry_count: int, job: Job
) -> frozenset[PodPhase]:
    """Return the retain set a kill uses: ``Soft`` on the last retry (``killJob``).

    The last retry is ``retryCount ≥ maxRetry − 1``, evaluated before the kill's own
    increment.
    """
    return RETAIN_SOFT if retry_count >= max_retry(job) - 1 else retain


class Counts(msgspec.Struct, frozen=True, kw_only=True):
    """Pods by phase after an operation (Volcano ``JobStatus`` counters).

    A Struct, not a frozen dataclass: one is made per operation, and a Struct is an order
    of magnitude quicker to make.
    """

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0
    terminating: int = 0
    tasks: Mapping[str, TaskCounts] = {}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A phase transition with its reason code and message (docs/design.md#pending-reasons)."""

    phase: JobPhase
    reason: str
    message: str


def _total_replicas(job: Job) -> int:
    return sum(task.replicas for task in job.spec.tasks)


def evaluate_pending(job: Job, counts: Counts) -> Verdict | None:
    """Pending + sync (``pending.go``): Running when enough pods started.

    With docs/design.md#task-level-gang and docs/design.md#dependent-jobs.

    ``spec.minAvailable ≤ running + succeeded + failed``, and every task with a minimum
    that has pods has at least that many Running, Succeeded or Failed.
    """
    started = counts.running + counts.succeeded + counts.failed
    minimum = job.spec.min_available
    if minimum > started:
        return None
    for task in job.spec.tasks:
        state = counts.tasks.get(task.name)
        if task.min_available is None or state is None:
            continue
        if state.running + state.succeeded + state.failed < task.min_available:
            return None
    return Verdict(JobPhase.RUNNING, "Running", f"{started} of {minimum} minimum pods started")


def evaluate_broken_gang(job: Job, counts: Counts) -> Verdict | None:
    """Pending, a binding refused, and the gang can never start: too many pods failed.

    vcbus only; the caller checks that a pod's binding was refused. Volcano counts a
    failed pod neither ready nor valid (``ReadyTaskNum``, ``ValidTaskNum``): once
    ``failed > replicas − minAvailable`` the scheduler never places the rest as a gang,
    and a Volcano job in that state waits Pending for good. Kubernetes rarely gets there:
    a pod its kubelet rejects fails, and counts as started. vcbus's cluster refuses such a
    binding instead and the pod is placed again, so a gang whose other pods already ran
    and failed was left with pods that could never be placed (a chaos run under load: one
    of three workers bound and failed, the cluster refused the other two as
    ``NodeOvercommitted``, the job stayed Pending). The job is Failed then, as it would be
    once every pod had finished; not while ``minSuccess`` can still be reached by the pods
    left.
    """
    replicas = _total_replicas(job)
    minimum = job.spec.min_available
    failed = counts.failed
    if failed <= replicas - minimum:
        return None
    min_success = job.spec.min_success
    if min_success is not None and replicas - failed >= min_success:
        return None
    return Verdict(
        JobPhase.FAILED,
        "Failed",
        f"{failed} pods failed before the gang started: at most {replicas - failed} "
        f"of minAvailable {minimum} can ever run together",
    )


def evaluate_running(job: Job, counts: Counts) -> Verdict | None:
    """Running + sync (``state/running.go``, with docs/design.md#task-level-gang).

    Args:
        job: the job.
        counts: the counts after the sync.

    Returns:
        Completed, Failed or Pending with why, or ``None`` to stay Running.
    """
    replicas = _total_replicas(job)
    if replicas == 0:
        return None
    minimum = job.spec.min_available
    min_success = job.spec.min_success
    succeeded, failed = counts.succeeded, counts.failed
    if min_success is not None and succeeded >= min_success:
        return Verdict(
            JobPhase.COMPLETED,
            "Completed",
            f"{succeeded} succeeded, minSuccess {min_success} reached",
        )
    if succeeded + failed == replicas:
        for task in job.spec.tasks:
            state = counts.tasks.get(task.name)
            if task.min_available is None or state is None:
                continue
            if state.succeeded < task.min_available:
                return Verdict(
                    JobPhase.FAILED,
                    "Failed",
                    f"task {task.name}: {state.succeeded} succeeded, "
                    f"fewer than its minAvailable {task.min_available}",
                )
        if min_success is not None and succeeded < min_success:
            return Verdict(
                JobPhase.FAILED,
                "Failed",
                f"{succeeded} succeeded, fewer than minSuccess {min_success}",
            )
        if succeeded >= minimum:
            return Verdict(
                JobPhase.COMPLETED,
                "Completed",
                f"all {replicas} pods finished: {succeeded} succeeded, {failed} failed "
                f"(minAvailable {minimum})",
            )
        return Verdict(
            JobPhase.FAILED,
            "Failed",
            f"all {replicas} pods finished: {succeeded} succeeded, "
            f"fewer than minAvailable {minimum}",
        )
    if counts.pending > replicas - minimum:
        return Verdict(
            JobPhase.PENDING,
            PODS_PENDING,
            f"{counts.pending} pods pending, "
            f"more than replicas {replicas} − minAvailable {minimum}",
        )
    return None


def evaluate_restarting(job: Job, counts: Counts, retry_count: int) -> Verdict | None:
    """Rule R (``restarting.go``): Failed at maxRetry, else Pending once pods are gone.

    Args:
        job: the job.
        counts: the counts after the operation (``terminating`` = pods deleted by it).
        retry_count: the retry count after the operation.

    Returns:
        Failed, Pending, or ``None`` to stay Restarting.
    """
    limit = max_retry(job)
    if retry_count >= limit:
        return Verdict(
            JobPhase.FAILED, "Failed", f"retried {retry_count} times, maxRetry {limit} reached"
        )
    if _total_replicas(job) - counts.terminating >= job.spec.min_available:
        return Verdict(
            JobPhase.PENDING, "Restarted", f"restart {retry_count} of at most {limit - 1}"
        )
    return None


def evaluate(
    rule: Rule, target: JobPhase | None, job: Job, counts: Counts, retry_count: int
) -> Verdict | None:
    """Apply a status rule to the counts an operation left.

    Args:
        rule: the plan's status rule.
        target: the plan's target phase (for ``SET`` and ``DRAINED``).
        job: the job.
        counts: pod counts after the operation.
        retry_count: the retry count after the operation.

    Returns:
        The transition, or ``None`` when the phase stays.
    """
    match rule:
        case Rule.KEEP:
            return None
        case Rule.SET:
            assert target is not None
            return Verdict(target, target.value, "")
        case Rule.PENDING:
            return evaluate_pending(job, counts)
        case Rule.RUNNING:
            return evaluate_running(job, counts)
        case Rule.RESTARTING:
            return evaluate_restarting(job, counts, retry_count)
        case Rule.DRAINED:
            assert target is not None
            if counts.terminating or counts.pending or counts.running:
                return None
            return Verdict(target, target.value, "no pod is pending, running or terminating")
