"""A consumer that reads nothing for a while asks the broker to hold its fetches longer.

Tansu answers an empty fetch only when its wait ends, so a quiet system's consumers cost
the broker a fetch every ``fetch_max_wait_ms``; once quiet for ``idle_after_ms`` they wait
``idle_fetch_max_wait_ms`` instead, and the first record brings them back at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from vcbus.core.bus.kafka import AioKafkaBus, KafkaProducer
from vcbus.core.bus.kafka_consumer import KafkaConsumer
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord, Record, TopicConfig, TopicPartition


async def _read(consumer: KafkaConsumer, want: int) -> list[Record]:
    got: list[Record] = []
    async with asyncio.timeout(30):
        while len(got) < want:
            got.extend(await consumer.getmany(timeout=0.5, max_records=100))
    return got


@contextlib.asynccontextmanager
async def _consumer(
    bootstrap: str, topic: str, *, idle_wait_ms: int, idle_after_ms: int
) -> AsyncIterator[tuple[KafkaConsumer, KafkaProducer]]:
    """A started consumer of ``topic`` (fetch wait 25 ms) and a producer to it."""
    bus = AioKafkaBus(
        KafkaSettings(
            bootstrap_servers=bootstrap,
            fetch_max_wait_ms=25,
            idle_fetch_max_wait_ms=idle_wait_ms,
            idle_after_ms=idle_after_ms,
        )
    )
    await bus.ensure_topics([TopicConfig(topic, 1)])
    producer = bus.producer(client_id=topic)
    consumer = bus.consumer(
        [topic], group=None, client_id=topic, partitions=[TopicPartition(topic, 0)]
    )
    await consumer.start()
    try:
        yield consumer, producer
    finally:
        await consumer.stop()
        await producer.stop()


async def test_a_quiet_consumer_waits_longer_per_fetch_until_its_next_record(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    topic = f"{topic_prefix}idle"
    async with _consumer(kafka_bootstrap, topic, idle_wait_ms=300, idle_after_ms=200) as (
        consumer,
        producer,
    ):
        await producer.send([OutRecord(topic, b"k", b"1")])
        assert [r.value for r in await _read(consumer, 1)] == [b"1"]
        assert consumer.fetch_wait_ms == 25

        loop = asyncio.get_running_loop()
        quiet_until = loop.time() + 0.6
        while loop.time() < quiet_until:
            assert await consumer.getmany(timeout=0.1, max_records=100) == []
        assert consumer.fetch_wait_ms == 300

        await producer.send([OutRecord(topic, b"k", b"2")])
        assert [r.value for r in await _read(consumer, 1)] == [b"2"]
        assert consumer.fetch_wait_ms == 25


async def test_a_consumer_never_slows_when_the_idle_wait_is_not_longer(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    topic = f"{topic_prefix}busy"
    async with _consumer(kafka_bootstrap, topic, idle_wait_ms=0, idle_after_ms=0) as (
        consumer,
        _,
    ):
        for _ in range(3):
            assert await consumer.getmany(timeout=0.1, max_records=100) == []
        assert consumer.fetch_wait_ms == 25
