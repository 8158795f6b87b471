"""The seed design's two starvation scenes, over many cycles, with and without reservation.

Scene 1: equal priorities; a big job A (two 4-cpu pods) and a stream of small jobs B (one
1-cpu pod each) on four 4-cpu nodes kept busy by Bs. Scene 2: the same, A with a high
priority and the Bs with a low one. Without reservation A waits while Bs keep landing; with
it, A is elected, nodes lock (one per cycle in ``single`` mode), no B lands on a locked node,
and A runs as soon as the locked nodes' pods finish; then every lock is released at once.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.simulation.snapshot import CycleRecord, simulation_of

A = JobKey("ns/a")
NODES = ("n1", "n2", "n3", "n4")


Doc = dict[str, object]


def _b(name: str, created: str, *, node: str | None = None, run: int = 3) -> tuple[Doc, Doc]:
    podgroup: Doc = {
        "name": name,
        "namespace": "ns",
        "minMember": 1,
        "minResources": {"cpu": "1"},
        "phase": "Running" if node else "Pending",
        "creationTimestamp": created,
        "priorityClassName": "low",
    }
    pod: Doc = {
        "name": f"{name}-w-0",
        "namespace": "ns",
        "podgroup": name,
        "task": "w",
        "requests": {"cpu": "1"},
        "priorityClassName": "low",
        "annotations": {"vcbus.io/run-seconds": str(run)},
    }
    if node:
        pod.update(node=node, phase="Running")
    return podgroup, pod


def scene(
    *,
    reservation: bool,
    priorities: tuple[int, int] = (0, 0),
    arguments: Mapping[str, object] | None = None,
    stream_seconds: int = 14,
) -> dict[str, object]:
    """The scene as a snapshot scenario document (``priorities``: A's and the Bs')."""
    podgroups, pods = [], []
    for k in range(16):
        podgroup, pod = _b(f"b{k:03d}", "2026-01-01T00:00:00Z", node=NODES[k // 4], run=1 + k % 4)
        podgroups.append(podgroup)
        pods.append(pod)
    podgroups.append(
        {
            "name": "a",
            "namespace": "ns",
            "minMember": 2,
            "minResources": {"cpu": "8"},
            "phase": "Pending",
            "creationTimestamp": "2025-12-31T23:59:00Z",
            "priorityClassName": "high",
        }
    )
    pods.extend(
        {
            "name": f"a-w-{i}",
            "namespace": "ns",
            "podgroup": "a",
            "task": "w",
            "requests": {"cpu": "4"},
            "priorityClassName": "high",
            "annotations": {"vcbus.io/run-seconds": "5"},
        }
        for i in range(2)
    )
    events = []
    k = 16
    for second in range(1, stream_seconds + 1):
        add_podgroups, add_pods = [], []
        for _ in range(3):
            podgroup, pod = _b(f"b{k:03d}", f"2026-01-01T00:00:{second:02d}Z")
            add_podgroups.append(podgroup)
            add_pods.append(pod)
            k += 1
        events.append({"at": second, "add": {"podgroups": add_podgroups, "pods": add_pods}})
    actions = "elect, enqueue, reserve, allocate, backfill" if reservation else "enqueue, allocate"
    return {
        "config": {"actions": actions, **(arguments or {})},
        "priorityClasses": {"high": priorities[0], "low": priorities[1]},
        "nodes": [
            {"name": n, "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}} for n in NODES
        ],
        "podgroups": podgroups,
        "pods": pods,
        "events": events,
    }


def run(doc: Mapping[str, object], cycles: int) -> list[CycleRecord]:
    simulation = simulation_of(doc)
    return [simulation.run_cycle() for _ in range(cycles)]


def a_bound_at(records: list[CycleRecord]) -> int | None:
    for record in records:
        if any(d.job == A for d in record.decisions):
            return record.cycle
    return None


def b_bindings(records: list[CycleRecord]) -> int:
    return sum(1 for r in records for d in r.decisions if d.job != A)


def assert_locks_hold(records: list[CycleRecord]) -> None:
    """No other job lands on a locked node before the target is placed; in the cycle that
    places it, the target's bindings come first and the locks are lifted after them."""
    for record in records:
        reservation = record.reservation_at_allocation
        lifted_from = len(record.decisions)
        if record.locks_lifted:
            target = [i for i, d in enumerate(record.decisions) if d.job == reservation.target_job]
            lifted_from = target[-1] + 1 if target else 0
        for decision in record.decisions[:lifted_from]:
            if decision.job != reservation.target_job:
                assert decision.node not in reservation.locked_nodes, (record.cycle, decision)


def free_locked_nodes(record: CycleRecord) -> set[str]:
    """Locked nodes without a pod that still holds resources, as the cycle began."""
    assert record.enqueue_snapshot is not None
    busy = {
        s.node
        for s in record.enqueue_snapshot.pods.values()
        if s.node and s.phase not in (PodPhase.SUCCEEDED, PodPhase.FAILED)
    }
    return set(record.reservation_at_allocation.locked_nodes) - busy


BIG_ONLY = {"target-min-resources.cpu": 8}
SCENES = [
    pytest.param((0, 0), id="scene 1, equal priority"),
    pytest.param((1000, 10), id="scene 2"),
]


@pytest.mark.parametrize("priorities", SCENES)
def test_big_job_waits_while_small_jobs_keep_landing_when_nothing_is_reserved(
    priorities: tuple[int, int],
) -> None:
    records = run(scene(reservation=False, priorities=priorities), 14)
    assert a_bound_at(records) is None
    assert all(r.decisions for r in records[1:]), "Bs land in every cycle"
    assert b_bindings(records) >= 30


@pytest.mark.parametrize("priorities", SCENES)
def test_big_job_runs_once_locked_nodes_drain_when_single_nodes_are_locked_per_cycle(
    priorities: tuple[int, int],
) -> None:
    records = run(scene(reservation=True, priorities=priorities, arguments=BIG_ONLY), 8)
    assert [str(e.job) for e in records[0].reservation_events][:1] == ["ns/a"]
    locked = [len(r.reservation.locked_nodes) for r in records]
    assert locked[:4] == [1, 2, 3, 4]
    assert_locks_hold(records)
    bound = a_bound_at(records)
    assert bound is not None
    first_free = next(r.cycle for r in records if len(free_locked_nodes(r)) >= 2)
    assert bound == first_free
    assert {d.node for d in records[bound].decisions if d.job == A} <= set(
        records[bound].reservation_at_allocation.locked_nodes
    )


def test_every_lock_is_released_in_one_event_when_the_target_is_ready() -> None:
    records = run(scene(reservation=True, arguments=BIG_ONLY), 8)
    bound = a_bound_at(records)
    assert bound is not None
    release = records[bound + 1]
    [unlocked] = release.reservation_events
    assert isinstance(unlocked, NodesUnlocked)
    assert (unlocked.job, unlocked.reason) == (A, "target job is ready")
    assert set(unlocked.nodes) == set(records[bound].reservation.locked_nodes)
    assert release.reservation.target_job is None
    assert release.reservation.locked_nodes == frozenset()
    assert b_bindings(records[bound + 1 :]) > 0, "Bs land again once the locks are gone"


def test_small_jobs_use_the_freed_nodes_in_the_cycle_that_places_the_big_one() -> None:
    """docs/design.md#reservation, no harm: the locks go when A is placed, and the same cycle goes
    on (mode cluster: every node locked, two of them for nothing once A is placed)."""
    records = run(scene(reservation=True, arguments={**BIG_ONLY, "lock-mode": "cluster"}), 8)
    bound = a_bound_at(records)
    assert bound is not None
    record = records[bound]
    assert record.locks_lifted
    a_nodes = {d.node for d in record.decisions if d.job == A}
    others = [d for d in record.decisions if d.job != A]
    freed = set(record.reservation_at_allocation.locked_nodes) - a_nodes
    assert freed, "a locked node A does not use"
    assert any(d.node in freed for d in others), "a B lands on it in the same cycle"


def test_several_nodes_lock_per_cycle_when_the_mode_is_multi() -> None:
    arguments = {**BIG_ONLY, "lock-mode": "multi", "lock-nodes": 2}
    records = run(scene(reservation=True, arguments=arguments), 8)
    assert [len(r.reservation.locked_nodes) for r in records[:2]] == [2, 4]
    assert_locks_hold(records)
    assert a_bound_at(records) is not None


def test_every_node_locks_at_once_when_the_mode_is_cluster() -> None:
    records = run(scene(reservation=True, arguments={**BIG_ONLY, "lock-mode": "cluster"}), 8)
    assert records[0].reservation.locked_nodes == frozenset(NODES)
    assert_locks_hold(records)
    assert a_bound_at(records) is not None


def test_whole_cluster_locks_when_the_lock_timeout_passes() -> None:
    arguments = {**BIG_ONLY, "lock-interval": "10s", "lock-timeout": "2s"}
    records = run(scene(reservation=True, arguments=arguments), 8)
    assert [len(r.reservation.locked_nodes) for r in records[:3]] == [1, 1, 4]
    [escalation] = records[2].reservation_events
    assert isinstance(escalation, NodesLocked)
    assert escalation.mode == "cluster"
    assert_locks_hold(records)
    assert a_bound_at(records) is not None


def test_no_small_job_is_elected_after_the_big_one_when_none_starves() -> None:
    """docs/design.md#reservation without thresholds: only a starving job is a target, and no B is
    overtaken (each arrives after the ones placed before it)."""
    records = run(scene(reservation=True), 8)
    bound = a_bound_at(records)
    assert bound is not None
    kinds = [type(e).__name__ for e in records[bound + 1].reservation_events]
    assert kinds == ["NodesUnlocked"]
    assert all(r.reservation.target_job is None for r in records[bound + 1 :])
    assert_locks_hold(records)
