"""The dashboard's Job page as a pure view model (``vcbus describe job``'s content).

A job's row (:func:`vcbus.services.cli.dashboard.views.job_row`), its tasks, PodGroup, reasons,
conditions, violations, pods, reservation, queue position and admission, and its events
as ``describe`` shows them (:func:`vcbus.core.views.events.job_events`) from the
:class:`~vcbus.services.cli.dashboard.store.DashboardStore`'s history. A job deleted recently
has a page of its last state and its events. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from vcbus.contracts import (
    JobAdmitted,
    JobRejected,
    JobStatusChanged,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupPhaseChanged,
    PodGroupUpdated,
    Topic,
    split_key,
)
from vcbus.contracts.objects import Condition
from vcbus.core.bus.records import Record
from vcbus.core.views.events import JobEvent, job_events
from vcbus.core.views.units import show_resources
from vcbus.services.cli.admissible import INADMISSIBLE, inadmissible, place_in_queue
from vcbus.services.cli.dashboard.store import DashboardStore, DeletedJob
from vcbus.services.cli.dashboard.views import JobRow, TaskCount, deleted_row, job_row
from vcbus.services.cli.describe import jaeger_link
from vcbus.services.cli.status_store import (
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
    events: tuple[JobEvent, ...]
    """``describe``'s events (:func:`vcbus.core.views.events.job_events`), oldest first."""
    trace_id: str
    trace_url: str
    now: datetime | None = None
    """The time the events' ages are counted to."""
    place: str = ""
    """Where the job waits in its queue: ``2 of 5 waiting in queue default``."""
    admission: str = ""
    """``Inadmissible (QueueNotFound)`` when a reason says it can never be enqueued as is."""
    deleted_at: datetime | None = None
    """When the job was deleted (its page then shows its last state)."""


def _conditions(source: str, conditions: Iterable[Condition]) -> list[ConditionRow]:
    return [ConditionRow(source, c.type, c.status, c.reason, c.message) for c in conditions]


def job_detail(store: DashboardStore, key: str, *, jaeger_url: str) -> JobDetail | None:
    """The Job page of ``key`` (``None`` when the job is unknown, or deleted and forgotten)."""
    row = job_row(store, key)
    if row is None:
        deleted = store.deleted_job(key)
        return _deleted_detail(store, deleted) if deleted is not None else None
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
    never = inadmissible(pending_reasons(store, key)) if reasons else None
    place = place_in_queue(store, key)
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
        events=events(store, key, store.history.get(key, ())),
        trace_id=trace_id,
        trace_url=jaeger_link(jaeger_url, trace_id) if trace_id else "",
        now=store.now(),
        place=f"{place.position} of {place.waiting} waiting in queue {place.queue}"
        if place
        else "",
        admission=f"{INADMISSIBLE} ({never.code})" if never is not None else "",
    )


def _deleted_detail(store: DashboardStore, deleted: DeletedJob) -> JobDetail:
    """A deleted job's page: its last state and its events, up to its deletion."""
    row = deleted_row(store, deleted)
    return JobDetail(
        row=row,
        tasks=tuple(TaskDetail(t.name, "-", "-", "", t) for t in row.tasks),
        podgroup=None,
        reasons=(),
        conditions=(),
        violations=(),
        pods=(),
        locked_nodes=(),
        reservation="",
        events=events(store, deleted.key, deleted.records),
        trace_id="",
        trace_url="",
        now=store.now(),
        deleted_at=deleted.at,
    )


def events(
    store: DashboardStore, key: str, records: Iterable[tuple[Topic, Record]]
) -> tuple[JobEvent, ...]:
    """``describe``'s events of job ``key`` from its kept records, oldest first."""
    decoded = (
        (topic, event)
        for topic, record in records
        for event in store.events(topic, record.value)  # every event of a joined record
    )
    return tuple(job_events(key, decoded))


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

    Nothing when no candidate (docs/design.md#pending-reasons) says it waits.
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
        min_resources=show_resources(group.min_resources) if group.min_resources else "",
        phase=podgroup_phase_of(store, key),
    )
