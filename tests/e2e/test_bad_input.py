"""Bad input: 10,000 bad submissions and garbage on every internal topic, services as processes.

Admission answers every submission on ``jobs.rejected`` (matched by the origin it names:
topic, partition, offset) and admits none; every record on an internal topic that its
contract cannot decode lands on ``<topic>.DLT`` with its origin and the error; no service
process dies, and a good job submitted afterwards still completes. The poison submissions
of bounded parsing (recursive aliases, alias floods, rejections of 200,000 violations, jobs whose
records could not fit, names and numbers the API server refuses) are each answered with a
bounded record, and a good job behind them on the same partition is admitted and
completes; a delete that reuses a client's event id still deletes the job's next life.
The inputs come from the seeded generators of ``tests/e2e/bad_inputs.py`` and
``tests/support/poison.py``, published in batches, as fast as a Kafka client would.
Waits are bounded; nothing here asserts on timing.

``jobs.status`` and ``jobs.rejected`` get no garbage: no service reads them (they are
answers to users), so nothing could dead-letter it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Sequence

import msgspec
import pytest

from tests.e2e.bad_inputs import BadInput, bad_submissions, garbage_records
from tests.e2e.system import System, read_topic, submit, wait_for_jobs, with_run_seconds
from tests.support.poison import poison_cases
from vcbus.contracts import (
    TOPIC_SPECS,
    TOPICS,
    Event,
    JobAdmitted,
    JobDeleted,
    JobDeleteRequested,
    JobKey,
    JobRejected,
    PodCreated,
    Topic,
)
from vcbus.contracts.limits import MAX_RECORD_BYTES
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown, encode
from vcbus.core.bus.envelope import (
    HEADER_DLT_ERROR,
    HEADER_DLT_OFFSET,
    HEADER_DLT_PARTITION,
    HEADER_DLT_TOPIC,
)
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord, Record, TopicPartition, record_bytes
from vcbus.core.runtime.clock import SystemClock
from vcbus.services.submission import records_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SUBMISSIONS = 10_000
SEED = 9
BATCH = 500
GARBAGE_PER_TOPIC = 25
WAIT = 420.0
"""Bound of the waits for answers and dead letters (a loaded 2-core machine)."""

UNREAD = frozenset({Topic.JOBS_SUBMITTED, Topic.JOBS_STATUS, Topic.JOBS_REJECTED})
INTERNAL = tuple(spec.topic for spec in TOPICS if spec.topic not in UNREAD)

GOOD_JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: still-works}
spec:
  minAvailable: 2
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""

Origin = tuple[int, int]


async def publish(system: System, topic: str, inputs: Sequence[BadInput]) -> None:
    """Publish raw records in batches, as any Kafka client would (up to 8 MiB a record:
    a client of a broker that takes more than vcbus writes)."""
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=system.bootstrap, max_record_bytes=8 << 20))
    producer = bus.producer(client_id="bad-input")
    try:
        for start in range(0, len(inputs), BATCH):
            await producer.send(
                [OutRecord(topic, item.key, item.value) for item in inputs[start : start + BATCH]]
            )
    finally:
        await producer.stop()


async def read_raw(system: System, topic: str, *, at_least: int = 0) -> list[Record]:
    """Every record of ``topic`` now (at least ``at_least``), from its start."""
    consumer = system.bus.consumer([topic], group=None, client_id="bad-input-reader")
    await consumer.start()
    out: list[Record] = []
    try:
        ends = await consumer.end_offsets(sorted(consumer.assignment()))
        positions: dict[TopicPartition, int] = dict.fromkeys(ends, 0)
        async with asyncio.timeout(WAIT):
            while True:
                records = await consumer.getmany(timeout=1.0, max_records=5000)
                for record in records:
                    positions[record.tp] = record.offset + 1
                out.extend(records)
                caught_up = all(positions[tp] >= end for tp, end in ends.items())
                if not records and caught_up and len(out) >= at_least:
                    return out
    finally:
        await consumer.stop()


async def follow_until(
    system: System,
    topics: Iterable[str],
    collect: dict[str, set[Origin]],
    done: Callable[[], bool],
    origin_of: Callable[[Record], tuple[str, Origin] | None],
) -> None:
    """Read ``topics`` from the start, adding each record's origin, until ``done()``."""
    consumer = system.bus.consumer(list(topics), group=None, client_id="bad-input-follower")
    await consumer.start()
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WAIT):
                while not done():
                    for record in await consumer.getmany(timeout=1.0, max_records=5000):
                        found = origin_of(record)
                        if found is not None:
                            key, origin = found
                            collect.setdefault(key, set()).add(origin)
    finally:
        await consumer.stop()


def assert_alive(system: System) -> None:
    dead = {name: p.returncode for name, p in system.services.items() if p.returncode is not None}
    assert not dead, f"services exited: {dead}\n{system.logs()}"


async def test_every_bad_submission_is_answered_on_jobs_rejected_when_ten_thousand_arrive(
    system: System,
) -> None:
    submitted = f"{system.prefix}{Topic.JOBS_SUBMITTED}"
    inputs = bad_submissions(SUBMISSIONS, SEED)
    await publish(system, submitted, inputs)
    records = await read_raw(system, submitted, at_least=SUBMISSIONS)
    assert len(records) == SUBMISSIONS
    origins = {(r.partition, r.offset) for r in records}

    codec = TopicCodec[Event](TOPIC_SPECS[Topic.JOBS_REJECTED].union)
    rejected_topic = f"{system.prefix}{Topic.JOBS_REJECTED}"
    answered: dict[str, set[Origin]] = {"rejected": set(), "admitted": set()}
    truncated: list[int] = []

    def origin_of(record: Record) -> tuple[str, Origin] | None:
        if record.topic != rejected_topic:
            return "admitted", (record.partition, record.offset)
        event = one_event(codec, record.value)
        assert isinstance(event, JobRejected), event
        assert event.violations, event
        assert event.origin is not None
        assert event.origin.topic == submitted
        if event.payload_truncated:
            truncated.append(len(event.payload))
        return "rejected", (event.origin.partition, event.origin.offset)

    await follow_until(
        system,
        [rejected_topic, f"{system.prefix}{Topic.JOBS_ADMITTED}"],
        answered,
        lambda: len(answered["rejected"] | answered["admitted"]) >= len(origins),
        origin_of,
    )
    assert not answered["admitted"], f"{len(answered['admitted'])} bad submissions admitted"
    missing = origins - answered["rejected"]
    assert not missing, f"{len(missing)} submissions unanswered, e.g. {sorted(missing)[:5]}"
    assert truncated, "the payloads over the limit come back cut"
    assert_alive(system)


def _dead_letter_origin(record: Record) -> tuple[str, Origin] | None:
    topic = record.header(HEADER_DLT_TOPIC)
    partition = record.header(HEADER_DLT_PARTITION)
    offset = record.header(HEADER_DLT_OFFSET)
    assert topic, record.headers
    assert partition, record.headers
    assert offset, record.headers
    assert record.header(HEADER_DLT_ERROR), record.headers
    return topic.decode(), (int(partition), int(offset))


async def test_every_undecodable_internal_record_is_dead_lettered_when_garbage_arrives(
    system: System,
) -> None:
    for number, topic in enumerate(INTERNAL):
        name = f"{system.prefix}{topic}"
        await publish(system, name, garbage_records(topic, GARBAGE_PER_TOPIC, SEED + number))
    wanted: dict[str, set[Origin]] = {}
    for topic in INTERNAL:
        name = f"{system.prefix}{topic}"
        codec = TopicCodec[Event](TOPIC_SPECS[topic].union)
        wanted[name] = {
            (r.partition, r.offset)
            for r in await read_raw(system, name, at_least=GARBAGE_PER_TOPIC)
            if isinstance(codec.decode_all(r.value), Poison)
        }
        assert len(wanted[name]) == GARBAGE_PER_TOPIC, topic

    dead: dict[str, set[Origin]] = {name: set() for name in wanted}
    await follow_until(
        system,
        [f"{name}.DLT" for name in wanted],
        dead,
        lambda: all(wanted[name] <= dead[name] for name in wanted),
        _dead_letter_origin,
    )
    missing = {name: sorted(wanted[name] - dead[name])[:3] for name in wanted}
    assert not any(missing.values()), f"not dead-lettered: {missing}\n{system.logs()}"
    assert_alive(system)

    good = with_run_seconds(GOOD_JOB, 1)
    keys = [item.label for item in await submit(system, good)]
    view = await wait_for_jobs(system, keys)
    assert view.jobs[keys[0]].phase == "Completed", system.logs()
    assert_alive(system)


async def answers_by_offset(
    system: System, partition: int, want: set[int], admitted_at: dict[str, int]
) -> dict[int, Record]:
    """The jobs.admitted / jobs.rejected records answering offsets of ``partition``.

    A rejection names its origin; an admission is matched by job name (``admitted_at``:
    the names expected admitted, with the offset each was published at).
    """
    submitted = f"{system.prefix}{Topic.JOBS_SUBMITTED}"
    rejected_topic = f"{system.prefix}{Topic.JOBS_REJECTED}"
    admitted_codec = TopicCodec[Event](TOPIC_SPECS[Topic.JOBS_ADMITTED].union)
    rejected_codec = TopicCodec[Event](TOPIC_SPECS[Topic.JOBS_REJECTED].union)
    found: dict[int, Record] = {}

    def origin_of(record: Record) -> tuple[str, Origin] | None:
        if record.topic == rejected_topic:
            event = one_event(rejected_codec, record.value)
            assert isinstance(event, JobRejected), event
            assert event.origin is not None
            if event.origin.topic != submitted or event.origin.partition != partition:
                return None
            offset = event.origin.offset
        else:
            event = one_event(admitted_codec, record.value)
            if (
                not isinstance(event, JobAdmitted)
                or event.manifest.metadata.name not in admitted_at
            ):
                return None
            offset = admitted_at[event.manifest.metadata.name]
        if offset not in want:
            return None
        found[offset] = record
        return "answered", (partition, offset)

    await follow_until(
        system,
        [rejected_topic, f"{system.prefix}{Topic.JOBS_ADMITTED}"],
        {},
        lambda: want <= set(found),
        origin_of,
    )
    return found


async def test_poison_is_answered_in_bounded_records_and_the_good_job_behind_it_completes(
    system: System,
) -> None:
    """Same partition, in order: if one poison stalled admission, the good job would wait."""
    submitted = f"{system.prefix}{Topic.JOBS_SUBMITTED}"
    cases = poison_cases()
    (good,) = records_for(
        with_run_seconds(GOOD_JOB, 1, name="behind-poison"), system.prefix, SystemClock().now()
    )
    partition = 1
    before = sum(r.partition == partition for r in await read_raw(system, submitted))
    await publish_at(
        system,
        [OutRecord(submitted, None, case.payload, partition=partition) for case in cases]
        + [
            OutRecord(submitted, good.record.key, good.record.value, good.record.headers, partition)
        ],
    )
    offsets = list(range(before, before + len(cases) + 1))
    cases_at = dict(zip(offsets, [*cases, None], strict=True))
    (annotated_at,) = (o for o, c in cases_at.items() if c and not c.reasons)
    admitted_at = {"behind-poison": offsets[-1], "annotated": annotated_at}

    answers = await answers_by_offset(system, partition, set(offsets), admitted_at)

    assert set(answers) == set(offsets), system.logs()
    rejected_codec = TopicCodec[Event](TOPIC_SPECS[Topic.JOBS_REJECTED].union)
    for offset, case in cases_at.items():
        record = answers[offset]
        out = OutRecord(record.topic, record.key, record.value, record.headers)
        assert record_bytes(out) <= MAX_RECORD_BYTES
        if case is None or not case.reasons:
            assert record.topic.endswith(str(Topic.JOBS_ADMITTED)), (case, record.topic)
            continue
        event = one_event(rejected_codec, record.value)
        assert isinstance(event, JobRejected)
        assert sorted({v.reason for v in event.violations}) == sorted(case.reasons), case.label
    view = await wait_for_jobs(system, [good.label])
    assert view.jobs[good.label].phase == "Completed", system.logs()
    annotated = await created_pods(system, "default/annotated", want=100)
    assert len(annotated) == 100, "the annotated job's pods are created"
    assert all(len(encode(event)) < 4096 for event in annotated)
    assert_alive(system)


async def created_pods(system: System, job: str, *, want: int) -> list[PodCreated]:
    """The ``PodCreated`` events of ``job`` (the topic also holds the garbage test's)."""
    codec = TopicCodec[Event](TOPIC_SPECS[Topic.PODS].union)
    found: list[PodCreated] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(WAIT):
            while len(found) < want:
                found = [
                    event
                    for record in await read_raw(system, f"{system.prefix}{Topic.PODS}")
                    if isinstance(decoded := codec.decode_all(record.value), tuple)
                    for event in decoded
                    if isinstance(event, PodCreated) and event.pod.job == job
                ]
                await asyncio.sleep(0.5)
    return found


def one_event(codec: TopicCodec[Event], value: bytes | None) -> Event | Unknown | Poison:
    """The event of a record that answers one input (admission writes one per input)."""
    decoded = codec.decode_all(value)
    if isinstance(decoded, Unknown | Poison):
        return decoded
    assert len(decoded) == 1, decoded
    return decoded[0]


async def publish_at(system: System, records: Sequence[OutRecord]) -> None:
    producer = system.bus.producer(client_id="poison")
    try:
        await producer.send(records)
    finally:
        await producer.stop()


async def test_a_delete_reusing_a_client_event_id_deletes_the_next_life_of_the_job(
    system: System,
) -> None:
    submitted = f"{system.prefix}{Topic.JOBS_SUBMITTED}"
    text = with_run_seconds(GOOD_JOB, 30, name="deleted-twice")
    key = "default/deleted-twice"
    command = JobDeleteRequested(
        event_id="the-same-id", occurred_at=SystemClock().now(), job=JobKey(key)
    )
    delete = OutRecord(submitted, key.encode(), msgspec.json.encode(command))

    for life in (1, 2):
        await submit(system, text)
        await wait_for_phase(system, key, "Running")
        await publish_at(system, [delete])
        assert await deleted_times(system, key, life) == life, system.logs()
    assert_alive(system)


async def wait_for_phase(system: System, key: str, phase: str) -> None:
    async with asyncio.timeout(WAIT):
        while True:
            events = [e for _, e in await read_topic(system, Topic.JOBS_STATUS)]
            mine = [e for e in events if getattr(e, "job", None) == key]
            if mine and getattr(mine[-1], "phase", None) == phase:
                return
            await asyncio.sleep(0.5)


async def deleted_times(system: System, key: str, want: int) -> int:
    """How many JobDeleted ``jobs.status`` holds for ``key``, once ``want`` or the bound."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(WAIT):
            while True:
                events = [e for _, e in await read_topic(system, Topic.JOBS_STATUS)]
                count = sum(isinstance(e, JobDeleted) and e.job == key for e in events)
                if count >= want:
                    return count
                await asyncio.sleep(0.5)
    events = [e for _, e in await read_topic(system, Topic.JOBS_STATUS)]
    return sum(isinstance(e, JobDeleted) and e.job == key for e in events)
