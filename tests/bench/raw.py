"""The raw broker, measured with a plain aiokafka producer and consumer (no vcbus code).

Two figures, on a topic of its own on the same broker as the pipeline:

- one hop: produce one record (``acks=all``), wait until the consumer has it; sequential,
  with a short pause between samples, so it is the unloaded latency of a hop;
- messages/s: produce ``count`` records as fast as the producer takes them while the
  consumer reads them, first send to last receipt.

The clients use the pipeline's own client settings (linger, fetch wait, batch size), so a
ratio against the pipeline measures what vcbus adds, not a different tuning. Producer and
consumer share one process (and so one core at most), like a service.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from shared.bus.kafka import KafkaSettings
from tests.bench.stats import summary_ms

HEADERS_LIKE_PIPELINE: Sequence[tuple[str, bytes]] = (
    ("event-type", b"pod.phase_changed.v1"),
    ("event-id", b"0f8fad5b-d9cb-469f-a165-70867728950e"),
    ("content-type", b"application/json"),
    ("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
)
"""Headers of the size every vcbus record carries."""


def _consumer_options(settings: KafkaSettings) -> dict[str, Any]:
    options: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
    }
    fetch_wait = getattr(settings, "fetch_max_wait_ms", None)
    if fetch_wait is not None:
        options["fetch_max_wait_ms"] = fetch_wait
    return options


async def _topic(settings: KafkaSettings, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


async def measure_raw(
    settings: KafkaSettings,
    *,
    payload_bytes: int,
    hops: int = 300,
    count: int = 20_000,
    partitions: int = 4,
    topic: str = "bench.raw",
) -> dict[str, Any]:
    """Measure one hop's latency and messages/s on the broker of ``settings``.

    Args:
        settings: the broker and the client tuning the services use.
        payload_bytes: the size of each record's value (the pipeline's mean).
        hops: how many sequential one-hop samples.
        count: how many records for the messages/s figure.
        partitions: partitions of the raw topic (as the pipeline's topics).
        topic: the raw topic's name.

    Returns:
        ``hop`` (count, p50_ms, p99_ms, max_ms), ``messages_per_s`` and the settings used.
    """
    await _topic(settings, topic, partitions)
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        acks="all",
        enable_idempotence=False,
        linger_ms=settings.linger_ms,
        max_batch_size=settings.max_batch_size,
        max_request_size=settings.max_batch_size * 8,
    )
    consumer = AIOKafkaConsumer(topic, **_consumer_options(settings))
    await producer.start()
    await consumer.start()
    payload = b"x" * payload_bytes
    headers = list(HEADERS_LIKE_PIPELINE)
    try:
        # warm up: connections, metadata, the first fetch
        for index in range(20):
            await (await producer.send(topic, payload, key=b"w%d" % index, headers=headers))
        received = 0
        while received < 20:
            batches = await consumer.getmany(timeout_ms=1000)
            received += sum(len(batch) for batch in batches.values())
        samples: list[float] = []
        for index in range(hops):
            await asyncio.sleep(0.002)
            started = time.perf_counter()
            await (await producer.send(topic, payload, key=b"h%d" % index, headers=headers))
            while not await consumer.getmany(timeout_ms=2000):
                pass
            samples.append(time.perf_counter() - started)

        async def produce() -> None:
            futures = [
                await producer.send(topic, payload, key=b"k%d" % (index % 512), headers=headers)
                for index in range(count)
            ]
            await asyncio.gather(*futures)

        async def consume() -> None:
            seen = 0
            while seen < count:
                batches = await consumer.getmany(timeout_ms=1000, max_records=5000)
                seen += sum(len(batch) for batch in batches.values())

        started = time.perf_counter()
        await asyncio.gather(produce(), consume())
        elapsed = time.perf_counter() - started
    finally:
        await consumer.stop()
        await producer.stop()
    return {
        "hop": summary_ms(samples),
        "messages_per_s": round(count / elapsed, 1),
        "messages": count,
        "payload_bytes": payload_bytes,
        "partitions": partitions,
        "linger_ms": settings.linger_ms,
        "fetch_max_wait_ms": getattr(settings, "fetch_max_wait_ms", 500),
    }
