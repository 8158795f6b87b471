"""TopicTail: follow topics from their start in the background, and wait for what arrives."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime

import msgspec

from vcbus.contracts import TOPIC_SPECS, Event, Topic
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import Record

WAIT = 30.0
"""Bound of every wait: long enough for a rebalance on a loaded machine, never a timing claim."""


class TopicTail:
    """Records of some topics as read so far (no group: every partition from offset 0)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.records: list[Record] = []
        self._codecs: dict[str, TopicCodec[Event]] = {}
        self._changed = asyncio.Condition()

    def of(self, topic: Topic) -> list[Record]:
        """The records of one topic (without prefix), in the order read."""
        name = f"{self.prefix}{topic}"
        return [record for record in self.records if record.topic == name]

    def events(self, topic: Topic) -> list[Event]:
        """The events of one topic, decoded, duplicates included, in the order read."""
        return [event for _, event in self.pairs(topic)]

    def pairs(self, topic: Topic) -> list[tuple[Record, Event]]:
        """Each event of one topic with the record that carried it, in the order read."""
        codec = self._codecs.setdefault(topic, TopicCodec(TOPIC_SPECS[topic].union))
        out: list[tuple[Record, Event]] = []
        for record in self.of(topic):
            decoded = codec.decode_all(record.value)
            assert not isinstance(decoded, Unknown | Poison), (record, decoded)
            out.extend((record, event) for event in decoded)
        return out

    def unique(self, topic: Topic) -> list[Event]:
        """The events of one topic with redelivered duplicates (same event id) dropped.

        Raises ``AssertionError`` when two records share an id but not their content: a
        duplicate must be the same event (see :func:`same_event`).
        """
        first: dict[str, Event] = {}
        for event in self.events(topic):
            seen = first.setdefault(event.event_id, event)
            assert same_event(seen, event), f"one event id, two events:\n{seen}\n{event}"
        return list(first.values())

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
        """Wait until ``predicate()`` holds after some record arrived (or the bound passes)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(predicate)
        return predicate()

    async def _add(self, records: Sequence[Record]) -> None:
        async with self._changed:
            self.records.extend(records)
            self._changed.notify_all()


@contextlib.asynccontextmanager
async def tailing(bus: Bus, prefix: str, topics: Sequence[Topic]) -> AsyncIterator[TopicTail]:
    """Follow ``topics`` (created already) for the block."""
    tail = TopicTail(prefix)
    consumer = bus.consumer(
        [f"{prefix}{topic}" for topic in topics], group=None, client_id="test-tail"
    )
    await consumer.start()

    async def follow() -> None:
        while True:
            records = await consumer.getmany(timeout=0.1, max_records=1000)
            if records:
                await tail._add(records)

    task = asyncio.create_task(follow())
    try:
        yield tail
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await consumer.stop()


def same_event(a: Event, b: Event) -> bool:
    """Whether two events are the same fact: equal but for the times they carry.

    An input redelivered after a crash is handled again later: its outputs keep their ids
    and content, but ``occurred_at`` and times taken from the clock (a created pod's
    ``creationTimestamp``) are the new handling's.
    """
    keep = (datetime,)
    return _timeless(msgspec.to_builtins(a, builtin_types=keep)) == _timeless(
        msgspec.to_builtins(b, builtin_types=keep)
    )


def _timeless(value: object) -> object:
    if isinstance(value, datetime):
        return None
    if isinstance(value, dict):
        return {key: _timeless(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_timeless(item) for item in value]
    return value
