"""What users see, folded from the status topics (latest per key).

``StatusStore`` is the compact store of the read commands (``get``, ``describe``,
``submit --wait``): the newest record per key as bytes, decoded only for the rows shown,
so 10,000 jobs read quickly.
``StatusReader`` reads topics from their beginning into it, on one job's partition when
only one job is asked about. What a record means is the read model's (:mod:`vcbus.core.views`):
pods, the reservation, a PodGroup's phase and why a job waits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Self

from vcbus.contracts import (
    TOPIC_SPECS,
    Event,
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    KeyKind,
    NodeHeartbeat,
    NodeRemoved,
    PodGroupConditionsChanged,
    PodGroupPhaseChanged,
    RejectionsCleared,
    Topic,
    tag_of,
)
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown
from vcbus.core.bus.partitioner import partition_for
from vcbus.core.bus.protocol import Bus, Consumer
from vcbus.core.bus.records import Record, TopicPartition
from vcbus.core.node_lifecycle import reader_conf
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.views import read_model
from vcbus.core.views.jobs import JobFold, JobView, replaces_spec, update_refusal
from vcbus.core.views.node_health import NodeHealth, node_health
from vcbus.core.views.pod_fold import PodFold, PodRow
from vcbus.core.views.reason import Reason, reason_candidates
from vcbus.core.views.rejections import ClearedRejections
from vcbus.core.views.reservation_view import ReservationView
from vcbus.services.cli import terminal

__all__ = [
    "LATEST_TOPICS",
    "POD_TOPICS",
    "READ_BATCH",
    "PodRow",
    "Reason",
    "ReservationView",
    "StatusReader",
    "StatusStore",
    "add_verbose",
    "is_job_keyed",
    "job_trace_id",
    "job_view",
    "pending_reasons",
    "podgroup_phase_of",
    "read_store",
    "reason_of",
    "trace_id_of",
]

# -- the compact store the read commands fold the status topics into ----------------------

LATEST_TOPICS = frozenset(read_model.LATEST_TOPICS)
"""Topics whose newest record per key is all a reader needs (what compaction would keep)."""

POD_TOPICS = frozenset(read_model.POD_TOPICS)
"""Topics folded per pod: they are keyed by job or node, with many pods per key."""

_ADMITTED_TAG = tag_of(JobAdmitted).encode()
UNNAMED = "(unnamed)"
"""How the store names a rejected record that named no job (``(unnamed)@PARTITION:OFFSET``)."""
_TOPIC_NAMES = frozenset(str(topic) for topic in Topic)


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

    def __init__(self, prefix: str, *, now: Callable[[], datetime] | None = None) -> None:
        self.prefix = prefix
        self.now = now or SystemClock().now
        """The reader's clock, which a node's health is counted to."""
        self.lifecycle = reader_conf(os.environ)
        self.latest: dict[Topic, dict[str, Record]] = {topic: {} for topic in LATEST_TOPICS}
        self.heartbeats: dict[str, NodeHeartbeat] = {}
        """Each real node's newest heartbeat (``nodes`` keeps the newest record only)."""
        self._pods = PodFold()
        self.pods: dict[str, PodRow] = self._pods.rows
        self.gone_pods: dict[str, PodRow] = self._pods.gone
        """The last incarnation deleted of each pod not created again (``logs --previous``)."""
        self.reservation = ReservationView()
        self.cleared = ClearedRejections()
        """The rejections that named no job a user cleared: never kept."""
        self.touched: set[str] = set()
        self.records = 0
        self.skipped: Counter[Topic] = Counter()
        """Records per topic that no contract decodes: skipped, so they hide nothing."""
        self._codecs: dict[Topic, TopicCodec[Event]] = {}
        self._topics: dict[str, Topic | None] = {}

    def decode(self, topic: Topic, value: bytes | None) -> Event | None:
        """The newest event of a value of ``topic``: the last of a record of several.

        ``None`` for a record this reader cannot read.
        """
        events = self.events(topic, value)
        return events[-1] if events else None

    def events(self, topic: Topic, value: bytes | None) -> tuple[Event, ...]:
        """The events of a value of ``topic``; none for a record this reader cannot read."""
        codec = self._codecs.get(topic)
        if codec is None:
            codec = self._codecs[topic] = TopicCodec[Event](TOPIC_SPECS[topic].union)
        decoded = codec.decode_all(value)
        return () if isinstance(decoded, Unknown | Poison) else decoded

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
        events = self.events(topic, record.value)
        if not events:
            self.skipped[topic] += 1
            return
        for event in events:
            if isinstance(event, NodeHeartbeat):
                last = self.heartbeats.get(event.name)
                if last is None or event.at >= last.at:
                    self.heartbeats[event.name] = event
            elif isinstance(event, NodeRemoved):
                self.heartbeats.pop(event.name, None)
        if topic is Topic.JOBS_REJECTED and self._clearing(events):
            return
        if topic in LATEST_TOPICS:
            key = record.key.decode("utf-8", "replace") if record.key else ""
            if not key:
                key = f"{UNNAMED}@{record.partition}:{record.offset}"
            newest = events[-1]
            if isinstance(newest, JobAdmitted) and not self._replaces_spec(key, newest):
                return
            self.latest[topic][key] = record
            self.touched.add(key)
            return
        for event in events:
            if topic is Topic.RESERVATIONS:
                self.reservation.apply(event)
            elif topic in POD_TOPICS and (pod := self._pods.apply(event)) is not None:
                self.touched.add(pod)

    def _clearing(self, events: Sequence[Event]) -> bool:
        """Fold the clears among ``events``; whether the record is one or is cleared."""
        newest = events[-1]
        if isinstance(newest, JobRejected):
            return self.cleared.clears(newest)
        for event in events:
            if isinstance(event, RejectionsCleared):
                self.cleared.apply(event)
        kept = self.latest[Topic.JOBS_REJECTED]
        for key in [key for key in kept if key.startswith(UNNAMED)]:
            rejected = self.decode(Topic.JOBS_REJECTED, kept[key].value)
            if isinstance(rejected, JobRejected) and self.cleared.clears(rejected):
                del kept[key]
                self.touched.add(key)
        return True

    def _replaces_spec(self, key: str, admitted: JobAdmitted) -> bool:
        """Whether ``admitted`` becomes the job's spec (``vcbus.core.views.jobs.replaces_spec``).

        The spec the job has is the newest kept admission's, unless the job was deleted
        since (its newest status is ``JobDeleted``).
        """
        if key not in self.latest[Topic.JOBS_ADMITTED]:
            return True
        return replaces_spec(self.accepted(key), admitted)

    def accepted(self, key: str) -> JobAdmitted | None:
        """The admission whose spec job ``key`` has (``None``: no such job, or deleted).

        A refused update never replaces it (:func:`~vcbus.core.views.jobs.replaces_spec`).
        """
        if isinstance(self.get(Topic.JOBS_STATUS, key), JobDeleted):
            return None
        admitted = self.get(Topic.JOBS_ADMITTED, key)
        return admitted if isinstance(admitted, JobAdmitted) else None

    def node_health(self, name: str) -> NodeHealth:
        """Node ``name``'s health now: Ready or NotReady, its heartbeat's age."""
        return node_health(self.heartbeats.get(name), self.now(), self.lifecycle)

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

    With ``keys``, job-keyed topics are read on those jobs' partitions only (docs/design.md#topics:
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
    now: Callable[[], datetime] | None = None,
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
        now: the reader's clock (the system's when not given).

    Returns:
        The store, caught up with the topics' ends as they were at the start.
    """
    await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
    store = StatusStore(settings.topic_prefix, now=now)
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


# -- the read model over the store: a PodGroup's phase, why a job waits -------------------


def pending_reasons(store: StatusStore, key: str) -> list[Reason]:
    """Every reason a job waits, highest-ranked first (:func:`reason_candidates`)."""
    status = store.get(Topic.PODGROUPS_STATUS, key)
    allocator = store.get(Topic.PODGROUPS_CONDITIONS, key)
    job = store.get(Topic.JOBS_STATUS, key)
    return reason_candidates(
        podgroup=status.conditions if isinstance(status, PodGroupPhaseChanged) else (),
        allocator=allocator.conditions if isinstance(allocator, PodGroupConditionsChanged) else (),
        job=job.conditions if isinstance(job, JobStatusChanged) else (),
    )


def job_view(store: StatusStore, key: str, status: JobStatusChanged | None = None) -> JobView:
    """The job as the read model folds it (:class:`~vcbus.core.views.jobs.JobFold`).

    Folded from the newest record of each of its topics: its PodGroup, the PodGroup's
    phase, the allocator's conditions and ``status`` (the job's own, when given).
    """
    fold = JobFold()
    for topic in (Topic.PODGROUPS, Topic.PODGROUPS_STATUS, Topic.PODGROUPS_CONDITIONS):
        if (event := store.get(topic, key)) is not None:
            fold.apply(event)
    if status is not None:
        fold.apply(status)
    return fold.jobs.get(key) or JobView(key)


def job_trace_id(store: StatusStore, key: str, status: JobStatusChanged | None) -> str:
    """The trace id shown for a job: its newest status's, or its accepted admission's.

    A status that says an update was refused carries the refused submission's trace: the
    job's is then its accepted admission's (:func:`~vcbus.core.views.jobs.update_refusal`).
    """
    if status is not None and update_refusal(status) is None:
        return status.trace_id or store.trace_id(Topic.JOBS_STATUS, key)
    return store.trace_id(Topic.JOBS_ADMITTED, key)


def podgroup_phase_of(store: StatusStore, key: str) -> str:
    """The phase of the job's PodGroup as shown (:func:`vcbus.core.views.jobs.podgroup_phase`)."""
    return job_view(store, key).podgroup_phase


def reason_of(store: StatusStore, key: str, status: JobStatusChanged) -> Reason | None:
    """Why the job is where it is (:meth:`vcbus.core.views.jobs.JobView.reason`)."""
    return job_view(store, key, status).reason()
