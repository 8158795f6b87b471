"""Table: a view every replica builds from whole topics (no group), like a GlobalKTable.

Admission follows ``queues`` this way; the scheduling services follow every state topic.
A table reports when it has caught up with the end of its topics as they were at start,
so a service can wait for it before acting. A record no contract decodes, or one the view
cannot apply (its fold raised), is skipped and, when the follower is given ``dead_letter``,
handed to it (the service sends it to its ``.DLT`` topic); a record of an unknown event
type (a newer writer) is only skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

import structlog

from vcbus.contracts._base import Event, tag_of
from vcbus.contracts.topics import TOPIC_SPECS, Topic
from vcbus.core.bus.batch import single
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown
from vcbus.core.bus.envelope import HEADER_EVENT_TYPE
from vcbus.core.bus.protocol import Bus, Consumer
from vcbus.core.bus.records import Record, TopicPartition

log = structlog.get_logger("vcbus.table")

Apply = Callable[[Event, Record], None]
DeadLetter = Callable[[Record, str], Awaitable[None]]
"""Takes a record no contract decodes, and why."""


class Table:
    """Applies every event of ``topics`` to a view through ``apply``."""

    def __init__(
        self,
        name: str,
        topics: Sequence[Topic],
        apply: Apply,
        *,
        only: Sequence[type[Event]] | None = None,
    ) -> None:
        """A table of ``topics`` folded by ``apply``.

        ``only``: the event types the view folds; a record whose ``event-type`` header
        names another is passed over undecoded (the cluster reads ``pods`` for deletions
        and skips every ``PodCreated``, the bulk of the topic).
        """
        self.name = name
        self.topics = tuple(topics)
        self._only = None if only is None else frozenset(tag_of(kind).encode() for kind in only)
        self._applies: list[Apply] = [apply]
        self.caught_up = asyncio.Event()
        self.changed = asyncio.Event()
        self.records_read = 0
        self.folding = asyncio.Lock()
        self._consumer: Consumer | None = None
        self._positions: dict[TopicPartition, int] = {}
        """Held while a batch is folded; whoever reads the view from another thread holds it."""

    def add_listener(self, apply: Apply) -> None:
        """Also fold every event into ``apply`` (a metric that follows the same topics)."""
        self._applies.append(apply)

    async def follow(
        self,
        bus: Bus,
        *,
        prefix: str,
        client_id: str,
        max_records: int = 2000,
        dead_letter: DeadLetter | None = None,
    ) -> None:
        """Read the topics from the beginning, forever; set ``caught_up`` once at the end.

        Records no contract decodes, and records whose fold raised, go to ``dead_letter``
        when given; the view goes on.
        """
        names = [f"{prefix}{topic}" for topic in self.topics]
        codecs = {
            f"{prefix}{topic}": TopicCodec[Event](TOPIC_SPECS[topic].union) for topic in self.topics
        }
        consumer = bus.consumer(names, group=None, client_id=f"{client_id}-{self.name}")
        await consumer.start()
        try:
            ends = await consumer.end_offsets(sorted(consumer.assignment()))
            positions: dict[TopicPartition, int] = dict.fromkeys(ends, 0)
            self._consumer, self._positions = consumer, positions
            if all(end == 0 for end in ends.values()):
                self.caught_up.set()
            while True:
                records = await consumer.getmany(timeout=0.5, max_records=max_records)
                async with self.folding:
                    await self._fold(records, positions, codecs, dead_letter)
                if records:
                    self.changed.set()
                if not self.caught_up.is_set() and all(
                    positions[tp] >= end for tp, end in ends.items()
                ):
                    self.caught_up.set()
        finally:
            await consumer.stop()

    async def _fold(
        self,
        records: Sequence[Record],
        positions: dict[TopicPartition, int],
        codecs: Mapping[str, TopicCodec[Event]],
        dead_letter: DeadLetter | None,
    ) -> None:
        for record in records:
            positions[record.tp] = record.offset + 1
            if self._only is not None:
                named = record.header(HEADER_EVENT_TYPE)
                if named is not None and named not in self._only:
                    continue
            decoded = codecs[record.topic].decode_all(record.value)
            if isinstance(decoded, Unknown | Poison):
                log.info(
                    "table_record_skipped",
                    table=self.name,
                    topic=record.topic,
                    offset=record.offset,
                )
                if isinstance(decoded, Poison) and dead_letter is not None:
                    await dead_letter(record, decoded.error)
                continue
            folded = True
            for event in decoded:
                try:
                    for apply in self._applies:
                        apply(event, record)
                except Exception as exc:  # noqa: BLE001 - a bad record must not stop the view
                    log.error(
                        "table_record_failed",
                        table=self.name,
                        topic=record.topic,
                        offset=record.offset,
                        error=repr(exc),
                    )
                    folded = False
                    if dead_letter is not None:
                        letter = record if len(decoded) == 1 else single(record, event)
                        await dead_letter(letter, f"{self.name} could not apply it: {exc!r}")
            self.records_read += folded

    async def read_to_end(self, timeout: float) -> bool:
        """Wait until the table has folded what its topics hold now, at most ``timeout`` s.

        Read-your-writes for a decision that depends on a record written a moment ago (a
        queue created just before a job that names it). True when caught up.
        """
        consumer = self._consumer
        if consumer is None:
            return False
        ends = await consumer.end_offsets(sorted(self._positions))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while any(self._positions.get(tp, 0) < end for tp, end in ends.items()):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    async def wait_caught_up(self) -> None:
        """Wait until the table has read what its topics held when it started."""
        await self.caught_up.wait()
