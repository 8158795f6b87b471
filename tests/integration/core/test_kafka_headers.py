"""A header without a value, as another Kafka client may send it, is read as empty bytes.

The bus once copied each header value with ``bytes(value)``, which raises on ``None``: one
such record from an outside producer stopped the consumer that read it.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaProducer

from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import Record, TopicConfig, TopicPartition


async def test_a_header_without_a_value_is_read_as_empty_bytes(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))
    topic = f"{topic_prefix}null-header"
    await bus.ensure_topics([TopicConfig(topic, 1)])
    outside = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    try:
        await outside.start()
        await outside.send_and_wait(
            topic, b"v", key=b"k", headers=[("empty", None), ("event-type", b"x.v1")]
        )
    finally:
        await outside.stop()
    consumer = bus.consumer(
        [topic], group=None, client_id="headers", partitions=[TopicPartition(topic, 0)]
    )
    await consumer.start()
    got: list[Record] = []
    try:
        async with asyncio.timeout(30):
            while not got:
                got = await consumer.getmany(timeout=0.5, max_records=10)
    finally:
        await consumer.stop()
    (record,) = got
    assert record.headers == (("empty", b""), ("event-type", b"x.v1"))
    assert record.header("empty") == b""
