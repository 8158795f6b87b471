"""InMemoryBus: per-partition logs, consumer groups and committed offsets, on one event loop.

It backs unit tests and deterministic simulation. Partitioning is Kafka's (murmur2), group
assignment is co-partitioned (a member owns the same partition numbers in every topic), sticky
and balanced over sorted partition numbers and members, and nothing sleeps: a
consumer with nothing to read waits until a record is appended or its timeout passes.

Timeouts are the event loop's by default. Given a clock (``vcbus.core.runtime.clock``), they are
that clock's: with a virtual clock, a ``getmany`` timeout passes only when the clock is
advanced, which is how ``vcbus simulate`` runs every service deterministically.

Given ``compact=True`` (``vcbus simulate``'s long replays), a topic created with
``cleanup.policy: compact`` keeps, as on Kafka, only the newest record of each key, but
only below every reader's position: a record is dropped once a newer one of its key exists
and every assigned consumer and every group's committed offset of its partition is past
it, so no running consumer misses a record, and one that starts later reads the compacted
log. Offsets never change.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from vcbus.contracts.limits import MAX_RECORD_BYTES
from vcbus.core.bus.assignor import plan as assignment_plan
from vcbus.core.bus.errors import CommitError, RecordTooLargeError
from vcbus.core.bus.partitioner import partition_for
from vcbus.core.bus.protocol import RebalanceCallback
from vcbus.core.bus.records import OutRecord, Record, TopicConfig, TopicPartition, oversized

DEFAULT_PARTITIONS = 4
COMPACT_EVERY = 1024
"""Records appended to a compacted partition between two compactions, at least: a
compaction walks the partition once, so its cost is spread over as many appends as the
records it kept."""


class WaitClock(Protocol):
    """What the bus needs of a clock: waiting for an event with a timeout in its time."""

    async def wait_for(self, event: asyncio.Event, timeout: float, *, idle: bool = False) -> bool:
        """Wait until ``event`` is set or ``timeout`` seconds passed; whether it is set.

        ``idle``: the timeout only repeats the wait (a poll that found nothing), so a
        virtual clock may skip its repeats until something else is due.
        """
        ...


@dataclass(slots=True)
class _Partition:
    """One partition's log: its records in offset order, with gaps once compacted."""

    records: list[Record] = field(default_factory=list)
    end: int = 0
    """The offset the next record gets (Kafka's log end offset)."""
    latest: dict[bytes, int] | None = None
    """Per key, its newest record's offset; None when the topic is not compacted."""
    due: int = COMPACT_EVERY
    """Records held at which the partition is compacted next."""

    def index(self, offset: int) -> int:
        """Where the first record at or after ``offset`` sits in ``records``."""
        if len(self.records) == self.end:
            return offset
        return bisect.bisect_left(self.records, offset, key=_offset)

    def read(self, offset: int, limit: int) -> list[Record]:
        """Up to ``limit`` records from ``offset`` on."""
        start = self.index(offset)
        return self.records[start : start + limit]


def _offset(record: Record) -> int:
    return record.offset


def _compacted(configs: Mapping[str, str]) -> bool:
    """Whether a topic's configs make it compacted (``cleanup.policy`` names ``compact``)."""
    return "compact" in configs.get("cleanup.policy", "").split(",")


@dataclass
class _Group:
    members: list[MemoryConsumer] = field(default_factory=list)
    committed: dict[TopicPartition, int] = field(default_factory=dict)


class InMemoryBus:
    """A Kafka-shaped bus in memory: same partitioning, groups, manual commits.

    ``clock``, when given, measures consumer timeouts (a virtual clock for simulation).
    ``max_record_bytes`` is the broker's ``message.max.bytes``: producers refuse a larger
    record (Kafka's default, 1 MiB, unless a test models a broker set lower).
    ``compact``: compact the topics created with ``cleanup.policy: compact`` below every
    reader's position, once a partition has grown by ``compact_every`` records (at least)
    since its last compaction; otherwise every record is kept.
    """

    def __init__(
        self,
        *,
        default_partitions: int = DEFAULT_PARTITIONS,
        clock: WaitClock | None = None,
        max_record_bytes: int = MAX_RECORD_BYTES,
        compact: bool = False,
        compact_every: int = COMPACT_EVERY,
    ) -> None:
        self.max_record_bytes = max_record_bytes
        self._default_partitions = default_partitions
        self._clock = clock
        self._compact = compact
        self._compact_every = max(1, compact_every)
        self._logs: dict[str, list[_Partition]] = {}
        self._groups: dict[str, _Group] = {}
        self._appended = asyncio.Event()
        self._consumers: list[MemoryConsumer] = []
        self._ids = itertools.count()

    # -- topics ---------------------------------------------------------------------------
    async def ensure_topics(self, topics: Sequence[TopicConfig]) -> None:
        """Create the topics that do not exist yet."""
        for topic in topics:
            if topic.name in self._logs:
                continue
            compacted = self._compact and _compacted(topic.configs)
            self._logs[topic.name] = [
                _Partition(latest={} if compacted else None, due=self._compact_every)
                for _ in range(topic.partitions)
            ]

    async def partitions(self, topic: str) -> int:
        """Number of partitions of a topic (created with the default count if unknown)."""
        return len(self._log(topic))

    def _log(self, topic: str) -> list[_Partition]:
        if topic not in self._logs:
            self._logs[topic] = [_Partition() for _ in range(self._default_partitions)]
        return self._logs[topic]

    def records(self, topic: str) -> list[Record]:
        """Every record a topic holds, partition by partition (for tests and simulation)."""
        return [record for log in self._log(topic) for record in log.records]

    def topics(self) -> list[str]:
        """Names of the topics that exist."""
        return sorted(self._logs)

    # -- producing -------------------------------------------------------------------------
    def append(self, out: OutRecord) -> Record:
        """Append one record to its partition and wake waiting consumers."""
        log = self._log(out.topic)
        if out.partition is not None:
            partition = out.partition
        elif out.key is not None:
            partition = partition_for(out.key, len(log))
        else:
            partition = next(self._ids) % len(log)
        held = log[partition]
        record = Record(out.topic, partition, held.end, out.key, out.value, out.headers)
        held.records.append(record)
        held.end += 1
        if (latest := held.latest) is not None:
            if out.key is not None:
                latest[out.key] = record.offset
            if len(held.records) >= held.due:
                self._compact_partition(TopicPartition(out.topic, partition), held, latest)
        self._appended.set()
        return record

    def _compact_partition(
        self, tp: TopicPartition, held: _Partition, latest: Mapping[bytes, int]
    ) -> None:
        """Drop the records a newer one of their key supersedes, below every reader.

        The floor is the lowest offset an assigned consumer or a group's commit of ``tp``
        still reads from; records from it on stay, so no running consumer misses one.
        Tombstones stay (they are the newest of their key). The next compaction is due
        when the partition has grown by at least as many records as it kept.
        """
        floor = held.end
        for consumer in self._consumers:
            position = consumer._positions.get(tp)
            if position is not None:
                floor = min(floor, position)
        for group in self._groups.values():
            committed = group.committed.get(tp)
            if committed is not None:
                floor = min(floor, committed)
        held.records = [
            record
            for record in held.records
            if record.offset >= floor or record.key is None or latest[record.key] == record.offset
        ]
        held.due = len(held.records) + max(self._compact_every, len(held.records))

    def producer(self, *, client_id: str) -> MemoryProducer:
        """A producer writing to this bus."""
        return MemoryProducer(self)

    # -- consuming -------------------------------------------------------------------------
    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        client_id: str,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        partitions: Sequence[TopicPartition] | None = None,
        membership_only: bool = False,
    ) -> MemoryConsumer:
        """A consumer of ``topics`` in ``group`` (every partition when ``group`` is None).

        ``membership_only`` changes nothing here: reading memory costs no broker.
        """
        return MemoryConsumer(
            self,
            tuple(topics),
            group=group,
            member_id=f"{client_id}-{next(self._ids)}",
            on_assigned=on_assigned,
            on_revoked=on_revoked,
            fixed=tuple(partitions) if partitions is not None else None,
        )

    def committed(self, group: str) -> dict[TopicPartition, int]:
        """The committed offsets of a group."""
        return dict(self._groups.get(group, _Group()).committed)

    async def _join(self, consumer: MemoryConsumer) -> None:
        self._consumers.append(consumer)
        if consumer.group is None:
            await consumer._assign(self._all_partitions(consumer.topics, consumer.fixed))
            return
        group = self._groups.setdefault(consumer.group, _Group())
        group.members.append(consumer)
        await self._rebalance(group)

    async def _leave(self, consumer: MemoryConsumer) -> None:
        if consumer in self._consumers:
            self._consumers.remove(consumer)
        if consumer.group is None:
            return
        group = self._groups[consumer.group]
        if consumer in group.members:
            group.members.remove(consumer)
            await self._rebalance(group)

    def _all_partitions(
        self, topics: Sequence[str], fixed: Sequence[TopicPartition] | None
    ) -> list[TopicPartition]:
        if fixed is not None:
            return sorted(fixed)
        return sorted(
            TopicPartition(topic, p) for topic in topics for p in range(len(self._log(topic)))
        )

    async def _rebalance(self, group: _Group) -> None:
        """Co-partitioned, sticky, balanced assignment (``vcbus.core.bus.assignor.plan``)."""
        members = sorted(group.members, key=lambda member: member.member_id)
        topics = sorted({topic for member in members for topic in member.topics})
        partitions = self._all_partitions(topics, None)
        owned = {m.member_id: sorted({tp.partition for tp in m.assignment()}) for m in members}
        shares = assignment_plan({tp.partition for tp in partitions}, owned)
        plan: dict[str, list[TopicPartition]] = {
            member.member_id: [
                tp
                for tp in partitions
                if tp.partition in shares[member.member_id] and tp.topic in member.topics
            ]
            for member in members
        }
        for member in members:
            await member._revoke(frozenset(member.assignment()) - set(plan[member.member_id]))
        for member in members:
            await member._assign(
                [tp for tp in plan[member.member_id] if tp not in member.assignment()]
            )

    def _committed_offset(self, group: str | None, tp: TopicPartition) -> int:
        if group is None:
            return 0
        return self._groups[group].committed.get(tp, 0)

    def _commit(self, consumer: MemoryConsumer, offsets: Mapping[TopicPartition, int]) -> None:
        if consumer.group is None:
            return
        group = self._groups[consumer.group]
        for tp, offset in offsets.items():
            if tp not in consumer.assignment():
                raise CommitError(f"{tp} is not assigned to {consumer.member_id}")
            group.committed[tp] = offset

    async def _wait_for_records(self, timeout: float) -> None:
        self._appended.clear()
        if self._clock is not None:
            await self._clock.wait_for(self._appended, timeout, idle=True)
            return
        try:
            async with asyncio.timeout(timeout):
                await self._appended.wait()
        except TimeoutError:
            return

    def is_idle(self) -> bool:
        """True when every started consumer waits for records and none is available to it."""
        return all(
            consumer._waiting and not consumer._has_records() for consumer in self._consumers
        )

    async def drain_until_idle(self, *, max_rounds: int = 100_000) -> None:
        """Let consumers run until every one waits with nothing left to read."""
        for _ in range(max_rounds):
            await asyncio.sleep(0)
            if self.is_idle():
                await asyncio.sleep(0)
                if self.is_idle():
                    return
        raise RuntimeError("the in-memory bus did not become idle")


class MemoryProducer:
    """Producer of an :class:`InMemoryBus`: appends synchronously, so every send is acked."""

    def __init__(self, bus: InMemoryBus) -> None:
        self._bus = bus

    async def send(self, records: Sequence[OutRecord]) -> None:
        """Append ``records`` in order; refuse one over 1 MiB as Kafka does by default.

        Raises:
            RecordTooLargeError: a record is over the limit; the records before it are
                appended, it and those after it are not.
        """
        for record in records:
            reason = oversized(record, self._bus.max_record_bytes)
            if reason is not None:
                raise RecordTooLargeError(reason, record=record)
            self._bus.append(record)

    async def stop(self) -> None:
        """Nothing to flush."""


class MemoryConsumer:
    """Consumer of an :class:`InMemoryBus`."""

    def __init__(
        self,
        bus: InMemoryBus,
        topics: tuple[str, ...],
        *,
        group: str | None,
        member_id: str,
        on_assigned: RebalanceCallback | None,
        on_revoked: RebalanceCallback | None,
        fixed: tuple[TopicPartition, ...] | None,
    ) -> None:
        self._bus = bus
        self.topics = topics
        self.group = group
        self.member_id = member_id
        self.fixed = fixed
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self._positions: dict[TopicPartition, int] = {}
        self._waiting = False
        self._started = False

    async def start(self) -> None:
        """Join the group and receive an assignment."""
        self._started = True
        await self._bus._join(self)

    async def _assign(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            self._positions[tp] = self._bus._committed_offset(self.group, tp)
        if self._on_assigned is not None and partitions:
            await self._on_assigned(frozenset(partitions))

    async def _revoke(self, partitions: frozenset[TopicPartition]) -> None:
        # as in Kafka, the callback runs while the partitions are still assigned: it may
        # commit what it handled
        if self._on_revoked is not None and partitions:
            await self._on_revoked(partitions)
        for tp in partitions:
            self._positions.pop(tp, None)

    def _has_records(self) -> bool:
        logs = self._bus._logs
        return any(
            position < logs[tp.topic][tp.partition].end for tp, position in self._positions.items()
        )

    async def getmany(self, timeout: float, max_records: int) -> list[Record]:
        """Return available records of the assigned partitions, waiting up to ``timeout``."""
        self._waiting = True
        try:
            if not self._has_records():
                await self._bus._wait_for_records(timeout)
            out: list[Record] = []
            for tp in sorted(self._positions):
                take = self._bus._logs[tp.topic][tp.partition].read(
                    self._positions[tp], max_records - len(out)
                )
                if take:
                    out.extend(take)
                    self._positions[tp] = take[-1].offset + 1
                if len(out) >= max_records:
                    break
            return out
        finally:
            self._waiting = False

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit offsets for the group."""
        self._bus._commit(self, offsets)

    def membership_valid_until(self) -> float | None:
        """Membership of an in-memory group never lapses."""
        return None

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned."""
        return frozenset(self._positions)

    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition."""
        return {tp: self._bus._log(tp.topic)[tp.partition].end for tp in partitions}

    async def stop(self) -> None:
        """Leave the group (uncommitted records are read again by the next member)."""
        if self._started:
            self._started = False
            await self._bus._leave(self)
