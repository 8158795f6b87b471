"""Lease: exactly one active replica of a singleton service.

Every replica joins one consumer group on a one-partition lease topic; the member that is
assigned the partition is active. When it dies, the group's session times out, the
partition moves to a standby, and that standby becomes active
(docs/design.md#processing-guarantees).

A holder whose event loop stalls (a long cycle, a starved CPU) sends no heartbeat and may
be replaced before it hears so: it is active only while the group surely still counts it
(``Consumer.membership_valid_until``), so two replicas never act at once.
"""

from __future__ import annotations

import asyncio
import time

import structlog

from vcbus.core.bus.protocol import Bus, Consumer
from vcbus.core.bus.records import TopicPartition

log = structlog.get_logger("vcbus.lease")


class Lease:
    """Holds or waits for the lease of ``topic`` in ``group``."""

    def __init__(self, bus: Bus, *, topic: str, group: str, client_id: str) -> None:
        self._bus = bus
        self.topic = topic
        self.group = group
        self.client_id = client_id
        self.active = asyncio.Event()
        self.takeovers = 0
        self._consumer: Consumer | None = None

    async def _assigned(self, partitions: frozenset[TopicPartition]) -> None:
        if any(tp.topic == self.topic for tp in partitions):
            self.takeovers += 1
            self.active.set()
            log.info("lease_acquired", lease=self.topic, member=self.client_id)

    async def _revoked(self, partitions: frozenset[TopicPartition]) -> None:
        if any(tp.topic == self.topic for tp in partitions):
            self.active.clear()
            log.info("lease_released", lease=self.topic, member=self.client_id)

    @property
    def is_active(self) -> bool:
        """Whether this replica holds the lease now, and surely still holds it.

        Assigned, and within the membership's confirmed time: a holder stalled past it
        acts no more until a heartbeat confirms it again (or the lease moves).
        """
        if not self.active.is_set():
            return False
        until = None if self._consumer is None else self._consumer.membership_valid_until()
        return until is None or time.monotonic() < until

    async def hold(self) -> None:
        """Stay in the lease group until cancelled (polling keeps the membership alive).

        The lease topic is never read: its consumer only holds the membership.
        """
        consumer = self._bus.consumer(
            [self.topic],
            group=self.group,
            client_id=self.client_id,
            on_assigned=self._assigned,
            on_revoked=self._revoked,
            membership_only=True,
        )
        self._consumer = consumer
        await consumer.start()
        try:
            while True:
                await consumer.getmany(timeout=0.5, max_records=1)
        finally:
            self.active.clear()
            await consumer.stop()
