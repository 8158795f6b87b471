"""The dashboard's Job page as a pure view model (``vcbus describe job``'s content).

A job's row (:func:`services.cli.dashboard.views.job_row`), its tasks, PodGroup, reasons,
conditions, violations, pods, reservation, and its events timeline from the
:class:`~services.cli.dashboard.store.DashboardStore`'s history. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from contracts import (
    Event,
    JobAdmitted,
    JobRejected,
    JobStatusChanged,
    NodesLocked,
    NodesUnlocked,
    PodCreated,
    PodDeleted,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupPhaseChanged,
    PodGroupUpdated,
    PodPhaseChanged,
    TargetJobElected,
    Topic,
    split_key,
    tag_of,
)
from contracts.objects import Condition
from contracts.quantity import format_quantity
from services.cli.dashboard.store import DashboardStore
from services.cli.dashboard.views import JobRow, TaskCount, job_row
from services.cli.describe import jaeger_link
from services.cli.status import (
    Reason,
    StatusStore,
    job_trace_id,
    pending_reasons,
    podgroup_phase_of,
    reason_of,
)


@dataclass(frozen=True, slots=True)
class ConditionRow:
    """A condition and the topic it was read from."""

    source: str
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod of the job: task, phase, node."""

    name: str
    task: str
    phase: str
    node: str


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One event of the job, as read."""

    at: str
    topic: str
    type: str
    summary: str


@dataclass(frozen=True, slots=True)
class PodGroupView:
    """The job's PodGroup."""

    name: str
    queue: str
    min_member: int
    min_task_member: tuple[tuple[str, int], ...]
    min_resources: str
    phase: str


@dataclass(frozen=True, slots=True)
class TaskDetail:
    """A task of the job page: its spec (replicas, minimum, dependencies) and its pods."""

    name: str
    replicas: str
    min_available: str
    depends_on: str
    counts: TaskCount


@dataclass(frozen=True, slots=True)
class JobDetail:
    """The Job page (``vcbus describe job``'s content)."""

    row: JobRow
    tasks: tuple[TaskDetail, ...]
    podgroup: PodGroupView | None
    reasons: tuple[tuple[str, str, str], ...]
    """(code, message, source), the highest-ranked first."""
    conditions: tuple[ConditionRow, ...]
    violations: tuple[tuple[str, str, str], ...]
    pods: tuple[PodView, ...]
    locked_nodes: tuple[str, ...]
    reservation: str
    events: tuple[TimelineEntry, ...]
    trace_id: str
    trace_url: str


def _conditions(source: str, conditions: Iterable[Condition]) -> list[ConditionRow]:
    return [ConditionRow(source, c.type, c.status, c.reason, c.message) for c in conditions]


def job_detail(store: DashboardStore, key: str, *, jaeger_url: str) -> JobDetail | None:
    """The Job page of ``key`` (``None`` when the job is unknown)."""
    row = job_row(store, key)
    if row is None:
        return None
    status = store.get(Topic.JOBS_STATUS, key)
    group_status = store.get(Topic.PODGROUPS_STATUS, key)
    allocator = store.get(Topic.PODGROUPS_CONDITIONS, key)
    conditions: list[ConditionRow] = []
    if isinstance(status, JobStatusChanged):
        conditions += _conditions("jobs.status", status.conditions)
    if isinstance(group_status, PodGroupPhaseChanged):
        conditions += _conditions("podgroups.status", group_status.conditions)
    if isinstance(allocator, PodGroupConditionsChanged):
        conditions += _conditions("podgroups.conditions", allocator.conditions)
    rejected = store.get(Topic.JOBS_REJECTED, key)
    violations = (
        tuple((v.path, v.reason, v.message) for v in rejected.violations)
        if row.phase == "Rejected" and isinstance(rejected, JobRejected)
        else ()
    )
    reasons = _why(store, key, status) if row.phase in ("Pending", "Running") else []
    target = store.reservation.target
    reservation = (
        "this job is the target"
        if target == key
        else f"nodes are reserved for {target}"
        if target
        else ""
    )
    trace_id = (
        store.trace_id(Topic.JOBS_REJECTED, key)
        if row.phase == "Rejected"
        else job_trace_id(store, key, status if isinstance(status, JobStatusChanged) else None)
    )
    return JobDetail(
        row=row,
        tasks=_tasks(store, row),
        podgroup=_podgroup(store, key),
        reasons=tuple((r.code, r.message, r.source) for r in reasons),
        conditions=tuple(conditions),
        violations=violations,
        pods=tuple(
            PodView(split_key(pod_key)[1], pod.task, pod.phase, pod.node)
            for pod_key, pod in sorted(store.pods.items())
            if pod.job == key
        ),
        locked_nodes=tuple(store.reservation.locked_for(key)),
        reservation=reservation,
        events=timeline(store, key),
        trace_id=trace_id,
        trace_url=jaeger_link(jaeger_url, trace_id) if trace_id else "",
    )


def _tasks(store: StatusStore, row: JobRow) -> tuple[TaskDetail, ...]:
    """The admitted spec's tasks in spec order, then any others the counts name."""
    admitted = store.get(Topic.JOBS_ADMITTED, row.key)
    specs = admitted.manifest.spec.tasks if isinstance(admitted, JobAdmitted) else ()
    counts = {t.name: t for t in row.tasks}
    out = [
        TaskDetail(
            name=spec.name,
            replicas=str(spec.replicas),
            min_available="-" if spec.min_available is None else str(spec.min_available),
            depends_on=", ".join(spec.depends_on.name) if spec.depends_on else "",
            counts=counts.get(spec.name, TaskCount(spec.name, 0, 0, 0, 0)),
        )
        for spec in specs
    ]
    named = {t.name for t in out}
    out += [TaskDetail(t.name, "-", "-", "", t) for t in row.tasks if t.name not in named]
    return tuple(out)


def _why(store: StatusStore, key: str, status: object) -> list[Reason]:
    """Why the job waits, as on its row (``job_reason``), then the other candidates.

    Nothing when no candidate (SPEC A8) says it waits.
    """
    candidates = pending_reasons(store, key)
    if not candidates or not isinstance(status, JobStatusChanged):
        return []
    why = reason_of(store, key, status)
    return [*([why] if why else []), *(r for r in candidates if r != why)]


def _podgroup(store: StatusStore, key: str) -> PodGroupView | None:
    spec = store.get(Topic.PODGROUPS, key)
    if not isinstance(spec, PodGroupCreated | PodGroupUpdated):
        return None
    group = spec.podgroup
    return PodGroupView(
        name=group.name,
        queue=group.queue,
        min_member=group.min_member,
        min_task_member=tuple(sorted(group.min_task_member.items())),
        min_resources=", ".join(
            f"{k}={format_quantity(k, v)}" for k, v in sorted(group.min_resources.items())
        ),
        phase=podgroup_phase_of(store, key),
    )


def timeline(store: DashboardStore, key: str) -> tuple[TimelineEntry, ...]:
    """The job's recent events, oldest first (as far as ``HISTORY`` reaches back)."""
    entries: list[tuple[datetime, TimelineEntry]] = []
    for topic, record in store.history.get(key, ()):
        event = store.decode(topic, record.value or b"")
        if event is None:
            continue
        tag = tag_of(type(event))
        at = event.occurred_at
        shown = at.isoformat(sep=" ", timespec="milliseconds")
        entries.append((at, TimelineEntry(shown, str(topic), tag, summary(event))))
    entries.sort(key=lambda item: item[0])
    return tuple(entry for _, entry in entries)


def summary(event: Event) -> str:
    """A few words on what an event says."""
    match event:
        case JobStatusChanged():
            return f"{event.previous_phase or '-'} → {event.phase}"
        case PodGroupPhaseChanged():
            reasons = [c.reason for c in event.conditions if c.reason]
            return f"{event.previous_phase or '-'} → {event.phase} {' '.join(reasons)}".strip()
        case PodGroupConditionsChanged():
            return "; ".join(f"{c.reason}: {c.message}" for c in event.conditions) or "cleared"
        case PodCreated():
            return f"{event.pod.name} created"
        case PodDeleted():
            return f"{event.pod} deleted"
        case PodPhaseChanged():
            return f"{event.pod} {event.phase}" + (f" on {event.node}" if event.node else "")
        case TargetJobElected():
            return f"{event.job} elected target"
        case NodesLocked():
            return f"{', '.join(event.nodes)} locked for {event.job}"
        case NodesUnlocked():
            return f"nodes unlocked ({event.job})"
        case JobRejected():
            return "; ".join(f"{v.path}: {v.message}" for v in event.violations)
        case _:
            return ""
