"""A table reads to the end of its topics on request: what was written a moment ago is folded.

Admission asks this of its queues before it refuses a job's unknown queue, so a queue
created just before the job is found (read-your-writes).
"""

from __future__ import annotations

from tests.support.bus_contract import running, wait_until
from tests.support.toy import delete_event
from vcbus.contracts import Event, JobDeleteAccepted, Topic
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import Record
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.topology import ensure_topics

PREFIX = "unit."
SETTINGS = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)


async def test_read_to_end_returns_once_what_was_just_written_is_folded() -> None:
    seen: list[str] = []

    def fold(event: Event, record: Record) -> None:
        if isinstance(event, JobDeleteAccepted):
            seen.append(event.job)

    table = Table("view", [Topic.JOBS_ADMITTED], fold)
    assert not await table.read_to_end(0.1)  # not following yet: nothing to wait for
    bus = InMemoryBus()
    service = Service(name="viewer", tables=[table])
    await ensure_topics(bus, [service], PREFIX, SETTINGS.partitions)
    async with running(service, bus, SETTINGS):
        assert await wait_until(table.caught_up.is_set)
        producer = bus.producer(client_id="test")
        await producer.send([event_record(delete_event(f"ns/j{i}", 1), PREFIX) for i in range(50)])
        await producer.stop()
        assert await table.read_to_end(5.0)
        assert sorted(seen) == sorted(f"ns/j{i}" for i in range(50))
