"""What users see, folded from the status topics (latest per key).

``StatusView`` folds decoded events (``vcbus up``'s live view). ``StatusStore`` is the
compact store of the read commands (``get``, ``describe``, ``submit --wait``): the newest
record per key as bytes, decoded only for the rows shown, so 10,000 jobs read quickly.
``StatusReader`` reads topics from their beginning into it, on one job's partition when
only one job is asked about.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Self

from contracts import (
    TOPIC_SPECS,
    BindingCreated,
    BindingRefused,
    Event,
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    KeyKind,
    NodeChanged,
    NodeRegistered,
    NodeRemoved,
    NodesLocked,
    NodesUnlocked,
    PodCreated,
    PodDeleted,
    PodGroupConditionsChanged,
    PodGroupPhaseChanged,
    PodPhaseChanged,
    TargetJobElected,
    Topic,
    tag_of,
)
from contracts.objects import Condition, JobPhase, Node
from contracts.quantity import Resources, format_quantity
from services.cli import terminal
from shared.bus.codec import Poison, TopicCodec, Unknown
from shared.bus.partitioner import partition_for
from shared.bus.protocol import Bus, Consumer
from shared.bus.records import Record, TopicPartition
from shared.runtime.settings import Settings
from shared.runtime.topology import ensure_topics
from shared.scheduling.framework.job_updater import reason_rank

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
    locked_until: datetime | None = None


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
                if event.violations_omitted:
                    job.rejected += (f"… and {event.violations_omitted} more, not listed",)
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
                    current.locked_until if current else None,
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
    """The rows under the header, columns aligned, every cell escaped (``terminal.cell``)."""
    cells = [[terminal.cell(str(text)) for text in row] for row in (header, *rows)]
    widths = [max(len(text) for text in column) for column in zip(*cells, strict=False)]
    lines = [
        "  ".join(text.ljust(width) for text, width in zip(row, widths, strict=False))
        for row in cells
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
    """The nodes as ``vcbus up`` shows them: cpu, memory, pods bound, lock holder, its end."""
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
                node.locked_until.isoformat() if node.locked_until else "-",
            )
        )
    return _table(("NODE", "CPU", "MEMORY", "PODS", "LOCKED FOR", "UNTIL"), rows)


# -- the compact store the read commands fold the status topics into ----------------------

LATEST_TOPICS = frozenset(
    {
        Topic.JOBS_ADMITTED,
        Topic.JOBS_REJECTED,
        Topic.JOBS_STATUS,
        Topic.PODGROUPS,
        Topic.PODGROUPS_STATUS,
        Topic.PODGROUPS_CONDITIONS,
        Topic.NODES,
        Topic.QUEUES,
        Topic.CAPACITY_RESERVATIONS,
    }
)
"""Topics whose newest record per key is all a reader needs (what compaction would keep)."""

POD_TOPICS = frozenset({Topic.PODS, Topic.PODS_STATUS, Topic.BINDINGS})
"""Topics folded per pod: they are keyed by job or node, with many pods per key."""

_ADMITTED_TAG = tag_of(JobAdmitted).encode()
_UNNAMED = "(unnamed)"
_TOPIC_NAMES = frozenset(str(topic) for topic in Topic)


@dataclass(slots=True)
class PodRow:
    """One pod: job, task, phase, node, the incarnation (uid) it is and what it requests."""

    job: str
    task: str = ""
    phase: str = "Pending"
    node: str = ""
    uid: str = ""
    requests: Resources = field(default_factory=dict)


@dataclass(slots=True)
class ReservationView:
    """The reservation: target job and locked nodes, from the newest generation seen."""

    generation: int = -1
    target: str = ""
    locks: dict[str, str] = field(default_factory=dict)
    why: str = ""
    """Why the target was elected."""
    until: datetime | None = None
    """When the locks end at the latest (``lock-max``)."""
    lock_reasons: dict[str, str] = field(default_factory=dict)
    """Node → why it was locked."""

    def apply(self, event: Event) -> None:
        """Fold one ``reservations`` event; events of an older generation are dropped."""
        if not isinstance(event, TargetJobElected | NodesLocked | NodesUnlocked):
            return
        if event.generation < self.generation:
            return
        if event.generation > self.generation:
            self.generation = event.generation
            self._clear()
        match event:
            case TargetJobElected():
                self.target, self.why = event.job, event.reason
                self.until = event.until or self.until
            case NodesLocked():
                self.target = event.job
                self.until = event.until or self.until
                self.locks.update(dict.fromkeys(event.nodes, event.job))
                self.lock_reasons.update(dict.fromkeys(event.nodes, event.reason))
            case NodesUnlocked():
                self._clear()

    def _clear(self) -> None:
        self.target, self.why, self.until = "", "", None
        self.locks, self.lock_reasons = {}, {}

    def locked_for(self, job: str) -> list[str]:
        """The nodes locked for ``job``, sorted."""
        return sorted(node for node, holder in self.locks.items() if holder == job)


def trace_id_of(record: Record) -> str:
    """The trace id in a record's ``traceparent`` header, or ``""``."""
    raw = record.header("traceparent")
    if raw is None:
        return ""
    parts = raw.decode("ascii", "replace").split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else ""


class StatusStore:
    """What the status topics say now, kept compact for 10,000 jobs and more.

    For most topics only the newest record per key is kept, as read, and decoded when a
    row is shown (a compacted topic's view): folding a record is one dict write.
    Pods are folded per pod from ``pods``, ``bindings`` and ``pods.status`` into small
    rows; the reservation from ``reservations``. ``touched`` collects the keys changed
    since it was last cleared (job keys, pod keys), for ``--watch``.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.latest: dict[Topic, dict[str, Record]] = {topic: {} for topic in LATEST_TOPICS}
        self.pods: dict[str, PodRow] = {}
        self.reservation = ReservationView()
        self.touched: set[str] = set()
        self.records = 0
        self.skipped: Counter[Topic] = Counter()
        """Records per topic that no contract decodes: skipped, so they hide nothing."""
        self._gone_uids: set[str] = set()
        self._codecs: dict[Topic, TopicCodec[Event]] = {}
        self._topics: dict[str, Topic | None] = {}

    def decode(self, topic: Topic, value: bytes | None) -> Event | None:
        """Decode a value of ``topic``; ``None`` for a record this reader cannot read."""
        codec = self._codecs.get(topic)
        if codec is None:
            codec = self._codecs[topic] = TopicCodec[Event](TOPIC_SPECS[topic].union)
        decoded = codec.decode(value)
        return None if isinstance(decoded, Unknown | Poison) else decoded

    def fold(self, record: Record) -> None:
        """Fold one record of a status topic; one no contract decodes is skipped (counted)."""
        self.records += 1
        if record.topic not in self._topics:
            name = record.topic.removeprefix(self.prefix)
            self._topics[record.topic] = Topic(name) if name in _TOPIC_NAMES else None
        topic = self._topics[record.topic]
        if topic is None:
            return
        if topic is Topic.JOBS_ADMITTED and record.header("event-type") != _ADMITTED_TAG:
            return
        event = self.decode(topic, record.value)
        if event is None:
            self.skipped[topic] += 1
            return
        if topic in LATEST_TOPICS:
            key = record.key.decode("utf-8", "replace") if record.key else ""
            if not key:
                key = f"{_UNNAMED}@{record.partition}:{record.offset}"
            self.latest[topic][key] = record
            self.touched.add(key)
            return
        if topic is Topic.RESERVATIONS:
            self.reservation.apply(event)
        elif topic in POD_TOPICS:
            self._fold_pod(event)

    def _fold_pod(self, event: Event) -> None:
        match event:
            case PodCreated():
                key, pod = f"{event.pod.namespace}/{event.pod.name}", event.pod
                if pod.uid and pod.uid in self._gone_uids:
                    return
                row = self.pods.get(key)
                if row is None or (row.uid and pod.uid and row.uid != pod.uid):
                    row = self.pods[key] = PodRow(job=pod.job)
                row.job, row.task, row.uid = pod.job, pod.task, pod.uid or row.uid
                row.requests = pod.requests
            case PodDeleted():
                key = event.pod
                row = self.pods.get(key)
                if event.pod_uid:
                    self._gone_uids.add(event.pod_uid)
                if row is not None and (not event.pod_uid or row.uid in ("", event.pod_uid)):
                    del self.pods[key]
            case BindingCreated():
                key, pod = f"{event.pod.namespace}/{event.pod.name}", event.pod
                row = self._pod_row(key, pod.job, pod.uid)
                if row is not None:
                    row.node, row.task = event.node, row.task or pod.task
            case PodPhaseChanged():
                key = event.pod
                row = self._pod_row(key, event.job, event.pod_uid)
                if row is not None:
                    row.phase, row.task = str(event.phase), row.task or event.task
                    row.node = event.node or row.node
            case BindingRefused():
                key = event.pod
                row = self._pod_row(key, event.job, event.pod_uid)
                if row is not None and row.node == event.node:
                    row.node = ""
            case _:
                return
        self.touched.add(key)

    def _pod_row(self, key: str, job: str, uid: str) -> PodRow | None:
        if uid and uid in self._gone_uids:
            return None
        row = self.pods.get(key)
        if row is None:
            row = self.pods[key] = PodRow(job=job, uid=uid)
        elif uid and row.uid and row.uid != uid:
            return None
        row.uid = row.uid or uid
        return row

    def get(self, topic: Topic, key: str) -> Event | None:
        """The newest event of ``key`` on ``topic`` (a latest-per-key topic), decoded."""
        latest = self.latest[topic].get(key)
        return None if latest is None else self.decode(topic, latest.value)

    def report_skipped(self, verbose: int) -> None:
        """At ``-v``, say on standard error how many records were skipped, per topic."""
        if not verbose:
            return
        for topic, count in sorted(self.skipped.items()):
            terminal.error(f"skipped {count} record(s) on {topic} that no contract decodes\n")

    def trace_id(self, topic: Topic, key: str) -> str:
        """The trace id of the newest record of ``key`` on ``topic``."""
        latest = self.latest[topic].get(key)
        return "" if latest is None else trace_id_of(latest)

    def keys(self, topic: Topic) -> list[str]:
        """The keys seen on a latest-per-key topic, sorted."""
        return sorted(self.latest[topic])


class StatusReader:
    """Reads status topics from their beginning into a :class:`StatusStore`.

    With ``keys``, job-keyed topics are read on those jobs' partitions only (DESIGN §2:
    jobs, PodGroups and pods are keyed by job and co-partitioned), so reading one job stays
    fast however many jobs there are; topics in ``whole`` are read whole all the same.
    ``accept`` filters the records folded. Use as an async context manager.
    """

    def __init__(
        self,
        bus: Bus,
        prefix: str,
        topics: Sequence[Topic],
        *,
        keys: Sequence[str] | None = None,
        whole: frozenset[Topic] = frozenset(),
        accept: Callable[[Record], bool] | None = None,
        client_id: str = "vcbus-cli",
    ) -> None:
        self._bus = bus
        self._whole = whole
        self._accept = accept
        self._prefix = prefix
        self._topics = tuple(topics)
        self._keys = tuple(keys) if keys is not None else None
        self._client_id = client_id
        self._consumers: list[Consumer] = []
        self._ends: list[dict[tuple[str, int], int]] = []
        self._positions: dict[tuple[str, int], int] = {}

    async def __aenter__(self) -> Self:
        names = [f"{self._prefix}{topic}" for topic in self._topics]
        if self._keys is None:
            groups: list[tuple[list[str], list[TopicPartition] | None]] = [(names, None)]
        else:
            restricted = {t for t in self._topics if is_job_keyed(t) and t not in self._whole}
            by_job = [f"{self._prefix}{t}" for t in self._topics if t in restricted]
            others = [f"{self._prefix}{t}" for t in self._topics if t not in restricted]
            groups = [(others, None)] if others else []
            if by_job:
                count = await self._bus.partitions(by_job[0])
                chosen = sorted({partition_for(k.encode(), count) for k in self._keys})
                groups.append((by_job, [TopicPartition(n, p) for n in by_job for p in chosen]))
        try:
            for number, (topics, partitions) in enumerate(groups):
                consumer = self._bus.consumer(
                    topics,
                    group=None,
                    client_id=f"{self._client_id}-{number}",
                    partitions=partitions,
                )
                self._consumers.append(consumer)
                await consumer.start()
                assigned = sorted(consumer.assignment())
                ends = await consumer.end_offsets(assigned)
                self._ends.append({(tp.topic, tp.partition): end for tp, end in ends.items()})
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the consumers."""
        consumers, self._consumers = self._consumers, []
        for consumer in consumers:
            await consumer.stop()

    def _behind(self, number: int) -> bool:
        positions = self._positions
        return any(positions.get(tp, 0) < end for tp, end in self._ends[number].items())

    @property
    def caught_up(self) -> bool:
        """Whether everything the topics held at the start has been read."""
        return not any(self._behind(number) for number in range(len(self._ends)))

    async def poll(self, store: StatusStore, timeout: float = 0.2) -> int:
        """Read what is there (waiting up to ``timeout``) into ``store``; how many records.

        While catching up, only the consumers still behind are polled, so one with
        nothing to read does not make every round wait out its timeout.
        """
        behind = [c for n, c in enumerate(self._consumers) if self._behind(n)]
        batches = await asyncio.gather(
            *(c.getmany(timeout=timeout, max_records=READ_BATCH) for c in behind or self._consumers)
        )
        count = 0
        accept, fold, positions = self._accept, store.fold, self._positions
        for records in batches:
            for record in records:
                if accept is None or accept(record):
                    fold(record)
            last: dict[tuple[str, int], int] = {}
            for record in records:
                last[record.topic, record.partition] = record.offset
            for tp, offset in last.items():
                positions[tp] = offset + 1
            count += len(records)
        return count

    async def catch_up(self, store: StatusStore) -> None:
        """Read until every partition is at the end it had when the reader started."""
        while not self.caught_up:
            await self.poll(store)


READ_BATCH = 10_000
"""Records per poll while reading a topic from its beginning."""


def is_job_keyed(topic: Topic) -> bool:
    """Whether a topic is keyed by job (and so co-partitioned with the others keyed so)."""
    return TOPIC_SPECS[topic].key is KeyKind.JOB


async def read_store(
    bus: Bus,
    settings: Settings,
    topics: Sequence[Topic],
    *,
    keys: Sequence[str] | None = None,
    whole: frozenset[Topic] = frozenset(),
    accept: Callable[[Record], bool] | None = None,
    verbose: int = 0,
) -> StatusStore:
    """Read the status topics as they are now into a new store (``key``: that job only).

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        topics: the topics to read.
        keys: job keys; job-keyed topics are then read on their partitions only.
        whole: topics read whole even with ``key``.
        accept: sees every record read first; only those it accepts are folded.
        verbose: at 1 and more, say how many records were skipped.

    Returns:
        The store, caught up with the topics' ends as they were at the start.
    """
    await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
    store = StatusStore(settings.topic_prefix)
    async with StatusReader(
        bus, settings.topic_prefix, topics, keys=keys, whole=whole, accept=accept
    ) as reader:
        await reader.catch_up(store)
    store.report_skipped(verbose)
    return store


def add_verbose(parser: argparse.ArgumentParser) -> None:
    """Add ``-v``: say how many records a reading command skipped (no contract decodes them)."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="also say how many records were skipped because no contract decodes them",
    )


# -- why a job waits ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reason:
    """A reason code and its message, and where it was read."""

    code: str
    message: str
    source: str


def pending_reasons(store: StatusStore, key: str) -> list[Reason]:
    """Every reason a job waits, highest-ranked first (SPEC A8).

    Candidates: the PodGroup's ``Unschedulable`` condition (podgroup-enqueue's ranked
    reason), the allocator's on ``podgroups.conditions``, and the job's own condition when
    it waits for a dependency. Ties keep that order.
    """
    found: list[Reason] = []
    status = store.get(Topic.PODGROUPS_STATUS, key)
    if isinstance(status, PodGroupPhaseChanged):
        found += [
            Reason(c.reason, c.message, "podgroups.status")
            for c in status.conditions
            if c.type == "Unschedulable" and c.status == "True" and c.reason
        ]
    allocator = store.get(Topic.PODGROUPS_CONDITIONS, key)
    if isinstance(allocator, PodGroupConditionsChanged):
        found += [
            Reason(c.reason, c.message, "podgroups.conditions")
            for c in allocator.conditions
            if c.type == "Unschedulable" and c.status == "True" and c.reason
        ]
    job = store.get(Topic.JOBS_STATUS, key)
    if isinstance(job, JobStatusChanged):
        found += [
            Reason(c.reason, c.message, "jobs.status")
            for c in job.conditions
            if c.reason == "WaitingForDependency"
        ]
    unique: dict[tuple[str, str], Reason] = {}
    for reason in found:
        unique.setdefault((reason.code, reason.message), reason)
    return sorted(unique.values(), key=lambda r: reason_rank(r.code))
