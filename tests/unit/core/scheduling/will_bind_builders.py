"""Builders for will-bind tests: an MPI-style dependent job, small jobs, held reservations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import msgspec

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.events.capacity_reservations import ReservedPod
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase, StageTask
from vcbus.contracts.objects.queue import Queue
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.framework.conf import Configuration, SchedulerConf
from vcbus.core.scheduling.framework.results import SessionResult
from vcbus.core.scheduling.framework.session import Session, close_session, open_session
from vcbus.core.scheduling.holds import WillBind
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.scheduler import conf_from_mapping
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState, PodState

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MPI = JobKey("ns/mpi")
PENDING, RUNNING = PodPhase.PENDING, PodPhase.RUNNING
INQUEUE = PodGroupPhase.INQUEUE
ALLOCATOR = conf_from_mapping({"actions": "allocate, backfill"})
"""The allocator's default tiers (priority, gang, conformance; drf, predicates, proportion,
nodeorder, binpack)."""


def build_conf(**arguments: str | bool | int) -> SchedulerConf:
    """The allocator's configuration with will-bind arguments on allocate."""
    return replace(
        ALLOCATOR, configurations=(Configuration(name="allocate", arguments=dict(arguments)),)
    )


def build_nodes(*cpus: str) -> list[Node]:
    """Nodes n1, n2 … with the given cpus."""
    return [
        build_node(f"n{i}", {"cpu": cpu, "memory": "16Gi", "pods": 110})
        for i, cpu in enumerate(cpus, start=1)
    ]


def build_mpi_podgroup(
    phase: PodGroupPhase = INQUEUE,
    *,
    masters: int = 1,
    master_cpu: int = 2000,
    uid: str = "uid-mpi",
    annotations: Mapping[str, str] | None = None,
    selector: Mapping[str, str] | None = None,
) -> PodGroupState:
    """The MPI job: 2 workers (2 cpu, first stage) and ``masters`` masters depending on them."""
    state = build_podgroup(
        "mpi",
        "ns",
        "default",
        2 + masters,
        {"worker": 2, "master": masters},
        phase,
        dependent=True,
        min_resources={"cpu": str(4 + 2 * masters)},
        uid=uid,
        annotations=annotations,
        creation=NOW - timedelta(minutes=5),
    )
    stage = StageTask(
        name="master",
        replicas=masters,
        min_available=masters,
        requests={"cpu": master_cpu},
        node_selector=dict(selector or {}),
    )
    return replace(state, podgroup=msgspec.structs.replace(state.podgroup, stages=(stage,)))


def build_workers(node: str | None = None, phase: PodPhase = PENDING) -> list[PodState]:
    """The MPI job's two workers, on ``node`` (or pending)."""
    return [
        build_pod("ns", f"mpi-worker-{i}", node, phase, {"cpu": "2"}, "mpi", task="worker")
        for i in range(2)
    ]


def build_master(index: int = 0, node: str | None = None, cpu: str = "2") -> PodState:
    """A master pod of the MPI job, as the job-controller creates it."""
    return build_pod("ns", f"mpi-master-{index}", node, PENDING, {"cpu": cpu}, "mpi", task="master")


def build_small(
    name: str, cpu: str = "1", node: str | None = None
) -> tuple[PodGroupState, PodState]:
    """A one-pod job created after the MPI job."""
    group = build_podgroup(name, "ns", "default", 1, creation=NOW)
    pod = build_pod(
        "ns", f"{name}-w-0", node, RUNNING if node else PENDING, {"cpu": cpu}, name, task="w"
    )
    return group, pod


def build_held(
    *pods: tuple[str, int, str],
    uid: str = "uid-mpi",
    expires_at: datetime | None = NOW + timedelta(minutes=10),
    cpu: int = 2000,
    timed_out: bool = False,
) -> WillBind:
    """A will-bind reservation of the MPI job: ``(task, index, node)`` each."""
    return WillBind(
        job=MPI,
        podgroup="mpi",
        uid=uid,
        pods=tuple(
            ReservedPod(task=t, index=i, node=NodeName(n), requests={"cpu": cpu})
            for t, i, n in pods
        ),
        reserved_at=NOW - timedelta(minutes=1),
        expires_at=expires_at,
        timed_out=timed_out,
    )


def build_snapshot(
    *,
    podgroups: Sequence[PodGroupState],
    pods: Sequence[PodState],
    node_list: Sequence[Node],
    will_bind: Sequence[WillBind] = (),
    queues: Sequence[Queue] | None = None,
) -> ClusterSnapshot:
    """A snapshot with the default queue."""
    return ClusterSnapshot.build(
        nodes=node_list,
        queues=queues if queues is not None else [build_queue("default")],
        podgroups=podgroups,
        pods=pods,
        will_bind=will_bind,
    )


def run(
    shot: ClusterSnapshot, scheduler: SchedulerConf = ALLOCATOR, *, now: datetime = NOW
) -> tuple[Session, SessionResult]:
    """Run the configuration's actions in one session on ``shot``."""
    ssn = open_session(
        shot,
        scheduler.tiers,
        builders=PLUGIN_BUILDERS,
        now=now,
        configurations=scheduler.configurations,
        arguments=scheduler.arguments,
        actions=scheduler.actions,
    )
    for name in scheduler.actions:
        ACTIONS[name]().execute(ssn)
    return ssn, close_session(ssn)


def binds(result: SessionResult) -> dict[str, str]:
    """The session's bindings, ``ns/pod`` → node."""
    return {str(d.key): d.node for d in result.decisions}


def used_cpu(ssn: Session, node: str) -> float:
    """The cpu the session counts as used on ``node`` (milli)."""
    return ssn.nodes[node].used["cpu"]
