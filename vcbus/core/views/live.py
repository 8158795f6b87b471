"""``vcbus up``'s live view: the latest state per job, PodGroup, pod and node, and its tables.

:class:`StatusView` folds decoded events of the topics the read model declares
(:data:`vcbus.core.views.read_model.STATUS_TOPICS`; the CLI follows them and feeds it).
Everything it says is the read model's, as the other commands say it: pods are
:class:`~vcbus.core.views.pod_fold.PodFold`'s (a refused binding and a deleted pod leave their
node), the reservation is :class:`~vcbus.core.views.reservation_view.ReservationView`'s, a
job's PodGroup phase and reason are :func:`vcbus.core.views.jobs.podgroup_phase`'s and
:func:`vcbus.core.views.reason.job_reason`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import assert_never

from vcbus.contracts import (
    BindingCreated,
    BindingRefused,
    Event,
    NodeChanged,
    NodeHeartbeat,
    NodeRegistered,
    NodeRemoved,
    NodesLocked,
    NodesUnlocked,
    PodCreated,
    PodDeleted,
    PodEvictionRequested,
    PodPhaseChanged,
    TargetJobElected,
)
from vcbus.contracts.objects import Node
from vcbus.core.node_lifecycle import NodeLifecycleConf
from vcbus.core.units import show_amount
from vcbus.core.views.age import time_left
from vcbus.core.views.jobs import JobFold, JobView
from vcbus.core.views.node_health import node_health
from vcbus.core.views.phases import FINAL_PHASES, REJECTED
from vcbus.core.views.pod_fold import PodFold, active_by_node
from vcbus.core.views.read_model import ClusterFoldEvent
from vcbus.core.views.reservation_view import ReservationView
from vcbus.core.views.table import render_table

TABLE_GAP = 2
"""Spaces between the columns of ``vcbus up``'s tables."""


@dataclass
class StatusView:
    """Latest state per job, PodGroup, pod and node, folded from the status topics."""

    job_fold: JobFold = field(default_factory=JobFold)
    nodes: dict[str, Node] = field(default_factory=dict)
    pods: PodFold = field(default_factory=PodFold)
    reservation: ReservationView = field(default_factory=ReservationView)
    heartbeats: dict[str, NodeHeartbeat] = field(default_factory=dict)
    """Each real node's newest heartbeat (docs/design.md#real-nodes); simulated nodes send none."""

    @property
    def jobs(self) -> dict[str, JobView]:
        """The jobs (:class:`~vcbus.core.views.jobs.JobFold`'s), deleted ones included."""
        return self.job_fold.jobs

    def apply(self, event: Event, record: object = None) -> None:
        """Fold one event (``record``, the record it was read from, is not needed)."""
        if self.job_fold.apply(event) is None:
            self._apply_node(event)

    def _apply_node(self, event: Event) -> None:
        if not isinstance(event, ClusterFoldEvent):
            return
        match event:
            case (
                PodCreated()
                | PodDeleted()
                | BindingCreated()
                | BindingRefused()
                | PodPhaseChanged()
            ):
                self.pods.apply(event)
            case PodEvictionRequested():
                pass  # the pod's phase says when it ended
            case NodeRegistered() | NodeChanged() | NodeHeartbeat():
                self.nodes[event.node.name] = event.node
                beat = self.heartbeats.get(event.node.name)
                if isinstance(event, NodeHeartbeat) and (beat is None or event.at >= beat.at):
                    self.heartbeats[event.node.name] = event
            case NodeRemoved():
                self.nodes.pop(event.name, None)
                self.heartbeats.pop(event.name, None)
            case TargetJobElected() | NodesLocked() | NodesUnlocked():
                self.reservation.apply(event)
            case _:
                assert_never(event)

    @property
    def target(self) -> str:
        """The reservation's target job (``""``: none)."""
        return self.reservation.target

    def reason(self, key: str) -> str:
        """Why a job is where it is (:func:`~vcbus.core.views.reason.job_reason`), as text."""
        job = self.jobs.get(key)
        if job is None:
            return ""
        if job.rejected:
            return "; ".join(job.rejected)
        reason = job.reason()
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
        if job.deleted:
            continue
        tasks = ""
        if job.status is not None:
            tasks = " ".join(
                f"{task}={counts.running}r/{counts.succeeded}s/{counts.failed}f/{counts.pending}p"
                for task, counts in sorted(job.status.task_status_count.items())
            )
        rows.append((key, str(job.phase), str(job.podgroup_phase), tasks, view.reason(key)[:80]))
    header = ("JOB", "PHASE", "PODGROUP", "TASKS (run/succ/fail/pend)", "REASON")
    return "\n".join(render_table(header, rows, gap=TABLE_GAP))


def nodes_table(view: StatusView, *, now: datetime, lifecycle: NodeLifecycleConf) -> str:
    """``vcbus up``'s nodes: status, heartbeat age, cpu, memory, pods, lock holder, time left.

    A real node's status and heartbeat age are counted to ``now``.
    """
    held = active_by_node(view.pods.rows.values())
    reservation = view.reservation
    rows = []
    for name in sorted(view.nodes):
        node = view.nodes[name]
        allocatable = node.allocatable
        locked = reservation.locks.get(name, "")
        until = reservation.until if locked else None
        health = node_health(view.heartbeats.get(name), now, lifecycle)
        limits = health.limits_text()
        status = health.status(unschedulable=node.unschedulable)
        rows.append(
            (
                name,
                status if limits == "-" else f"{status} ({limits})",
                health.heartbeat_text(),
                show_amount("cpu", allocatable.get("cpu", 0)),
                show_amount("memory", allocatable.get("memory", 0)),
                str(len(held.get(name, ()))),
                locked or "-",
                time_left(until, now) if until else "-",
            )
        )
    header = ("NODE", "STATUS", "HEARTBEAT", "CPU", "MEMORY", "PODS", "LOCKED FOR", "EXPIRES")
    return "\n".join(render_table(header, rows, gap=TABLE_GAP))
