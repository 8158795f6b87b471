"""A table told which event types it folds passes over the others without decoding them."""

from __future__ import annotations

from contracts import Event, JobAdmitted, JobDeleteAccepted, Topic, tag_of
from shared.bus.envelope import HEADER_DLT_OFFSET, HEADER_EVENT_TYPE
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


async def test_records_of_other_types_are_passed_over_unread_and_the_rest_folded() -> None:
    bus = InMemoryBus()
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    seen: list[str] = []

    def fold(event: Event, record: Record) -> None:
        assert isinstance(event, JobDeleteAccepted)
        seen.append(event.job_key)

    table = Table("deletes", [Topic.JOBS_ADMITTED], fold, only=[JobDeleteAccepted])
    service = Service(name="viewer", tables=[table])
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    named_admitted = ((HEADER_EVENT_TYPE, tag_of(JobAdmitted).encode()),)
    producer = bus.producer(client_id="test")
    await producer.send(
        [
            # named as another type: never decoded, so its garbage is no dead letter
            OutRecord(TOPIC, b"ns/a", b"\x00\xff not json", named_admitted),
            event_record(delete_event("ns/first", 1), PREFIX),
            # no type header: decoded as before, and dead-lettered when it cannot be
            OutRecord(TOPIC, b"ns/a", b"\x00\xff not json"),
            event_record(delete_event("ns/second", 1), PREFIX),
        ]
    )
    await producer.stop()

    async with running(service, bus, settings):
        assert await wait_until(lambda: seen == ["ns/first", "ns/second"])
        dead = await read_topic(bus, f"{TOPIC}.DLT", want=1)

    # both garbage records are ns/a's (offsets 0 and 1 of its partition): only the second
    assert [record.header(HEADER_DLT_OFFSET) for record in dead] == [b"1"]
    assert table.records_read == 2
