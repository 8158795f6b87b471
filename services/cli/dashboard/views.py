"""The dashboard's read model: the CLI's status store, and one pure view model per page.

``DashboardStore`` is the store ``vcbus get`` and ``describe`` read (``StatusStore``: the
newest record per key, pods folded per pod with their requests, the reservation) plus what
only the dashboard needs: each job's recent records (for its events timeline). The
functions below turn a store into plain frozen view models; the rows and the use come from
the CLI's own folds (``job_object``, ``node_rows``, ``queue_rows``, ``pending_reasons``,
:mod:`services.cli.usage`) and the read model's reason (:mod:`shared.views.reason`), so a
page and ``vcbus get`` never disagree. No I/O here.
"""

from __future__ import annotations

from collections import OrderedDict, deque
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
    QueueDeclared,
    TargetJobElected,
    Topic,
    split_key,
    tag_of,
)
from contracts.objects import Condition
from contracts.quantity import format_quantity
from services.cli.describe import jaeger_link
from services.cli.kinds import job_object, node_rows, queue_rows
from services.cli.listing import Query
from services.cli.status import (
    Reason,
    StatusStore,
    is_job_keyed,
    pending_reasons,
    podgroup_phase_of,
    reason_of,
)
from services.cli.usage import (
    add,
    allocatable,
    cluster_total,
    queue_of,
    used_by_node,
    used_by_queue,
)
from shared.bus.records import Record

HISTORY = 64
"""Records kept per job for its events timeline (the newest)."""

HISTORY_JOBS = 500
"""Jobs whose records are kept, the most recently changed ones (bounds memory)."""

RESOURCES = ("cpu", "memory", "pods")
"""The resources the dashboard shows, in order."""

JOB_PHASES = (
    "Pending",
    "Running",
    "Restarting",
    "Completing",
    "Completed",
    "Terminating",
    "Terminated",
    "Aborting",
    "Aborted",
    "Failed",
    "Rejected",
)
"""Phases in the order the Overview lists them."""


class DashboardStore(StatusStore):
    """The CLI's status store, plus a short history per job."""

    def __init__(self, prefix: str, history: int = HISTORY, jobs: int = HISTORY_JOBS) -> None:
        super().__init__(prefix)
        self.history: OrderedDict[str, deque[tuple[Topic, Record]]] = OrderedDict()
        """The newest records of the most recently changed jobs."""
        self._history = history
        self._history_jobs = jobs

    def fold(self, record: Record) -> None:
        """Fold one record as ``StatusStore`` does, then keep what the dashboard adds."""
        super().fold(record)
        name = record.topic.removeprefix(self.prefix)
        if record.value is None or name not in _TOPIC_BY_NAME:
            return
        topic = _TOPIC_BY_NAME[name]
        if is_job_keyed(topic) and record.key:
            self._remember(record.key.decode("utf-8", "replace"), topic, record)

    def _remember(self, key: str, topic: Topic, record: Record) -> None:
        history = self.history.get(key)
        if history is None:
            history = self.history[key] = deque(maxlen=self._history)
            if len(self.history) > self._history_jobs:
                self.history.popitem(last=False)
        else:
            self.history.move_to_end(key)
        history.append((topic, record))


_TOPIC_BY_NAME = {str(topic): topic for topic in Topic}


# -- shared pieces ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bar:
    """An amount out of a total, shown as a bar with its text."""

    label: str
    used: int
    total: int
    text: str

    @property
    def percent(self) -> int:
        """The share used, 0-100 (0 when there is no total)."""
        if self.total <= 0:
            return 0
        return min(100, round(100 * self.used / self.total))


def bar(name: str, used: int, total: int) -> Bar:
    """A bar of resource ``name``: ``used`` of ``total`` in base units."""
    return Bar(name, used, total, f"{format_quantity(name, used)} / {format_quantity(name, total)}")


# -- Jobs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskCount:
    """One task's pods by phase."""

    name: str
    pending: int
    running: int
    succeeded: int
    failed: int


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job in the Jobs list."""

    key: str
    namespace: str
    name: str
    queue: str
    phase: str
    podgroup_phase: str
    tasks: tuple[TaskCount, ...]
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class JobFilter:
    """The Jobs page's filters; an empty one lets everything through."""

    namespace: str = ""
    queue: str = ""
    phase: str = ""

    def admits(self, row: JobRow) -> bool:
        """Whether ``row`` passes every filter given."""
        return (
            (not self.namespace or row.namespace == self.namespace)
            and (not self.queue or row.queue == self.queue)
            and (not self.phase or row.phase == self.phase)
        )


@dataclass(frozen=True, slots=True)
class JobList:
    """The Jobs page: the rows that pass the filter, and the values each filter offers."""

    rows: tuple[JobRow, ...]
    filter: JobFilter
    namespaces: tuple[str, ...]
    queues: tuple[str, ...]
    phases: tuple[str, ...]
    total: int


def job_row(store: StatusStore, key: str) -> JobRow | None:
    """One job's row (``None``: unknown or deleted), from ``vcbus get jobs``'s object."""
    obj = job_object(store, key)
    if obj is None:
        return None
    raw_tasks = obj.get("tasks", {})
    tasks = tuple(
        TaskCount(
            str(name),
            int(counts.get("pending", 0)),
            int(counts.get("running", 0)),
            int(counts.get("succeeded", 0)),
            int(counts.get("failed", 0)),
        )
        for name, counts in sorted(raw_tasks.items() if isinstance(raw_tasks, dict) else ())
    )
    reason = str(obj["reason"])
    phase = str(obj["phase"])
    return JobRow(
        key=key,
        namespace=str(obj["namespace"]),
        name=str(obj["name"]),
        queue=queue_of(store, key),
        phase=phase,
        podgroup_phase=str(obj.get("podGroupPhase", "")),
        tasks=tasks,
        reason="" if reason == phase else reason,
        message=str(obj["message"]),
    )


def job_rows(store: StatusStore) -> list[JobRow]:
    """Every known job's row, sorted by key."""
    keys = set(store.latest[Topic.JOBS_STATUS]) | set(store.latest[Topic.JOBS_REJECTED])
    rows = (job_row(store, key) for key in sorted(keys))
    return [row for row in rows if row is not None]


def job_list(store: StatusStore, wanted: JobFilter) -> JobList:
    """The Jobs page for ``wanted``."""
    rows = job_rows(store)
    return JobList(
        rows=tuple(row for row in rows if wanted.admits(row)),
        filter=wanted,
        namespaces=tuple(sorted({row.namespace for row in rows if row.namespace})),
        queues=tuple(sorted({row.queue for row in rows if row.queue})),
        phases=tuple(p for p in JOB_PHASES if any(row.phase == p for row in rows)),
        total=len(rows),
    )


# -- Job ----------------------------------------------------------------------------------


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
    trace_source = Topic.JOBS_REJECTED if row.phase == "Rejected" else Topic.JOBS_STATUS
    trace_id = (
        status.trace_id if isinstance(status, JobStatusChanged) and status.trace_id else ""
    ) or store.trace_id(trace_source, key)
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
    specs = admitted.job.spec.tasks if isinstance(admitted, JobAdmitted) else ()
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


# -- Nodes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeCell:
    """One node in the grid: its use per resource, and who locked it."""

    name: str
    bars: tuple[Bar, ...]
    pods: int
    unschedulable: bool
    locked_for: str

    @property
    def level(self) -> int:
        """How full the node is, 0 (idle) to 4 (full), from its fullest resource."""
        fullest = max((b.percent for b in self.bars), default=0)
        return min(4, (fullest + 24) // 25)


def node_cells(store: DashboardStore) -> list[NodeCell]:
    """Every node, sorted by name, from ``vcbus get nodes``'s rows."""
    used = used_by_node(store)
    cells: list[NodeCell] = []
    for name, row in node_rows(store, Query()).items():
        totals = allocatable(store, name)
        amounts = used.get(name, {})
        cells.append(
            NodeCell(
                name=name,
                bars=tuple(bar(r, amounts.get(r, 0), totals.get(r, 0)) for r in RESOURCES),
                pods=amounts.get("pods", 0),
                unschedulable=bool(row.obj["unschedulable"]),
                locked_for=str(row.obj["lockedFor"]),
            )
        )
    return cells


# -- Queues -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueView:
    """One queue: weight and its share of all weights, what it holds, its capability."""

    name: str
    weight: int
    share: int
    """The queue's weight as a percentage of all open queues' weights (its deserved share)."""
    state: str
    parent: str
    allocated: tuple[Bar, ...]
    """What its running pods hold, out of its capability (else the cluster's total)."""
    capability: str
    podgroups: tuple[tuple[str, int], ...]


def queue_views(store: DashboardStore) -> list[QueueView]:
    """Every queue, sorted by name, from ``vcbus get queues``'s rows."""
    rows = queue_rows(store, Query())
    cluster = cluster_total(store)
    held = used_by_queue(store)
    views: list[QueueView] = []
    for name, row in rows.items():
        event = store.get(Topic.QUEUES, name)
        limits = event.queue.capability if isinstance(event, QueueDeclared) else {}
        counts = row.obj["podGroups"]
        amounts = held.get(name, {})
        views.append(
            QueueView(
                name=name,
                weight=int(str(row.obj["weight"])),
                share=int(str(row.obj["share"])),
                state=str(row.obj["state"]),
                parent=str(row.obj["parent"]),
                allocated=tuple(
                    bar(r, amounts.get(r, 0), limits.get(r, cluster.get(r, 0)))
                    for r in ("cpu", "memory")
                ),
                capability=", ".join(
                    f"{k}={format_quantity(k, v)}" for k, v in sorted(limits.items())
                ),
                podgroups=tuple(
                    (str(k), int(v))
                    for k, v in (counts.items() if isinstance(counts, dict) else ())
                ),
            )
        )
    return views


# -- Overview -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Overview:
    """The Overview page: cluster use, jobs by phase, queues, the reservation."""

    resources: tuple[Bar, ...]
    phases: tuple[tuple[str, int], ...]
    queues: tuple[QueueView, ...]
    nodes: int
    locked: tuple[tuple[str, str], ...]
    target: str
    jobs: int


def overview(store: DashboardStore) -> Overview:
    """The Overview page."""
    total = cluster_total(store)
    used: dict[str, int] = {}
    for amounts in used_by_node(store).values():
        add(used, amounts)
    rows = job_rows(store)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.phase] = counts.get(row.phase, 0) + 1
    ordered = [p for p in JOB_PHASES if p in counts] + sorted(set(counts) - set(JOB_PHASES))
    return Overview(
        resources=tuple(bar(r, used.get(r, 0), total.get(r, 0)) for r in RESOURCES),
        phases=tuple((p, counts[p]) for p in ordered),
        queues=tuple(queue_views(store)),
        nodes=len(store.keys(Topic.NODES)),
        locked=tuple(sorted(store.reservation.locks.items())),
        target=store.reservation.target,
        jobs=len(rows),
    )
