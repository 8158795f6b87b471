"""StatusView: what users see, folded from the status topics (latest per key), and its tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from contracts import (
    BindingCreated,
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
    PodGroupConditionsChanged,
    PodGroupPhaseChanged,
    PodPhaseChanged,
    TargetJobElected,
    Topic,
)
from contracts.objects import Condition, JobPhase, Node
from contracts.quantity import format_quantity
from shared.bus.records import Record

STATUS_TOPICS = (
    Topic.JOBS_ADMITTED,
    Topic.JOBS_REJECTED,
    Topic.JOBS_STATUS,
    Topic.PODGROUPS_STATUS,
    Topic.PODGROUPS_CONDITIONS,
    Topic.BINDINGS,
    Topic.PODS_STATUS,
    Topic.NODES,
    Topic.RESERVATIONS,
)

FINAL_PHASES = frozenset(
    {JobPhase.COMPLETED, JobPhase.FAILED, JobPhase.ABORTED, JobPhase.TERMINATED}
)


@dataclass
class JobView:
    """One job as users see it."""

    key: str
    phase: str = "Submitted"
    podgroup_phase: str = ""
    status: JobStatusChanged | None = None
    podgroup_conditions: tuple[Condition, ...] = ()
    allocator_conditions: tuple[Condition, ...] = ()
    trace_id: str = ""
    rejected: tuple[str, ...] = ()


@dataclass
class NodeView:
    """One node: what it holds and who locked it."""

    node: Node
    pods: set[str] = field(default_factory=set)
    locked_for: str = ""


@dataclass
class StatusView:
    """Latest state per job, PodGroup and node, folded from the status topics."""

    jobs: dict[str, JobView] = field(default_factory=dict)
    nodes: dict[str, NodeView] = field(default_factory=dict)
    pod_nodes: dict[str, str] = field(default_factory=dict)
    target: str = ""

    def _job(self, key: str) -> JobView:
        return self.jobs.setdefault(key, JobView(key))

    def apply(self, event: Event, record: Record | None = None) -> None:
        """Fold one event."""
        match event:
            case JobAdmitted():
                job = self._job(event.job_key)
                if job.status is None:
                    job.phase = "Admitted"
            case JobRejected():
                job = self._job(
                    event.job_key or f"(unnamed@{event.origin.offset if event.origin else '?'})"
                )
                job.phase = "Rejected"
                job.rejected = tuple(f"{v.path}: {v.message}" for v in event.violations)
            case JobStatusChanged():
                job = self._job(event.job_key)
                job.phase, job.status = event.phase, event
                job.trace_id = event.trace_id or job.trace_id
            case JobDeleted():
                self.jobs.pop(event.job_key, None)
            case PodGroupPhaseChanged():
                job = self._job(event.job)
                job.podgroup_phase, job.podgroup_conditions = event.phase, event.conditions
            case PodGroupConditionsChanged():
                self._job(event.job).allocator_conditions = event.conditions
            case BindingCreated():
                self.pod_nodes[f"{event.pod.namespace}/{event.pod.name}"] = event.node
                if event.node in self.nodes:
                    self.nodes[event.node].pods.add(f"{event.pod.namespace}/{event.pod.name}")
            case PodPhaseChanged():
                if event.phase in ("Succeeded", "Failed") and event.node in self.nodes:
                    self.nodes[event.node].pods.discard(event.pod)
            case NodeRegistered() | NodeChanged():
                current = self.nodes.get(event.node.name)
                self.nodes[event.node.name] = NodeView(
                    event.node,
                    current.pods if current else set(),
                    current.locked_for if current else "",
                )
            case NodeRemoved():
                self.nodes.pop(event.name, None)
            case TargetJobElected():
                self.target = event.job
            case NodesLocked():
                for name in event.nodes:
                    if name in self.nodes:
                        self.nodes[name].locked_for = event.job
            case NodesUnlocked():
                self.target = ""
                for view in self.nodes.values():
                    if view.locked_for == event.job:
                        view.locked_for = ""

    def reason(self, key: str) -> str:
        """Why a job is where it is: its PodGroup's reason, else the allocator's, else its own."""
        job = self.jobs.get(key)
        if job is None:
            return ""
        for conditions in (job.podgroup_conditions, job.allocator_conditions):
            for condition in conditions:
                if condition.reason and condition.type != "Scheduled":
                    return f"{condition.reason}: {condition.message}"
        if job.rejected:
            return "; ".join(job.rejected)
        if job.status is not None and job.status.conditions:
            condition = job.status.conditions[-1]
            return f"{condition.reason}: {condition.message}"
        return ""

    def all_final(self, keys: Sequence[str]) -> bool:
        """Whether every job in ``keys`` is finished (or rejected)."""
        return all(
            key in self.jobs
            and (self.jobs[key].phase in FINAL_PHASES or self.jobs[key].phase == "Rejected")
            for key in keys
        )


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=False)]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False))
        for row in (header, *rows)
    ]
    return "\n".join(line.rstrip() for line in lines)


def jobs_table(view: StatusView) -> str:
    """``vcbus get jobs``: name, phase, podgroup phase, per-task counts, reason."""
    rows = []
    for key in sorted(view.jobs):
        job = view.jobs[key]
        tasks = ""
        if job.status is not None:
            tasks = " ".join(
                f"{task}={counts.running}r/{counts.succeeded}s/{counts.failed}f/{counts.pending}p"
                for task, counts in sorted(job.status.task_status_count.items())
            )
        rows.append((key, str(job.phase), str(job.podgroup_phase), tasks, view.reason(key)[:80]))
    return _table(("JOB", "PHASE", "PODGROUP", "TASKS (run/succ/fail/pend)", "REASON"), rows)


def nodes_table(view: StatusView) -> str:
    """``vcbus get nodes``: name, cpu, memory, pods bound, lock holder."""
    rows = []
    for name in sorted(view.nodes):
        node = view.nodes[name]
        allocatable = node.node.allocatable
        rows.append(
            (
                name,
                format_quantity("cpu", allocatable.get("cpu", 0)),
                format_quantity("memory", allocatable.get("memory", 0)),
                str(len(node.pods)),
                node.locked_for or "-",
            )
        )
    return _table(("NODE", "CPU", "MEMORY", "PODS", "LOCKED FOR"), rows)
