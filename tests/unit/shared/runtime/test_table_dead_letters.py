"""A table (a whole-topic view) dead-letters what it cannot read or fold, and goes on."""

from __future__ import annotations

from contracts import Event, JobDeleteAccepted, Topic
from shared.bus.envelope import HEADER_DLT_ERROR, HEADER_DLT_SERVICE, HEADER_DLT_TOPIC
from shared.bus.kafka import KafkaSettings
from shared.bus.memory import InMemoryBus
from shared.bus.outbox import event_record
from shared.bus.records import OutRecord, Record
from shared.runtime.service import Service
from shared.runtime.settings import Settings
from shared.runtime.table import Table
from shared.runtime.topology import ensure_topics
from tests.support.bus_contract import read_topic, running, wait_until
from tests.support.toy import delete_event

PREFIX = "unit."
TOPIC = f"{PREFIX}{Topic.JOBS_ADMITTED}"


async def test_undecodable_and_unfoldable_records_are_dead_lettered_and_the_view_goes_on() -> None:
    bus = InMemoryBus()
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    seen: list[str] = []

    def fold(event: Event, record: Record) -> None:
        if isinstance(event, JobDeleteAccepted) and event.job_key == "ns/explodes":
            raise OverflowError("too big to fold")
        if isinstance(event, JobDeleteAccepted):
            seen.append(event.job_key)

    service = Service(name="viewer", tables=[Table("view", [Topic.JOBS_ADMITTED], fold)])
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    nested = b'{"type":' * 50_000
    producer = bus.producer(client_id="test")
    await producer.send(
        [
            OutRecord(TOPIC, b"ns/a", b"\x00\xff not json"),
            OutRecord(TOPIC, b"ns/a", nested),
            OutRecord(TOPIC, b"ns/a", None),
            OutRecord(TOPIC, b"ns/a", b'{"type": "job.teleported.v9", "event_id": "x"}'),
            event_record(delete_event("ns/explodes", 1), PREFIX),
            event_record(delete_event("ns/fine", 1), PREFIX),
        ]
    )
    await producer.stop()

    async with running(service, bus, settings):
        assert await wait_until(lambda: seen == ["ns/fine"])
        dead = await read_topic(bus, f"{TOPIC}.DLT", want=4)

    assert len(dead) == 4  # the unknown type is skipped, not dead-lettered
    errors = [(record.header(HEADER_DLT_ERROR) or b"").decode() for record in dead]
    assert "nested too deeply" in errors[1]
    assert "OverflowError" in errors[3]
    for record in dead:
        assert record.header(HEADER_DLT_TOPIC) == TOPIC.encode()
        assert record.header(HEADER_DLT_SERVICE) == b"viewer"
