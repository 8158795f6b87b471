"""Time one allocator cycle (``allocate, backfill``) on synthetic clusters.

Run: ``python -m tests.bench.allocate_cycle`` (not collected by pytest).
Prints, for each size, the time of ``run_cycle`` (session open, actions, close) and of its
parts, the bindings made and the pending pods left.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.framework.session import close_session, open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.scheduler import default_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import run_cycle

SHAPES: Sequence[dict[str, str]] = (
    {"cpu": "500m", "memory": "1Gi"},
    {"cpu": "1", "memory": "2Gi"},
    {"cpu": "2", "memory": "4Gi"},
    {"cpu": "4", "memory": "8Gi"},
)
JOB_SIZE = 10
QUEUES = ("default", "q1", "q2", "q3")


def cluster(pods: int, nodes: int) -> ClusterSnapshot:
    """``nodes`` 16-cpu nodes; ``pods`` pending pods in gangs of 10 (min 5), 4 queues."""
    node_list = [
        build_node(
            f"node-{i:05d}",
            {"cpu": "16", "memory": "64Gi", "pods": 110},
            {"zone": f"z{i % 4}"},
        )
        for i in range(nodes)
    ]
    podgroups = []
    pod_states = []
    for j in range(pods // JOB_SIZE):
        name = f"job-{j:05d}"
        shape = SHAPES[j % len(SHAPES)]
        queue = QUEUES[j % len(QUEUES)]
        podgroups.append(build_podgroup(name, "bench", queue, 5, {"worker": 5}, priority=j % 3))
        for i in range(JOB_SIZE):
            pod_states.append(
                build_pod(
                    "bench",
                    f"{name}-worker-{i}",
                    None,
                    PodPhase.PENDING,
                    shape,
                    name,
                    task="worker",
                )
            )
    return ClusterSnapshot.build(
        nodes=node_list,
        queues=[build_queue(q) for q in QUEUES],
        podgroups=podgroups,
        pods=pod_states,
    )


def measure_cycle(pods: int, nodes: int, repeat: int) -> dict[str, float | int]:
    """The best of ``repeat`` cycles for one size, with its parts, in milliseconds."""
    snapshot = cluster(pods, nodes)
    conf = default_conf()
    ctx = Ctx(now=datetime(2026, 1, 1, tzinfo=UTC))
    best = float("inf")
    parts = (0.0, 0.0, 0.0)
    bound = 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = run_cycle(snapshot, conf, ctx)
        elapsed = time.perf_counter() - start
        if elapsed < best:
            best = elapsed
            bound = len(result.bindings)
            t0 = time.perf_counter()
            ssn = open_session(
                snapshot, conf.tiers, builders=PLUGIN_BUILDERS, now=ctx.now, actions=conf.actions
            )
            t1 = time.perf_counter()
            for name in conf.actions:
                ACTIONS[name]().execute(ssn)
            t2 = time.perf_counter()
            close_session(ssn)
            t3 = time.perf_counter()
            parts = (t1 - t0, t2 - t1, t3 - t2)
    return {
        "pods": pods,
        "nodes": nodes,
        "cycle_ms": round(best * 1000, 1),
        "open_ms": round(parts[0] * 1000, 1),
        "actions_ms": round(parts[1] * 1000, 1),
        "close_ms": round(parts[2] * 1000, 1),
        "bound": bound,
        "left": pods - bound,
    }


def line(figures: dict[str, float | int]) -> str:
    """One printed line of :func:`measure_cycle`'s figures."""
    return (
        f"{figures['pods']:>6} pending pods x {figures['nodes']:>5} nodes: "
        f"cycle {figures['cycle_ms']:8.1f} ms (open {figures['open_ms']:6.1f}, "
        f"actions {figures['actions_ms']:6.1f}, close {figures['close_ms']:5.1f}); "
        f"bound {figures['bound']}, left {figures['left']}"
    )


def measure(pods: int, nodes: int, repeat: int) -> None:
    """Print the best of ``repeat`` cycles for one size."""
    print(line(measure_cycle(pods, nodes, repeat)))


SIZES = ((1_000, 1_000), (1_000, 5_000), (10_000, 1_000), (10_000, 5_000), (10_000, 50_000))
"""(pending pods, nodes) measured by default."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    for pods, nodes in SIZES:
        measure(pods, nodes, args.repeat)


if __name__ == "__main__":
    main()
