"""``vcbus get``: listings read from the status topics on an in-memory bus, and ``--watch``."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
import yaml

from tests.support.bus_contract import wait_until
from tests.unit.services.cli.builders import (
    NOW,
    SETTINGS,
    build_admitted,
    build_node,
    build_phase,
    build_pod,
    build_podgroup,
    build_queue,
    build_rejected,
    build_status,
    elected,
    heartbeat,
    locked,
    pod_bound,
    pod_created,
    pod_deleted,
    pod_phase,
    publish,
)
from vcbus.contracts.objects import Pod, PodGroupPhase, QueueState
from vcbus.core.bus.memory import InMemoryBus
from vcbus.services.cli.get import get
from vcbus.services.cli.kinds import KINDS
from vcbus.services.cli.listing import Query

LATER = NOW + timedelta(seconds=90)


async def listing(
    bus: InMemoryBus,
    kind: str,
    *names: str,
    output: str = "table",
    namespace: str | None = None,
    colour: bool = False,
) -> str:
    out: list[str] = []
    await get(
        bus,
        SETTINGS,
        KINDS[kind],
        Query(names, namespace),
        output=output,
        write=out.append,
        colour=colour,
        clock=lambda: LATER,
    )
    return "".join(out)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()[1:]]


@pytest.fixture
def bus() -> InMemoryBus:
    return InMemoryBus()


async def test_jobs_show_latest_phase_and_ranked_reason_when_many_statuses_were_published(bus):
    admitted = build_admitted("default/a")
    created = msgspec.structs.replace(admitted.manifest.metadata, creation_timestamp=NOW)
    await publish(
        bus,
        msgspec.structs.replace(
            admitted, manifest=msgspec.structs.replace(admitted.manifest, metadata=created)
        ),
        build_status("default/a", "Pending"),
        build_status("default/a", "Running", at=1, running=2),
        build_status("team/b", "Pending", reason="PodGroupPending"),
        build_phase("team/b", PodGroupPhase.PENDING, reason="ClusterOverused", message="cpu 9 > 8"),
        build_rejected("default/c"),
    )
    assert rows(await listing(bus, "jobs")) == [
        ["default", "a", "Running", "2", "0", "2", "0", "0", "90s"],
        ["default", "c", "Rejected", "NegativeReplicas", "90s"],
        [
            "team",
            "b",
            "Pending",
            "Pending",
            "2",
            "2",
            "0",
            "0",
            "0",
            "ClusterOverused",
            "<unknown>",
        ],
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


def requesting(pod: Pod) -> Pod:
    """The pod asking for 1 CPU and 1Gi."""
    return msgspec.structs.replace(pod, requests={"cpu": 1000, "memory": 1 << 30})


async def test_nodes_show_use_free_pods_and_newest_locks_when_reservations_changed(bus):
    pod = requesting(build_pod("default/a", 0))
    done = requesting(build_pod("default/a", 1))
    await publish(
        bus,
        build_node("n1"),
        build_node("n2"),
        pod_created(pod),
        pod_bound(pod, "n1"),
        pod_created(done),
        pod_phase(done, "Succeeded", "n1"),  # holds nothing any more
        elected("default/old", 1),
        locked("default/old", ("n1",), 1),
        elected("default/big", 2),
        locked("default/big", ("n2",), 2),
    )
    assert rows(await listing(bus, "nodes")) == [
        [
            "n1",
            "Ready",
            "cpu=4,memory=8Gi",
            "cpu=1,memory=1Gi",
            "cpu=3,memory=7Gi",
            "1/110",
            "-",
            "-",
        ],
        [
            "n2",
            "Ready",
            "cpu=4,memory=8Gi",
            "cpu=0,memory=0",
            "cpu=4,memory=8Gi",
            "0/110",
            "default/big",
            "-",
        ],
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
    assert rows(listed)[0][-3:] == ["default/big", "in", "8m30s"]  # as kubectl says ages
    [node] = json.loads(await listing(bus, "nodes", output="json"))["items"]
    assert (node["lockedFor"], node["lockReason"], node["lockedUntil"]) == (
        "default/big",
        "lock-mode single",
        "2026-01-01T00:10:00+00:00",
    )


async def test_nodes_show_ready_or_not_ready_and_the_heartbeats_age_when_real(bus):
    """docs/design.md#real-nodes: NotReady 40 s after the last heartbeat; a simulated node is
    Ready."""
    await publish(
        bus,
        build_node("fresh"),
        build_node("silent"),
        build_node("sim"),
        heartbeat("fresh", 0),
        heartbeat("fresh", 80, limits_enforced=False),
        heartbeat("silent", 0),
    )

    wide = {row[0]: row for row in rows(await listing(bus, "nodes", output="wide"))}

    assert {name: row[1] for name, row in wide.items()} == {
        "fresh": "Ready",
        "silent": "NotReady",
        "sim": "Ready",
    }
    # HEARTBEAT, LIMITS, RUNTIME (a node without the runtime label: "-")
    assert " ".join(wide["fresh"][-5:]) == "10s ago not enforced -"
    assert " ".join(wide["silent"][-4:]) == "90s ago enforced -"  # LIMITS says so, not "-"
    assert wide["sim"][-3:] == ["-", "-", "-"]
    items = json.loads(await listing(bus, "nodes", output="json"))["items"]
    by_name = {item["name"]: item for item in items}
    assert by_name["fresh"]["heartbeat"] == {
        "at": "2026-01-01T00:01:20+00:00",
        "ageSeconds": 10.0,
        "intervalSeconds": 10.0,
        "limitsEnforced": False,
    }
    assert (by_name["silent"]["ready"], by_name["sim"]["heartbeat"]) == ("NotReady", None)


async def test_a_real_node_is_listed_when_its_newest_record_is_a_heartbeat(bus):
    """``nodes`` is compacted: a real node's registration may be gone, its heartbeat not."""
    await publish(bus, heartbeat("real", 85))

    assert [row[:2] for row in rows(await listing(bus, "nodes"))] == [["real", "Ready"]]


async def test_queues_show_share_capability_use_and_podgroups_by_phase_when_declared(bus):
    pod = requesting(build_pod("default/a", 0))
    await publish(
        bus,
        build_queue("research", weight=3, capability={"cpu": 8000}),
        build_queue("closed", weight=4, state=QueueState.CLOSED),
        build_podgroup("default/a", queue="research"),
        build_podgroup("default/b", queue="research"),
        build_phase("default/a", PodGroupPhase.INQUEUE),
        pod_created(pod),
        pod_phase(pod, "Running", "n1"),
    )
    assert rows(await listing(bus, "queues")) == [
        ["closed", "4", "0%", "Closed", "-", "-", "cpu=0,memory=0", "0", "0", "0", "0"],
        ["default", "1", "25%", "Open", "-", "-", "cpu=0,memory=0", "0", "0", "0", "0"],
        ["research", "3", "75%", "Open", "-", "cpu=8", "cpu=1,memory=1Gi", "1", "1", "0", "0"],
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


async def test_wide_adds_queue_priority_class_and_nodes_of_a_job(bus):
    pod = build_pod("default/a", 0)
    await publish(
        bus,
        build_admitted("default/a"),
        build_status("default/a", "Running", running=2),
        pod_created(pod),
        pod_phase(pod, "Running", "node-3"),
    )
    text = await listing(bus, "jobs", output="wide")
    assert text.splitlines()[0].split()[-4:] == ["AGE", "QUEUE", "PRIORITY", "NODES"]
    assert rows(text)[0][-3:] == ["default", "-", "node-3"]


async def test_the_phase_is_coloured_when_asked_and_plain_otherwise(bus):
    await publish(bus, build_status("default/a", "Running", running=2))
    plain = await listing(bus, "jobs")
    coloured = await listing(bus, "jobs", colour=True)
    assert "\x1b" not in plain
    assert "\x1b[32mRunning" in coloured
    assert coloured.replace("\x1b[32m", "").replace("\x1b[0m", "") == plain


async def test_a_name_given_with_its_namespace_is_found_whatever_the_namespace(bus):
    await publish(bus, build_status("team/b", "Pending"), build_status("default/b", "Pending"))
    assert [r[0] for r in rows(await listing(bus, "jobs", "team/b", namespace="default"))] == [
        "team"
    ]
    assert [r[0] for r in rows(await listing(bus, "jobs", "b", namespace="default"))] == ["default"]


async def test_wide_adds_priority_and_minimum_resources_of_a_podgroup(bus):
    created = build_podgroup("default/a")
    group = msgspec.structs.replace(
        created.podgroup, priority=7, min_resources={"cpu": 2000, "memory": 1 << 30}
    )
    await publish(bus, msgspec.structs.replace(created, podgroup=group))
    text = await listing(bus, "podgroups", output="wide")
    assert text.splitlines()[0].split()[-3:] == ["AGE", "PRIORITY", "MINRESOURCES"]
    assert rows(text)[0][-2:] == ["7", "cpu=2,memory=1Gi"]
