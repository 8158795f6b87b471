"""The read commands' store against garbage on the status topics.

A record no contract decodes is skipped (counted, said at ``-v``), so it hides nothing it
shares a key with: not a job from ``get`` or ``describe``, not a node, not the status
``submit --wait`` waits for.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.builders import build_pod
from tests.unit.services.cli.builders import (
    PREFIX,
    SETTINGS,
    build_node,
    build_phase,
    build_status,
    publish,
)
from vcbus.contracts import BindingCreated, BindingRefused, NodeName, PodCreated, PodKey, Topic
from vcbus.contracts.objects import PodGroupPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import OutRecord, Record
from vcbus.services.cli.describe import describe
from vcbus.services.cli.get import get
from vcbus.services.cli.kinds import KINDS
from vcbus.services.cli.listing import Query
from vcbus.services.cli.status_store import StatusStore
from vcbus.services.cli.submit import outcome

AT = datetime(2026, 1, 1, tzinfo=UTC)

GARBAGE = (
    b"not json",
    b'{"type": "job.status_changed.v1", "job_key": 7}',
    b'{"type": "from.the.future.v9"}',
    b"[" * 100_000,
    None,
)
"""Not JSON, a known type that does not decode, an unknown type, deep nesting, no value."""


@pytest.fixture
def bus() -> InMemoryBus:
    return InMemoryBus()


async def send_garbage(bus: InMemoryBus, topic: Topic, key: str) -> None:
    records = [OutRecord(f"{PREFIX}{topic}", key.encode(), value) for value in GARBAGE]
    await bus.producer(client_id="garbage").send(records)


async def listing(bus: InMemoryBus, kind: str, *names: str, verbose: int = 0) -> str:
    out: list[str] = []
    await get(
        bus, SETTINGS, KINDS[kind], Query(names), output="table", write=out.append, verbose=verbose
    )
    return "".join(out)


async def test_get_lists_a_job_when_garbage_keyed_like_it_came_after(bus, capsys):
    await publish(bus, build_status("default/twice", "Running", running=2))
    await send_garbage(bus, Topic.JOBS_STATUS, "default/twice")
    text = await listing(bus, "jobs", "twice")
    assert text.splitlines()[1].split()[:3] == ["default", "twice", "Running"]
    assert capsys.readouterr().err == ""


async def test_get_nodes_lists_a_node_when_garbage_keyed_like_it_came_after(bus):
    await publish(bus, build_node("node-0"), build_node("node-1"))
    await send_garbage(bus, Topic.NODES, "node-0")
    rows = (await listing(bus, "nodes")).splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["node-0", "node-1"]


async def test_skipped_records_are_counted_per_topic_when_verbose(bus, capsys):
    await publish(bus, build_node("node-0"))
    await send_garbage(bus, Topic.NODES, "node-0")
    await listing(bus, "nodes", verbose=1)
    assert capsys.readouterr().err == (
        f"skipped {len(GARBAGE)} record(s) on nodes that no contract decodes\n"
    )


async def test_describe_describes_a_job_when_its_newest_records_are_garbage(bus):
    await publish(bus, build_status("default/twice", "Pending", reason="PodGroupPending"))
    await send_garbage(bus, Topic.JOBS_STATUS, "default/twice")
    await send_garbage(bus, Topic.PODGROUPS_STATUS, "default/twice")
    text = await describe(bus, SETTINGS, "default/twice")
    assert text is not None
    assert "Pending" in text


def fold(store: StatusStore, *records: OutRecord) -> StatusStore:
    for offset, out in enumerate(records):
        store.fold(Record(out.topic, 0, offset, out.key, out.value, out.headers))
    return store


def test_submit_wait_sees_the_status_when_garbage_came_after_it():
    garbage = [OutRecord(f"{PREFIX}{Topic.JOBS_STATUS}", b"default/a", v) for v in GARBAGE]
    store = fold(
        StatusStore(PREFIX),
        event_record(build_status("default/a", "Running", running=2), PREFIX),
        event_record(build_phase("default/a", PodGroupPhase.RUNNING), PREFIX),
        *garbage,
    )
    result = outcome(store, StatusStore(PREFIX), "default/a", unchanged=False)
    assert result.done
    assert result.line == "default/a: Running, PodGroup Running, 2 running (min available 2)"
    assert store.skipped == {Topic.JOBS_STATUS: len(GARBAGE)}


def test_a_refused_binding_takes_the_pod_off_the_node_it_was_refused_by():
    pod = build_pod("default", "a-w-0", None, PodPhase.PENDING, {"cpu": "1"}, "a").pod
    bound = BindingCreated(event_id="b", occurred_at=AT, pod=pod, node=NodeName("node-0"))
    refused = BindingRefused(
        event_id="r",
        occurred_at=AT,
        pod=PodKey("default/a-w-0"),
        job=pod.job,
        task=pod.task,
        node=NodeName("node-0"),
        reason="NodeOvercommitted",
        pod_uid=pod.uid,
    )

    store = fold(
        StatusStore(PREFIX),
        event_record(PodCreated(event_id="c", occurred_at=AT, pod=pod), PREFIX),
        event_record(bound, PREFIX),
        event_record(refused, PREFIX),
    )

    assert store.pods["default/a-w-0"].node == ""
    assert "default/a-w-0" in store.touched
