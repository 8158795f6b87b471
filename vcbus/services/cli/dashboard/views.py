"""The dashboard's list pages as pure view models: Overview, Jobs, Nodes and Queues.

The functions below turn a :class:`~vcbus.services.cli.dashboard.store.DashboardStore` into plain
frozen view models; the rows and the use come from the CLI's own folds (``job_object``,
``node_rows``, ``queue_rows``, :mod:`vcbus.services.cli.usage`), so a page and ``vcbus get``
never disagree. The Job page is :mod:`vcbus.services.cli.dashboard.job_detail`. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from vcbus.contracts import JobStatusChanged, QueueDeclared, Topic
from vcbus.core.views.reason import job_reason
from vcbus.core.views.units import show_resources, show_used
from vcbus.services.cli.dashboard.store import DashboardStore, DeletedJob
from vcbus.services.cli.kinds import job_object, node_rows, queue_rows
from vcbus.services.cli.listing import Query
from vcbus.services.cli.status_store import StatusStore
from vcbus.services.cli.usage import (
    add,
    allocatable,
    cluster_total,
    queue_of,
    used_by_node,
    used_by_queue,
)

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
    return Bar(name, used, total, show_used(name, used, total))


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
    created: datetime | None = None
    """When the job was created (its manifest's ``creationTimestamp``, else rejected)."""
    admission: str = ""
    """``Inadmissible`` when a reason says the job can never be enqueued as it is."""


PAGE_SIZE = 50
"""Jobs on one page of the Jobs list."""

SORTS = ("name", "queue", "phase", "age", "reason")
"""The columns the Jobs list sorts by."""


@dataclass(frozen=True, slots=True)
class JobFilter:
    """The Jobs page's filters, search, order and page; an empty one lists every job."""

    namespace: str = ""
    queue: str = ""
    phase: str = ""
    search: str = ""
    """Words every shown job has in its key, queue, phase, reason or message (any case)."""
    sort: str = "name"
    descending: bool = False
    page: int = 1

    def admits(self, row: JobRow) -> bool:
        """Whether ``row`` passes every filter given."""
        text = f"{row.key} {row.queue} {row.phase} {row.reason} {row.message}".casefold()
        return (
            (not self.namespace or row.namespace == self.namespace)
            and (not self.queue or row.queue == self.queue)
            and (not self.phase or row.phase == self.phase)
            and all(word in text for word in self.search.casefold().split())
        )

    @classmethod
    def of(cls, params: Mapping[str, str]) -> JobFilter:
        """The filter a query string asks for; an unknown order or a bad page is the default."""
        sort = params.get("sort", "name")
        try:
            page = max(1, int(params.get("page", "1")))
        except ValueError:
            page = 1
        return cls(
            namespace=params.get("namespace", ""),
            queue=params.get("queue", ""),
            phase=params.get("phase", ""),
            search=params.get("q", "")[:200],
            sort=sort if sort in SORTS else "name",
            descending=params.get("order", "") == "desc",
            page=page,
        )

    def query(self, **changes: object) -> dict[str, str]:
        """This filter as query parameters (defaults left out), with ``changes`` made."""
        values = {
            "namespace": self.namespace,
            "queue": self.queue,
            "phase": self.phase,
            "q": self.search,
            "sort": self.sort if self.sort != "name" else "",
            "order": "desc" if self.descending else "",
            "page": str(self.page) if self.page > 1 else "",
        }
        values.update({k: str(v) for k, v in changes.items()})
        return {k: v for k, v in values.items() if v and not (k == "page" and v == "1")}


def _sort_key(sort: str) -> Callable[[JobRow], tuple[object, ...]]:
    oldest = datetime.min.replace(tzinfo=UTC)
    match sort:
        case "queue":
            return lambda row: (row.queue, row.key)
        case "phase":
            return lambda row: (row.phase, row.key)
        case "reason":
            return lambda row: (row.reason, row.key)
        case "age":  # the oldest first: the largest age
            return lambda row: (row.created or oldest, row.key)
        case _:
            return lambda row: (row.key,)


@dataclass(frozen=True, slots=True)
class JobList:
    """The Jobs page: one page of the rows that pass the filter, and each filter's values."""

    rows: tuple[JobRow, ...]
    filter: JobFilter
    namespaces: tuple[str, ...]
    queues: tuple[str, ...]
    phases: tuple[str, ...]
    total: int
    matched: int = 0
    """Rows that pass the filter, on every page."""
    pages: int = 1
    now: datetime | None = None
    """The time ages are counted to (``None``: ages are not shown)."""
    deleted: tuple[tuple[str, datetime], ...] = ()
    """The jobs deleted recently (kept for their pages), the newest first."""


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
    created = str(obj.get("creationTimestamp", ""))
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
        created=datetime.fromisoformat(created) if created else None,
        admission=str(obj.get("admission", "")),
    )


def deleted_row(store: DashboardStore, deleted: DeletedJob) -> JobRow:
    """A deleted job's last state: its last ``jobs.status`` before the deletion."""
    status = (
        store.decode(Topic.JOBS_STATUS, deleted.last_status.value)
        if deleted.last_status is not None
        else None
    )
    namespace, _, name = deleted.key.partition("/")
    if not isinstance(status, JobStatusChanged):
        return JobRow(
            deleted.key, namespace, name, queue_of(store, deleted.key), "-", "", (), "", ""
        )
    tasks = tuple(
        TaskCount(task, c.pending, c.running, c.succeeded, c.failed)
        for task, c in sorted(status.task_status_count.items())
    )
    why = job_reason(str(status.phase), job=status.conditions)
    return JobRow(
        key=deleted.key,
        namespace=namespace,
        name=name,
        queue=queue_of(store, deleted.key),
        phase=str(status.phase),
        podgroup_phase="",
        tasks=tasks,
        reason=why.code if why is not None and why.code != status.phase else "",
        message=why.message if why is not None else "",
    )


def job_rows(store: StatusStore) -> list[JobRow]:
    """Every known job's row, sorted by key."""
    keys = set(store.latest[Topic.JOBS_STATUS]) | set(store.latest[Topic.JOBS_REJECTED])
    rows = (job_row(store, key) for key in sorted(keys))
    return [row for row in rows if row is not None]


def job_list(store: DashboardStore, wanted: JobFilter) -> JobList:
    """The Jobs page for ``wanted``: its rows sorted, one page of :data:`PAGE_SIZE`."""
    rows = job_rows(store)
    matched = sorted(
        (row for row in rows if wanted.admits(row)),
        key=_sort_key(wanted.sort),
        reverse=wanted.descending,
    )
    pages = max(1, -(-len(matched) // PAGE_SIZE))
    page = min(wanted.page, pages)
    store.prune()
    return JobList(
        rows=tuple(matched[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]),
        filter=replace(wanted, page=page),
        namespaces=tuple(sorted({row.namespace for row in rows if row.namespace})),
        queues=tuple(sorted({row.queue for row in rows if row.queue})),
        phases=tuple(p for p in JOB_PHASES if any(row.phase == p for row in rows)),
        total=len(rows),
        matched=len(matched),
        pages=pages,
        now=store.now(),
        deleted=tuple((d.key, d.at) for d in reversed(store.deleted.values())),
    )


# -- Nodes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeCell:
    """One node in the grid: its use per resource, and who locked it."""

    name: str
    bars: tuple[Bar, ...]
    pods: int
    unschedulable: bool
    locked_for: str
    status: str = "Ready"
    """``Ready`` or ``NotReady`` (a real node silent past the grace period)."""
    heartbeat: str = "-"
    """A real node's heartbeat age (``12s ago``); ``-`` for a simulated node."""
    limits: str = "-"
    """``limits not enforced`` where a real node runs pods without cgroups."""

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
                status=str(row.obj["ready"]),
                heartbeat=row.wide[0],
                limits=store.node_health(name).limits_text(),
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
                capability=show_resources(limits) if limits else "",
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
