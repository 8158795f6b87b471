"""``vcbus describe job|node``: the job read from its own partition, and why it waits; a node."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from tests.unit.services.cli.builders import (
    NOW,
    SETTINGS,
    build_admitted,
    build_allocator_condition,
    build_node,
    build_phase,
    build_pod,
    build_podgroup,
    build_rejected,
    build_status,
    elected,
    heartbeat,
    locked,
    pod_bound,
    pod_created,
    pod_phase,
    publish,
)
from vcbus.contracts import (
    CapacityReleased,
    CapacityReserved,
    JobKey,
    NodeName,
    NominatedPod,
    PodKey,
    PodsNominated,
    ReservedPod,
)
from vcbus.contracts.objects import Condition, PodGroupPhase
from vcbus.core.bus.memory import InMemoryBus
from vcbus.services.cli.describe import describe
from vcbus.services.cli.describe_node import describe_node_on

UNTIL = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


@pytest.fixture
def bus() -> InMemoryBus:
    return InMemoryBus()


def field(text: str, label: str) -> str:
    for line in text.splitlines():
        if line.startswith(f"{label}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {label!r} in:\n{text}")


async def test_highest_ranked_reason_is_named_when_a_job_is_pending(bus):
    key = "default/big"
    pod = build_pod(key, 0)
    await publish(
        bus,
        build_admitted(key),
        build_podgroup(key),
        build_status(
            key, "Pending", reason="PodGroupPending", message="PodGroup big-pg is Pending"
        ),
        build_phase(
            key, PodGroupPhase.INQUEUE, reason="WaitingForReservation", message="nodes locked"
        ),
        build_allocator_condition(
            key, "GangUnschedulable", "gang 0/2 ready; 2 nodes Insufficient cpu"
        ),
        pod_created(pod),
        pod_phase(pod, "Pending", "n1"),
        elected(key, 1, reason="starving: priority 0, waiting 60s", until=UNTIL),
        locked(key, ("n2", "n1"), 1, until=UNTIL),
    )
    text = await describe(bus, SETTINGS, key, jaeger_url="http://jaeger:16686/")
    assert text is not None
    assert field(text, "Phase") == "Pending"
    assert field(text, "Pending Reason") == "GangUnschedulable"
    assert "gang 0/2 ready; 2 nodes Insufficient cpu" in text
    also = [line.split(":", 1)[1].strip() for line in text.splitlines() if "Also:" in line]
    assert also == ["WaitingForReservation: nodes locked (podgroups.status)"]
    assert field(text, "Locked Nodes") == "n1, n2"
    assert field(text, "Reservation") == (
        "this job is the target (starving: priority 0, waiting 60s) until 2026-01-01T00:10:00+00:00"
    )
    assert field(text, "Jaeger") == "http://jaeger:16686/trace/0af7651916cd43dd8448eb211c80319c"
    assert "big-worker-0   worker   Pending   n1" in text
    assert "worker   2          2     2         0" in text


async def test_violations_are_listed_when_the_job_was_rejected(bus):
    await publish(bus, build_rejected("default/bad"))
    text = await describe(bus, SETTINGS, "default/bad")
    assert text is not None
    assert field(text, "Phase") == "Rejected"
    assert "spec.tasks[0].replicas   NegativeReplicas   replicas must be >= 0" in text


async def test_unknown_job_is_none_when_nothing_was_published_for_it(bus):
    await publish(bus, build_status("default/other", "Running", running=2))
    assert await describe(bus, SETTINGS, "default/missing") is None


async def test_will_bind_line_shows_the_reserved_pods_when_the_allocator_holds_capacity(bus):
    key = JobKey("default/mpi")
    master = ReservedPod(task="master", index=0, node=NodeName("n2"), requests={"cpu": 2000})
    await publish(
        bus,
        build_status(key, "Running", running=2),
        CapacityReserved(
            event_id="r1",
            occurred_at=NOW,
            job=key,
            podgroup="mpi-pg",
            pods=(master,),
            held=(master,),
            expires_at=NOW + timedelta(minutes=10),
        ),
    )
    text = await describe(bus, SETTINGS, key)
    assert text is not None
    assert field(text, "Will-Bind") == "master-0 on n2 (until 2026-01-01T00:10:00+00:00)"


async def test_will_bind_line_says_why_when_the_reservation_was_released(bus):
    key = JobKey("default/mpi")
    master = ReservedPod(task="master", index=0, node=NodeName("n2"))
    await publish(
        bus,
        build_status(key, "Running", running=2),
        CapacityReleased(
            event_id="r2",
            occurred_at=NOW,
            job=key,
            podgroup="mpi-pg",
            pods=(master,),
            reason="WillBindTimeout",
            message="its stages did not bind in time",
        ),
    )
    text = await describe(bus, SETTINGS, key)
    assert text is not None
    assert field(text, "Will-Bind") == (
        "released: WillBindTimeout: its stages did not bind in time"
    )


async def test_describe_shows_who_took_a_victims_pods(bus):
    """The victim's ``Preempted`` condition names the preemptor."""
    key = "default/low"
    status = build_status(key, "Running", running=1)
    message = "Preempted by job default/high (priority 1000) of queue default on node n1"
    evicted = msgspec.structs.replace(
        status,
        conditions=(
            *status.conditions,
            Condition(type="Preempted", reason="Preempted", message=message),
        ),
    )
    await publish(bus, build_admitted(key), evicted)
    text = await describe(bus, SETTINGS, key)
    assert text is not None
    assert field(text, "Preempted") == message


async def test_describe_shows_what_a_preemptor_waits_for(bus):
    """The preemptor's nominated pods, its victims and the nomination's bound."""
    key = JobKey("default/high")
    await publish(
        bus,
        build_admitted(key),
        build_status(key, "Pending"),
        PodsNominated(
            event_id="n1",
            occurred_at=NOW,
            job=key,
            podgroup="high",
            pods=(NominatedPod(pod=PodKey("default/high-w-0"), uid="u0", node=NodeName("n1")),),
            victims=(PodKey("default/low-w-0"),),
            until=UNTIL,
            reason="Preempted",
        ),
    )
    text = await describe(bus, SETTINGS, key)
    assert text is not None
    assert field(text, "Nominated") == (
        "default/high-w-0 on n1 (Preempted; until 2026-01-01T00:10:00+00:00)"
    )
    assert field(text, "  Victims") == "default/low-w-0"


LATER = NOW + timedelta(seconds=90)


async def test_describe_node_shows_a_silent_real_node_not_ready_with_its_heartbeat(bus):
    """docs/design.md#real-nodes: the heartbeat's age, its interval, the grace period, and
    unenforced limits."""
    pod = build_pod("default/a", 0)
    await publish(
        bus,
        build_node("real"),
        heartbeat("real", 0, limits_enforced=False),
        pod_created(pod),
        pod_bound(pod, "real"),
    )

    text = await describe_node_on(bus, SETTINGS, "real", now=LATER)

    assert text is not None
    assert field(text, "Status") == "NotReady"
    assert field(text, "Heartbeat") == (
        "90s ago (2026-01-01T00:00:00+00:00; every 10s; NotReady 40s after the last)"
    )
    assert field(text, "Limits") == "not enforced (no cgroups)"
    assert "default/a-worker-0" in text.split("Pod List:", 1)[1]


async def test_describe_node_says_a_simulated_node_has_no_heartbeat(bus):
    await publish(bus, build_node("sim"))

    text = await describe_node_on(bus, SETTINGS, "sim", now=LATER)

    assert text is not None
    assert field(text, "Status") == "Ready"
    assert field(text, "Heartbeat") == "<none> (simulated node: always Ready)"
    assert await describe_node_on(bus, SETTINGS, "ghost", now=LATER) is None


async def test_describe_job_marks_a_pod_whose_node_is_not_ready(bus):
    key = "default/a"
    pod = build_pod(key, 0)
    await publish(
        bus,
        build_admitted(key),
        build_status(key, "Running", running=1),
        build_node("real"),
        heartbeat("real", 0),
        pod_created(pod),
        pod_phase(pod, "Running", "real"),
    )

    text = await describe(bus, SETTINGS, key, now=LATER)

    assert text is not None
    pods = text.split("Pod List:\n", 1)[1].splitlines()
    assert pods[1].split(None, 3) == ["a-worker-0", "worker", "Running", "real (NotReady)"]
