"""The processing guarantees (docs/design.md#processing-guarantees,
docs/design.md#tracing-and-logging) shown with services run as processes on a real broker.

Every test runs the toy service (``tests/support/toy.py``) as ``python -m`` processes on its
own topic prefix, kills or stops them, and reads what they logged, published, wrote to their
changelogs and exported as spans. Waits are bounded helpers; nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import datetime

import msgspec
import pytest

from tests.support.broker import session_ms
from tests.support.bus_contract import wait_until
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.processes import (
    LIMIT,
    Line,
    Processes,
    ServiceProcess,
    event,
    service_env,
)
from tests.support.toy import build, delete_event
from vcbus.contracts import Topic, derive_event_id
from vcbus.core.bus.broker import EmbeddedBroker
from vcbus.core.bus.envelope import (
    HEADER_DLT_ERROR,
    HEADER_DLT_OFFSET,
    HEADER_DLT_PARTITION,
    HEADER_DLT_SERVICE,
    HEADER_DLT_TOPIC,
    HEADER_EVENT_ID,
)
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.partitioner import partition_for
from vcbus.core.bus.records import OutRecord, Record, TopicPartition
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.reactor import Entry
from vcbus.core.runtime.topology import changelog_topic, ensure_topics

pytestmark = pytest.mark.slow

TOY = "tests.support.toy"
PARTITIONS = 4
ALL_PARTITIONS = set(range(PARTITIONS))

_ENTRY = msgspec.json.Decoder(Entry[int])


@pytest.fixture
def bus(kafka_bootstrap: str) -> AioKafkaBus:
    return AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))


def toy_env(bootstrap: str, prefix: str, **extra: str) -> dict[str, str]:
    """A toy's environment: quick polls, the shortest session the broker accepts
    (``session_ms``), so a killed member leaves the group soon, and debug lines (one
    ``record_handled`` per record)."""
    settings = {
        "VCBUS_PARTITIONS": str(PARTITIONS),
        "VCBUS_POLL_TIMEOUT": "0.1",
        "VCBUS_SESSION_TIMEOUT_MS": str(session_ms()),
        # the tests follow each record's ``record_handled`` line, written at debug
        "VCBUS_LOG_LEVEL": "debug",
    }
    return service_env(bootstrap, prefix, **(settings | extra))


async def prepare(bus: AioKafkaBus, prefix: str, *, singleton: bool = False) -> None:
    """Create the topics of both toys before any process or test producer touches them."""
    clock = SystemClock()
    upstream, _ = build("upstream", clock)
    upstream.singleton = singleton
    downstream, _ = build("downstream", clock)
    await ensure_topics(bus, [upstream, downstream], prefix, PARTITIONS)


async def publish(bus: AioKafkaBus, records: Sequence[OutRecord]) -> None:
    producer = bus.producer(client_id="test")
    try:
        await producer.send(records)
    finally:
        await producer.stop()


async def read_all(bus: AioKafkaBus, topic: str) -> list[Record]:
    """Every record of ``topic`` now, read from the start up to its end offsets."""
    consumer = bus.consumer([topic], group=None, client_id="test-reader")
    await consumer.start()
    out: list[Record] = []
    try:
        tps = sorted(consumer.assignment(), key=lambda tp: tp.partition)
        ends = await consumer.end_offsets(tps)
        positions: dict[TopicPartition, int] = dict.fromkeys(tps, 0)
        async with asyncio.timeout(LIMIT):
            while any(positions[tp] < ends[tp] for tp in tps):
                for record in await consumer.getmany(timeout=0.2, max_records=1000):
                    positions[record.tp] = record.offset + 1
                    out.append(record)
    finally:
        await consumer.stop()
    return out


def changelog(records: Iterable[Record], key: str) -> list[Entry[int]]:
    """The changelog entries written for ``key``, oldest first."""
    return [_ENTRY.decode(r.value) for r in records if r.key == key.encode() and r.value]


def assignment(process: ServiceProcess) -> set[int]:
    """The partitions a process owns now, per its ``partitions_assigned``/``_revoked`` lines."""
    owned: set[int] = set()
    for line in process.lines:
        if line.get("event") == "partitions_assigned":
            owned |= set(line["partitions"])
        elif line.get("event") == "partitions_revoked":
            owned -= set(line["partitions"])
    return owned


def handled(process: ServiceProcess) -> set[str]:
    """The job keys a process logged ``record_handled`` for."""
    return {line["job"] for line in process.matching(event("record_handled"))}


def keys_on_every_partition(stem: str, per_partition: int = 2) -> list[str]:
    """Job keys that land ``per_partition`` times on each of the partitions."""
    keys: list[str] = []
    counts = dict.fromkeys(ALL_PARTITIONS, 0)
    n = 0
    while min(counts.values()) < per_partition:
        key = f"ns/{stem}-{n}"
        partition = partition_for(key.encode(), PARTITIONS)
        if counts[partition] < per_partition:
            counts[partition] += 1
            keys.append(key)
        n += 1
    return keys


def timestamp(line: Line) -> datetime:
    return datetime.fromisoformat(str(line["timestamp"]))


def only(spans: Iterable[ReceivedSpan], name: str, service: str) -> ReceivedSpan:
    (span,) = [s for s in spans if s.name == name and s.service_name == service]
    return span


async def test_input_is_handled_again_and_counted_once_downstream_when_killed_before_commit(
    bus: AioKafkaBus, kafka_bootstrap: str, topic_prefix: str, processes: Processes
) -> None:
    """SIGKILL after the outputs are acked and before the commit: the input is read again,
    the output is published twice with the same event id, and the downstream counts it once."""
    await prepare(bus, topic_prefix)
    env = toy_env(kafka_bootstrap, topic_prefix)
    downstream = processes.start("downstream", TOY, "downstream", env=env)
    crashing = processes.start(
        "upstream-crashing", TOY, "upstream", "--crash-after-produce", env=env
    )
    given = delete_event("ns/a", 1)
    await publish(bus, [event_record(given, topic_prefix)])

    await crashing.wait_for_async(event("crash_point_reached"))
    assert await asyncio.to_thread(crashing.exited) == -9
    upstream = processes.start("upstream", TOY, "upstream", env=env)
    await upstream.wait_for_async(event("record_handled", job="ns/a", emitted=1))
    output_id = derive_event_id("toy.out", "ns/a", given.event_id)
    await downstream.wait_for_async(event("record_handled", event_id=output_id), count=2)
    assert upstream.terminate() == 0
    assert downstream.terminate() == 0

    outputs = await read_all(bus, f"{topic_prefix}{Topic.JOBS_STATUS}")
    assert [record.header(HEADER_EVENT_ID) for record in outputs] == [output_id.encode()] * 2
    down_log = await read_all(bus, changelog_topic(topic_prefix, "toy-downstream", "counts"))
    assert changelog(down_log, "ns/a") == [Entry[int](state=1, seen=(output_id,))]
    up_log = await read_all(bus, changelog_topic(topic_prefix, "toy-upstream", "counts"))
    assert changelog(up_log, "ns/a") == [Entry[int](state=1, seen=(given.event_id,))]


async def test_count_continues_from_the_changelog_when_the_service_is_restarted(
    bus: AioKafkaBus, kafka_bootstrap: str, topic_prefix: str, processes: Processes
) -> None:
    await prepare(bus, topic_prefix)
    env = toy_env(kafka_bootstrap, topic_prefix)
    first = processes.start("upstream-1", TOY, "upstream", env=env)
    await publish(bus, [event_record(delete_event("ns/s", n), topic_prefix) for n in (1, 2)])
    await first.wait_for_async(event("record_handled", job="ns/s"), count=2)
    assert first.terminate() == 0

    second = processes.start("upstream-2", TOY, "upstream", env=env)
    restored = await second.wait_for_async(event("store_restored"))
    assert restored["records"] >= 1
    await publish(bus, [event_record(delete_event("ns/s", 3), topic_prefix)])
    await second.wait_for_async(event("record_handled", job="ns/s", emitted=1))
    assert second.terminate() == 0

    states = changelog(
        await read_all(bus, changelog_topic(topic_prefix, "toy-upstream", "counts")), "ns/s"
    )
    assert states[-1].state == 3
    # only the new input changed the count: the first two were committed before the stop
    assert len(second.matching(event("record_handled", emitted=1))) == 1


async def test_survivor_takes_every_partition_when_the_other_replica_is_killed(
    bus: AioKafkaBus, kafka_bootstrap: str, topic_prefix: str, processes: Processes
) -> None:
    await prepare(bus, topic_prefix)
    env = toy_env(kafka_bootstrap, topic_prefix)
    a = processes.start("upstream-a", TOY, "upstream", "--instance", "a", env=env)
    b = processes.start("upstream-b", TOY, "upstream", "--instance", "b", env=env)

    def split() -> bool:
        owned_a, owned_b = assignment(a), assignment(b)
        return (
            bool(owned_a and owned_b)
            and not owned_a & owned_b
            and owned_a | owned_b == set(ALL_PARTITIONS)
        )

    assert await wait_until(split, timeout=LIMIT), (a.tail(), b.tail())
    b.kill()
    keys = keys_on_every_partition("after-kill")
    await publish(bus, [event_record(delete_event(key, 1), topic_prefix) for key in keys])

    assert await wait_until(lambda: assignment(a) == ALL_PARTITIONS, timeout=LIMIT), a.tail()
    assert await wait_until(lambda: handled(a) >= set(keys), timeout=LIMIT), a.tail()
    assert a.returncode is None


async def test_standby_takes_the_lease_only_when_the_holder_is_killed(
    bus: AioKafkaBus, kafka_bootstrap: str, topic_prefix: str, processes: Processes
) -> None:
    """Exactly one replica logs ``lease_acquired``; the standby takes over after the kill,
    and by the logs' timestamps the two are never active at the same time."""
    await prepare(bus, topic_prefix, singleton=True)
    env = toy_env(kafka_bootstrap, topic_prefix)
    holder = processes.start("holder", TOY, "upstream", "--singleton", "--instance", "1", env=env)
    await holder.wait_for_async(event("lease_acquired"))
    standby = processes.start("standby", TOY, "upstream", "--singleton", "--instance", "2", env=env)
    # The standby's join rebalances the lease group: the holder gives the lease up and is
    # given it back (sticky), so the standby is a member that was not chosen.
    await holder.wait_for_async(event("lease_acquired"), count=2)
    await standby.wait_for_async(event("partitions_assigned"))
    assert standby.matching(event("lease_acquired")) == []

    killed_at = SystemClock().now()
    holder.kill()
    takeover = await standby.wait_for_async(event("lease_acquired"))

    assert timestamp(takeover) > killed_at
    moments = [
        (timestamp(line), name, str(line["event"]))
        for name, process in (("holder", holder), ("standby", standby))
        for line in process.lines
        if line.get("event") in ("lease_acquired", "lease_released")
    ]
    moments.append((killed_at, "holder", "lease_released"))
    active: set[str] = set()
    for _, name, what in sorted(moments):
        if what == "lease_acquired":
            active.add(name)
        else:
            active.discard(name)
        assert len(active) <= 1, sorted(moments)
    assert active == {"standby"}


async def test_one_trace_spans_test_and_processes_when_an_input_carries_a_traceparent(
    bus: AioKafkaBus, kafka_bootstrap: str, topic_prefix: str, processes: Processes
) -> None:
    """The input's ``send`` span (made here) is the parent of the upstream's ``process`` span
    (in which the handler ran, named by ``vcbus.handler``), whose ``send`` span is the parent
    of the downstream's ``process`` span; the spans reach the receiver when the processes
    stop (the batch processor's delay is far longer)."""
    await prepare(bus, topic_prefix)
    with OtlpReceiver() as receiver:
        otel = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "600000",
        }
        up_env = toy_env(kafka_bootstrap, topic_prefix, OTEL_SERVICE_NAME="toy-up-traced", **otel)
        down_env = toy_env(
            kafka_bootstrap, topic_prefix, OTEL_SERVICE_NAME="toy-down-traced", **otel
        )
        upstream = processes.start("upstream", TOY, "upstream", env=up_env)
        downstream = processes.start("downstream", TOY, "downstream", env=down_env)
        given = event_record(delete_event("ns/t", 1), topic_prefix)
        _, trace_id, parent_id, _ = dict(given.headers)["traceparent"].decode().split("-")
        await publish(bus, [given])
        await downstream.wait_for_async(event("record_handled", job="ns/t"))
        assert upstream.terminate() == 0
        assert downstream.terminate() == 0

        def complete(spans: list[ReceivedSpan]) -> bool:
            return {"toy-up-traced", "toy-down-traced"} <= {s.service_name for s in spans}

        assert receiver.wait_for(complete, timeout=LIMIT)
        spans = receiver.spans

    consumed = only(spans, f"process {topic_prefix}{Topic.JOBS_ADMITTED}", "toy-up-traced")
    sent = only(spans, f"send {topic_prefix}{Topic.JOBS_STATUS}", "toy-up-traced")
    downstream_consumed = only(
        spans, f"process {topic_prefix}{Topic.JOBS_STATUS}", "toy-down-traced"
    )
    assert (consumed.kind, sent.kind, downstream_consumed.kind) == (
        "CONSUMER",
        "PRODUCER",
        "CONSUMER",
    )
    assert {consumed.trace_id, sent.trace_id, downstream_consumed.trace_id} == {trace_id}
    assert consumed.parent_span_id == parent_id
    assert consumed.attributes["vcbus.handler"] == "toy.count"
    assert sent.parent_span_id == consumed.span_id
    assert downstream_consumed.parent_span_id == sent.span_id


async def test_bad_records_are_dead_lettered_and_the_process_goes_on_when_they_arrive(
    bus: AioKafkaBus, kafka_bootstrap: str, topic_prefix: str, processes: Processes
) -> None:
    await prepare(bus, topic_prefix)
    upstream = processes.start(
        "upstream", TOY, "upstream", env=toy_env(kafka_bootstrap, topic_prefix)
    )
    topic = f"{topic_prefix}{Topic.JOBS_ADMITTED}"
    garbage = b"\x00\xff not json"
    wrong_types = b'{"type": "job.delete_accepted.v1", "event_id": 7, "job_key": []}'
    unknown = b'{"type": "job.teleported.v9", "event_id": "x"}'
    await publish(
        bus,
        [
            OutRecord(topic, b"ns/bad", garbage),  # offset 0
            OutRecord(topic, b"ns/bad", wrong_types),  # offset 1
            OutRecord(topic, b"ns/bad", unknown),  # offset 2
            OutRecord(topic, b"ns/bad", None),  # offset 3
        ],
    )
    await upstream.wait_for_async(event("record_dead_lettered"), count=3)
    await upstream.wait_for_async(event("record_skipped", type="job.teleported.v9"))
    await publish(bus, [event_record(delete_event("ns/bad", 1), topic_prefix)])
    await upstream.wait_for_async(event("record_handled", job="ns/bad", emitted=1))
    assert upstream.returncode is None
    assert upstream.terminate() == 0

    dead = await read_all(bus, f"{topic}.DLT")
    by_offset = {record.header(HEADER_DLT_OFFSET): record.value or b"" for record in dead}
    assert by_offset == {b"0": garbage, b"1": wrong_types, b"3": b""}
    partition = str(partition_for(b"ns/bad", PARTITIONS)).encode()
    for record in dead:
        assert record.header(HEADER_DLT_TOPIC) == topic.encode()
        assert record.header(HEADER_DLT_PARTITION) == partition
        assert record.header(HEADER_DLT_SERVICE) == b"toy-upstream"
        assert record.header(HEADER_DLT_ERROR)


async def test_every_input_is_counted_once_downstream_when_the_broker_freezes_mid_flight(
    own_broker: EmbeddedBroker, topic_prefix: str, processes: Processes
) -> None:
    """The broker is frozen (SIGSTOP) for 5 s while a flow of inputs goes through the services;
    after it resumes, every input is counted exactly once downstream."""
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=own_broker.bootstrap_servers))
    await prepare(bus, topic_prefix)
    env = toy_env(own_broker.bootstrap_servers, topic_prefix)
    upstream = processes.start("upstream", TOY, "upstream", env=env)
    downstream = processes.start("downstream", TOY, "downstream", env=env)
    await upstream.wait_for_async(event("partitions_assigned"))
    await downstream.wait_for_async(event("partitions_assigned"))
    keys = [f"ns/flow-{n}" for n in range(40)]

    async def feed() -> None:
        """One input at a time, each acked, so the flow spans the outage."""
        producer = bus.producer(client_id="feeder")
        try:
            for key in keys:
                await producer.send([event_record(delete_event(key, 1), topic_prefix)])
                await asyncio.sleep(0.1)
        finally:
            await producer.stop()

    feeding = asyncio.create_task(feed())
    # inputs are flowing through both services when the broker freezes
    await downstream.wait_for_async(event("record_handled"), count=3)
    own_broker.pause()
    try:
        await asyncio.sleep(5.0)  # the outage itself, not a wait for something
    finally:
        own_broker.resume()
    await feeding
    everything = set(keys)
    assert await wait_until(lambda: handled(downstream) >= everything, timeout=LIMIT), (
        downstream.tail()
    )
    assert upstream.terminate() == 0
    assert downstream.terminate() == 0

    outputs = await read_all(bus, f"{topic_prefix}{Topic.JOBS_STATUS}")
    assert {record.key for record in outputs} == {key.encode() for key in everything}
    assert len({record.header(HEADER_EVENT_ID) for record in outputs}) == len(everything)
    down_log = await read_all(bus, changelog_topic(topic_prefix, "toy-downstream", "counts"))
    for key in everything:
        assert changelog(down_log, key)[-1].state == 1, key
