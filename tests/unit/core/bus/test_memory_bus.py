"""The bus contract on the in-memory bus."""

from __future__ import annotations

import pytest

from tests.support.bus_contract import BusContract
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus, MemoryConsumer
from vcbus.core.bus.records import OutRecord, TopicConfig, TopicPartition
from vcbus.core.runtime.settings import Settings


class TestInMemoryBus(BusContract):
    @pytest.fixture
    def bus(self) -> InMemoryBus:
        return InMemoryBus()

    @pytest.fixture
    def settings(self, topic_prefix: str) -> Settings:
        return Settings(
            kafka=KafkaSettings(bootstrap_servers="memory"),
            topic_prefix=topic_prefix,
            poll_timeout=0.05,
        )


class TestCompactingInMemoryBus(TestInMemoryBus):
    """The contract holds with compaction on, compacting at every append."""

    @pytest.fixture
    def bus(self) -> InMemoryBus:
        return InMemoryBus(compact=True, compact_every=1)


COMPACTED = TopicConfig("changelog", 1, configs={"cleanup.policy": "compact"})
KEPT = TopicConfig("history", 1, configs={"retention.ms": "-1"})
TP = TopicPartition("changelog", 0)


async def _bus(*topics: TopicConfig) -> InMemoryBus:
    bus = InMemoryBus(compact=True, compact_every=4)
    await bus.ensure_topics(topics)
    return bus


def _send(bus: InMemoryBus, topic: str, *pairs: tuple[bytes, bytes | None]) -> None:
    for key, value in pairs:
        bus.append(OutRecord(topic, key, value, partition=0))


def _held(bus: InMemoryBus, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in bus.records(topic)]


async def _read_all(consumer: MemoryConsumer) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    while batch := await consumer.getmany(timeout=0, max_records=3):
        out.extend((r.offset, r.value) for r in batch)
    return out


UPDATES = [(b"a", b"a1"), (b"b", b"b1"), (b"a", b"a2"), (b"a", b"a3"), (b"b", None), (b"c", b"c1")]


async def test_superseded_records_are_dropped_once_every_consumer_passed_them():
    bus = await _bus(COMPACTED)
    reader = bus.consumer(["changelog"], group="g", client_id="r")
    await reader.start()
    _send(bus, "changelog", *UPDATES[:3])
    assert len(await _read_all(reader)) == 3
    await reader.commit({TP: 3})
    _send(bus, "changelog", *UPDATES[3:])
    assert await _read_all(reader) == [(3, b"a3"), (4, None), (5, b"c1")]
    await reader.commit({TP: 6})
    _send(bus, "changelog", (b"c", b"c2"), (b"d", b"d1"))
    # a1, a2, b1 and c1 are superseded and behind the reader; the tombstone of b is the
    # newest record of its key
    assert _held(bus, "changelog") == [
        (3, b"a", b"a3"),
        (4, b"b", None),
        (6, b"c", b"c2"),
        (7, b"d", b"d1"),
    ]
    assert await reader.end_offsets([TP]) == {TP: 8}
    assert await _read_all(reader) == [(6, b"c2"), (7, b"d1")]


async def test_a_lagging_consumer_still_reads_every_record():
    bus = await _bus(COMPACTED)
    fast = bus.consumer(["changelog"], group="fast", client_id="f")
    slow = bus.consumer(["changelog"], group="slow", client_id="s")
    await fast.start()
    await slow.start()
    _send(bus, "changelog", *UPDATES[:2])
    assert await _read_all(slow) == [(0, b"a1"), (1, b"b1")]
    for update in [*UPDATES[2:], (b"a", b"a4"), (b"a", b"a5")]:
        _send(bus, "changelog", update)
        await _read_all(fast)
    # a2, a3 and a4 are superseded, but the slow consumer has not read them yet
    assert [offset for offset, _, _ in _held(bus, "changelog")] == [2, 3, 4, 5, 6, 7]
    assert await _read_all(slow) == [
        (2, b"a2"),
        (3, b"a3"),
        (4, None),
        (5, b"c1"),
        (6, b"a4"),
        (7, b"a5"),
    ]


async def test_a_consumer_that_starts_later_reads_the_newest_record_per_key_at_its_offset():
    bus = await _bus(COMPACTED)
    first = bus.consumer(["changelog"], group="first", client_id="f")
    await first.start()
    for update in [*UPDATES, (b"a", b"a4"), (b"c", b"c2"), (b"d", b"d1")]:
        _send(bus, "changelog", update)
        await _read_all(first)
        await first.commit({TP: (await first.end_offsets([TP]))[TP]})
    late = bus.consumer(["changelog"], group="late", client_id="l")
    await late.start()
    assert await _read_all(late) == [(4, None), (6, b"a4"), (7, b"c2"), (8, b"d1")]
    assert await late.end_offsets([TP]) == {TP: 9}
    await late.commit({TP: 9})
    assert bus.committed("late") == {TP: 9}


async def test_topics_without_compaction_keep_every_record():
    bus = await _bus(COMPACTED, KEPT)
    reader = bus.consumer(["history"], group="g", client_id="r")
    await reader.start()
    _send(bus, "history", *UPDATES, *UPDATES)
    assert len(await _read_all(reader)) == 12
    await reader.commit({TopicPartition("history", 0): 12})
    _send(bus, "history", *UPDATES)
    assert [offset for offset, _, _ in _held(bus, "history")] == list(range(18))


async def test_without_compaction_on_the_compacted_topic_keeps_every_record():
    bus = InMemoryBus(compact_every=1)
    await bus.ensure_topics([COMPACTED])
    _send(bus, "changelog", *UPDATES, *UPDATES)
    assert len(bus.records("changelog")) == 12
