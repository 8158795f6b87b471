"""The benchmark's workload: gang jobs of 10 pods with task minimums, some with dependsOn.

Two kinds of Volcano Job, each of ``POD_COUNT`` pods requesting 1 cpu and 1Gi:

- ``gang``: ``ps`` (2 replicas, minAvailable 1) and ``worker`` (8 replicas, minAvailable 6),
  job minAvailable 7. Gang-ready (job phase Running) once 7 pods started.
- ``depends``: ``worker`` (9 replicas) and ``master`` (1 replica, ``dependsOn: worker``),
  minimums left to admission's defaults (10). The master is created only once the workers
  run, so gang-ready needs a second pass through the scheduler.

Every pod runs ``run_seconds`` of simulated time (``vcbus.io/run-seconds``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from tests.support.manifests import task_manifest
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS

POD_COUNT = 10
"""Pods per job."""

POD_CPU = 1
"""Cores each pod requests."""

DEPENDS_EVERY = 5
"""Every fifth job is a ``depends`` job."""

NAMESPACE = "bench"

HOPS = {"gang": 8, "depends": 11}
"""Broker hops on the submit→gang-ready path of each kind (see :data:`HOP_PATH`)."""

HOP_PATH = {
    "gang": (
        "driver→admission (jobs.submitted)",
        "admission→job-controller (jobs.admitted)",
        "job-controller→podgroup-enqueue (podgroups)",
        "podgroup-enqueue→job-controller (podgroups.status Inqueue)",
        "job-controller→allocator (pods)",
        "allocator→cluster (bindings)",
        "cluster→job-controller (pods.status Running)",
        "job-controller→driver (jobs.status Running)",
    ),
    "depends": (
        "driver→admission (jobs.submitted)",
        "admission→job-controller (jobs.admitted)",
        "job-controller→podgroup-enqueue (podgroups)",
        "podgroup-enqueue→job-controller (podgroups.status Inqueue)",
        "job-controller→allocator (pods: workers)",
        "allocator→cluster (bindings: workers)",
        "cluster→job-controller (pods.status Running: workers)",
        "job-controller→allocator (pods: master, dependsOn met)",
        "allocator→cluster (bindings: master)",
        "cluster→job-controller (pods.status Running: master)",
        "job-controller→driver (jobs.status Running)",
    ),
}
"""What each counted hop is. Scheduling services read their inputs as tables (one hop too);
debounce and cycle time are inside the hops they delay, not extra hops."""


@dataclass(frozen=True, slots=True)
class BenchJob:
    """One job to submit: its key, kind and manifest (JSON text)."""

    key: str
    kind: str
    manifest: str


def _task(
    name: str,
    replicas: int,
    run_seconds: float,
    *,
    min_available: int | None = None,
    depends_on: str | None = None,
) -> dict[str, Any]:
    return task_manifest(
        name,
        replicas,
        cpu=str(POD_CPU),
        memory="1Gi",
        annotations={ANNOTATION_RUN_SECONDS: f"{run_seconds:g}"},
        min_available=min_available,
        depends_on=depends_on,
    )


def build_job(name: str, kind: str, run_seconds: float) -> BenchJob:
    """One job of the given kind (``gang`` or ``depends``)."""
    spec: dict[str, object] = {"schedulerName": "volcano", "queue": "default"}
    if kind == "gang":
        spec["minAvailable"] = 7
        spec["tasks"] = [
            _task("ps", 2, run_seconds, min_available=1),
            _task("worker", 8, run_seconds, min_available=6),
        ]
    else:
        spec["tasks"] = [
            _task("worker", 9, run_seconds),
            _task("master", 1, run_seconds, depends_on="worker"),
        ]
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }
    return BenchJob(f"{NAMESPACE}/{name}", kind, json.dumps(manifest))


def build_jobs(count: int, run_seconds: float, *, prefix: str = "job") -> list[BenchJob]:
    """``count`` jobs; every :data:`DEPENDS_EVERY`-th is a ``depends`` job."""
    return [
        build_job(
            f"{prefix}-{index:05d}",
            "depends" if index % DEPENDS_EVERY == DEPENDS_EVERY - 1 else "gang",
            run_seconds,
        )
        for index in range(count)
    ]


@dataclass(frozen=True, slots=True)
class NodeShape:
    """Each simulated node's allocatable."""

    cpu: int
    memory: str
    pods: int


def node_shape(nodes: int, pods: int, *, headroom: float = 1.25, minimum_cpu: int = 8) -> NodeShape:
    """Nodes big enough that every pod of the run fits at once, with ``headroom``.

    The run then measures the pipeline, not the cluster's capacity: at 100 nodes each node
    is large, at 5,000 nodes it has ``minimum_cpu`` cores.
    """
    cpu = max(minimum_cpu, math.ceil(headroom * pods * POD_CPU / max(nodes, 1)))
    return NodeShape(cpu=cpu, memory=f"{cpu * 4}Gi", pods=max(110, cpu))
