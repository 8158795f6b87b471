"""ClusterView: folding the state topics into a snapshot, idempotently, in any order."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.nodes import NodeRegistered, NodeRemoved
from vcbus.contracts.events.podgroups import PodGroupCreated, PodGroupDeleted
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods import PodCreated, PodDeleted
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.events.queues import QueueDeclared
from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.cluster_view import ClusterEvent, ClusterView

AT = datetime(2026, 1, 1, tzinfo=UTC)
POD = build_pod("ns", "job-w-0", None, PodPhase.PENDING, {"cpu": "1"}, "job").pod
KEY = PodKey("ns/job-w-0")
JOB = JobKey("ns/job")


def _id(n: int) -> str:
    return f"e{n}"


def _setup() -> list[ClusterEvent]:
    return [
        NodeRegistered(event_id=_id(1), occurred_at=AT, node=build_node("n1", {"cpu": "4"})),
        QueueDeclared(event_id=_id(2), occurred_at=AT, queue=build_queue("q")),
        PodGroupCreated(
            event_id=_id(3), occurred_at=AT, podgroup=build_podgroup("job", "ns", "q", 1).podgroup
        ),
        PodGroupPhaseChanged(
            event_id=_id(4), occurred_at=AT, job=JOB, podgroup="job", phase=PodGroupPhase.INQUEUE
        ),
        PodCreated(event_id=_id(5), occurred_at=AT, pod=POD),
    ]


def _binding(attempt: int = 0, node: str = "n1") -> BindingCreated:
    return BindingCreated(
        event_id=f"b{attempt}", occurred_at=AT, pod=POD, node=NodeName(node), attempt=attempt
    )


def test_pod_is_binding_when_the_allocator_assumes_its_binding() -> None:
    view = ClusterView()
    for event in _setup():
        view.apply(event)
    view.assume([_binding()])
    state = view.snapshot().pods[KEY]
    assert (state.node, state.binding, state.phase) == ("n1", True, PodPhase.PENDING)


def test_pod_is_bound_when_pods_status_confirms_the_binding() -> None:
    view = ClusterView()
    for event in [*_setup(), _binding()]:
        view.apply(event)
    view.apply(
        PodPhaseChanged(
            event_id="s1",
            occurred_at=AT,
            pod=KEY,
            job=JOB,
            task="",
            node=NodeName("n1"),
            phase=PodPhase.RUNNING,
        )
    )
    state = view.snapshot().pods[KEY]
    assert (state.node, state.binding, state.phase) == ("n1", False, PodPhase.RUNNING)


def test_pod_is_pending_again_with_next_attempt_when_binding_is_refused() -> None:
    view = ClusterView()
    refused = BindingRefused(
        event_id="r1",
        occurred_at=AT,
        pod=KEY,
        job=JOB,
        task="",
        node=NodeName("n1"),
        reason="Overcommitted",
    )
    for event in [*_setup(), _binding(), refused, refused, _binding(0)]:
        view.apply(event)
    state = view.snapshot().pods[KEY]
    assert (state.node, state.binding, state.attempt) == (None, False, 1)
    view.apply(_binding(1))
    assert view.snapshot().pods[KEY].node == "n1"


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_snapshot_is_the_same_when_topics_deliver_in_any_order(order: tuple[int, ...]) -> None:
    """Events of different topics (bindings, pods, pods.status) may interleave."""
    late: list[ClusterEvent] = [
        _binding(),
        PodPhaseChanged(
            event_id="s1",
            occurred_at=AT,
            pod=KEY,
            job=JOB,
            task="",
            node=NodeName("n1"),
            phase=PodPhase.RUNNING,
        ),
        NodesLocked(event_id="l1", occurred_at=AT, job=JobKey("ns/other"), nodes=(NodeName("n1"),)),
    ]
    view = ClusterView()
    for event in _setup():
        view.apply(event)
    for i in order:
        view.apply(late[i])
    snapshot = view.snapshot()
    assert snapshot.pods[KEY].phase is PodPhase.RUNNING
    assert snapshot.reservation.locked_nodes == frozenset({"n1"})


def test_view_is_unchanged_when_every_event_is_applied_twice() -> None:
    events = [*_setup(), _binding()]
    once, twice = ClusterView(), ClusterView()
    for event in events:
        once.apply(event)
        twice.apply(event)
        twice.apply(event)
    assert once.snapshot() == twice.snapshot()


def test_objects_leave_the_view_when_deleted() -> None:
    view = ClusterView()
    for event in [
        *_setup(),
        PodDeleted(event_id="d1", occurred_at=AT, job=JOB, pod=KEY),
        PodGroupDeleted(event_id="d2", occurred_at=AT, job=JOB, name="job"),
        NodeRemoved(event_id="d3", occurred_at=AT, name=NodeName("n1")),
    ]:
        view.apply(event)
    snapshot = view.snapshot()
    assert not snapshot.pods
    assert not snapshot.podgroups
    assert not snapshot.nodes
    assert set(snapshot.queues) == {"default", "q"}


@pytest.mark.parametrize("new_phase_first", [False, True], ids=["in-order", "phase-first"])
def test_a_restarted_jobs_podgroup_keeps_its_new_phase_whatever_topic_comes_first(
    new_phase_first: bool,
) -> None:
    """A restart deletes and re-creates the PodGroup under its name (``podgroups``); the new
    incarnation's Inqueue (``podgroups.status``) may be read before the old one's deletion."""
    old = build_podgroup("job", "ns", "q", 1, uid="old").podgroup
    new = build_podgroup("job", "ns", "q", 1, uid="new").podgroup
    inqueue = PodGroupPhaseChanged(
        event_id="p-new",
        occurred_at=AT,
        job=JOB,
        podgroup="job",
        phase=PodGroupPhase.INQUEUE,
        uid="new",
    )
    recreated: list[ClusterEvent] = [
        PodGroupDeleted(event_id="d", occurred_at=AT, job=JOB, name="job"),
        PodGroupCreated(event_id="c-new", occurred_at=AT, podgroup=new),
    ]
    view = ClusterView()
    for event in [
        PodGroupCreated(event_id="c-old", occurred_at=AT, podgroup=old),
        PodGroupPhaseChanged(
            event_id="p-old",
            occurred_at=AT,
            job=JOB,
            podgroup="job",
            phase=PodGroupPhase.RUNNING,
            uid="old",
        ),
        *([inqueue, *recreated] if new_phase_first else [*recreated, inqueue]),
    ]:
        view.apply(event)

    state = view.snapshot().podgroups[JOB]
    assert (state.podgroup.uid, state.phase) == ("new", PodGroupPhase.INQUEUE)


def test_target_and_every_lock_clear_when_nodes_are_unlocked() -> None:
    view = ClusterView()
    view.apply(TargetJobElected(event_id="t", occurred_at=AT, job=JOB))
    view.apply(
        NodesLocked(event_id="l", occurred_at=AT, job=JOB, nodes=(NodeName("n1"), NodeName("n2")))
    )
    assert view.snapshot().reservation.target_job == JOB
    view.apply(NodesUnlocked(event_id="u", occurred_at=AT, job=JOB, nodes=(NodeName("n1"),)))
    reservation = view.snapshot().reservation
    assert reservation.target_job is None
    assert reservation.locked_nodes == frozenset()


def test_view_holds_quantities_and_phases_when_built_from_a_scenario() -> None:
    view = ClusterView.from_scenario(
        {
            "nodes": [{"name": "n1", "allocatable": {"cpu": "2", "memory": "4Gi", "pods": 110}}],
            "queues": [{"name": "c1", "weight": 1, "capability": {"cpu": "4"}}],
            "podgroups": [
                {
                    "name": "pg1",
                    "namespace": "c1",
                    "queue": "c1",
                    "minMember": 2,
                    "minTaskMember": {"master": 1},
                    "phase": "Inqueue",
                }
            ],
            "pods": [
                {
                    "name": "p0",
                    "namespace": "c1",
                    "podgroup": "pg1",
                    "task": "master",
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "phase": "Running",
                    "node": "n1",
                }
            ],
        }
    )
    snapshot = view.snapshot()
    assert snapshot.nodes["n1"].allocatable == {"cpu": 2000, "memory": 4 * 2**30, "pods": 110}
    assert snapshot.podgroups[JobKey("c1/pg1")].phase is PodGroupPhase.INQUEUE
    pod = snapshot.pods[PodKey("c1/p0")]
    assert (pod.node, pod.phase, pod.pod.requests["cpu"]) == ("n1", PodPhase.RUNNING, 1000)
