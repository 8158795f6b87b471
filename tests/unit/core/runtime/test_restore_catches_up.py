"""A replica that has just restored a partition fires the deadlines that passed first.

The cluster's old owner published a pod's end and died before writing it to the
changelog; the allocator, seeing the node freed, bound a gang there. The new owner
restored the node with the pod still running and judged the bindings before its timer
ended the pod: the node looked full, and the bindings were refused (``NodeOvercommitted``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec

from tests.support.bus_contract import read_topic, running
from vcbus.contracts import JobDeleteAccepted, Topic, job_key
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.partitioner import partition_for
from vcbus.core.bus.records import OutRecord
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.reactor import Entry, Reactor
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import changelog_topic, ensure_topics
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step, Tick

PREFIX = "unit."
NOW = datetime(2026, 3, 1, tzinfo=UTC)
ENDED_AT = SystemClock().now() - timedelta(seconds=60)


def node(state: str | None, event: object, _ctx: Ctx) -> Step[str | None]:
    """A pod ``running`` until its deadline; an input says what it found."""
    if isinstance(event, Tick):
        return Step("ended")
    seen = JobDeleteAccepted(
        event_id=f"saw-{state}", occurred_at=NOW, job=job_key("ns", f"saw-{state}")
    )
    return Step(state, (seen,))


def deadline(state: str) -> datetime | None:
    return ENDED_AT if state == "running" else None


async def test_a_deadline_passed_while_nobody_owned_the_state_fires_before_the_next_input() -> None:
    bus = InMemoryBus()
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    store = ChangelogStore[Entry[str]]("nodes", Entry[str])
    reactor = Reactor[str, object](node, store, SystemClock(), next_deadline=deadline)
    service = Service(
        name="cluster",
        routes=[Route(Topic.JOBS_SUBMITTED, reactor.handle, "bind", raw=True)],
        stores=[store],
        timers=[reactor],
        on_restored=reactor.rebuild_timers,
    )
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    partition = partition_for(b"node-4", settings.partitions)
    left = Entry[str](state="running", deadline=ENDED_AT)
    await bus.producer(client_id="test").send(
        [
            OutRecord(
                changelog_topic(PREFIX, "cluster", "nodes"),
                b"node-4",
                msgspec.json.encode(left),
                partition=partition,
            ),
            OutRecord(f"{PREFIX}{Topic.JOBS_SUBMITTED}", b"node-4", b"bind", partition=partition),
        ]
    )
    async with running(service, bus, settings):
        (answer,) = await read_topic(bus, f"{PREFIX}{Topic.JOBS_ADMITTED}", want=1)

    assert answer.key == b"ns/saw-ended"
