"""An answer that can never be written dead-letters its input; the service goes on
(docs/design.md#bounded-records)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from tests.support.bus_contract import read_topic, running
from vcbus.contracts import Event, JobDeleteAccepted, Topic, job_key
from vcbus.contracts.limits import MAX_RECORD_BYTES
from vcbus.core.bus.envelope import HEADER_DLT_ERROR, HEADER_DLT_OFFSET, Envelope
from vcbus.core.bus.errors import RecordTooLargeError
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import Outbox
from vcbus.core.bus.records import OutRecord, Record
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import VirtualClock
from vcbus.core.runtime.reactor import Entry, Reactor
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step

PREFIX = "unit."
SUBMITTED = f"{PREFIX}{Topic.JOBS_SUBMITTED}"
ADMITTED = f"{PREFIX}{Topic.JOBS_ADMITTED}"
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def answer(name: str) -> JobDeleteAccepted:
    return JobDeleteAccepted(event_id=f"id-{name[:20]}", occurred_at=NOW, job=job_key("ns", name))


async def echo(envelope: Envelope[bytes]) -> Sequence[Event]:
    """Answer each submission with an event naming it: ``big N`` names a job of N bytes."""
    text = envelope.event.decode()
    if text.startswith("big "):
        return [answer("x" * int(text.removeprefix("big ")))]
    return [answer(text)]


async def run_echo(bus: InMemoryBus, payloads: list[bytes]) -> tuple[list[str], list[OutRecord]]:
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    service = Service(name="echo", routes=[Route(Topic.JOBS_SUBMITTED, echo, "echo", raw=True)])
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    producer = bus.producer(client_id="test")
    await producer.send([OutRecord(SUBMITTED, b"k", payload) for payload in payloads])
    async with running(service, bus, settings):
        answered = await read_topic(bus, ADMITTED, want=1)
        dead = await read_topic(bus, f"{SUBMITTED}.DLT", want=1)
    keys = [(record.key or b"").decode() for record in answered]
    return keys, [OutRecord(r.topic, r.key, r.value, r.headers) for r in dead]


async def test_answer_over_one_mib_dead_letters_its_input_and_the_next_is_answered() -> None:
    keys, dead = await run_echo(InMemoryBus(), [b"big 1100000", b"fine"])

    assert keys == ["ns/fine"]
    (letter,) = dead
    assert letter.value == b"big 1100000"
    error = dict(letter.headers)[HEADER_DLT_ERROR].decode()
    assert f"limited to {MAX_RECORD_BYTES} bytes" in error
    assert dict(letter.headers)[HEADER_DLT_OFFSET] == b"0"


async def test_answer_the_broker_refuses_dead_letters_its_input_and_the_next_is_answered() -> None:
    """A broker set below 1 MiB refuses what vcbus's own check lets through."""
    keys, dead = await run_echo(InMemoryBus(max_record_bytes=4096), [b"big 8000", b"fine"])

    assert keys == ["ns/fine"]
    (letter,) = dead
    assert letter.value == b"big 8000"
    assert "publishing its output failed" in dict(letter.headers)[HEADER_DLT_ERROR].decode()


def test_reactor_refuses_a_state_over_the_limit_and_keeps_the_previous_one() -> None:
    store = ChangelogStore[Entry[str]]("s", Entry[str])

    def grow(state: str | None, event: object, ctx: Ctx) -> Step[str | None]:
        return Step((state or "") + str(event))

    reactor = Reactor[str, str](grow, store, VirtualClock(NOW))
    reactor.apply(0, "k", "small", "e1")

    with pytest.raises(RecordTooLargeError, match="the state of k would be"):
        reactor.apply(0, "k", "x" * MAX_RECORD_BYTES, "e2")

    entry = store.get(0, "k")
    assert entry is not None
    assert entry.state == "small"


def test_an_output_over_the_limit_raises_for_an_input_and_is_dropped_without_one() -> None:
    """A timer's or a cycle's output has no input to dead-letter: it alone is dropped."""
    huge, fine = answer("x" * 1_100_000), answer("fine")
    source = Record(SUBMITTED, 0, 5, b"k", b"big")
    outbox = Outbox(PREFIX)

    with pytest.raises(RecordTooLargeError):
        outbox.add_events([fine, huge], source=source)
    assert len(outbox) == 0

    outbox.add_events([huge, fine])
    assert [record.key for record in outbox.take()] == [b"ns/fine"]
