"""Reservation properties over random clusters and job streams, across many cycles
(docs/design.md#reservation).

1. No pod of a job other than the target is ever bound to a node locked when it was placed.
2. Once the target is ready (its gang placed) or deleted, the next podgroup-enqueue session
   releases it: one ``NodesUnlocked`` with every node that was locked, and the target is
   no longer that job.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcbus.contracts.events.reservations import NodesUnlocked
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.services.simulation.snapshot import CycleRecord, Simulation, simulation_of


@dataclass(frozen=True)
class JobSpec:
    """A gang job: ``size`` pods of ``cpu`` each, all needed, running ``run`` seconds."""

    name: str
    size: int
    cpu: int
    run: int
    priority: int
    target: bool


Doc = dict[str, object]


def _documents(job: JobSpec, *, node: str | None = None) -> tuple[Doc, list[Doc]]:
    podgroup: Doc = {
        "name": job.name,
        "namespace": "ns",
        "minMember": job.size,
        "minResources": {"cpu": str(job.size * job.cpu)},
        "phase": "Running" if node else "Pending",
        "priority": job.priority,
        "annotations": {"volcano.sh/target-job": "true"} if job.target else {},
    }
    pods = []
    for i in range(job.size):
        pod: Doc = {
            "name": f"{job.name}-w-{i}",
            "namespace": "ns",
            "podgroup": job.name,
            "task": "w",
            "requests": {"cpu": str(job.cpu)},
            "annotations": {"vcbus.io/run-seconds": str(job.run)},
        }
        if node:
            pod.update(node=node, phase="Running")
        pods.append(pod)
    return podgroup, pods


@st.composite
def job_specs(draw: st.DrawFn, prefix: str, index: int) -> JobSpec:
    return JobSpec(
        name=f"{prefix}{index}",
        size=draw(st.integers(1, 3)),
        cpu=draw(st.integers(1, 4)),
        run=draw(st.integers(1, 4)),
        priority=draw(st.integers(0, 2)),
        target=draw(st.booleans()) and draw(st.booleans()),
    )


@dataclass(frozen=True)
class Plan:
    """A cluster, its running jobs, and per cycle the jobs added and the job deleted."""

    nodes: tuple[int, ...]
    running: tuple[JobSpec, ...]
    stream: tuple[tuple[JobSpec, ...], ...]
    deletions: tuple[int | None, ...]
    arguments: dict[str, object]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    nodes = tuple(draw(st.lists(st.integers(2, 8), min_size=1, max_size=5)))
    running = tuple(
        JobSpec(f"r{i}", 1, draw(st.integers(1, 2)), draw(st.integers(1, 4)), 0, target=False)
        for i in range(draw(st.integers(0, 2 * len(nodes))))
    )
    cycles = draw(st.integers(3, 9))
    stream = tuple(
        tuple(draw(job_specs(f"j{c}-", i)) for i in range(draw(st.integers(0, 3))))
        for c in range(cycles)
    )
    deletions = tuple(draw(st.none() | st.integers(0, 20)) for _ in range(cycles))
    mode = draw(st.sampled_from(["single", "multi", "cluster"]))
    arguments: dict[str, object] = {"lock-mode": mode}
    if mode == "multi":
        arguments["lock-nodes"] = draw(st.sampled_from([2, "50%"]))
    if draw(st.booleans()):
        arguments["lock-timeout"] = f"{draw(st.integers(1, 4))}s"
    if draw(st.booleans()):
        arguments["target-min-resources.cpu"] = draw(st.integers(2, 8))
    if draw(st.booleans()):
        arguments["target-min-waiting"] = f"{draw(st.integers(0, 2))}s"
    return Plan(nodes, running, stream, deletions, arguments)


def _simulation(plan: Plan) -> Simulation:
    podgroups, pods = [], []
    for i, job in enumerate(plan.running):
        podgroup, job_pods = _documents(job, node=f"n{i % len(plan.nodes)}")
        podgroups.append(podgroup)
        pods.extend(job_pods)
    return simulation_of(
        {
            "config": {
                "actions": "elect, enqueue, reserve, allocate, backfill",
                **plan.arguments,
            },
            "nodes": [
                {"name": f"n{i}", "allocatable": {"cpu": str(cpu), "pods": 110}}
                for i, cpu in enumerate(plan.nodes)
            ],
            "podgroups": podgroups,
            "pods": pods,
        }
    )


def _is_ready_or_gone(snapshot: ClusterSnapshot, job: JobKey) -> bool:
    state = snapshot.podgroups.get(job)
    if state is None:
        return True
    placed = sum(
        1
        for s in snapshot.pods.values()
        if s.pod.job == job and s.phase is not PodPhase.FAILED and (s.node or s.binding)
    )
    return placed >= state.podgroup.min_member


def _check(record: CycleRecord) -> None:
    reservation = record.reservation_at_allocation
    held = record.decisions
    if record.locks_lifted:
        # The target was placed first (or before this cycle): the rest may use its nodes.
        placed = [i for i, d in enumerate(held) if d.job == reservation.target_job]
        held = held[: placed[-1] + 1] if placed else ()
    for decision in held:
        if decision.job != reservation.target_job:
            assert decision.node not in reservation.locked_nodes, (record.cycle, decision)
    before = record.enqueue_snapshot
    assert before is not None
    target = before.reservation.target_job
    if target is not None and _is_ready_or_gone(before, target):
        unlocks = [
            e for e in record.reservation_events if isinstance(e, NodesUnlocked) and e.job == target
        ]
        assert len(unlocks) == 1, (record.cycle, record.reservation_events)
        assert set(unlocks[0].nodes) == set(before.reservation.locked_nodes)
        assert record.reservation.target_job != target


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plans())
def test_locks_hold_and_are_released_when_targets_finish_over_random_streams(plan: Plan) -> None:
    simulation = _simulation(plan)
    for added, deletion in zip(plan.stream, plan.deletions, strict=True):
        podgroups, pods = [], []
        for job in added:
            podgroup, job_pods = _documents(job)
            podgroups.append(podgroup)
            pods.extend(job_pods)
        simulation.add({"podgroups": podgroups, "pods": pods})
        jobs = sorted(simulation.view.snapshot().podgroups)
        if deletion is not None and jobs:
            simulation.delete_podgroup(jobs[deletion % len(jobs)])
        _check(simulation.run_cycle())
