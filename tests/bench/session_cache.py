"""Time both scheduling services' cycles in a steady state, with and without the session cache.

Run: ``python -m tests.bench.session_cache`` (not collected by pytest).
A ``ClusterView`` per service holds 5,000 nodes and 2,000 jobs of 10 pods, 90 % of them
Running. Between two cycles, as in the services, a few events arrive (50 pods finish, one job
of 10 pods is created), then podgroup-enqueue runs a cycle, its events reach the allocator's
view, the allocator runs a cycle, and its events reach podgroup-enqueue's view. Prints the
best and median CPU time of each service's ``run_cycle`` after the first two cycles (the
cache's warm-up: the first cycle's conditions change every job), with and without a
``SessionCache``, and checks that both publish the same events. Garbage is collected before
each timed cycle (outside the time), so a full collection does not land in one sample.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts._base import Event
from vcbus.contracts.events.podgroups import PodGroupCreated
from vcbus.contracts.events.pods import PodCreated
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.keys import NodeName, pod_key
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.runtime.collector import tune_collector
from vcbus.core.scheduling.cluster_view import ClusterEvent, ClusterView
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.scheduler import default_conf, default_enqueue_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import run_cycle as allocator_cycle
from vcbus.services.podgroup_enqueue.cycle import run_cycle as enqueue_cycle

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REQUEST = {"cpu": "500m", "memory": "1Gi"}
JOB_SIZE = 10
FINISHING = 50
"""Running pods that finish between two cycles."""


def cluster(jobs: int, nodes: int, pending_jobs: int) -> ClusterSnapshot:
    """``nodes`` 8-cpu nodes; ``jobs`` gangs of 10, all Running but the first ``pending_jobs``."""
    node_list = [
        build_node(f"node-{i:05d}", {"cpu": "8", "memory": "32Gi", "pods": 110})
        for i in range(nodes)
    ]
    podgroups = []
    pods = []
    placed = 0
    for j in range(jobs):
        name = f"job-{j:05d}"
        running = j >= pending_jobs
        phase = PodGroupPhase.RUNNING if running else PodGroupPhase.INQUEUE
        group = build_podgroup(name, "bench", "default", JOB_SIZE, {"worker": JOB_SIZE})
        podgroups.append(replace(group, phase=phase))
        for i in range(JOB_SIZE):
            node = f"node-{placed % nodes:05d}" if running else None
            placed += 1
            pods.append(
                build_pod(
                    "bench",
                    f"{name}-worker-{i}",
                    node,
                    PodPhase.RUNNING if running else PodPhase.PENDING,
                    REQUEST,
                    name,
                    task="worker",
                )
            )
    return ClusterSnapshot.build(
        nodes=node_list, queues=[build_queue("default")], podgroups=podgroups, pods=pods
    )


def arrivals(
    snapshot: ClusterSnapshot, cycle: int, first_running: int, now: datetime
) -> list[ClusterEvent]:
    """What reaches both views before ``cycle``: 50 Running pods finish, a job is created."""
    out: list[ClusterEvent] = []
    start = first_running * JOB_SIZE + cycle * FINISHING
    for number in range(start, start + FINISHING):
        job, index = divmod(number, JOB_SIZE)
        key = pod_key("bench", f"job-{job:05d}-worker-{index}")
        state = snapshot.pods.get(key)
        if state is None or state.node is None:
            continue
        out.append(
            PodPhaseChanged(
                event_id=f"finish-{key}",
                occurred_at=now,
                pod=key,
                job=state.pod.job,
                task=state.pod.task,
                node=NodeName(state.node),
                phase=PodPhase.SUCCEEDED,
                pod_uid=state.pod.uid,
            )
        )
    name = f"new-{cycle:04d}"
    group = build_podgroup(name, "bench", "default", JOB_SIZE, {"worker": JOB_SIZE})
    out.append(PodGroupCreated(event_id=f"pg-{name}", occurred_at=now, podgroup=group.podgroup))
    for i in range(JOB_SIZE):
        state = build_pod(
            "bench", f"{name}-worker-{i}", None, PodPhase.PENDING, REQUEST, name, task="worker"
        )
        out.append(PodCreated(event_id=f"pod-{name}-{i}", occurred_at=now, pod=state.pod))
    return out


def measure(
    jobs: int, nodes: int, pending_jobs: int, cycles: int, *, cached: bool
) -> tuple[dict[str, list[float]], list[tuple[Event, ...]]]:
    """CPU seconds of each service's cycles, and every cycle's published events."""
    base = cluster(jobs, nodes, pending_jobs)
    allocator_view = ClusterView.from_snapshot(base)
    enqueue_view = ClusterView.from_snapshot(base)
    allocator_conf, enqueue_conf = default_conf(), default_enqueue_conf()
    allocator_cache = SessionCache() if cached else None
    enqueue_cache = SessionCache() if cached else None
    times: dict[str, list[float]] = {"podgroup-enqueue": [], "allocator": []}
    published: list[tuple[Event, ...]] = []
    for cycle in range(cycles):
        ctx = Ctx(now=T0 + timedelta(seconds=cycle))
        for event in arrivals(allocator_view.snapshot(), cycle, pending_jobs, ctx.now):
            allocator_view.apply(event)
            enqueue_view.apply(event)
        snapshot = enqueue_view.snapshot()
        gc.collect()
        start = time.process_time()
        enqueued = enqueue_cycle(snapshot, enqueue_conf, ctx, cache=enqueue_cache)
        times["podgroup-enqueue"].append(time.process_time() - start)
        enqueue_view.assume(enqueued.events)
        allocator_view.assume(enqueued.events)
        snapshot = allocator_view.snapshot()
        gc.collect()
        start = time.process_time()
        allocated = allocator_cycle(snapshot, allocator_conf, ctx, cache=allocator_cache)
        times["allocator"].append(time.process_time() - start)
        allocator_view.assume(allocated.events)
        enqueue_view.assume(allocated.events)
        published.extend((enqueued.events, allocated.events))
    return times, published


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pending-jobs", type=int, default=200)
    args = parser.parse_args(argv)
    tune_collector()  # as the service processes
    outputs = []
    for cached in (False, True):
        times, published = measure(
            args.jobs, args.nodes, args.pending_jobs, args.cycles, cached=cached
        )
        outputs.append(published)
        for service, seconds in times.items():
            steady = seconds[2:] or seconds
            print(
                f"{'cache   ' if cached else 'no cache'} {service:>16}: "
                f"first {seconds[0] * 1000:6.1f} ms, steady best {min(steady) * 1000:6.1f} ms, "
                f"median {statistics.median(steady) * 1000:6.1f} ms"
            )
    print("same events with and without the cache:", outputs[0] == outputs[1])


if __name__ == "__main__":
    main()
