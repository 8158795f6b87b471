"""``vcbus get``: listings read from the status topics on an in-memory bus, and ``--watch``."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
import yaml

from contracts.objects import PodGroupPhase
from services.cli.get import KINDS, Query, get
from shared.bus.memory import InMemoryBus
from tests.support.bus_contract import wait_until
from tests.unit.services.cli.builders import (
    SETTINGS,
    build_node,
    build_phase,
    build_pod,
    build_podgroup,
    build_queue,
    build_rejected,
    build_status,
    elected,
    locked,
    pod_bound,
    pod_created,
    pod_deleted,
    pod_phase,
    publish,
)


async def listing(
    bus: InMemoryBus, kind: str, *names: str, output: str = "table", namespace: str | None = None
) -> str:
    out: list[str] = []
    await get(bus, SETTINGS, KINDS[kind], Query(names, namespace), output=output, write=out.append)
    return "".join(out)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()[1:]]


@pytest.fixture
def bus() -> InMemoryBus:
    return InMemoryBus()


async def test_jobs_show_latest_phase_and_ranked_reason_when_many_statuses_were_published(bus):
    await publish(
        bus,
        build_status("default/a", "Pending"),
        build_status("default/a", "Running", at=1, running=2),
        build_status("team/b", "Pending", reason="PodGroupPending"),
        build_phase("team/b", PodGroupPhase.PENDING, reason="ClusterOverused", message="cpu 9 > 8"),
        build_rejected("default/c"),
    )
    assert rows(await listing(bus, "jobs")) == [
        ["default", "a", "Running", "2", "0", "2", "0", "0"],
        ["default", "c", "Rejected", "NegativeReplicas"],
        ["team", "b", "Pending", "Pending", "2", "2", "0", "0", "0", "ClusterOverused"],
    ]
    assert [r[1] for r in rows(await listing(bus, "jobs", namespace="team"))] == ["b"]


async def test_a_resubmitted_job_shows_its_new_life_when_status_is_newer_than_rejection(bus):
    await publish(
        bus, build_rejected("default/a", at=0), build_status("default/a", "Pending", at=5)
    )
    assert rows(await listing(bus, "jobs", "a"))[0][2] == "Pending"


async def test_json_and_yaml_list_every_object_when_asked(bus):
    await publish(bus, build_status("default/a", "Running", running=2))
    document = json.loads(await listing(bus, "jobs", output="json"))
    assert document["kind"] == "List"
    assert document["items"][0]["tasks"] == {
        "worker": {"pending": 0, "running": 2, "succeeded": 0, "failed": 0, "unknown": 0}
    }
    assert document["items"][0]["traceId"] == "0af7651916cd43dd8448eb211c80319c"
    assert yaml.safe_load(await listing(bus, "jobs", output="yaml")) == document


async def test_pods_follow_creation_binding_phase_and_deletion_when_topics_interleave(bus):
    first, second, gone = (
        build_pod("default/a", 0),
        build_pod("default/a", 1),
        build_pod("default/x", 0),
    )
    await publish(
        bus,
        pod_phase(first, "Running", "n1"),  # a status can be read before the creation
        pod_created(first),
        pod_created(second),
        pod_bound(second, "n2"),
        pod_created(gone),
        pod_deleted(gone),
        pod_phase(gone, "Running", "n1"),  # late status of a deleted pod
    )
    assert rows(await listing(bus, "pods")) == [
        ["default", "a-worker-0", "default/a", "worker", "Running", "n1"],
        ["default", "a-worker-1", "default/a", "worker", "Pending", "n2"],
    ]


async def test_nodes_show_active_pods_and_newest_locks_when_reservations_changed(bus):
    pod = build_pod("default/a", 0)
    await publish(
        bus,
        build_node("n1"),
        build_node("n2"),
        pod_created(pod),
        pod_bound(pod, "n1"),
        elected("default/old", 1),
        locked("default/old", ("n1",), 1),
        elected("default/big", 2),
        locked("default/big", ("n2",), 2),
    )
    assert rows(await listing(bus, "nodes")) == [
        ["n1", "4", "8Gi", "1", "Ready", "-", "-"],
        ["n2", "4", "8Gi", "0", "Ready", "default/big", "-"],
    ]


async def test_nodes_show_why_and_until_when_they_are_locked(bus):
    until = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    await publish(
        bus,
        build_node("n1"),
        elected("default/big", 1, reason="starving: priority 0, waiting 60s", until=until),
        locked("default/big", ("n1",), 1, reason="lock-mode single", until=until),
    )
    listed = await listing(bus, "nodes")
    assert rows(listed) == [
        ["n1", "4", "8Gi", "0", "Ready", "default/big", "2026-01-01T00:10:00+00:00"]
    ]
    [node] = json.loads(await listing(bus, "nodes", output="json"))["items"]
    assert (node["lockedFor"], node["lockReason"], node["lockedUntil"]) == (
        "default/big",
        "lock-mode single",
        "2026-01-01T00:10:00+00:00",
    )


async def test_queues_and_podgroups_count_by_phase_when_declared(bus):
    await publish(
        bus,
        build_queue("research", weight=3),
        build_podgroup("default/a", queue="research"),
        build_podgroup("default/b", queue="research"),
        build_phase("default/a", PodGroupPhase.INQUEUE),
    )
    assert rows(await listing(bus, "queues")) == [
        ["default", "1", "Open", "-", "0", "0", "0", "0"],
        ["research", "3", "Open", "-", "1", "1", "0", "0"],
    ]
    assert [r[5] for r in rows(await listing(bus, "podgroups"))] == ["Inqueue", "Pending"]


async def test_nothing_is_listed_when_the_topics_are_empty(bus, capsys):
    assert await listing(bus, "jobs") == ""
    assert "No resources found" in capsys.readouterr().err


async def test_watch_prints_a_line_per_phase_change_when_statuses_arrive(bus):
    await publish(bus, build_status("default/a", "Pending"), build_status("default/b", "Pending"))
    out: list[str] = []
    stop = asyncio.Event()
    watch = asyncio.create_task(
        get(bus, SETTINGS, KINDS["jobs"], Query(), watch=True, stop=stop, write=out.append)
    )
    try:
        assert await wait_until(lambda: len("".join(out).splitlines()) == 3, timeout=10)
        await publish(bus, build_status("default/a", "Running", at=1, running=2))
        assert await wait_until(lambda: len("".join(out).splitlines()) == 4, timeout=10)
    finally:
        stop.set()
        await asyncio.wait_for(watch, 10)
    lines = "".join(out).splitlines()
    assert lines[0].split()[:3] == ["NAMESPACE", "NAME", "PHASE"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["default", "a", "Pending"],
        ["default", "b", "Pending"],
        ["default", "a", "Running"],
    ]
