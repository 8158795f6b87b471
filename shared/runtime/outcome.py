"""Outcome: what a simulated run did, folded from the events the services published.

The fold sees events in the order they were published, each with the time it was
published (seconds from the start of the run). It keeps, per job, its phase, its
PodGroup's phase, per-task pod counts and a reason; per pod its node and phase; the
rejected submissions with every violation; the reservation (target job, locked nodes);
and a timeline of notable events (will-bind reservations made and released among them).
:meth:`Outcome.report` returns all of it as plain data in a stable order, so equal runs
give equal JSON.

A PodGroup's phase change published after its deletion (podgroup-enqueue had not seen the
deletion yet) is ignored, so the final phase does not depend on that race.

It also keeps when things happened, so a schedule can be judged: per job its queue,
priority, and the times it was submitted, admitted, Inqueue, first bound, Running (its
minimum running) and finished; per pod its requests and the times it was bound, Running
and ended; and the cluster's capacity over time, for the ``summary``
(:mod:`shared.runtime.summary`).

The reason of a job is the read model's (:func:`shared.views.reason.job_reason`), as
``vcbus get`` and ``describe`` say it: for a job in a final phase, its own phase condition;
for any other, the highest-ranked of its PodGroup's and the allocator's ``Unschedulable``
conditions and its own ``WaitingForDependency`` (SPEC A8), else its own phase condition.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass, field

from contracts import (
    BindingCreated,
    BindingRefused,
    CapacityReleased,
    CapacityReserved,
    Event,
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    NodeChanged,
    NodeRegistered,
    NodeRemoved,
    NodesLocked,
    NodesUnlocked,
    NominationEnded,
    PodCreated,
    PodDeleted,
    PodEvictionRequested,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodGroupUpdated,
    PodPhaseChanged,
    PodsNominated,
    TargetJobElected,
    pod_key,
)
from contracts.objects.job import JobPhase
from contracts.objects.meta import Condition
from contracts.objects.pod import POD_BOUND, PodPhase
from contracts.objects.podgroup import PodGroupPhase
from contracts.quantity import format_quantity
from shared.runtime.job_metrics import JobRun, job_metrics
from shared.runtime.summary import CapacityStep, Usage, summarise
from shared.views.phases import DELETED, FINAL_PHASES
from shared.views.reason import job_reason


@dataclass
class _Job:
    phase: str = ""
    podgroup: str = ""
    podgroup_name: str = ""
    podgroups_deleted: set[str] = field(default_factory=set)
    tasks: dict[str, dict[str, int]] = field(default_factory=dict)
    job_conditions: tuple[Condition, ...] = ()
    podgroup_conditions: tuple[Condition, ...] = ()
    gang_conditions: tuple[Condition, ...] = ()
    queue: str = ""
    priority: int | None = None
    times: dict[str, float] = field(default_factory=dict)
    """``submitted``, ``admitted``, ``inqueue``, ``firstBound``, ``running``, ``finished``."""

    def first(self, name: str, t: float) -> None:
        """Keep the first time ``name`` happened."""
        self.times.setdefault(name, t)

    def reason(self) -> tuple[str, str]:
        why = job_reason(
            self.phase,
            job=self.job_conditions,
            podgroup_phase=self.podgroup,
            podgroup=self.podgroup_conditions,
            allocator=self.gang_conditions,
        )
        return (why.code, why.message) if why is not None else ("", "")


@dataclass
class _Pod:
    task: str
    node: str | None = None
    phase: str = str(PodPhase.PENDING)
    exit_code: int | None = None
    deleted: bool = False
    queue: str = ""
    requests: dict[str, int] = field(default_factory=dict)
    bound: float | None = None
    running: float | None = None
    finished: float | None = None


def _first_reason(conditions: Iterable[Condition]) -> str:
    return next((c.reason for c in conditions if c.reason), "")


class Outcome:
    """Folds published events into jobs, pods, rejections, reservation and a timeline."""

    def __init__(self, jobs: Iterable[str] = ()) -> None:
        self.submitted = frozenset(jobs)
        self.jobs: dict[str, _Job] = {}
        self.pods: dict[str, _Pod] = {}
        self.rejected: dict[str, list[dict[str, str]]] = {}
        self.target: str | None = None
        self.locked: set[str] = set()
        self.timeline: list[dict[str, object]] = []
        self.dead_letters: collections.Counter[tuple[str, str]] = collections.Counter()
        self.nodes: dict[str, dict[str, int]] = {}
        self.capacity: list[CapacityStep] = []
        self.submitted_at: dict[str, float] = {}

    def submit(self, t: float, job: str) -> None:
        """Note that ``job`` was submitted at ``t`` (the first submission counts)."""
        self.submitted_at.setdefault(job, t)

    def node_of(self, pod: str) -> str | None:
        """The node a pod is bound to, if it is and still exists."""
        known = self.pods.get(pod)
        return known.node if known is not None and not known.deleted else None

    def is_done(self) -> bool:
        """Whether every submitted job is rejected, deleted or in a final phase."""
        for key in self.submitted:
            if key in self.rejected:
                continue
            job = self.jobs.get(key)
            if job is None or (job.phase not in FINAL_PHASES and job.phase != DELETED):
                return False
        return True

    def note(self, t: float, entry: dict[str, object]) -> None:
        """Add a timeline entry at ``t`` seconds from the start."""
        self.timeline.append({"t": round(t, 6), **entry})

    def dead_letter(self, topic: str, service: str) -> None:
        """Count a record ``service`` sent to the dead-letter topic of ``topic``."""
        self.dead_letters[(topic, service)] += 1

    def apply(self, t: float, event: Event) -> None:
        """Fold one event, published ``t`` seconds from the start."""
        match event:
            case (
                JobAdmitted()
                | JobRejected()
                | JobStatusChanged()
                | JobDeleted()
                | PodGroupCreated()
                | PodGroupUpdated()
                | PodGroupDeleted()
                | PodGroupPhaseChanged()
                | PodGroupConditionsChanged()
            ):
                self._job_event(t, event)
            case PodCreated() | PodDeleted() | BindingCreated() | BindingRefused():
                self._pod_event(t, event)
            case PodPhaseChanged():
                self._pod_phase(t, event)
            case TargetJobElected() | NodesLocked() | NodesUnlocked():
                self._reservation_event(t, event)
            case CapacityReserved() | CapacityReleased():
                self._will_bind_event(t, event)
            case PodEvictionRequested():
                self.note(
                    t,
                    {
                        "event": "evict",
                        "pod": event.pod,
                        "node": str(event.node),
                        "reason": event.reason,
                        "taker": event.taker,
                    },
                )
            case PodsNominated():
                pods = [f"{p.pod} on {p.node}" for p in event.pods]
                self.note(t, {"event": "nominated", "job": event.job, "pods": pods})
            case NominationEnded():
                self.note(t, {"event": "nomination", "job": event.job, "reason": event.reason})
            case NodeRegistered() | NodeChanged():
                change = "registered" if isinstance(event, NodeRegistered) else "changed"
                self.note(t, {"event": "node", "node": event.node.name, "change": change})
                self._capacity(t, event.node.name, dict(event.node.allocatable))
            case NodeRemoved():
                self.note(t, {"event": "node", "node": str(event.name), "change": "removed"})
                self._capacity(t, str(event.name), None)
            case _:
                pass

    def _capacity(self, t: float, node: str, allocatable: dict[str, int] | None) -> None:
        if allocatable is None:
            self.nodes.pop(node, None)
        else:
            self.nodes[node] = allocatable
        total: dict[str, int] = {}
        for amounts in self.nodes.values():
            for name, amount in amounts.items():
                total[name] = total.get(name, 0) + amount
        if self.capacity and self.capacity[-1].at == t:
            self.capacity.pop()
        self.capacity.append(CapacityStep(at=max(t, 0.0), allocatable=total))

    def _job_event(self, t: float, event: Event) -> None:
        match event:
            case JobAdmitted():
                job = self.jobs.setdefault(event.job_key, _Job())
                job.queue = event.job.spec.queue
                job.first("admitted", t)
                self.note(t, {"event": "admitted", "job": event.job_key})
            case JobRejected():
                key = event.job_key or ""
                self.rejected[key] = [
                    {"path": v.path, "reason": v.reason, "message": v.message}
                    for v in event.violations
                ]
                reasons = sorted({v.reason for v in event.violations})
                self.note(t, {"event": "rejected", "job": key, "reasons": reasons})
            case JobStatusChanged():
                job = self.jobs.setdefault(event.job_key, _Job())
                if job.phase != event.phase:
                    self.note(t, {"event": "job", "job": event.job_key, "phase": str(event.phase)})
                if event.phase is JobPhase.RUNNING:
                    job.first("running", t)
                if event.phase in FINAL_PHASES:
                    job.first("finished", t)
                job.phase = str(event.phase)
                job.job_conditions = event.conditions
                job.tasks = {
                    task: {
                        "failed": counts.failed,
                        "pending": counts.pending,
                        "running": counts.running,
                        "succeeded": counts.succeeded,
                        "unknown": counts.unknown,
                    }
                    for task, counts in sorted(event.task_status_count.items())
                }
            case JobDeleted():
                deleted = self.jobs.setdefault(event.job_key, _Job())
                deleted.phase = DELETED
                deleted.first("finished", t)
                self.note(t, {"event": "job", "job": event.job_key, "phase": DELETED})
            case PodGroupCreated() | PodGroupUpdated():
                job = self.jobs.setdefault(event.podgroup.job, _Job())
                job.podgroup_name = event.podgroup.name
                job.priority = event.podgroup.priority
                job.queue = event.podgroup.queue
                job.podgroups_deleted.discard(event.podgroup.name)
            case PodGroupDeleted():
                job = self.jobs.setdefault(event.job, _Job())
                job.podgroups_deleted.add(event.name)
                if job.podgroup_name in ("", event.name):
                    job.podgroup = DELETED
                    self.note(t, {"event": "podgroup", "job": event.job, "phase": DELETED})
            case PodGroupPhaseChanged():
                self._podgroup_phase(t, event)
            case PodGroupConditionsChanged():
                self.jobs.setdefault(event.job, _Job()).gang_conditions = event.conditions
            case _:
                pass

    def _podgroup_phase(self, t: float, event: PodGroupPhaseChanged) -> None:
        job = self.jobs.setdefault(event.job, _Job())
        if event.podgroup in job.podgroups_deleted or (
            job.podgroup_name and event.podgroup != job.podgroup_name
        ):
            return
        if job.podgroup != event.phase or job.podgroup_conditions != event.conditions:
            entry: dict[str, object] = {
                "event": "podgroup",
                "job": event.job,
                "phase": str(event.phase),
            }
            if reason := _first_reason(event.conditions):
                entry["reason"] = reason
            self.note(t, entry)
        job.podgroup = str(event.phase)
        job.podgroup_conditions = event.conditions
        if event.phase is PodGroupPhase.INQUEUE:
            job.first("inqueue", t)

    def _pod_event(self, t: float, event: Event) -> None:
        match event:
            case PodCreated():
                key = pod_key(event.pod.namespace, event.pod.name)
                self.pods[key] = _Pod(
                    task=event.pod.task, queue=event.pod.queue, requests=dict(event.pod.requests)
                )
            case PodDeleted():
                if (pod := self.pods.get(event.pod)) is not None:
                    pod.deleted = True
                    if pod.running is not None and pod.finished is None:
                        pod.finished = t
            case BindingCreated():
                key = pod_key(event.pod.namespace, event.pod.name)
                if (bound := self.pods.get(key)) is not None and bound.bound is None:
                    bound.bound = t
                self.jobs.setdefault(event.pod.job, _Job()).first("firstBound", t)
                self.note(t, {"event": "bind", "pod": key, "node": str(event.node)})
            case BindingRefused():
                entry: dict[str, object] = {"event": "refused", "pod": event.pod}
                entry.update(node=str(event.node), reason=event.reason)
                self.note(t, entry)
            case _:
                pass

    def _pod_phase(self, t: float, event: PodPhaseChanged) -> None:
        pod = self.pods.setdefault(event.pod, _Pod(task=event.task))
        pod.node = str(event.node) if event.node is not None else pod.node
        pod.phase = str(event.phase)
        pod.exit_code = event.exit_code
        if event.phase is PodPhase.RUNNING and pod.running is None:
            pod.running = t
        elif event.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED) and pod.finished is None:
            pod.finished = t
        if event.reason == POD_BOUND and event.phase is PodPhase.PENDING:
            return
        entry: dict[str, object] = {"event": "pod", "pod": event.pod, "phase": str(event.phase)}
        if event.exit_code is not None:
            entry["exitCode"] = event.exit_code
        if event.reason:
            entry["reason"] = event.reason
        self.note(t, entry)

    def _reservation_event(self, t: float, event: Event) -> None:
        match event:
            case TargetJobElected():
                self.target = event.job
                self.note(t, {"event": "elected", "job": event.job})
            case NodesLocked():
                self.target = event.job
                self.locked.update(event.nodes)
                self.note(t, {"event": "locked", "job": event.job, "nodes": sorted(event.nodes)})
            case NodesUnlocked():
                self.target = None
                self.locked.clear()
                self.note(t, {"event": "unlocked", "job": event.job, "reason": event.reason})
            case _:
                pass

    def _will_bind_event(self, t: float, event: CapacityReserved | CapacityReleased) -> None:
        """Will-bind reservations (the allocator's ``capacity.reservations``): made, released."""
        entry: dict[str, object] = {
            "event": "reserved" if isinstance(event, CapacityReserved) else "released",
            "job": event.job,
            "pods": [f"{p.task}-{p.index} on {p.node}" for p in event.pods],
        }
        if isinstance(event, CapacityReleased):
            entry["reason"] = event.reason
        self.note(t, entry)

    def unfinished(self) -> list[str]:
        """Keys of the known jobs, not rejected, that are in no final phase."""
        return sorted(
            key
            for key, job in self.jobs.items()
            if key not in self.rejected and job.phase not in FINAL_PHASES and job.phase != DELETED
        )

    def _times(self, key: str, job: _Job) -> dict[str, float]:
        if key in self.submitted_at:
            return {"submitted": self.submitted_at[key], **job.times}
        return job.times

    def _run(self, key: str) -> JobRun | None:
        """The job's run, if it was submitted, ran and reached a final phase."""
        job = self.jobs[key]
        submitted = self.submitted_at.get(key)
        running, finished = job.times.get("running"), job.times.get("finished")
        if submitted is None or running is None or finished is None:
            return None
        pods = sum(sum(counts.values()) for counts in job.tasks.values())
        return JobRun(pods=pods, submitted=submitted, running=running, finished=finished)

    def report(self, *, stopped_by: str, at: float) -> dict[str, object]:
        """The outcome as plain data, every collection in a stable order.

        Args:
            stopped_by: why the run ended (``settled``, ``stalled``, ``until``, ``limit``).
            at: when it ended, in seconds from the start.

        Returns:
            ``jobs``, ``pods``, ``rejected``, ``targetJob``, ``lockedNodes``, ``timeline``,
            ``deadLetters`` (records services could not handle), ``stoppedBy`` and
            ``summary``.
        """
        jobs: dict[str, object] = {}
        for key in sorted(self.jobs):
            job = self.jobs[key]
            reason, message = job.reason()
            jobs[key] = {
                "phase": job.phase,
                "podgroup": job.podgroup,
                "priority": job.priority,
                "queue": job.queue,
                "reason": reason,
                "message": message,
                "tasks": job.tasks,
                "times": dict(sorted(self._times(key, job).items())),
            }
        pods = {
            key: {
                "node": pod.node,
                "phase": pod.phase,
                "exitCode": pod.exit_code,
                "deleted": pod.deleted,
                "task": pod.task,
                "requests": {n: format_quantity(n, a) for n, a in sorted(pod.requests.items())},
                "bound": pod.bound,
                "running": pod.running,
                "finished": pod.finished,
            }
            for key, pod in sorted(self.pods.items())
        }
        usages = [
            Usage(
                queue=pod.queue,
                requests=pod.requests,
                start=pod.running,
                end=pod.finished if pod.finished is not None else at,
            )
            for _, pod in sorted(self.pods.items())
            if pod.running is not None
        ]
        finished = [j.times["finished"] for j in self.jobs.values() if "finished" in j.times]
        summary = summarise(
            usages,
            self.capacity,
            makespan=max(finished) if finished else None,
            end=at,
            unfinished=self.unfinished(),
        )
        summary.update(job_metrics([run for key in sorted(self.jobs) if (run := self._run(key))]))
        return {
            "deadLetters": [
                {"topic": topic, "service": service, "count": count}
                for (topic, service), count in sorted(self.dead_letters.items())
            ],
            "jobs": jobs,
            "lockedNodes": sorted(self.locked),
            "pods": pods,
            "rejected": dict(sorted(self.rejected.items())),
            "stoppedBy": stopped_by,
            "summary": dict(sorted(summary.items())),
            "targetJob": self.target,
            "timeline": self.timeline,
        }
