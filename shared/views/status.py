"""``vcbus up``'s live view: the latest state per job, PodGroup and node, and its tables.

:class:`StatusView` folds decoded events of :data:`STATUS_TOPICS` (the CLI follows the
topics and feeds it). A job's PodGroup phase and reason are the read model's
(:func:`shared.views.jobs.podgroup_phase`, :func:`shared.views.reason.job_reason`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from contracts import (
    BindingCreated,
    Event,
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    NodeChanged,
    NodeHeartbeat,
    NodeRegistered,
    NodeRemoved,
    NodesLocked,
    NodesUnlocked,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodGroupUpdated,
    PodPhaseChanged,
    TargetJobElected,
    Topic,
)
from contracts.objects import Condition, Node
from contracts.quantity import format_quantity
from shared.views.jobs import PodGroupSpec, podgroup_phase
from shared.views.node_health import node_health
from shared.views.phases import FINAL_PHASES, REJECTED
from shared.views.reason import job_reason
from shared.views.table import render_table

STATUS_TOPICS = (
    Topic.JOBS_ADMITTED,
    Topic.JOBS_REJECTED,
    Topic.JOBS_STATUS,
    Topic.PODGROUPS,
    Topic.PODGROUPS_STATUS,
    Topic.PODGROUPS_CONDITIONS,
    Topic.BINDINGS,
    Topic.PODS_STATUS,
    Topic.NODES,
    Topic.RESERVATIONS,
)
"""The topics :class:`StatusView` folds."""

TABLE_GAP = 2
"""Spaces between the columns of ``vcbus up``'s tables."""


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
    podgroup_status: PodGroupPhaseChanged | None = None
    podgroup_spec: PodGroupSpec | None = None

    def podgroup_changed(self) -> None:
        """Recompute the PodGroup's phase and conditions after one of its events."""
        self.podgroup_phase = podgroup_phase(self.podgroup_status, self.podgroup_spec)
        shown = self.podgroup_status
        self.podgroup_conditions = (
            shown.conditions if shown is not None and self.podgroup_phase == shown.phase else ()
        )


@dataclass
class NodeView:
    """One node: what it holds and who locked it."""

    node: Node
    pods: set[str] = field(default_factory=set)
    locked_for: str = ""
    locked_until: datetime | None = None
    heartbeat: NodeHeartbeat | None = None
    """A real node's newest heartbeat (SPEC A14); ``None`` for a simulated node."""


@dataclass
class StatusView:
    """Latest state per job, PodGroup and node, folded from the status topics."""

    jobs: dict[str, JobView] = field(default_factory=dict)
    nodes: dict[str, NodeView] = field(default_factory=dict)
    pod_nodes: dict[str, str] = field(default_factory=dict)
    target: str = ""

    def _job(self, key: str) -> JobView:
        return self.jobs.setdefault(key, JobView(key))

    def apply(self, event: Event, record: object = None) -> None:
        """Fold one event (``record``, the record it was read from, is not needed)."""
        match event:
            case JobAdmitted():
                job = self._job(event.job_key)
                if job.status is None:
                    job.phase = "Admitted"
            case JobRejected():
                job = self._job(
                    event.job_key or f"(unnamed@{event.origin.offset if event.origin else '?'})"
                )
                job.phase = REJECTED
                job.rejected = tuple(f"{v.path}: {v.message}" for v in event.violations)
                if event.violations_omitted:
                    job.rejected += (f"… and {event.violations_omitted} more, not listed",)
            case JobStatusChanged():
                job = self._job(event.job_key)
                job.phase, job.status = event.phase, event
                job.trace_id = event.trace_id or job.trace_id
            case JobDeleted():
                self.jobs.pop(event.job_key, None)
            case PodGroupCreated() | PodGroupUpdated():
                job = self._job(event.podgroup.job)
                job.podgroup_spec = event
                job.podgroup_changed()
            case PodGroupDeleted():
                job = self._job(event.job)
                job.podgroup_spec = event
                job.podgroup_changed()
            case PodGroupPhaseChanged():
                job = self._job(event.job)
                job.podgroup_status = event
                job.podgroup_changed()
            case PodGroupConditionsChanged():
                self._job(event.job).allocator_conditions = event.conditions
            case _:
                self._apply_node(event)

    def _apply_node(self, event: Event) -> None:
        match event:
            case BindingCreated():
                self.pod_nodes[f"{event.pod.namespace}/{event.pod.name}"] = event.node
                if event.node in self.nodes:
                    self.nodes[event.node].pods.add(f"{event.pod.namespace}/{event.pod.name}")
            case PodPhaseChanged():
                if event.phase in ("Succeeded", "Failed") and event.node in self.nodes:
                    self.nodes[event.node].pods.discard(event.pod)
            case NodeRegistered() | NodeChanged() | NodeHeartbeat():
                current = self.nodes.get(event.node.name)
                beat = current.heartbeat if current else None
                if isinstance(event, NodeHeartbeat) and (beat is None or event.at >= beat.at):
                    beat = event
                self.nodes[event.node.name] = NodeView(
                    event.node,
                    current.pods if current else set(),
                    current.locked_for if current else "",
                    current.locked_until if current else None,
                    beat,
                )
            case NodeRemoved():
                self.nodes.pop(event.name, None)
            case TargetJobElected():
                self.target = event.job
            case NodesLocked():
                for name in event.nodes:
                    if name in self.nodes:
                        self.nodes[name].locked_for = event.job
                        self.nodes[name].locked_until = event.until
            case NodesUnlocked():
                self.target = ""
                for view in self.nodes.values():
                    if view.locked_for == event.job:
                        view.locked_for, view.locked_until = "", None
            case _:
                pass

    def reason(self, key: str) -> str:
        """Why a job is where it is (:func:`~shared.views.reason.job_reason`), as text."""
        job = self.jobs.get(key)
        if job is None:
            return ""
        if job.rejected:
            return "; ".join(job.rejected)
        reason = job_reason(
            job.phase,
            job=job.status.conditions if job.status is not None else (),
            podgroup_phase=job.podgroup_phase,
            podgroup=job.podgroup_conditions,
            allocator=job.allocator_conditions,
        )
        return "" if reason is None else reason.text()

    def all_final(self, keys: Sequence[str]) -> bool:
        """Whether every job in ``keys`` is finished (or rejected)."""
        return all(
            key in self.jobs
            and (self.jobs[key].phase in FINAL_PHASES or self.jobs[key].phase == REJECTED)
            for key in keys
        )


def jobs_table(view: StatusView) -> str:
    """``vcbus up``'s jobs: name, phase, PodGroup phase, per-task counts, reason."""
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
    header = ("JOB", "PHASE", "PODGROUP", "TASKS (run/succ/fail/pend)", "REASON")
    return "\n".join(render_table(header, rows, gap=TABLE_GAP))


def nodes_table(view: StatusView, *, now: datetime) -> str:
    """``vcbus up``'s nodes: status, heartbeat age, cpu, memory, pods, lock holder, its end.

    A real node's status and heartbeat age are counted to ``now``.
    """
    rows = []
    for name in sorted(view.nodes):
        node = view.nodes[name]
        allocatable = node.node.allocatable
        health = node_health(node.heartbeat, now)
        limits = health.limits_text()
        status = health.status(unschedulable=node.node.unschedulable)
        rows.append(
            (
                name,
                status if limits == "-" else f"{status} ({limits})",
                health.heartbeat_text(),
                format_quantity("cpu", allocatable.get("cpu", 0)),
                format_quantity("memory", allocatable.get("memory", 0)),
                str(len(node.pods)),
                node.locked_for or "-",
                node.locked_until.isoformat() if node.locked_until else "-",
            )
        )
    header = ("NODE", "STATUS", "HEARTBEAT", "CPU", "MEMORY", "PODS", "LOCKED FOR", "UNTIL")
    return "\n".join(render_table(header, rows, gap=TABLE_GAP))
