"""Outcome: what a simulated run did, folded from the events the services published.

The fold sees events in the order they were published, each with the time it was
published (seconds from the start of the run). What a job, a pod and the reservation are
is the read model's, as ``vcbus up``, ``get`` and ``describe`` say it, fed from the
in-memory bus (:mod:`vcbus.core.views`):

- jobs: :class:`~vcbus.core.views.jobs.JobFold` (phase, PodGroup phase, per-task pod counts,
  and the reason of :func:`~vcbus.core.views.reason.job_reason`); a PodGroup's phase change
  published after its deletion does not bring it back, so the final phase does not
  depend on that race;
- pods: :class:`~vcbus.core.views.pod_fold.PodFold` (node, phase and exit code of a pod's latest
  incarnation, by uid: a late event of a deleted incarnation never brings it back or
  changes its successor; a refused binding takes the pod off the node; a deleted pod is
  reported with ``deleted``);
- the reservation: :class:`~vcbus.core.views.reservation_view.ReservationView`.

The outcome adds what only a run can say: the rejected submissions with every violation;
a timeline of notable events (will-bind reservations made and released among them); and
when things happened, so a schedule can be judged: per job its queue, priority, and the
times it was submitted, admitted, Inqueue, first bound, Running (its minimum running) and
finished; per pod its requests and the times it was bound, Running and ended; and the
cluster's capacity over time, for the ``summary`` (:mod:`vcbus.services.simulation.summary`).
:meth:`Outcome.report` returns all of it as plain data in a stable order, so equal runs
give equal JSON.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import assert_never

from vcbus.contracts import (
    BindingCreated,
    BindingRefused,
    CapacityReleased,
    CapacityReserved,
    Event,
    JobAbortAccepted,
    JobAbortRequested,
    JobAdmitted,
    JobDeleteAccepted,
    JobDeleted,
    JobDeleteRequested,
    JobRejected,
    JobResumeAccepted,
    JobResumeRequested,
    JobStatusChanged,
    LocksHonoured,
    LocksLifted,
    NodeChanged,
    NodeHeartbeat,
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
    QueueDeclared,
    QueueDeleted,
    RejectionsCleared,
    RejectionsClearRequested,
    ReservationsEvent,
    TargetJobElected,
    pod_key,
)
from vcbus.contracts.events.cluster_commands import (
    NodeAddRequested,
    NodeCordonRequested,
    NodeRemoveRequested,
    NodeUncordonRequested,
)
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import POD_BOUND, PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.quantity import format_quantity
from vcbus.contracts.topics import TopicEvent
from vcbus.core.views.jobs import JobFold, JobView
from vcbus.core.views.phases import DELETED, FINAL_PHASES
from vcbus.core.views.pod_fold import PodFold
from vcbus.core.views.reservation_view import ReservationView
from vcbus.services.simulation.job_metrics import JobRun, job_metrics
from vcbus.services.simulation.summary import CapacityStep, Usage, summarise


@dataclass
class _Job:
    """What the outcome adds to a job's view: its queue, priority and when things happened."""

    queue: str = ""
    priority: int | None = None
    times: dict[str, float] = field(default_factory=dict)
    """``submitted``, ``admitted``, ``inqueue``, ``firstBound``, ``running``, ``finished``."""

    def first(self, name: str, t: float) -> None:
        """Keep the first time ``name`` happened."""
        self.times.setdefault(name, t)


def _phase(view: JobView | None) -> str:
    """A job's phase as the outcome says it: the job controller's, ``Deleted`` once gone."""
    if view is None:
        return ""
    if view.deleted:
        return DELETED
    return str(view.status.phase) if view.status is not None else ""


def _podgroup_shown(view: JobView | None) -> tuple[str, tuple[Condition, ...]]:
    return ("", ()) if view is None else (view.podgroup_phase, view.podgroup_conditions)


@dataclass
class _PodTimes:
    """When a pod's latest incarnation was bound, Running and ended."""

    bound: float | None = None
    running: float | None = None
    finished: float | None = None


def _first_reason(conditions: Iterable[Condition]) -> str:
    return next((c.reason for c in conditions if c.reason), "")


def _tasks(status: JobStatusChanged | None) -> dict[str, dict[str, int]]:
    """Per task, its pods by phase (the newest ``jobs.status``)."""
    if status is None:
        return {}
    return {
        task: {
            "failed": counts.failed,
            "pending": counts.pending,
            "running": counts.running,
            "succeeded": counts.succeeded,
            "unknown": counts.unknown,
        }
        for task, counts in sorted(status.task_status_count.items())
    }


_PODGROUP = (PodGroupDeleted, PodGroupPhaseChanged)
_JobEvent = (
    JobAdmitted
    | JobRejected
    | JobStatusChanged
    | JobDeleted
    | PodGroupCreated
    | PodGroupUpdated
    | PodGroupDeleted
    | PodGroupPhaseChanged
    | PodGroupConditionsChanged
)
"""The events of a job's life that the outcome notes."""


class Outcome:
    """Folds published events into jobs, pods, rejections, reservation and a timeline."""

    def __init__(self, jobs: Iterable[str] = ()) -> None:
        self.submitted = frozenset(jobs)
        self.jobs: dict[str, _Job] = {}
        self.job_views = JobFold()
        self.pods = PodFold()
        self.pod_times: dict[str, _PodTimes] = {}
        self.rejected: dict[str, list[dict[str, str]]] = {}
        self.reservation = ReservationView()
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
        known = self.pods.rows.get(pod)
        return known.node or None if known is not None else None

    def is_done(self) -> bool:
        """Whether every submitted job is rejected, deleted or in a final phase."""
        for key in self.submitted:
            if key in self.rejected:
                continue
            phase = _phase(self.job_views.jobs.get(key)) if key in self.jobs else ""
            if phase not in FINAL_PHASES and phase != DELETED:
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
        if not isinstance(event, TopicEvent):
            return
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
            case RejectionsCleared():
                self.job_views.apply(event)
                if "" in self.rejected and not self.job_views.unnamed:
                    del self.rejected[""]
                self.note(t, {"event": "rejections-cleared"})
            case (
                RejectionsClearRequested()
                | JobDeleteRequested()
                | JobAbortRequested()
                | JobResumeRequested()
                | JobDeleteAccepted()
                | JobAbortAccepted()
                | JobResumeAccepted()
                | NodeHeartbeat()
                | QueueDeclared()
                | QueueDeleted()
                | LocksHonoured()
                | LocksLifted()
                | NodeAddRequested()
                | NodeCordonRequested()
                | NodeUncordonRequested()
                | NodeRemoveRequested()
            ):
                pass  # commands and their answers, heartbeats, queues: not in a run's outcome
            case _:
                assert_never(event)

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

    def _job_event(self, t: float, event: _JobEvent) -> None:
        views = self.job_views.jobs
        key = event.job if isinstance(event, JobStatusChanged) else None
        phase = _phase(views.get(key)) if key is not None else ""
        shown = _podgroup_shown(views.get(event.job)) if isinstance(event, _PODGROUP) else None
        self.job_views.apply(event)
        match event:
            case JobAdmitted():
                job = self.jobs.setdefault(event.job, _Job())
                job.queue = event.manifest.spec.queue
                job.first("admitted", t)
                self.note(t, {"event": "admitted", "job": event.job})
            case JobRejected() if self.job_views.cleared.clears(event):
                pass  # a user cleared it before it was read
            case JobRejected():
                rejected = event.job or ""
                self.rejected[rejected] = [
                    {"path": v.path, "reason": v.reason, "message": v.message}
                    for v in event.violations
                ]
                reasons = sorted({v.reason for v in event.violations})
                self.note(t, {"event": "rejected", "job": rejected, "reasons": reasons})
            case JobStatusChanged():
                job = self.jobs.setdefault(event.job, _Job())
                if phase != event.phase:
                    self.note(t, {"event": "job", "job": event.job, "phase": str(event.phase)})
                if event.phase is JobPhase.RUNNING:
                    job.first("running", t)
                if event.phase in FINAL_PHASES:
                    job.first("finished", t)
            case JobDeleted():
                self.jobs.setdefault(event.job, _Job()).first("finished", t)
                self.note(t, {"event": "job", "job": event.job, "phase": DELETED})
            case PodGroupCreated() | PodGroupUpdated():
                job = self.jobs.setdefault(event.podgroup.job, _Job())
                job.priority = event.podgroup.priority
                job.queue = event.podgroup.queue
            case PodGroupDeleted() | PodGroupPhaseChanged():
                self.jobs.setdefault(event.job, _Job())
                self._podgroup_noted(t, event.job, shown)
            case PodGroupConditionsChanged():
                self.jobs.setdefault(event.job, _Job())
            case _:
                assert_never(event)

    def _podgroup_noted(
        self, t: float, key: str, before: tuple[str, tuple[Condition, ...]] | None
    ) -> None:
        """Note the PodGroup's phase when what the job's view shows of it changed."""
        phase, conditions = _podgroup_shown(self.job_views.jobs.get(key))
        if not phase or (phase, conditions) == before:
            return
        entry: dict[str, object] = {"event": "podgroup", "job": key, "phase": phase}
        if reason := _first_reason(conditions):
            entry["reason"] = reason
        self.note(t, entry)
        if phase == PodGroupPhase.INQUEUE:
            self.jobs[key].first("inqueue", t)

    def _pod_event(
        self, t: float, event: PodCreated | PodDeleted | BindingCreated | BindingRefused
    ) -> None:
        key = self.pods.apply(event)
        times = self.pod_times.setdefault(key, _PodTimes()) if key is not None else None
        match event:
            case PodCreated():
                if key is not None:
                    self.pod_times[key] = _PodTimes()
            case PodDeleted():
                if times is not None and times.running is not None and times.finished is None:
                    times.finished = t
            case BindingCreated():
                key = pod_key(event.pod.namespace, event.pod.name)
                if times is not None and times.bound is None:
                    times.bound = t
                self.jobs.setdefault(event.pod.job, _Job()).first("firstBound", t)
                self.note(t, {"event": "bind", "pod": key, "node": str(event.node)})
            case BindingRefused():
                entry: dict[str, object] = {"event": "refused", "pod": event.pod}
                entry.update(node=str(event.node), reason=event.reason)
                self.note(t, entry)
            case _:
                assert_never(event)

    def _pod_phase(self, t: float, event: PodPhaseChanged) -> None:
        if (key := self.pods.apply(event)) is not None:
            times = self.pod_times.setdefault(key, _PodTimes())
            if event.phase is PodPhase.RUNNING and times.running is None:
                times.running = t
            elif event.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED) and times.finished is None:
                times.finished = t
        if event.reason == POD_BOUND and event.phase is PodPhase.PENDING:
            return
        entry: dict[str, object] = {"event": "pod", "pod": event.pod, "phase": str(event.phase)}
        if event.exit_code is not None:
            entry["exitCode"] = event.exit_code
        if event.reason:
            entry["reason"] = event.reason
        self.note(t, entry)

    def _reservation_event(self, t: float, event: ReservationsEvent) -> None:
        self.reservation.apply(event)
        match event:
            case TargetJobElected():
                self.note(t, {"event": "elected", "job": event.job})
            case NodesLocked():
                self.note(t, {"event": "locked", "job": event.job, "nodes": sorted(event.nodes)})
            case NodesUnlocked():
                self.note(t, {"event": "unlocked", "job": event.job, "reason": event.reason})
            case _:
                assert_never(event)

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
        views = self.job_views.jobs
        return sorted(
            key
            for key in self.jobs
            if key not in self.rejected
            and (phase := _phase(views.get(key))) not in FINAL_PHASES
            and phase != DELETED
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
        view = self.job_views.jobs.get(key)
        tasks = _tasks(view.status if view is not None else None)
        pods = sum(sum(counts.values()) for counts in tasks.values())
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
            job, view = self.jobs[key], self.job_views.jobs.get(key)
            why = view.reason() if view is not None else None
            status = view.status if view is not None else None
            jobs[key] = {
                "phase": _phase(view),
                "podgroup": view.podgroup_phase if view is not None else "",
                "priority": job.priority,
                "queue": job.queue,
                "reason": why.code if why is not None else "",
                "message": why.message if why is not None else "",
                "tasks": _tasks(status),
                "times": dict(sorted(self._times(key, job).items())),
            }
        pods: dict[str, dict[str, object]] = {}
        usages: list[Usage] = []
        for key in sorted(self.pods.rows.keys() | self.pods.gone.keys()):
            pod, times = self.pods.row(key), self.pod_times.get(key, _PodTimes())
            assert pod is not None
            pods[key] = {
                "node": pod.node or None,
                "phase": pod.phase,
                "exitCode": pod.exit_code,
                "deleted": pod.deleted,
                "task": pod.task,
                "requests": {n: format_quantity(n, a) for n, a in sorted(pod.requests.items())},
                "bound": times.bound,
                "running": times.running,
                "finished": times.finished,
            }
            if times.running is not None:
                end = times.finished if times.finished is not None else at
                usages.append(
                    Usage(queue=pod.queue, requests=pod.requests, start=times.running, end=end)
                )
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
            "lockedNodes": sorted(self.reservation.locks),
            "pods": pods,
            "rejected": dict(sorted(self.rejected.items())),
            "stoppedBy": stopped_by,
            "summary": dict(sorted(summary.items())),
            "targetJob": self.reservation.target or None,
            "timeline": self.timeline,
        }
