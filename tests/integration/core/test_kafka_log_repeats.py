"""A client whose broker is gone writes a few lines, not hundreds a second.

Seen on a cut-off agent: about 215 aiokafka lines a second (7 % of a core) for as long as
the cut lasted. Here a consumer (retrying every 10 ms) loses its broker for 2 s; unfiltered,
aiokafka wrote about 750 lines in that time on this machine, filtered 5.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from aiokafka import AIOKafkaConsumer

from vcbus.core.bus.broker import start_broker
from vcbus.core.logging import configure_logging


async def _lose_the_broker_for(seconds: float) -> None:
    broker = start_broker()
    consumer = AIOKafkaConsumer(
        "lost", bootstrap_servers=broker.bootstrap_servers, retry_backoff_ms=10
    )
    try:
        await consumer.start()
        broker.process.kill()  # gone at once, as a host cut off
        broker.process.wait()
        fetch = asyncio.create_task(consumer.getone())
        await asyncio.sleep(seconds)
        fetch.cancel()
    finally:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(consumer.stop(), 2)
        broker.stop()


def test_a_consumer_without_its_broker_writes_one_line_per_kind_and_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("agent", json=True)
    asyncio.run(_lose_the_broker_for(2.0))
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    kafka = [line for line in lines if str(line.get("logger", "")).startswith("aiokafka")]
    assert any(line["level"] == "error" for line in kafka), "aiokafka said nothing"
    assert len(kafka) < 50, "\n".join(str(line["event"]) for line in kafka)
