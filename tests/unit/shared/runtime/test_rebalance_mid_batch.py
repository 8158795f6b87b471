"""A rebalance while a batch is being published waits for the batch's state and commit.

aiokafka rebalances in a background task. Under Kafka's eager protocol every member
revokes all its partitions and, the assignment being sticky, gets the same ones back.
If that happens while the loop publishes a batch's outputs, the store is restored from a
changelog that does not hold the batch's state yet, and the batch's offsets are still
committed: the state of its inputs is lost for good, and later inputs are decided on the
state before them (a job whose pods' failures were lost stays Pending).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from contracts import JobDeleteAccepted, Topic, job_key
from shared.bus.kafka import KafkaSettings
from shared.bus.memory import InMemoryBus, MemoryConsumer, MemoryProducer
from shared.bus.protocol import RebalanceCallback
from shared.bus.records import OutRecord, TopicPartition
from shared.bus.router import Route
from shared.runtime.clock import SystemClock
from shared.runtime.reactor import Entry, Reactor
from shared.runtime.service import Service
from shared.runtime.settings import Settings
from shared.runtime.topology import ensure_topics
from shared.state.changelog import ChangelogStore
from shared.step import Ctx, Step, Tick
from tests.support.bus_contract import read_topic, running

PREFIX = "unit."
SUBMITTED = f"{PREFIX}{Topic.JOBS_SUBMITTED}"
ADMITTED = f"{PREFIX}{Topic.JOBS_ADMITTED}"
NOW = datetime(2026, 3, 1, tzinfo=UTC)
YIELDS = 200
"""Loop turns the first publish lets the rebalance run (the in-memory one needs a few)."""


def count(state: int | None, _event: object, _ctx: Ctx) -> Step[int | None]:
    """Count the inputs of a key; announce each count as a job named after it."""
    if isinstance(_event, Tick):
        return Step(state)
    seen = (state or 0) + 1
    announce = JobDeleteAccepted(
        event_id=f"count-{seen}", occurred_at=NOW, job_key=job_key("ns", f"seen-{seen}")
    )
    return Step(seen, (announce,))


class EagerBus(InMemoryBus):
    """Rebalances the counter's group the Kafka way while its first outputs are published."""

    def __init__(self) -> None:
        super().__init__()
        self.member: MemoryConsumer | None = None
        self.rebalance: asyncio.Task[None] | None = None

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        client_id: str,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        partitions: Sequence[TopicPartition] | None = None,
        membership_only: bool = False,
    ) -> MemoryConsumer:
        made = super().consumer(
            topics,
            group=group,
            client_id=client_id,
            on_assigned=on_assigned,
            on_revoked=on_revoked,
            partitions=partitions,
            membership_only=membership_only,
        )
        if group == "unit-counter":
            self.member = made
        return made

    def producer(self, *, client_id: str) -> MemoryProducer:
        return _RebalancingProducer(self)

    async def rejoin(self) -> None:
        """Revoke every partition of the member, then assign the same ones (eager, sticky)."""
        member = self.member
        assert member is not None
        held = member.assignment()
        await member._revoke(held)
        await member._assign(sorted(held))


class _RebalancingProducer(MemoryProducer):
    def __init__(self, bus: EagerBus) -> None:
        super().__init__(bus)
        self._eager = bus

    async def send(self, records: Sequence[OutRecord]) -> None:
        bus = self._eager
        if bus.rebalance is None and any(record.topic == ADMITTED for record in records):
            bus.rebalance = asyncio.create_task(bus.rejoin())
            for _ in range(YIELDS):
                if bus.rebalance.done():
                    break
                await asyncio.sleep(0)
        await super().send(records)


async def test_a_rebalance_during_a_batchs_publish_keeps_the_batchs_state() -> None:
    bus = EagerBus()
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
        await bus.rebalance
        await MemoryProducer.send(producer, [OutRecord(SUBMITTED, b"k", b"second")])
        announced = await read_topic(bus, ADMITTED, want=2)

    assert [(r.key or b"").decode() for r in announced] == ["ns/seen-1", "ns/seen-2"]
