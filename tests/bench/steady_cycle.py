"""Time one steady scheduling cycle of each scheduling service on a large, mostly settled cluster.

Run: ``python -m tests.bench.steady_cycle`` (not collected by pytest); by default 50,000
nodes, 100,000 Running jobs of 10 pods (1,000,000 Running pods) and 1,000 pending pods.
``--nodes``, ``--running-jobs`` and ``--pending-jobs`` change the sizes, ``--profile N``
prints the N costliest functions of one steady cycle of each service (cProfile).

The state is built in memory, not through the broker: a ``ClusterView`` per service
(podgroup-enqueue's and the allocator's), made from one snapshot. Between two cycles, as in
the services, what changed arrives in both views:

- the pods the allocator bound last cycle are reported Running on their node;
- ``pending-jobs`` of the oldest Running jobs end (their pods and PodGroup are deleted),
  which frees as many pods' room on their nodes;
- ``pending-jobs`` new jobs of 10 pods are created (``pending-jobs`` × 10 pending pods).

Then podgroup-enqueue takes a snapshot of its view and runs a cycle, its events reach both
views (``assume``), the allocator does the same, and its events reach both views. Each
service's time is its ``snapshot()`` plus its ``run_cycle``, as in its loop; the
allocator's session is also timed in parts (open, actions, close) on a copy of the same
snapshot. As in the services, garbage is never collected outside the time: the collector
runs with the service processes' thresholds, and its time inside each service's cycle is
shown apart ("collector", included in "cycle"). Prints the best, median and mean of the steady
cycles (after the first two: the caches' warm-up).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.events.podgroups import PodGroupCreated, PodGroupDeleted
from vcbus.contracts.events.pods import PodCreated, PodDeleted
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.keys import NodeName, job_key, pod_key
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.runtime.collector import tune_collector
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.cluster_view import ClusterEvent, ClusterView
from vcbus.core.scheduling.framework.session import close_session, open_session
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.scheduler import default_conf, default_enqueue_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import run_cycle as allocator_cycle
from vcbus.services.podgroup_enqueue.cycle import run_cycle as enqueue_cycle

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REQUEST = {"cpu": "500m", "memory": "1Gi"}
JOB_SIZE = 10
NAMESPACE = "bench"
_T = TypeVar("_T")


def _job_name(number: int) -> str:
    return f"job-{number:07d}"


def cluster(nodes: int, running_jobs: int, pending_jobs: int) -> ClusterSnapshot:
    """32-cpu nodes; ``running_jobs`` Running gangs of 10 spread over them, then
    ``pending_jobs`` Inqueue gangs of 10 with no node."""
    node_list = [
        build_node(f"node-{i:05d}", {"cpu": "32", "memory": "128Gi", "pods": 110})
        for i in range(nodes)
    ]
    podgroups = []
    pods = []
    placed = 0
    for number in range(running_jobs + pending_jobs):
        name = _job_name(number)
        running = number < running_jobs
        phase = PodGroupPhase.RUNNING if running else PodGroupPhase.INQUEUE
        group = build_podgroup(name, NAMESPACE, "default", JOB_SIZE, {"worker": JOB_SIZE})
        podgroups.append(replace(group, phase=phase))
        for i in range(JOB_SIZE):
            node = f"node-{placed % nodes:05d}" if running else None
            placed += 1
            pods.append(
                build_pod(
                    NAMESPACE,
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


@dataclass(slots=True)
class Workload:
    """What arrives between cycles: jobs ending, jobs created, bound pods starting."""

    jobs_per_cycle: int
    oldest: int = 0
    """The oldest job still Running (jobs end oldest first)."""
    next_job: int = 0
    bound: list[PodPhaseChanged] = field(default_factory=list)
    """The Running reports of the pods the allocator bound last cycle."""

    def arrivals(self, view: ClusterView, now: datetime) -> list[ClusterEvent]:
        """The events that reach both views before the next cycle."""
        out: list[ClusterEvent] = list(self.bound)
        self.bound = []
        groups = view.snapshot().job_pods()
        for number in range(self.oldest, self.oldest + self.jobs_per_cycle):
            name = _job_name(number)
            job = job_key(NAMESPACE, name)
            for key, state in groups.get(job, ()):
                out.append(
                    PodDeleted(
                        event_id=f"end-{key}",
                        occurred_at=now,
                        job=job,
                        pod=key,
                        task=state.pod.task,
                        pod_uid=state.pod.uid,
                    )
                )
            out.append(PodGroupDeleted(event_id=f"end-{job}", occurred_at=now, job=job, name=name))
        self.oldest += self.jobs_per_cycle
        for number in range(self.next_job, self.next_job + self.jobs_per_cycle):
            name = _job_name(number)
            group = build_podgroup(name, NAMESPACE, "default", JOB_SIZE, {"worker": JOB_SIZE})
            out.append(
                PodGroupCreated(event_id=f"pg-{name}", occurred_at=now, podgroup=group.podgroup)
            )
            for i in range(JOB_SIZE):
                state = build_pod(
                    NAMESPACE,
                    f"{name}-worker-{i}",
                    None,
                    PodPhase.PENDING,
                    REQUEST,
                    name,
                    task="worker",
                )
                out.append(PodCreated(event_id=f"pod-{name}-{i}", occurred_at=now, pod=state.pod))
        self.next_job += self.jobs_per_cycle
        return out


class _Collections:
    """CPU time the cyclic garbage collector spends while a timed part runs (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.seconds += time.process_time() - self._start
            self.full += info["generation"] == 2


COLLECTIONS = _Collections()


def _timed(call: Callable[[], _T]) -> tuple[_T, float]:
    COLLECTIONS.seconds = 0.0
    start = time.process_time()
    result = call()
    return result, time.process_time() - start


def _allocator_parts(snapshot: ClusterSnapshot, now: datetime) -> tuple[float, float, float]:
    """Open, actions and close of one allocator session on ``snapshot`` (no cache), seconds."""
    gc.collect()
    conf = default_conf()
    ssn, opened = _timed(
        lambda: open_session(
            snapshot, conf.tiers, builders=PLUGIN_BUILDERS, now=now, actions=conf.actions
        )
    )
    gc.collect()
    start = time.process_time()
    for name in conf.actions:
        ACTIONS[name]().execute(ssn)
    acted = time.process_time() - start
    _, closed = _timed(lambda: close_session(ssn))
    return opened, acted, closed


def run(
    nodes: int,
    running_jobs: int,
    pending_jobs: int,
    cycles: int,
    *,
    profile: int = 0,
    parts: bool = True,
) -> dict[str, Any]:
    """Build the cluster, run ``cycles`` cycles of both services, return the figures (ms)."""
    start = time.perf_counter()
    base = cluster(nodes, running_jobs, pending_jobs)
    enqueue_view = ClusterView.from_snapshot(base)
    allocator_view = ClusterView.from_snapshot(base)
    del base
    built = time.perf_counter() - start
    allocator_conf, enqueue_conf = default_conf(), default_enqueue_conf()
    caches = {"podgroup-enqueue": SessionCache(), "allocator": SessionCache()}
    workload = Workload(jobs_per_cycle=pending_jobs, next_job=running_jobs + pending_jobs)
    times: dict[str, list[float]] = {
        "podgroup-enqueue snapshot": [],
        "podgroup-enqueue cycle": [],
        "podgroup-enqueue collector": [],
        "allocator snapshot": [],
        "allocator cycle": [],
        "allocator collector": [],
        "allocator open": [],
        "allocator actions": [],
        "allocator close": [],
    }
    bound: list[int] = []
    views = (enqueue_view, allocator_view)
    for cycle in range(cycles):
        ctx = Ctx(now=T0 + timedelta(seconds=cycle))
        if cycle:
            for event in workload.arrivals(allocator_view, ctx.now):
                for view in views:
                    view.apply(event)
        profiler = cProfile.Profile() if profile and cycle == cycles - 1 else None
        snapshot, took = _timed(enqueue_view.snapshot)
        times["podgroup-enqueue snapshot"].append(took)
        if profiler is not None:
            profiler.enable()
        enqueued, took = _timed(
            partial(enqueue_cycle, snapshot, enqueue_conf, ctx, cache=caches["podgroup-enqueue"])
        )
        if profiler is not None:
            profiler.disable()
            _print_profile("podgroup-enqueue", profiler, profile)
        times["podgroup-enqueue cycle"].append(took)
        times["podgroup-enqueue collector"].append(COLLECTIONS.seconds)
        for view in views:
            view.assume(enqueued.events)
        snapshot, took = _timed(allocator_view.snapshot)
        times["allocator snapshot"].append(took)
        profiler = cProfile.Profile() if profile and cycle == cycles - 1 else None
        if profiler is not None:
            profiler.enable()
        allocated, took = _timed(
            partial(allocator_cycle, snapshot, allocator_conf, ctx, cache=caches["allocator"])
        )
        if profiler is not None:
            profiler.disable()
            _print_profile("allocator", profiler, profile)
        times["allocator cycle"].append(took)
        times["allocator collector"].append(COLLECTIONS.seconds)
        if parts and cycle >= 2:
            opened, acted, closed = _allocator_parts(snapshot, ctx.now)
            times["allocator open"].append(opened)
            times["allocator actions"].append(acted)
            times["allocator close"].append(closed)
        for view in views:
            view.assume(allocated.events)
        bound.append(len(allocated.bindings))
        workload.bound = [
            PodPhaseChanged(
                event_id=f"run-{binding.pod.uid}",
                occurred_at=ctx.now,
                pod=pod_key(binding.pod.namespace, binding.pod.name),
                job=binding.pod.job,
                task=binding.pod.task,
                node=NodeName(binding.node),
                phase=PodPhase.RUNNING,
                pod_uid=binding.pod.uid,
            )
            for binding in allocated.bindings
        ]
    return {
        "nodes": nodes,
        "running_pods": running_jobs * JOB_SIZE,
        "pending_pods": pending_jobs * JOB_SIZE,
        "build_s": round(built, 1),
        "bound_per_cycle": bound,
        "ms": {
            name: {
                "best": round(min(values[2:] or values) * 1000, 1),
                "median": round(statistics.median(values[2:] or values) * 1000, 1),
                "mean": round(statistics.fmean(values[2:] or values) * 1000, 1),
                "first": round(values[0] * 1000, 1) if values else None,
            }
            for name, values in times.items()
            if values
        },
    }


def _print_profile(service: str, profiler: cProfile.Profile, top: int) -> None:
    print(f"--- {service}: one steady cycle, by cumulative time")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)
    print(f"--- {service}: one steady cycle, by own time")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def service_totals(figures: dict[str, Any]) -> dict[str, float]:
    """Each service's steady cycle as its loop pays it: snapshot plus cycle (medians, ms)."""
    ms = figures["ms"]
    return {
        service: round(ms[f"{service} snapshot"]["median"] + ms[f"{service} cycle"]["median"], 1)
        for service in ("podgroup-enqueue", "allocator")
    }


def line(figures: dict[str, Any]) -> str:
    """The printed figures of one run."""
    ms = figures["ms"]
    lines = [
        f"steady cycle: {figures['nodes']} nodes, {figures['running_pods']} Running pods, "
        f"{figures['pending_pods']} pending pods a cycle (built in {figures['build_s']} s); "
        f"bound per cycle {figures['bound_per_cycle']}"
    ]
    lines.extend(
        f"  {name:>26}: best {v['best']:9.1f} ms, median {v['median']:9.1f} ms, "
        f"mean {v['mean']:9.1f} ms, first {v['first']:9.1f} ms"
        for name, v in ms.items()
    )
    totals = service_totals(figures)
    lines.append(
        "  per service (snapshot + cycle, median): "
        + ", ".join(f"{service} {value} ms" for service, value in totals.items())
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--running-jobs", type=int, default=100_000, help="Running jobs of 10")
    parser.add_argument("--pending-jobs", type=int, default=100, help="new jobs of 10 a cycle")
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="top N functions")
    parser.add_argument("--no-parts", action="store_true", help="skip the allocator's parts")
    args = parser.parse_args(argv)
    tune_collector()  # as the service processes
    gc.callbacks.append(COLLECTIONS)
    figures = run(
        args.nodes,
        args.running_jobs,
        args.pending_jobs,
        args.cycles,
        profile=args.profile,
        parts=not args.no_parts,
    )
    print(line(figures))


if __name__ == "__main__":
    main()
