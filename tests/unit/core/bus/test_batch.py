"""The events about one key travel in one record, and every reader reads both shapes."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from tests.support.toy import delete_event
from vcbus.contracts import TOPIC_SPECS, Event, JobDeleteAccepted, Topic
from vcbus.contracts.limits import MAX_RECORD_BYTES, MAX_RECORD_EVENTS
from vcbus.core.bus.batch import events_in, join, single
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown, encode
from vcbus.core.bus.envelope import (
    HEADER_DLT_OFFSET,
    HEADER_EVENT_COUNT,
    HEADER_EVENT_ID,
    Envelope,
)
from vcbus.core.bus.outbox import Outbox, event_record
from vcbus.core.bus.records import OutRecord, Record, record_bytes
from vcbus.core.bus.router import Route, Router

PREFIX = "unit."
TOPIC = f"{PREFIX}{Topic.JOBS_ADMITTED}"
CODEC = TopicCodec[Event](TOPIC_SPECS[Topic.JOBS_ADMITTED].union)


def _events(record: OutRecord | Record) -> tuple[Event, ...]:
    decoded = CODEC.decode_all(record.value)
    assert isinstance(decoded, tuple), decoded
    return decoded


def _jobs(records: Sequence[OutRecord]) -> list[list[str]]:
    return [[str(getattr(event, "job", "")) for event in _events(r)] for r in records]


def test_a_keys_events_join_one_record_in_order_and_other_keys_keep_theirs() -> None:
    outbox = Outbox(PREFIX)
    outbox.add_events([delete_event("ns/a", 1), delete_event("ns/b", 1), delete_event("ns/a", 2)])

    records = outbox.take()

    assert [r.key for r in records] == [b"ns/a", b"ns/b"]
    assert [events_in(r) for r in records] == [2, 1]
    joined = _events(records[0])
    assert [e.event_id for e in joined] == [
        delete_event("ns/a", 1).event_id,
        delete_event("ns/a", 2).event_id,
    ]
    assert dict(records[0].headers)[HEADER_EVENT_COUNT] == b"2"
    assert dict(records[0].headers)[HEADER_EVENT_ID] == joined[0].event_id.encode()
    assert HEADER_EVENT_COUNT not in dict(records[1].headers)


def _unjoined(events: Sequence[Event]) -> list[OutRecord]:
    """The records of ``events`` as one outbox makes them (one trace), not yet joined."""
    outbox = Outbox(PREFIX)
    outbox.add_events(events)
    return [record for record, _ in outbox.take_with_sources()]


def test_a_key_keeps_its_order_when_a_record_of_another_type_comes_between() -> None:
    a1, a3 = _unjoined([delete_event("ns/a", 1), delete_event("ns/a", 3)])
    assert events_in(join([a1, a3])[0]) == 2  # they join when nothing comes between
    other_type = OutRecord(
        a1.topic,
        a1.key,
        encode(delete_event("ns/a", 2)),
        tuple((n, b"job.other.v1" if n == "event-type" else v) for n, v in a1.headers),
    )

    records = join([a1, other_type, a3])

    assert [events_in(r) for r in records] == [1, 1, 1]
    assert [r.value for r in records] == [a1.value, other_type.value, a3.value]


def test_records_of_other_traces_or_no_key_stand_alone() -> None:
    first = event_record(delete_event("ns/a", 1), PREFIX)
    other_trace = event_record(delete_event("ns/a", 2), PREFIX)  # a send span of its own
    keyless = OutRecord(first.topic, None, first.value, first.headers)
    tombstone = OutRecord(first.topic, first.key, None, first.headers)

    records = join([first, other_trace, keyless, keyless, tombstone])

    assert len(records) == 5
    assert all(events_in(r) == 1 for r in records)


def test_a_run_is_cut_at_the_event_count_and_the_record_limit() -> None:
    outbox = Outbox(PREFIX)
    count = MAX_RECORD_EVENTS + 3
    outbox.add_events([delete_event("ns/a", n) for n in range(count)])
    records = outbox.take()
    assert [events_in(r) for r in records] == [MAX_RECORD_EVENTS, 3]
    assert sum(len(_events(r)) for r in records) == count

    unjoined = _unjoined([delete_event("ns/a", n) for n in range(10)])
    # room for the first record, two more values and the array's and count's bytes
    limit = record_bytes(unjoined[0]) + 2 * (len(unjoined[1].value or b"") + 1) + 20
    small = join(unjoined, limit=limit)
    assert all(record_bytes(r) <= limit for r in small)
    assert [events_in(r) for r in small] == [3, 3, 3, 1]


def test_joined_records_stay_under_the_broker_limit() -> None:
    # events of about 4 KiB each: 512 of them would be 2 MiB in one record
    outbox = Outbox(PREFIX)
    outbox.add_events([delete_event(f"ns/{'x' * 4000}", n) for n in range(MAX_RECORD_EVENTS)])
    records = outbox.take()
    assert len(records) >= 2
    assert all(record_bytes(r) <= MAX_RECORD_BYTES for r in records)
    assert sum(events_in(r) for r in records) == MAX_RECORD_EVENTS


def test_the_codec_reads_one_event_and_a_record_of_several() -> None:
    one = delete_event("ns/a", 1)
    assert CODEC.decode_all(encode(one)) == (one,)
    two = b"[" + encode(one) + b"," + encode(delete_event("ns/a", 2)) + b"]"
    assert [e.event_id for e in _events(OutRecord(TOPIC, b"ns/a", two))] == [
        one.event_id,
        delete_event("ns/a", 2).event_id,
    ]


def test_the_codec_skips_unknown_events_of_a_record_and_poisons_a_broken_one() -> None:
    one = encode(delete_event("ns/a", 1))
    newer = b'{"type": "job.newer.v9", "event_id": "x"}'
    assert CODEC.decode_all(b"[" + newer + b"," + one + b"]") == (delete_event("ns/a", 1),)
    assert CODEC.decode_all(b"[" + newer + b"]") == Unknown("job.newer.v9")
    broken = CODEC.decode_all(b"[" + one + b',{"type": "job.delete_accepted.v1"}]')
    assert isinstance(broken, Poison)
    assert broken.error.startswith("event 1 of 2:")
    assert isinstance(CODEC.decode_all(b"[]"), Poison)
    assert isinstance(CODEC.decode_all(b"[1, 2"), Poison)


def test_single_is_the_record_of_one_event_with_its_origin() -> None:
    outbox = Outbox(PREFIX)
    outbox.add_events([delete_event("ns/a", 1), delete_event("ns/a", 2)])
    (out,) = outbox.take()
    record = Record(TOPIC, 3, 17, out.key, out.value, out.headers)
    second = _events(record)[1]

    alone = single(record, second)

    assert (alone.topic, alone.partition, alone.offset, alone.key) == (TOPIC, 3, 17, b"ns/a")
    assert _events(alone) == (second,)
    assert alone.header(HEADER_EVENT_ID) == second.event_id.encode()
    assert alone.header(HEADER_EVENT_COUNT) is None


async def test_the_router_handles_each_event_and_dead_letters_only_the_failing_one() -> None:
    handled: list[str] = []

    async def handler(envelope: Envelope[JobDeleteAccepted]) -> Sequence[Event]:
        if envelope.event.event_id == delete_event("ns/a", 2).event_id:
            raise ValueError("this one fails")
        handled.append(envelope.event.event_id)
        return []

    outbox = Outbox(PREFIX)
    outbox.add_events([delete_event("ns/a", n) for n in (1, 2, 3)])
    (out,) = outbox.take()
    record = Record(TOPIC, 0, 5, out.key, out.value, out.headers)
    router = Router(
        "unit",
        [Route(Topic.JOBS_ADMITTED, handler, "unit.handle")],
        prefix=PREFIX,
        attempts=1,
        group="unit",
    )

    await router.dispatch_batch([record], outbox)

    assert handled == [delete_event("ns/a", n).event_id for n in (1, 3)]
    (letter,) = outbox.take()
    assert letter.topic == f"{TOPIC}.DLT"
    assert dict(letter.headers)[HEADER_DLT_OFFSET] == b"5"
    assert [e.event_id for e in _events(letter)] == [delete_event("ns/a", 2).event_id]


def test_a_joined_value_is_the_json_array_of_the_events() -> None:
    outbox = Outbox(PREFIX)
    outbox.add_events([delete_event("ns/a", 1), delete_event("ns/a", 2)])
    (record,) = outbox.take()
    values = msgspec.json.decode(record.value or b"")
    assert [v["event_id"] for v in values] == [
        delete_event("ns/a", 1).event_id,
        delete_event("ns/a", 2).event_id,
    ]
