"""The raw broker, measured with a plain aiokafka producer and consumer (no vcbus code).

Two figures, on a topic of its own on the same broker as the pipeline:

- one hop: produce one record (``acks=all``), wait until the consumer has it; sequential,
  with a short pause between samples, so it is the unloaded latency of a hop; measured with
  the services' tuning and with the lowest-latency tuning;
- messages/s: produce ``count`` records as fast as the producer takes them while the
  consumer reads them, first send to last receipt.

The messages/s clients use the pipeline's own client settings (linger, fetch wait, batch
size). Producer and
consumer share one process (and so one core at most), like a service.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.bench.stats import summary_ms
from vcbus.core.bus.kafka_settings import KafkaSettings

HEADERS_LIKE_PIPELINE: Sequence[tuple[str, bytes]] = (
    ("event-type", b"pod.phase_changed.v1"),
    ("event-id", b"0f8fad5b-d9cb-469f-a165-70867728950e"),
    ("content-type", b"application/json"),
    ("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
)
"""Headers of the size every vcbus record carries."""


async def _topic(settings: KafkaSettings, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


async def _hops(
    settings: KafkaSettings,
    topic: str,
    *,
    payload: bytes,
    samples: int,
    linger_ms: int,
    fetch_max_wait_ms: int,
) -> list[float]:
    """Sequential one-hop latencies (seconds) with the given producer and consumer tuning."""
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        acks="all",
        enable_idempotence=False,
        linger_ms=linger_ms,
    )
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=settings.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="latest",
        fetch_max_wait_ms=fetch_max_wait_ms,
    )
    await producer.start()
    await consumer.start()
    headers = list(HEADERS_LIKE_PIPELINE)
    out: list[float] = []
    try:
        await consumer.getmany(timeout_ms=200)
        for index in range(samples + 10):
            await asyncio.sleep(0.002)
            started = time.perf_counter()
            await (await producer.send(topic, payload, key=b"h%d" % index, headers=headers))
            while not await consumer.getmany(timeout_ms=2000):
                pass
            if index >= 10:  # the first ones warm connections and metadata up
                out.append(time.perf_counter() - started)
    finally:
        await consumer.stop()
        await producer.stop()
    return out


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

    The hop is measured twice: with the services' client tuning (``hop``) and with the
    lowest-latency tuning (``hop_best``: no linger, 1 ms fetch wait), so a slower tuning of
    the services cannot make the pipeline look closer to the broker than it is.

    Args:
        settings: the broker and the client tuning the services use.
        payload_bytes: the size of each record's value.
        hops: how many sequential one-hop samples per tuning.
        count: how many records for the messages/s figure.
        partitions: partitions of the raw topic (as the pipeline's topics).
        topic: the raw topic's name.

    Returns:
        ``hop`` and ``hop_best`` (count, p50_ms, p99_ms, max_ms), ``messages_per_s`` and
        the settings used.
    """
    await _topic(settings, topic, partitions)
    payload = b"x" * payload_bytes
    same = await _hops(
        settings,
        topic,
        payload=payload,
        samples=hops,
        linger_ms=settings.linger_ms,
        fetch_max_wait_ms=settings.fetch_max_wait_ms,
    )
    best = await _hops(
        settings, topic, payload=payload, samples=hops, linger_ms=0, fetch_max_wait_ms=1
    )
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        acks="all",
        enable_idempotence=False,
        linger_ms=settings.linger_ms,
        max_batch_size=settings.max_batch_size,
        max_request_size=settings.max_batch_size * 8,
    )
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=settings.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="latest",
        fetch_max_wait_ms=settings.fetch_max_wait_ms,
    )
    await producer.start()
    await consumer.start()
    headers = list(HEADERS_LIKE_PIPELINE)
    try:
        await consumer.getmany(timeout_ms=200)

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
        "hop": summary_ms(same),
        "hop_best": summary_ms(best),
        "messages_per_s": round(count / elapsed, 1),
        "messages": count,
        "payload_bytes": payload_bytes,
        "partitions": partitions,
        "linger_ms": settings.linger_ms,
        "fetch_max_wait_ms": settings.fetch_max_wait_ms,
    }
