"""BusContract: what every bus must do, run on InMemoryBus (unit) and AioKafkaBus (integration)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest

from tests.support.toy import build, delete_event
from vcbus.contracts import JobDeleted, Topic
from vcbus.contracts.limits import MAX_RECORD_BYTES
from vcbus.core.bus.batch import events_in
from vcbus.core.bus.codec import encode
from vcbus.core.bus.envelope import (
    HEADER_DLT_ERROR,
    HEADER_DLT_OFFSET,
    HEADER_DLT_PARTITION,
    HEADER_DLT_TOPIC,
)
from vcbus.core.bus.errors import RecordRefusedError
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import OutRecord, Record, TopicConfig, TopicPartition
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.lease import Lease
from vcbus.core.runtime.reactor import Entry
from vcbus.core.runtime.service import Runtime, Service, run_service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.state.changelog import ChangelogStore

WAIT = 30.0


async def read_topic(bus: Bus, topic: str, *, want: int, timeout: float = WAIT) -> list[Record]:
    """Read a topic from the start (no group) until it holds ``want`` events or the time limit.

    A record of several events (``vcbus.core.bus.batch``) counts as many.
    """
    consumer = bus.consumer([topic], group=None, client_id="reader")
    await consumer.start()
    out: list[Record] = []
    try:
        async with asyncio.timeout(timeout):
            while sum(map(events_in, out)) < want:
                out.extend(await consumer.getmany(timeout=0.2, max_records=1000))
    except TimeoutError:
        pass
    finally:
        await consumer.stop()
    return out


async def wait_until(predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Poll ``predicate`` until true or the time limit (support code, not a timing assertion)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while not predicate():  # noqa: ASYNC110 - polls state owned by another task
                await asyncio.sleep(0.05)
    return predicate()


@contextlib.asynccontextmanager
async def running(
    service: Service, bus: Bus, settings: Settings, instance: str = "0"
) -> AsyncIterator[Runtime]:
    """Run a service in the background for the block; stop it gracefully after (as SIGTERM does)."""
    runtime = Runtime(service.name, bus, SystemClock(), settings, bus.producer(client_id="unused"))
    task = asyncio.create_task(
        run_service(service, bus, settings, runtime=runtime, instance=instance)
    )
    try:
        yield runtime
    finally:
        runtime.stopping.set()
        try:
            async with asyncio.timeout(WAIT):
                await task
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class BusContract:
    """Subclasses provide the ``bus`` and ``settings`` fixtures."""

    @pytest.fixture
    def bus(self) -> Bus:
        raise NotImplementedError

    @pytest.fixture
    def settings(self, topic_prefix: str) -> Settings:
        raise NotImplementedError

    async def _topic(self, bus: Bus, name: str, partitions: int = 3) -> str:
        await bus.ensure_topics([TopicConfig(name, partitions)])
        return name

    async def test_records_keep_their_order_per_key(self, bus: Bus, topic_prefix: str) -> None:
        topic = await self._topic(bus, f"{topic_prefix}order")
        producer = bus.producer(client_id="p")
        sent = [OutRecord(topic, f"k{i % 5}".encode(), str(i).encode()) for i in range(60)]
        await producer.send(sent)
        await producer.stop()
        records = await read_topic(bus, topic, want=60)
        by_key: dict[bytes | None, list[int]] = {}
        for record in records:
            by_key.setdefault(record.key, []).append(int(record.value or b"-1"))
        assert sum(len(v) for v in by_key.values()) == 60
        assert all(values == sorted(values) for values in by_key.values())

    async def test_record_over_one_mib_is_refused_naming_it_and_earlier_records_are_kept(
        self, bus: Bus, topic_prefix: str
    ) -> None:
        """Kafka's default message.max.bytes (docs/design.md#bounded-records): a refusal no retry
        can change."""
        topic = await self._topic(bus, f"{topic_prefix}sizes", partitions=1)
        producer = bus.producer(client_id="p")
        small = OutRecord(topic, b"k", b"before")
        huge = OutRecord(topic, b"k", b"x" * MAX_RECORD_BYTES)
        try:
            with pytest.raises(RecordRefusedError) as refused:
                await producer.send([small, huge])
        finally:
            await producer.stop()
        assert refused.value.record == huge
        assert not refused.value.retriable
        (first, *_) = await read_topic(bus, topic, want=1)
        assert first.value == b"before"

    async def test_headers_round_trip_when_published_and_read(
        self, bus: Bus, topic_prefix: str
    ) -> None:
        topic = await self._topic(bus, f"{topic_prefix}headers", 1)
        producer = bus.producer(client_id="p")
        headers = (
            ("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            ("x", b"\x00\xff"),
        )
        await producer.send([OutRecord(topic, b"k", b"v", headers)])
        await producer.stop()
        (record,) = await read_topic(bus, topic, want=1)
        assert record.headers == headers
        assert (record.key, record.value) == (b"k", b"v")

    async def test_records_are_read_again_when_a_member_stops_before_committing(
        self, bus: Bus, topic_prefix: str
    ) -> None:
        topic = await self._topic(bus, f"{topic_prefix}redeliver", 1)
        producer = bus.producer(client_id="p")
        await producer.send([OutRecord(topic, b"k", str(i).encode()) for i in range(5)])
        await producer.stop()
        group = f"{topic_prefix}g"

        async def take(commit: bool) -> list[bytes | None]:
            consumer = bus.consumer([topic], group=group, client_id="c")
            await consumer.start()
            got: list[Record] = []
            try:
                async with asyncio.timeout(WAIT):
                    while len(got) < 5:
                        got.extend(await consumer.getmany(timeout=0.2, max_records=100))
                if commit:
                    await consumer.commit({TopicPartition(topic, 0): got[-1].offset + 1})
            except TimeoutError:
                pass
            finally:
                await consumer.stop()
            return [record.value for record in got]

        first = await take(commit=False)
        again = await take(commit=True)
        assert first == again == [str(i).encode() for i in range(5)]
        consumer = bus.consumer([topic], group=group, client_id="c")
        await consumer.start()
        after_commit = await consumer.getmany(timeout=1.0, max_records=100)
        await consumer.stop()
        assert after_commit == []

    async def test_output_and_state_survive_a_restart_and_duplicates_are_dropped(
        self, bus: Bus, settings: Settings
    ) -> None:
        """State is restored from the changelog; a redelivered input is counted once."""
        clock = SystemClock()
        upstream, _ = build("upstream", clock)
        downstream, down_store = build("downstream", clock)
        await ensure_topics(bus, [upstream, downstream], settings.topic_prefix, settings.partitions)
        prefix = settings.topic_prefix
        producer = bus.producer(client_id="test")
        first = delete_event("ns/a", 1)
        await producer.send([event_record(first, prefix)])
        async with running(upstream, bus, settings), running(downstream, bus, settings):
            assert await wait_until(lambda: _count(down_store, "ns/a") == 1)
        # the same input again (a redelivery) and a new one, to a restarted pair
        await producer.send(
            [event_record(first, prefix), event_record(delete_event("ns/a", 2), prefix)]
        )
        upstream2, up_store2 = build("upstream", clock)
        downstream2, down_store2 = build("downstream", clock)
        async with running(upstream2, bus, settings), running(downstream2, bus, settings):
            assert await wait_until(lambda: _count(down_store2, "ns/a") == 2)
            await asyncio.sleep(0.5)
            assert _count(down_store2, "ns/a") == 2
            assert _count(up_store2, "ns/a") == 2
        await producer.stop()
        outputs = await read_topic(bus, f"{prefix}{Topic.JOBS_STATUS}", want=2)
        assert len({record.header("event-id") for record in outputs}) == 2

    async def test_bad_records_go_to_the_dead_letter_topic_and_the_service_goes_on(
        self, bus: Bus, settings: Settings
    ) -> None:
        clock = SystemClock()
        upstream, store = build("upstream", clock)
        prefix = settings.topic_prefix
        await ensure_topics(bus, [upstream], prefix, settings.partitions)
        topic = f"{prefix}{Topic.JOBS_ADMITTED}"
        wrong_types = b'{"type": "job.delete_accepted.v1", "event_id": 7, "job_key": []}'
        unknown = b'{"type": "job.teleported.v9", "event_id": "x"}'
        producer = bus.producer(client_id="test")
        await producer.send(
            [
                OutRecord(topic, b"ns/bad", b"\x00\xff not json"),
                OutRecord(topic, b"ns/bad", wrong_types),
                OutRecord(topic, b"ns/bad", unknown),
                OutRecord(topic, b"ns/bad", None),
                event_record(delete_event("ns/bad", 1), prefix),
            ]
        )
        await producer.stop()
        async with running(upstream, bus, settings):
            assert await wait_until(lambda: _count(store, "ns/bad") == 1)
        dead = await read_topic(bus, f"{topic}.DLT", want=3)
        # at-least-once: a redelivery may dead-letter a record twice; its origin identifies it
        by_origin = {record.header(HEADER_DLT_OFFSET): record.value or b"" for record in dead}
        assert sorted(by_origin.values()) == sorted([b"\x00\xff not json", wrong_types, b""]), dead
        for record in dead:
            assert record.header(HEADER_DLT_TOPIC) == topic.encode()
            assert record.header(HEADER_DLT_PARTITION) is not None
            assert record.header(HEADER_DLT_ERROR)

    async def test_a_handler_that_keeps_failing_dead_letters_its_record_and_later_ones_are_handled(
        self, bus: Bus, settings: Settings
    ) -> None:
        handled: list[str] = []

        async def fragile(envelope: Any) -> list[JobDeleted]:
            if envelope.event.job == "ns/boom":
                raise RuntimeError("boom")
            handled.append(envelope.event.job)
            return []

        service = Service(
            name="fragile", routes=[Route(Topic.JOBS_ADMITTED, fragile, "toy.fragile")]
        )
        prefix = settings.topic_prefix
        await ensure_topics(bus, [service], prefix, settings.partitions)
        producer = bus.producer(client_id="test")
        await producer.send(
            [
                event_record(delete_event("ns/boom", 1), prefix),
                event_record(delete_event("ns/ok", 1), prefix),
            ]
        )
        await producer.stop()
        async with running(service, bus, settings):
            assert await wait_until(lambda: handled == ["ns/ok"])
        (dead,) = await read_topic(bus, f"{prefix}{Topic.JOBS_ADMITTED}.DLT", want=1)
        assert b"RuntimeError: boom" in (dead.header(HEADER_DLT_ERROR) or b"")
        assert msgspec.json.decode(dead.value or b"")["job"] == "ns/boom"

    async def test_two_members_split_the_partitions_and_the_survivor_takes_all(
        self, bus: Bus, topic_prefix: str
    ) -> None:
        topic = await self._topic(bus, f"{topic_prefix}split", 4)
        group = f"{topic_prefix}split-g"
        a = bus.consumer([topic], group=group, client_id="a")
        b = bus.consumer([topic], group=group, client_id="b")
        await a.start()
        await b.start()

        async def poll_both() -> None:
            await asyncio.gather(
                a.getmany(timeout=0.1, max_records=1), b.getmany(timeout=0.1, max_records=1)
            )

        async def settled() -> bool:
            for _ in range(300):
                await poll_both()
                if len(a.assignment()) == 2 and len(b.assignment()) == 2:
                    return True
            return False

        assert await settled()
        assert a.assignment() | b.assignment() == {TopicPartition(topic, p) for p in range(4)}
        await b.stop()
        for _ in range(300):
            await a.getmany(timeout=0.1, max_records=1)
            if len(a.assignment()) == 4:
                break
        assert a.assignment() == {TopicPartition(topic, p) for p in range(4)}
        await a.stop()

    async def test_exactly_one_replica_holds_the_lease_and_another_takes_over(
        self, bus: Bus, topic_prefix: str
    ) -> None:
        topic = await self._topic(bus, f"{topic_prefix}lease", 1)
        group = f"{topic_prefix}lease-g"
        first = Lease(bus, topic=topic, group=group, client_id="r1")
        second = Lease(bus, topic=topic, group=group, client_id="r2")
        t1 = asyncio.create_task(first.hold())
        assert await wait_until(lambda: first.is_active)
        t2 = asyncio.create_task(second.hold())
        # the standby's join rebalances the group; the holder keeps the lease (sticky), and
        # at no moment are both active
        both = False
        for _ in range(40):
            await asyncio.sleep(0.05)
            both = both or (first.is_active and second.is_active)
        assert await wait_until(lambda: first.is_active)
        assert not second.is_active
        assert not both
        t1.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await t1
        assert await wait_until(lambda: second.is_active)
        assert not first.is_active
        t2.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await t2


def _count(store: ChangelogStore[Entry[int]], key: str) -> int:
    for _, k, entry in store.items():
        if k == key:
            return entry.state or 0
    return 0


__all__ = ["BusContract", "encode", "read_topic", "running", "wait_until"]
