"""A lease holder whose event loop stalls stops acting before another replica can start.

On a busy machine one scheduling cycle took 10 s while the lease's session is 6 s: the
holder sent no heartbeat, the group gave the lease to the standby, and the old holder,
not yet told, published its cycle's bindings beside the new holder's (the chaos run saw
pods bound twice on two nodes). These run on the real broker, whose group coordinator
drops the silent member.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import TypeGuard

import pytest

from tests.support.broker import session_ms
from tests.support.bus_contract import read_topic, running, wait_until
from vcbus.contracts import Event, NodeRegistered, Topic
from vcbus.contracts.objects.node import Node
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import TopicConfig
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.lease import Lease
from vcbus.core.runtime.scheduler import scheduling_service
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.step import Ctx

SESSION_MS = session_ms()


def _active(lease: Lease) -> bool:
    return lease.is_active


def _node_registered(event: Event) -> TypeGuard[NodeRegistered]:
    return isinstance(event, NodeRegistered)


@pytest.fixture
def bus(kafka_bootstrap: str) -> AioKafkaBus:
    return AioKafkaBus(
        KafkaSettings(bootstrap_servers=kafka_bootstrap, session_timeout_ms=SESSION_MS)
    )


async def test_a_holder_stalled_past_its_session_is_not_active_when_it_resumes(
    bus: AioKafkaBus, topic_prefix: str
) -> None:
    topic = f"{topic_prefix}lease"
    await bus.ensure_topics([TopicConfig(topic, partitions=1)])
    group = f"{topic_prefix}lease-g"
    first = Lease(bus, topic=topic, group=group, client_id="r1")
    second = Lease(bus, topic=topic, group=group, client_id="r2")
    held = asyncio.create_task(first.hold())
    standby: asyncio.Task[None] | None = None
    try:
        assert await wait_until(lambda: first.is_active)
        standby = asyncio.create_task(second.hold())
        # the standby's join rebalances the group: the holder is assigned the lease again
        # (its second assignment), the standby holds nothing
        assert await wait_until(lambda: first.takeovers >= 2 and first.is_active)
        assert first.is_active
        assert not second.is_active

        held_before = first.takeovers
        time.sleep(SESSION_MS / 1000 + 1.5)  # noqa: ASYNC251 - the stall under test

        # nothing of the loop has run yet: the lease was never revoked in this process,
        # yet the holder knows it may have been replaced
        assert first.active.is_set()
        assert not _active(first)
        both = False
        for _ in range(200):  # until the lease settles: the standby took it, or the group
            await asyncio.sleep(0.05)  # gave it to the holder again in a rebalance of its own
            both = both or (_active(first) and _active(second))
            if _active(second) or (first.takeovers > held_before and _active(first)):
                break
        assert await wait_until(lambda: first.is_active or second.is_active)
        assert not both
    finally:
        for task in (held, standby):
            if task is None:
                continue
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_a_cycle_longer_than_the_session_keeps_the_lease_and_publishes(
    bus: AioKafkaBus, kafka_bootstrap: str, topic_prefix: str
) -> None:
    settings = Settings(
        kafka=KafkaSettings(bootstrap_servers=kafka_bootstrap, session_timeout_ms=SESSION_MS),
        topic_prefix=topic_prefix,
        poll_timeout=0.1,
        partitions=1,
    )
    decided: list[str] = []
    go: list[bool] = []  # set once the standby has joined
    node = Node(name="slow-cycle", allocatable={"cpu": 1000})

    def replica(name: str, *, slow: bool) -> Service:
        def decide(ctx: Ctx) -> Sequence[NodeRegistered]:
            if not slow or decided or not go:
                return []
            time.sleep(SESSION_MS / 1000 + 2)  # a cycle as slow as one on a starved machine
            decided.append(name)
            return [NodeRegistered(event_id="slow-cycle-1", occurred_at=ctx.now, node=node)]

        return scheduling_service(
            "slow",
            SystemClock(),
            folds=_node_registered,
            apply=lambda event: None,
            decide=decide,
            assume=lambda events: None,
            cycle_span="slow.cycle",
            action="decide",
            rest=0.0,
        )

    holder_service = replica("holder", slow=True)
    await ensure_topics(bus, [holder_service], topic_prefix, 1)
    async with running(holder_service, bus, settings, instance="a") as holder:
        assert await wait_until(lambda: holder.lease is not None and holder.lease.is_active)
        async with running(replica("standby", slow=False), bus, settings, instance="b") as standby:
            # the standby's join rebalances the group; the holder keeps the lease (sticky)
            assert holder.lease is not None
            # twice half a session, each time the holder still holding it after the join
            await asyncio.sleep(SESSION_MS / 2000)
            assert await wait_until(lambda: holder.lease is not None and holder.lease.is_active)
            await asyncio.sleep(SESSION_MS / 2000)
            assert await wait_until(lambda: holder.lease is not None and holder.lease.is_active)
            before = holder.lease.takeovers
            go.append(True)  # the holder's next cycle is the slow one
            assert await wait_until(lambda: bool(decided), timeout=60)
            published = await read_topic(bus, f"{topic_prefix}{Topic.NODES}", want=1)
            await asyncio.sleep(SESSION_MS / 1000)  # a few heartbeats after the cycle
            assert standby.lease is not None
            assert len(published) == 1
            # heartbeats went on while it decided: the lease never moved
            assert holder.lease.takeovers == before
            assert holder.lease.is_active
            assert standby.lease.takeovers == 0
