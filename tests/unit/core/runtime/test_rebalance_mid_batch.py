"""A rebalance while a batch is being published waits for the batch's state and commit.

aiokafka rebalances in a background task, beside a loop that may be publishing a batch.

- When the partitions move to another member, the old owner's changelog writes of that
  batch landed after the new owner had restored and written newer state: the compacted
  changelog's last record for the key was the old one, so the next restore (the next
  takeover) brought back a state older than the offsets committed since, and the inputs
  in between were never read again (a job forgot the pods it had created and ignored
  their failures: it stayed Pending).
- Under Kafka's eager protocol every member revokes all its partitions and, the
  assignment being sticky, usually gets the same ones back: the store was restored
  from a changelog without the batch's state, while the batch was committed all the same.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tests.support.bus_contract import read_topic, running, wait_until
from tests.support.eager_bus import EagerBus
from vcbus.contracts import JobDeleteAccepted, Topic, job_key
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import MemoryProducer
from vcbus.core.bus.records import OutRecord
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.reactor import Entry, Reactor
from vcbus.core.runtime.service import Runtime, Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import changelog_topic, ensure_topics
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step, Tick

PREFIX = "unit."
SUBMITTED = f"{PREFIX}{Topic.JOBS_SUBMITTED}"
ADMITTED = f"{PREFIX}{Topic.JOBS_ADMITTED}"
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def count(state: int | None, _event: object, _ctx: Ctx) -> Step[int | None]:
    """Count the inputs of a key; announce each count as a job named after it."""
    if isinstance(_event, Tick):
        return Step(state)
    seen = (state or 0) + 1
    announce = JobDeleteAccepted(
        event_id=f"count-{seen}", occurred_at=NOW, job=job_key("ns", f"seen-{seen}")
    )
    return Step(seen, (announce,))


async def test_a_rebalance_during_a_batchs_publish_keeps_the_batchs_state() -> None:
    bus = EagerBus(group="unit-counter", trigger=ADMITTED)
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    store = ChangelogStore[Entry[int]]("counts", Entry[int])
    reactor = Reactor[int, object](count, store, SystemClock())
    service = Service(
        name="counter",
        routes=[Route(Topic.JOBS_SUBMITTED, reactor.handle, "count", raw=True)],
        stores=[store],
    )
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    producer = bus.producer(client_id="test")
    async with running(service, bus, settings):
        await MemoryProducer.send(producer, [OutRecord(SUBMITTED, b"k", b"first")])
        await read_topic(bus, ADMITTED, want=1)
        assert bus.rebalance is not None
        await bus.rebalanced()
        await MemoryProducer.send(producer, [OutRecord(SUBMITTED, b"k", b"second")])
        announced = await read_topic(bus, ADMITTED, want=2)

    assert [(r.key or b"").decode() for r in announced] == ["ns/seen-1", "ns/seen-2"]


async def test_a_member_writes_nothing_more_for_partitions_it_gave_up() -> None:
    """Once its revoke has returned, the old owner's writes can no longer land after the
    new owner's: the batch in hand was written and committed before the revoke went on."""
    bus = EagerBus(group="unit-counter", trigger=ADMITTED, give_back=False)
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    store = ChangelogStore[Entry[int]]("counts", Entry[int])
    reactor = Reactor[int, object](count, store, SystemClock())
    service = Service(
        name="counter",
        routes=[Route(Topic.JOBS_SUBMITTED, reactor.handle, "count", raw=True)],
        stores=[store],
    )
    changelog = changelog_topic(PREFIX, "counter", "counts")
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    async with running(service, bus, settings):
        await MemoryProducer.send(
            bus.producer(client_id="test"), [OutRecord(SUBMITTED, b"k", b"x")]
        )
        await read_topic(bus, ADMITTED, want=1)
        await bus.rebalanced()

    assert len(bus.records(changelog)) == bus.at_revoke.get(changelog, 0) == 1


async def test_changes_made_between_batches_are_written_before_the_partitions_go() -> None:
    """A table's callback may change the state between batches (the cluster forgets a
    deleted pod); the revoke writes that change before it returns, not the loop after."""
    bus = EagerBus(group="unit-writer", trigger="none", give_back=False)
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    store = ChangelogStore[Entry[int]]("counts", Entry[int])

    async def write_then_lose(runtime: Runtime) -> None:
        while not runtime.partitions.restored:  # noqa: ASYNC110 - the loop restores them
            await asyncio.sleep(0.01)
        store.put(0, "k", Entry[int](state=1))
        await bus.rejoin()

    service = Service(
        name="writer",
        routes=[
            Route(
                Topic.JOBS_SUBMITTED,
                Reactor[int, object](count, store, SystemClock()).handle,
                "count",
                raw=True,
            )
        ],
        stores=[store],
        tasks=[write_then_lose],
    )
    changelog = changelog_topic(PREFIX, "writer", "counts")
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    async with running(service, bus, settings):
        await wait_until(lambda: bus.at_revoke != {})

    assert len(bus.records(changelog)) == bus.at_revoke.get(changelog, 0) == 1
