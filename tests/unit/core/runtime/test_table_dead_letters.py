"""A table (a whole-topic view) dead-letters what it cannot read or fold, and goes on.

Told which event types it folds, it passes over the others by their type header, unread.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from tests.support.bus_contract import read_topic, running, wait_until
from tests.support.toy import delete_event
from vcbus.contracts import Event, JobAdmitted, JobDeleteAccepted, Topic, tag_of
from vcbus.core.bus.batch import events_in
from vcbus.core.bus.envelope import (
    HEADER_DLT_ERROR,
    HEADER_DLT_OFFSET,
    HEADER_DLT_SERVICE,
    HEADER_DLT_TOPIC,
    HEADER_EVENT_TYPE,
)
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import Outbox, event_record
from vcbus.core.bus.records import OutRecord, Record
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.topology import ensure_topics

PREFIX = "unit."
TOPIC = f"{PREFIX}{Topic.JOBS_ADMITTED}"


SETTINGS = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)


async def _follow(
    table: Table, records: list[OutRecord], done: Callable[[], bool], dead_letters: int
) -> list[Record]:
    """Run a service following ``table`` over ``records`` until ``done``; its dead letters."""
    bus = InMemoryBus()
    service = Service(name="viewer", tables=[table])
    await ensure_topics(bus, [service], PREFIX, SETTINGS.partitions)
    producer = bus.producer(client_id="test")
    await producer.send(records)
    await producer.stop()
    async with running(service, bus, SETTINGS):
        assert await wait_until(done)
        return await read_topic(bus, f"{TOPIC}.DLT", want=dead_letters)


async def test_undecodable_and_unfoldable_records_are_dead_lettered_and_the_view_goes_on() -> None:
    seen: list[str] = []

    def fold(event: Event, record: Record) -> None:
        if isinstance(event, JobDeleteAccepted) and event.job == "ns/explodes":
            raise OverflowError("too big to fold")
        if isinstance(event, JobDeleteAccepted):
            seen.append(event.job)

    nested = b'{"type":' * 50_000
    dead = await _follow(
        Table("view", [Topic.JOBS_ADMITTED], fold),
        [
            OutRecord(TOPIC, b"ns/a", b"\x00\xff not json"),
            OutRecord(TOPIC, b"ns/a", nested),
            OutRecord(TOPIC, b"ns/a", None),
            OutRecord(TOPIC, b"ns/a", b'{"type": "job.teleported.v9", "event_id": "x"}'),
            event_record(delete_event("ns/explodes", 1), PREFIX),
            event_record(delete_event("ns/fine", 1), PREFIX),
        ],
        lambda: seen == ["ns/fine"],
        4,
    )

    assert len(dead) == 4  # the unknown type is skipped, not dead-lettered
    errors = [(record.header(HEADER_DLT_ERROR) or b"").decode() for record in dead]
    assert "nested too deeply" in errors[1]
    assert "OverflowError" in errors[3]
    for record in dead:
        assert record.header(HEADER_DLT_TOPIC) == TOPIC.encode()
        assert record.header(HEADER_DLT_SERVICE) == b"viewer"


async def test_records_of_other_types_are_passed_over_unread_and_the_rest_folded() -> None:
    """A table told which event types it folds passes over the others without decoding them."""
    seen: list[str] = []

    def fold(event: Event, record: Record) -> None:
        assert isinstance(event, JobDeleteAccepted)
        seen.append(event.job)

    table = Table("deletes", [Topic.JOBS_ADMITTED], fold, only=[JobDeleteAccepted])
    named_admitted = ((HEADER_EVENT_TYPE, tag_of(JobAdmitted).encode()),)
    dead = await _follow(
        table,
        [
            # named as another type: never decoded, so its garbage is no dead letter
            OutRecord(TOPIC, b"ns/a", b"\x00\xff not json", named_admitted),
            event_record(delete_event("ns/first", 1), PREFIX),
            # no type header: decoded as before, and dead-lettered when it cannot be
            OutRecord(TOPIC, b"ns/a", b"\x00\xff not json"),
            event_record(delete_event("ns/second", 1), PREFIX),
        ],
        lambda: seen == ["ns/first", "ns/second"],
        1,
    )

    # both garbage records are ns/a's (offsets 0 and 1 of its partition): only the second
    assert [record.header(HEADER_DLT_OFFSET) for record in dead] == [b"1"]
    assert table.records_read == 2


async def test_a_record_of_several_events_is_folded_event_by_event_and_only_a_bad_one_dead() -> (
    None
):
    seen: list[str] = []
    exploding = delete_event("ns/a", 2)

    def fold(event: Event, record: Record) -> None:
        if event.event_id == exploding.event_id:
            raise OverflowError("too big to fold")
        seen.append(event.event_id)

    outbox = Outbox(PREFIX)
    outbox.add_events([delete_event("ns/a", 1), exploding, delete_event("ns/a", 3)])
    (joined,) = outbox.take()
    assert events_in(joined) == 3
    dead = await _follow(
        Table("view", [Topic.JOBS_ADMITTED], fold),
        [joined],
        lambda: len(seen) == 2,
        1,
    )

    assert seen == [delete_event("ns/a", n).event_id for n in (1, 3)]
    (letter,) = dead
    assert letter.header(HEADER_DLT_TOPIC) == TOPIC.encode()
    assert msgspec.json.decode(letter.value or b"")["event_id"] == exploding.event_id
