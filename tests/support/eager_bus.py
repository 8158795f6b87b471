"""An in-memory bus that rebalances a group the way Kafka's eager protocol does, mid-batch.

aiokafka rebalances in a background task, so a member's partitions can be revoked while
its loop publishes a batch; with the eager protocol and a sticky assignor it revokes
everything and is given the same partitions back. :class:`EagerBus` does that once, to
the member of ``group``, when that member first publishes to ``trigger``: the rebalance
runs as a task and the publish lets it go as far as it can before appending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from vcbus.core.bus.memory import InMemoryBus, MemoryConsumer, MemoryProducer
from vcbus.core.bus.protocol import RebalanceCallback
from vcbus.core.bus.records import OutRecord, TopicPartition

YIELDS = 200
"""Loop turns the publish lets the rebalance run (the in-memory one needs a few)."""


class EagerBus(InMemoryBus):
    """Rebalances ``group`` the Kafka way while its member publishes to ``trigger``."""

    def __init__(self, *, group: str, trigger: str, give_back: bool = True) -> None:
        super().__init__()
        self.group = group
        self.trigger = trigger
        self.give_back = give_back
        """Whether the member gets its partitions back (else another member has them)."""
        self.member: MemoryConsumer | None = None
        self.rebalance: asyncio.Task[None] | None = None
        self.at_revoke: dict[str, int] = {}
        """Records per topic when the member's revoke returned."""

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
        if group == self.group:
            self.member = made
        return made

    def producer(self, *, client_id: str) -> MemoryProducer:
        return _RebalancingProducer(self)

    async def rejoin(self) -> None:
        """Revoke every partition of the member, then assign the same ones (eager, sticky)
        unless another member is to have them."""
        member = self.member
        assert member is not None
        held = member.assignment()
        await member._revoke(held)
        self.at_revoke = {topic: len(self.records(topic)) for topic in self.topics()}
        if self.give_back:
            await member._assign(sorted(held))

    async def rebalanced(self) -> None:
        """Wait until the rebalance, if one started, is over."""
        if self.rebalance is not None:
            await self.rebalance


class _RebalancingProducer(MemoryProducer):
    def __init__(self, bus: EagerBus) -> None:
        super().__init__(bus)
        self._eager = bus

    async def send(self, records: Sequence[OutRecord]) -> None:
        bus = self._eager
        if bus.rebalance is None and any(record.topic == bus.trigger for record in records):
            bus.rebalance = asyncio.create_task(bus.rejoin())
            for _ in range(YIELDS):
                if bus.rebalance.done():
                    break
                await asyncio.sleep(0)
        await super().send(records)
