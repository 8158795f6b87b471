"""``vcbus get jobs|podgroups|pods|nodes|queues``: tables, ``-o wide|json|yaml``, ``--watch``.

State is read from the status topics (newest record per key, ``services.cli.status``).
Only the topics a kind needs are read, and ``get jobs NAME`` reads that job's partition
only. ``--watch`` prints the listing, then one line (or object) per change, as kubectl does,
until interrupted. As with kubectl, namespaced kinds are listed in ``default`` unless
``-n`` names another or ``-A`` asks for all; jobs and PodGroups have an AGE column, and
``-o wide`` adds columns (a job's queue, priority class and nodes; a PodGroup's priority
and minimum resources). On a terminal, phases are coloured (not with ``NO_COLOR``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import yaml

from contracts import (
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    NodeChanged,
    NodeRegistered,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupUpdated,
    QueueDeclared,
    Topic,
    split_key,
)
from contracts.objects import DEFAULT_QUEUE, Queue, QueueState
from contracts.quantity import format_quantity
from services.cli import terminal
from services.cli.admissible import INADMISSIBLE, inadmissible
from services.cli.status import (
    StatusReader,
    StatusStore,
    add_verbose,
    pending_reasons,
    podgroup_phase_of,
    reason_of,
)
from services.cli.usage import resources_text, used_by_node, used_by_queue
from shared.bus.kafka import AioKafkaBus
from shared.bus.protocol import Bus
from shared.runtime.clock import SystemClock
from shared.runtime.settings import Settings
from shared.runtime.topology import ensure_topics
from shared.views.age import age
from shared.views.table import format_row, widths_of

Object = dict[str, object]


@dataclass(frozen=True, slots=True)
class Row:
    """One listed thing: its table cells, its object for ``-o json|yaml``, and more.

    ``wide`` are the cells ``-o wide`` adds; ``created`` makes the AGE column.
    """

    cells: tuple[str, ...]
    obj: Object
    wide: tuple[str, ...] = ()
    created: datetime | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """What to list: names (``name`` or ``namespace/name``) and a namespace, both optional."""

    names: tuple[str, ...] = ()
    namespace: str | None = None
    keys: frozenset[str] | None = None
    """Only these keys (a watch recomputes the rows of the keys that changed)."""

    def select(self, available: Iterable[str]) -> list[str]:
        """The keys among ``available`` to consider, sorted."""
        if self.keys is None:
            return sorted(available)
        return sorted(set(available) & self.keys)

    def matches(self, key: str) -> bool:
        """Whether a ``namespace/name`` (or a plain name) is asked for.

        A name given as ``namespace/name`` is matched whatever the namespace asked for.
        """
        namespace, _, name = key.rpartition("/")
        in_namespace = self.namespace is None or not namespace or namespace == self.namespace
        if not self.names:
            return in_namespace
        return any(n == key or (n == name and in_namespace) for n in self.names)

    def job_key(self) -> str | None:
        """The one job key asked for, when exactly one name is given."""
        if len(self.names) != 1:
            return None
        name = self.names[0]
        return name if "/" in name else f"{self.namespace or 'default'}/{name}"


RowsOf = Callable[[StatusStore, Query], dict[str, Row]]


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of thing ``vcbus get`` lists."""

    name: str
    topics: tuple[Topic, ...]
    header: tuple[str, ...]
    rows: RowsOf
    job_keyed: bool = False
    incremental: bool = False
    """Whether a row depends only on its own key's records (a watch then recomputes only
    the rows of the keys that changed)."""
    wide_header: tuple[str, ...] = ()
    wide_topics: tuple[Topic, ...] = ()
    """What ``-o wide`` adds: its columns, and the topics read for them."""
    aged: bool = False
    """Whether the table has an AGE column (from :attr:`Row.created`)."""
    state: str = "PHASE"
    """The column coloured on a terminal."""

    def header_of(self, output: str) -> tuple[str, ...]:
        """The table's header for ``output`` (``table`` or ``wide``)."""
        aged = ("AGE",) if self.aged else ()
        return (*self.header, *aged, *(self.wide_header if output == "wide" else ()))

    def cells_of(self, row: Row, output: str, now: datetime) -> tuple[str, ...]:
        """A row's cells for ``output`` (``table`` or ``wide``), its AGE counted to ``now``."""
        aged = (age(row.created, now) if row.created else "<unknown>",) if self.aged else ()
        return (*row.cells, *aged, *(row.wide if output == "wide" else ()))


# -- jobs ---------------------------------------------------------------------------------


def job_object(store: StatusStore, key: str) -> Object | None:
    """What is known of one job, as an object (``None``: unknown or deleted)."""
    status = store.get(Topic.JOBS_STATUS, key)
    rejected = store.get(Topic.JOBS_REJECTED, key)
    if isinstance(rejected, JobRejected) and (
        not isinstance(status, JobStatusChanged | JobDeleted)
        or rejected.occurred_at > status.occurred_at
    ):
        namespace, name = split_key(key) if rejected.job_key else ("", key)
        first = rejected.violations[0] if rejected.violations else None
        return {
            "namespace": namespace,
            "name": name,
            "creationTimestamp": _timestamp(rejected.occurred_at),
            "phase": "Rejected",
            "reason": first.reason if first else "",
            "message": first.message if first else "",
            "violations": [
                {"path": v.path, "reason": v.reason, "message": v.message}
                for v in rejected.violations
            ],
            "violationsOmitted": rejected.violations_omitted,
            "traceId": store.trace_id(Topic.JOBS_REJECTED, key),
        }
    if not isinstance(status, JobStatusChanged):
        return None
    namespace, name = split_key(key)
    admitted = store.get(Topic.JOBS_ADMITTED, key)
    job = admitted.job if isinstance(admitted, JobAdmitted) else None
    reasons = pending_reasons(store, key) if status.phase == "Pending" else []
    why = reason_of(store, key, status)
    return {
        "namespace": namespace,
        "name": name,
        "queue": (job.spec.queue or DEFAULT_QUEUE) if job else "",
        "priorityClassName": job.spec.priority_class_name if job else "",
        "creationTimestamp": _timestamp(job.metadata.creation_timestamp if job else None),
        "phase": str(status.phase),
        "podGroupPhase": podgroup_phase_of(store, key),
        "minAvailable": status.min_available,
        "pending": status.pending,
        "running": status.running,
        "succeeded": status.succeeded,
        "failed": status.failed,
        "terminating": status.terminating,
        "unknown": status.unknown,
        "retryCount": status.retry_count,
        "tasks": {
            task: {
                "pending": c.pending,
                "running": c.running,
                "succeeded": c.succeeded,
                "failed": c.failed,
                "unknown": c.unknown,
            }
            for task, c in status.task_status_count.items()
        },
        "reason": why.code if why else "",
        "message": why.message if why else "",
        "admission": INADMISSIBLE if inadmissible(reasons) else "",
        "traceId": status.trace_id or store.trace_id(Topic.JOBS_STATUS, key),
    }


def _timestamp(at: datetime | None) -> str:
    return at.isoformat() if at else ""


def job_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get jobs``: one row per job."""
    keys = set(store.latest[Topic.JOBS_STATUS]) | set(store.latest[Topic.JOBS_REJECTED])
    nodes: dict[str, set[str]] = {}
    for pod in store.pods.values():
        if pod.node:
            nodes.setdefault(pod.job, set()).add(pod.node)
    out: dict[str, Row] = {}
    for key in query.select(keys):
        if not query.matches(key):
            continue
        obj = job_object(store, key)
        if obj is None:
            continue
        reason = str(obj["reason"])
        if reason == obj["phase"]:
            reason = ""
        cells = (
            str(obj["namespace"]),
            str(obj["name"]),
            str(obj["phase"]),
            str(obj.get("podGroupPhase", "")),
            *(str(obj.get(f, "")) for f in ("minAvailable", "pending", "running", "succeeded")),
            str(obj.get("failed", "")),
            reason,
        )
        wide = (
            str(obj.get("queue") or "-"),
            str(obj.get("priorityClassName") or "-"),
            ",".join(sorted(nodes.get(key, ()))) or "-",
        )
        created = str(obj.get("creationTimestamp") or "")
        out[key] = Row(cells, obj, wide, datetime.fromisoformat(created) if created else None)
    return out


# -- podgroups ----------------------------------------------------------------------------


def podgroup_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get podgroups``: one row per PodGroup (keyed by its job)."""
    out: dict[str, Row] = {}
    for key in query.select(store.latest[Topic.PODGROUPS]):
        spec = store.get(Topic.PODGROUPS, key)
        if not isinstance(spec, PodGroupCreated | PodGroupUpdated) or not query.matches(key):
            continue
        group = spec.podgroup
        phase = podgroup_phase_of(store, key)
        reasons = pending_reasons(store, key) if phase in ("Pending", "Inqueue") else []
        allocator = store.get(Topic.PODGROUPS_CONDITIONS, key)
        obj: Object = {
            "namespace": group.namespace,
            "name": group.name,
            "job": group.job,
            "queue": group.queue,
            "minMember": group.min_member,
            "minTaskMember": dict(group.min_task_member),
            "minResources": {k: format_quantity(k, v) for k, v in group.min_resources.items()},
            "priority": group.priority,
            "creationTimestamp": _timestamp(group.creation_timestamp),
            "phase": phase,
            "reason": reasons[0].code if reasons else "",
            "message": reasons[0].message if reasons else "",
            "conditions": [
                {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                for c in (
                    allocator.conditions if isinstance(allocator, PodGroupConditionsChanged) else ()
                )
            ],
        }
        cells = (
            group.namespace,
            group.name,
            group.job,
            group.queue,
            str(group.min_member),
            phase,
            str(obj["reason"]),
        )
        wide = (str(group.priority), resources_text(group.min_resources))
        out[key] = Row(cells, obj, wide, group.creation_timestamp)
    return out


# -- pods ---------------------------------------------------------------------------------


def pod_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get pods``: one row per pod."""
    out: dict[str, Row] = {}
    for key in query.select(store.pods):
        pod = store.pods[key]
        if not (query.matches(key) or (query.names and query.matches(pod.job))):
            continue
        namespace, name = split_key(key)
        obj: Object = {
            "namespace": namespace,
            "name": name,
            "job": pod.job,
            "task": pod.task,
            "phase": pod.phase,
            "node": pod.node,
            "uid": pod.uid,
        }
        out[key] = Row((namespace, name, pod.job, pod.task, pod.phase, pod.node or "-"), obj)
    return out


# -- nodes --------------------------------------------------------------------------------


def node_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get nodes``: offered, held, free, pods, lock holder and end (json: why)."""
    used = used_by_node(store)
    out: dict[str, Row] = {}
    for name in store.keys(Topic.NODES):
        event = store.get(Topic.NODES, name)
        if not isinstance(event, NodeRegistered | NodeChanged) or not query.matches(name):
            continue
        node = event.node
        allocatable = {k: format_quantity(k, v) for k, v in node.allocatable.items()}
        held = used.get(name, {})
        free = {k: v - held.get(k, 0) for k, v in node.allocatable.items()}
        shown = ("cpu", "memory", *sorted(set(node.allocatable) - {"cpu", "memory", "pods"}))
        pods = held.get("pods", 0)
        reservation = store.reservation
        locked = reservation.locks.get(name, "")
        until = reservation.until.isoformat() if locked and reservation.until is not None else ""
        obj: Object = {
            "name": name,
            "allocatable": allocatable,
            "allocated": {k: format_quantity(k, v) for k, v in held.items() if k != "pods"},
            "free": {k: format_quantity(k, v) for k, v in free.items() if k != "pods"},
            "labels": dict(node.labels),
            "unschedulable": node.unschedulable,
            "pods": pods,
            "lockedFor": locked,
            "lockReason": reservation.lock_reasons.get(name, "") if locked else "",
            "lockedUntil": until,
        }
        cells = (
            name,
            "SchedulingDisabled" if node.unschedulable else "Ready",
            resources_text(node.allocatable, names=shown),
            resources_text(held, names=shown),
            resources_text(free, names=shown),
            f"{pods}/{node.allocatable['pods']}" if "pods" in node.allocatable else str(pods),
            locked or "-",
            until or "-",
        )
        out[name] = Row(cells, obj)
    return out


# -- queues -------------------------------------------------------------------------------


def queue_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get queues``: weight, share, state, parent, capability, allocated, PodGroups.

    Allocated is what the queue's jobs' pods hold; PodGroups (one per job) are counted by
    phase. The share is the queue's weight over the weights of every open queue: what the
    proportion plugin deserves it, before capability and guarantee.
    """
    queues: dict[str, Queue] = {DEFAULT_QUEUE: Queue(name=DEFAULT_QUEUE)}
    for name in store.keys(Topic.QUEUES):
        event = store.get(Topic.QUEUES, name)
        if isinstance(event, QueueDeclared):
            queues[name] = event.queue
        elif name != DEFAULT_QUEUE:
            queues.pop(name, None)
    phases: dict[str, dict[str, int]] = {}
    for key in store.keys(Topic.PODGROUPS):
        spec = store.get(Topic.PODGROUPS, key)
        if not isinstance(spec, PodGroupCreated | PodGroupUpdated):
            continue
        phase = podgroup_phase_of(store, key)
        counts = phases.setdefault(spec.podgroup.queue, {})
        counts[phase] = counts.get(phase, 0) + 1
    held = used_by_queue(store)
    open_weight = sum(q.weight for q in queues.values() if q.state is QueueState.OPEN) or 1
    out: dict[str, Row] = {}
    for name in sorted(queues):
        if not query.matches(name):
            continue
        queue, counts = queues[name], phases.get(name, {})
        share = round(100 * queue.weight / open_weight) if queue.state is QueueState.OPEN else 0
        allocated = held.get(name, {})
        obj: Object = {
            "name": name,
            "weight": queue.weight,
            "share": share,
            "state": str(queue.state),
            "parent": queue.parent,
            "priority": queue.priority,
            "capability": {k: format_quantity(k, v) for k, v in queue.capability.items()},
            "guarantee": {k: format_quantity(k, v) for k, v in queue.guarantee.items()},
            "allocated": {k: format_quantity(k, v) for k, v in allocated.items()},
            "podGroups": dict(sorted(counts.items())),
        }
        cells = (
            name,
            str(queue.weight),
            f"{share}%",
            str(queue.state),
            queue.parent or "-",
            resources_text(queue.capability),
            resources_text(allocated, names=("cpu", "memory")),
            *(str(counts.get(p, 0)) for p in ("Pending", "Inqueue", "Running", "Completed")),
        )
        out[name] = Row(cells, obj)
    return out


KINDS: dict[str, Kind] = {
    "jobs": Kind(
        "jobs",
        (
            Topic.JOBS_ADMITTED,
            Topic.JOBS_STATUS,
            Topic.JOBS_REJECTED,
            Topic.PODGROUPS,
            Topic.PODGROUPS_STATUS,
            Topic.PODGROUPS_CONDITIONS,
        ),
        (
            "NAMESPACE",
            "NAME",
            "PHASE",
            "PODGROUP",
            "MIN",
            "PENDING",
            "RUNNING",
            "SUCCEEDED",
            "FAILED",
            "REASON",
        ),
        job_rows,
        job_keyed=True,
        incremental=True,
        wide_header=("QUEUE", "PRIORITY", "NODES"),
        wide_topics=(Topic.PODS, Topic.PODS_STATUS),
        aged=True,
    ),
    "podgroups": Kind(
        "podgroups",
        (Topic.PODGROUPS, Topic.PODGROUPS_STATUS, Topic.PODGROUPS_CONDITIONS),
        ("NAMESPACE", "NAME", "JOB", "QUEUE", "MINMEMBER", "PHASE", "REASON"),
        podgroup_rows,
        job_keyed=True,
        incremental=True,
        wide_header=("PRIORITY", "MINRESOURCES"),
        aged=True,
    ),
    "pods": Kind(
        "pods",
        (Topic.PODS, Topic.BINDINGS, Topic.PODS_STATUS),
        ("NAMESPACE", "NAME", "JOB", "TASK", "PHASE", "NODE"),
        pod_rows,
        incremental=True,
    ),
    "nodes": Kind(
        "nodes",
        (Topic.NODES, Topic.PODS, Topic.BINDINGS, Topic.PODS_STATUS, Topic.RESERVATIONS),
        ("NAME", "STATUS", "ALLOCATABLE", "ALLOCATED", "FREE", "PODS", "LOCKED FOR", "UNTIL"),
        node_rows,
        state="STATUS",
    ),
    "queues": Kind(
        "queues",
        (
            Topic.QUEUES,
            Topic.PODGROUPS,
            Topic.PODGROUPS_STATUS,
            Topic.PODS,
            Topic.BINDINGS,
            Topic.PODS_STATUS,
        ),
        (
            "NAME",
            "WEIGHT",
            "SHARE",
            "STATE",
            "PARENT",
            "CAPABILITY",
            "ALLOCATED",
            "PENDING",
            "INQUEUE",
            "RUNNING",
            "COMPLETED",
        ),
        queue_rows,
        state="STATE",
    ),
}

ALIASES = {
    "job": "jobs",
    "vcjob": "jobs",
    "vcjobs": "jobs",
    "podgroup": "podgroups",
    "pg": "podgroups",
    "pod": "pods",
    "node": "nodes",
    "queue": "queues",
    "q": "queues",
}


# -- output -------------------------------------------------------------------------------


def _paint(padded: str, state: str) -> str:
    """A state cell coloured by the state it names (on a terminal)."""
    return terminal.paint(padded, terminal.colour_of(state))


def _document(obj: object, output: str) -> str:
    if output == "json":
        return terminal.printable(json.dumps(obj, indent=2) + "\n")
    return terminal.printable(yaml.safe_dump(obj, sort_keys=False))


def render(
    kind: Kind,
    rows: Mapping[str, Row],
    output: str,
    *,
    now: datetime | None = None,
    colour: bool = False,
) -> str:
    """The listing of ``rows`` as a table, JSON or YAML, escaped (an empty table is ``""``).

    Args:
        kind: what is listed.
        rows: the rows.
        output: ``table``, ``wide``, ``json`` or ``yaml``.
        now: the time ages are counted to (the clock's when not given).
        colour: colour the state column.
    """
    if output in ("json", "yaml"):
        items = [r.obj for r in rows.values()]
        return _document({"apiVersion": "v1", "kind": "List", "items": items}, output)
    if not rows:
        return ""
    at = now or SystemClock().now()
    header = kind.header_of(output)
    cells = [kind.cells_of(r, output, at) for r in rows.values()]
    widths = widths_of(header, cells)
    paint_at = header.index(kind.state) if colour and kind.state in header else None
    lines = [format_row(header, widths)]
    lines.extend(format_row(c, widths, paint=_paint, paint_at=paint_at) for c in cells)
    return "\n".join(lines) + "\n"


def render_change(
    kind: Kind,
    row: Row,
    output: str,
    widths: Sequence[int],
    *,
    now: datetime | None = None,
    colour: bool = False,
) -> str:
    """One changed row while watching: a table line, a JSON line, or a YAML document."""
    if output == "json":
        return terminal.printable(json.dumps(row.obj) + "\n")
    if output == "yaml":
        return "---\n" + _document(row.obj, output)
    header = kind.header_of(output)
    paint_at = header.index(kind.state) if colour and kind.state in header else None
    cells = kind.cells_of(row, output, now or SystemClock().now())
    return format_row(cells, widths, paint=_paint, paint_at=paint_at) + "\n"


def deleted_row(kind: Kind, previous: Row) -> Row:
    """The row of something gone, shown once while watching (phase ``Deleted``)."""
    cells = list(previous.cells)
    if "PHASE" in kind.header:
        cells[kind.header.index("PHASE")] = "Deleted"
    return Row(tuple(cells), {**previous.obj, "phase": "Deleted"}, previous.wide, previous.created)


# -- command ------------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus get``."""
    parser = sub.add_parser("get", help="list jobs, podgroups, pods, nodes or queues")
    parser.add_argument("kind", choices=sorted([*KINDS, *ALIASES]), metavar="KIND")
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these (name or ns/name)")
    add_list_arguments(parser)
    parser.set_defaults(func=run)


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of a listing: namespace, output format, watch, verbose."""
    parser.add_argument("-n", "--namespace", help="only this namespace (default: default)")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="list every namespace")
    parser.add_argument(
        "-o", "--output", choices=("table", "wide", "json", "yaml"), default="table"
    )
    parser.add_argument(
        "-w", "--watch", action="store_true", help="after the listing, print every change"
    )
    add_verbose(parser)


def run(args: argparse.Namespace) -> int:
    """List (and with ``--watch`` follow) the things asked for; 0 unless reading failed."""
    kind = KINDS[ALIASES.get(args.kind, args.kind)]
    namespace = None if args.all_namespaces else (args.namespace or "default")
    query = Query(tuple(args.names), namespace)
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    return asyncio.run(
        get(
            bus,
            settings,
            kind,
            query,
            output=args.output,
            watch=args.watch,
            verbose=args.verbose,
            colour=terminal.colours_on(),
        )
    )


async def get(
    bus: Bus,
    settings: Settings,
    kind: Kind,
    query: Query,
    *,
    output: str = "table",
    watch: bool = False,
    stop: asyncio.Event | None = None,
    write: Callable[[str], object] | None = None,
    verbose: int = 0,
    colour: bool = False,
    clock: Callable[[], datetime] | None = None,
) -> int:
    """Print the listing of ``kind``; with ``watch``, then every change until ``stop``.

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        kind: what to list.
        query: which ones.
        output: ``table``, ``wide``, ``json`` or ``yaml``.
        watch: keep printing changes after the listing.
        stop: set to end a watch (SIGINT and SIGTERM set it when not given).
        write: where text goes, control characters escaped already (standard output when
            not given).
        verbose: at 1 and more, say how many records were skipped (after the listing).
        colour: colour the state column.
        clock: the time ages are counted to (the system's when not given).

    Returns:
        The exit status.
    """
    out = write or terminal.write_escaped
    now = clock or SystemClock().now
    table = output in ("table", "wide")
    topics = (*kind.topics, *(kind.wide_topics if output == "wide" else ()))

    await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
    key = query.job_key() if kind.job_keyed else None
    keys = [key] if key is not None else None
    store = StatusStore(settings.topic_prefix)
    async with StatusReader(bus, settings.topic_prefix, topics, keys=keys) as reader:
        await reader.catch_up(store)
        rows = kind.rows(store, query)
        if watch and not table:
            text = "".join(render_change(kind, row, output, ()) for row in rows.values())
        else:
            text = render(kind, rows, output, now=now(), colour=colour)
        if text:
            out(text)
        elif not watch:
            terminal.error("No resources found\n")
        store.report_skipped(verbose)
        if not watch:
            return 0
        header = kind.header_of(output)
        at = now()
        widths = widths_of(header, [kind.cells_of(r, output, at) for r in rows.values()])
        if stop is None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
        if not rows and table:
            out(format_row(header, widths) + "\n")
        store.touched.clear()
        while not stop.is_set():
            if not await reader.poll(store) or not store.touched:
                continue
            touched, store.touched = frozenset(store.touched), set()
            for changed in watch_changes(kind, store, query, rows, touched):
                out(render_change(kind, changed, output, widths, now=now(), colour=colour))
    return 0


def watch_changes(
    kind: Kind, store: StatusStore, query: Query, rows: dict[str, Row], touched: frozenset[str]
) -> list[Row]:
    """The rows that changed since ``rows`` (which is brought up to date), gone ones included.

    Args:
        kind: what is listed.
        store: the store, after the records that touched ``touched``.
        query: which ones are listed.
        rows: the rows shown so far, by key; updated in place.
        touched: the keys the new records were about.

    Returns:
        The changed rows, and a ``Deleted`` row for each one gone.
    """
    scope = touched if kind.incremental else None
    now = kind.rows(store, Query(query.names, query.namespace, scope))
    keys = touched if scope is not None else frozenset(rows) | frozenset(now)
    changed: list[Row] = []
    for key in sorted(keys):
        before, after = rows.get(key), now.get(key)
        if after is not None and after != before:
            rows[key] = after
            changed.append(after)
        elif after is None and before is not None:
            del rows[key]
            changed.append(deleted_row(kind, before))
    return changed
