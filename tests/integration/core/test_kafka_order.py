"""Records of co-partitioned topics come out in the order they were produced, not topic by topic.

A redelivered batch holds ``pods.status`` and ``podgroups.status`` records of one job at
once; handled topic by topic, an effect (the recreated PodGroup's ``Inqueue``) came before
its cause (the pod failure that restarted the job). Found by the chaos run.
"""

from __future__ import annotations

import asyncio

from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord, Record, TopicConfig, TopicPartition


async def test_records_of_two_topics_come_in_produced_order_when_read_together(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))
    first, second = f"{topic_prefix}a.status", f"{topic_prefix}b.status"
    await bus.ensure_topics([TopicConfig(first, 1), TopicConfig(second, 1)])
    producer = bus.producer(client_id="order")
    try:
        for topic, value in ((second, b"1"), (first, b"2"), (second, b"3"), (first, b"4")):
            await producer.send([OutRecord(topic, b"k", value)])
            await asyncio.sleep(0.02)  # distinct millisecond timestamps
    finally:
        await producer.stop()
    partitions = [TopicPartition(first, 0), TopicPartition(second, 0)]
    consumer = bus.consumer([first, second], group=None, client_id="order", partitions=partitions)
    await consumer.start()
    got: list[Record] = []
    try:
        async with asyncio.timeout(30):
            while len(got) < 4:
                got.extend(await consumer.getmany(timeout=1.0, max_records=100))
                if len(got) < 4:
                    got.clear()  # read again from the start, to have all four in one batch
                    await consumer.stop()
                    consumer = bus.consumer(
                        [first, second], group=None, client_id="order", partitions=partitions
                    )
                    await consumer.start()
    finally:
        await consumer.stop()
    assert [record.value for record in got] == [b"1", b"2", b"3", b"4"]
