"""A job that can never run is Inadmissible, with why; a waiting job's place in its queue."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from contracts import Topic
from contracts.objects import PodGroupPhase
from contracts.objects.job import JobSpec, PodTemplate, TaskSpec
from services.cli.admissible import inadmissible, place_in_queue
from services.cli.describe import describe
from services.cli.status import StatusStore, pending_reasons, read_store
from shared.bus.memory import InMemoryBus
from tests.unit.services.cli.builders import (
    NOW,
    SETTINGS,
    build_admitted,
    build_node,
    build_phase,
    build_podgroup,
    build_queue,
    build_status,
    publish,
)

TOPICS = (
    Topic.QUEUES,
    Topic.NODES,
    Topic.JOBS_ADMITTED,
    Topic.PODGROUPS,
    Topic.PODGROUPS_STATUS,
    Topic.JOBS_STATUS,
    Topic.PODGROUPS_CONDITIONS,
)


def admitted(key: str, *, cpu: str, queue: str = "default"):
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    template = PodTemplate(spec={"containers": [container]})
    spec = JobSpec(queue=queue, tasks=(TaskSpec(name="worker", replicas=2, template=template),))
    event = build_admitted(key)
    return msgspec.structs.replace(event, job=msgspec.structs.replace(event.job, spec=spec))


def podgroup(key: str, *, cpu: int, queue: str = "default", priority: int = 0, at: int = 0):
    event = build_podgroup(key, queue=queue)
    group = msgspec.structs.replace(
        event.podgroup,
        min_resources={"cpu": cpu},
        priority=priority,
        creation_timestamp=NOW + timedelta(seconds=at),
    )
    return msgspec.structs.replace(event, event_id=f"{key}-pg", podgroup=group)


async def store_of(*events) -> StatusStore:
    bus = InMemoryBus()
    await publish(bus, *events)
    return await read_store(bus, SETTINGS, TOPICS)


async def test_a_pod_bigger_than_every_node_is_inadmissible_with_the_largest_node_named():
    store = await store_of(build_node("n1"), build_node("n2"), admitted("default/huge", cpu="6"))
    assert inadmissible(store, "default/huge") == (
        "a pod of task worker requests cpu=6,memory=1Gi; no node offers that much "
        "(largest: cpu=4,memory=8Gi)"
    )


async def test_a_minimum_over_the_queues_capability_is_inadmissible_and_ranked_first():
    store = await store_of(
        build_node("n1"),
        build_queue("small", capability={"cpu": 2000}),
        admitted("default/wide", cpu="2", queue="small"),
        podgroup("default/wide", cpu=4000, queue="small"),
        build_status("default/wide", "Pending"),
        build_phase(
            "default/wide", PodGroupPhase.PENDING, reason="QueueOverCapability", message="m"
        ),
    )
    message = "its minimum needs cpu=4, more than queue small's capability cpu=2"
    assert inadmissible(store, "default/wide") == message
    assert [r.code for r in pending_reasons(store, "default/wide")] == [
        "Inadmissible",
        "QueueOverCapability",
    ]


async def test_a_job_that_fits_or_whose_nodes_are_unknown_is_not_inadmissible():
    fits = await store_of(
        build_node("n1"), admitted("default/a", cpu="4"), podgroup("default/a", cpu=8000)
    )
    assert inadmissible(fits, "default/a") is None
    no_nodes = await store_of(admitted("default/a", cpu="64"))
    assert inadmissible(no_nodes, "default/a") is None


async def test_the_place_in_the_queue_counts_waiting_podgroups_by_priority_then_age():
    store = await store_of(
        podgroup("default/old", cpu=1, at=0),
        podgroup("default/new", cpu=1, at=5),
        podgroup("default/urgent", cpu=1, at=9, priority=100),
        podgroup("default/enqueued", cpu=1, at=1),
        build_phase("default/enqueued", PodGroupPhase.INQUEUE),
        podgroup("default/elsewhere", cpu=1, queue="other"),
    )
    places = {k: place_in_queue(store, k) for k in ("default/urgent", "default/old", "default/new")}
    assert [(p.position, p.waiting) for p in places.values() if p] == [(1, 3), (2, 3), (3, 3)]
    assert place_in_queue(store, "default/enqueued") is None


async def test_describe_names_inadmissible_and_the_place_in_the_queue():
    bus = InMemoryBus()
    await publish(
        bus,
        build_node("n1"),
        admitted("default/huge", cpu="6"),
        podgroup("default/huge", cpu=12000),
        build_status("default/huge", "Pending"),
    )
    text = await describe(bus, SETTINGS, "default/huge", now=NOW)
    assert text is not None
    assert "Pending Reason:   Inadmissible\n" in text
    assert "Queue Position:   1 of 1 waiting in queue default\n" in text


@pytest.mark.parametrize("cpu", ["4", "1"])
async def test_a_pod_that_fits_a_node_exactly_or_less_is_admissible(cpu):
    store = await store_of(build_node("n1"), admitted("default/a", cpu=cpu))
    assert inadmissible(store, "default/a") is None
