"""kubectl's habits: short names, ``get all``, ``describe pod|podgroup|queue``."""

from __future__ import annotations

import json

import pytest

from tests.unit.services.cli.builders import (
    SETTINGS,
    build_phase,
    build_pod,
    build_podgroup,
    build_queue,
    build_status,
    pod_bound,
    pod_created,
    publish,
)
from vcbus.contracts.objects import PodGroupPhase
from vcbus.core.bus.memory import InMemoryBus
from vcbus.services.cli import build_parser
from vcbus.services.cli.describe_kinds import describe_kind
from vcbus.services.cli.get import get_all
from vcbus.services.cli.listing import Query


@pytest.mark.parametrize(
    ("verb", "short", "kind"),
    [
        ("get", "po", "po"),
        ("get", "pg", "pg"),
        ("get", "vcj", "vcj"),
        ("get", "vcjob", "vcjob"),
        ("get", "q", "q"),
        ("get", "no", "no"),
        ("get", "all", "all"),
        ("describe", "po", "po"),
        ("describe", "pod", "pod"),
        ("describe", "podgroup", "podgroup"),
        ("describe", "pg", "pg"),
        ("describe", "queue", "queue"),
        ("describe", "vcj", "vcj"),
    ],
)
def test_kubectls_short_names_are_taken(verb: str, short: str, kind: str) -> None:
    args = build_parser().parse_args([verb, short, *(["x"] if verb == "describe" else [])])
    assert args.kind == kind


async def _cluster(bus: InMemoryBus) -> None:
    pod = build_pod("default/a", 0)
    await publish(
        bus,
        build_status("default/a", "Running", running=1),
        build_podgroup("default/a", queue="research"),
        build_phase("default/a", PodGroupPhase.RUNNING),
        pod_created(pod),
        pod_bound(pod, "n1"),
        build_queue("research", weight=3, capability={"cpu": 8000}),
    )


async def test_get_all_lists_jobs_podgroups_and_pods_named_kind_slash_name() -> None:
    bus = InMemoryBus()
    await _cluster(bus)

    text = await get_all(bus, SETTINGS, Query((), "default"), "table")

    tables = text.split("\n\n")
    assert [t.splitlines()[1].split()[1] for t in tables] == [
        "job.batch.volcano.sh/a",
        "podgroup.scheduling.volcano.sh/a-pg",
        "pod/a-worker-0",
    ]
    items = json.loads(await get_all(bus, SETTINGS, Query((), "default"), "json"))["items"]
    assert [(i["kind"], i["name"]) for i in items] == [
        ("Job", "a"),
        ("PodGroup", "a-pg"),
        ("Pod", "a-worker-0"),
    ]
    assert await get_all(bus, SETTINGS, Query((), "nosuchns"), "table") == ""


async def test_describe_gives_a_pod_a_podgroup_and_a_queue_or_none() -> None:
    bus = InMemoryBus()
    await _cluster(bus)

    pod = await describe_kind(bus, SETTINGS, "pods", "a-worker-0", "default")
    assert pod is not None
    assert "Name:             a-worker-0" in pod.splitlines()
    assert "Node:             n1" in pod.splitlines()

    for name in ("a-pg", "default/a-pg", "a"):  # its own name, or its job's
        group = await describe_kind(bus, SETTINGS, "podgroups", name, "default")
        assert group is not None, name
        assert "Queue:            research" in group.splitlines()
        assert "Phase:            Running" in group.splitlines()

    queue = await describe_kind(bus, SETTINGS, "queues", "research", "default")
    assert queue is not None
    assert "Weight:           3" in queue.splitlines()
    assert "Capability:       cpu=8" in queue.splitlines()

    assert await describe_kind(bus, SETTINGS, "pods", "a-worker-0", "team") is None
    assert await describe_kind(bus, SETTINGS, "queues", "nosuch", "default") is None
