"""The chaos run's jobs: a seeded mix of Volcano Job shapes and the final phase each must reach.

Shapes (each a real ``batch.volcano.sh/v1alpha1`` Job with ``vcbus.io/run-seconds``):

- ``gang``: one task, ``minAvailable`` = replicas, all-or-nothing.
- ``task-minimums``: a ps and workers with task-level ``minAvailable`` (the rest best effort).
- ``depends-on``: MPI-style, the master starts once its workers run (``dependsOn``).
- ``failing``: a gang whose workers exit 1 — its shape says it ends ``Failed``.
- ``restart``: workers that exit 1 under ``PodFailed → RestartJob`` with ``maxRetry: 2``:
  the job is restarted (its pods recreated under the same names, a new job version) until
  the retries run out, and ends ``Failed``.
- ``big``: the starving job, annotated ``volcano.sh/target-job``, needing most of the cluster
  at once: it only runs when podgroup-enqueue reserves (locks) nodes for it.
- ``evictable``: a low-priority gang (priority class ``chaos-low``, below every other job)
  that restarts on ``PodEvicted`` (``RestartJob``, ``maxRetry: 10``) and runs out a grace
  period of 1 s: preempt may take its pods, and it still ends ``Completed``.
- ``preemptor``: a gang of default priority, above ``evictable`` only: when the cluster is
  full, preempt evicts evictable gangs (all their pods or none) for it.

Real jobs (every ``real_every``-th job, when asked) run as host processes on the run's node
agents: their pods select the agents' nodes (:data:`REAL_LABEL`) and tolerate their taint
(:data:`REAL_TAINT`), which keeps every other job off those nodes. Each pod runs
``sh -c`` (the ``env`` plugin's ``VC_TASK_INDEX`` must be set) and ends by itself; its
``vcbus.io/run-seconds`` says how long that takes, so the liveness bound judges its end.

- ``real-gang``: a gang of 2 or 3 ranks that sleep 2 to 6 s and exit 0: ``Completed``.
- ``real-failing``: a gang of 2 whose rank 1 exits 3 after 1 s while rank 0 sleeps on,
  under ``PodFailed → RestartJob`` with ``maxRetry: 2``: the job is restarted (rank 0's
  processes stopped by its agent) until the retries run out, and ends ``Failed``.

The generator draws from ``random.Random(seed)`` (the real jobs from a generator of their
own): the same seed gives the same jobs.
"""

from __future__ import annotations

import json
import random  # noqa: TID251 - the chaos run's own seeded generator, not a service's
from dataclasses import dataclass
from typing import Any

from tests.support.manifests import task_manifest
from vcbus.contracts.objects.pod import ANNOTATION_EXIT_CODE, ANNOTATION_RUN_SECONDS

NAMESPACE = "chaos"
SHAPES = (
    "gang",
    "task-minimums",
    "depends-on",
    "failing",
    "restart",
    "evictable",
    "preemptor",
)
"""The shapes drawn for ordinary jobs (the big job is placed on purpose)."""

REAL_SHAPES = ("real-gang", "real-failing")
"""The shapes of the jobs that run on the node agents."""
REAL_LABEL = ("vcbus.io/real", "true")
"""The label of the agents' nodes, which real jobs select."""
REAL_TAINT = "vcbus.io/real=true:NoSchedule"
"""The taint of the agents' nodes, which only real jobs tolerate."""

LOW_PRIORITY_CLASS = "chaos-low"
PRIORITY_CLASSES = {LOW_PRIORITY_CLASS: -100}
"""The run's priority classes: ``evictable`` jobs below every other job (default 0)."""
EVICTABLE_MAX_RETRY = 10


@dataclass(frozen=True, slots=True)
class PlannedJob:
    """One job to submit: its key, shape, manifest and the phase it must end in."""

    key: str
    shape: str
    manifest: dict[str, Any]
    expected: str
    """``Completed`` or ``Failed``."""

    @property
    def text(self) -> str:
        """The manifest as JSON text (what a Kafka client publishes)."""
        return json.dumps(self.manifest)

    @property
    def pods(self) -> int:
        """How many pods the job creates."""
        return sum(int(task["replicas"]) for task in self.manifest["spec"]["tasks"])


def _task(
    name: str,
    replicas: int,
    cpu: str,
    memory: str,
    seconds: float,
    *,
    min_available: int | None = None,
    depends_on: str | None = None,
    exit_code: int = 0,
) -> dict[str, Any]:
    annotations = {ANNOTATION_RUN_SECONDS: f"{seconds:g}"}
    if exit_code:
        annotations[ANNOTATION_EXIT_CODE] = str(exit_code)
    return task_manifest(
        name,
        replicas,
        cpu=cpu,
        memory=memory,
        annotations=annotations,
        min_available=min_available,
        depends_on=depends_on,
    )


def _job(
    name: str,
    tasks: list[dict[str, Any]],
    *,
    min_available: int | None = None,
    target: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    if target:
        metadata["annotations"] = {"volcano.sh/target-job": "true"}
    spec: dict[str, Any] = {"schedulerName": "volcano", "queue": "default", "tasks": tasks}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": metadata,
        "spec": spec,
    }


def _seconds(rng: random.Random) -> float:
    return rng.choice((1.0, 1.5, 2.0, 2.5, 3.0))


def _ordinary(rng: random.Random, index: int) -> PlannedJob:
    shape = rng.choice(SHAPES)
    name = f"{shape}-{index:04d}"
    if shape == "gang":
        replicas = rng.randint(2, 4)
        tasks = [_task("worker", replicas, rng.choice(("500m", "1", "2")), "1Gi", _seconds(rng))]
        return PlannedJob(
            f"{NAMESPACE}/{name}", shape, _job(name, tasks, min_available=replicas), "Completed"
        )
    if shape == "task-minimums":
        workers = rng.randint(2, 4)
        tasks = [
            _task("ps", 1, "500m", "1Gi", _seconds(rng), min_available=1),
            _task("worker", workers, "1", "2Gi", _seconds(rng), min_available=2),
        ]
        return PlannedJob(f"{NAMESPACE}/{name}", shape, _job(name, tasks), "Completed")
    if shape == "depends-on":
        workers = rng.randint(1, 3)
        tasks = [
            _task("mpiworker", workers, "1", "1Gi", _seconds(rng)),
            _task("mpimaster", 1, "500m", "1Gi", _seconds(rng), depends_on="mpiworker"),
        ]
        return PlannedJob(f"{NAMESPACE}/{name}", shape, _job(name, tasks), "Completed")
    if shape == "evictable":
        replicas = rng.randint(2, 3)
        tasks = [_task("worker", replicas, "1", "1Gi", _seconds(rng) + 2.0)]
        tasks[0]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
        job = _job(name, tasks, min_available=replicas)
        job["spec"]["priorityClassName"] = LOW_PRIORITY_CLASS
        job["spec"]["maxRetry"] = EVICTABLE_MAX_RETRY
        job["spec"]["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]
        return PlannedJob(f"{NAMESPACE}/{name}", shape, job, "Completed")
    if shape == "preemptor":
        tasks = [_task("worker", 2, "2", "1Gi", _seconds(rng))]
        return PlannedJob(
            f"{NAMESPACE}/{name}", shape, _job(name, tasks, min_available=2), "Completed"
        )
    if shape == "restart":
        tasks = [_task("worker", rng.randint(1, 2), "500m", "1Gi", 1.0, exit_code=1)]
        job = _job(name, tasks)
        job["spec"]["maxRetry"] = 2
        job["spec"]["policies"] = [{"event": "PodFailed", "action": "RestartJob"}]
        return PlannedJob(f"{NAMESPACE}/{name}", shape, job, "Failed")
    replicas = rng.randint(2, 3)
    tasks = [
        _task("worker", replicas, "1", "1Gi", _seconds(rng), min_available=replicas, exit_code=1)
    ]
    return PlannedJob(f"{NAMESPACE}/{name}", shape, _job(name, tasks), "Failed")


def _real_task(name: str, replicas: int, script: str, seconds: float) -> dict[str, Any]:
    """A task of ``replicas`` pods running ``sh -c script`` on the agents' nodes."""
    task = task_manifest(
        name,
        replicas,
        cpu="100m",
        memory="32Mi",
        annotations={ANNOTATION_RUN_SECONDS: f"{seconds:g}"},
        min_available=replicas,
    )
    spec = task["template"]["spec"]
    spec["containers"][0]["command"] = ["sh", "-c", script]
    spec["nodeSelector"] = {REAL_LABEL[0]: REAL_LABEL[1]}
    key, _, rest = REAL_TAINT.partition("=")
    value, _, effect = rest.partition(":")
    spec["tolerations"] = [{"key": key, "operator": "Equal", "value": value, "effect": effect}]
    spec["terminationGracePeriodSeconds"] = 1
    return task


INDEX_SET = 'test -n "$VC_TASK_INDEX" || exit 9; '
"""A real pod's first command: without the ``env`` plugin's index it exits 9 (its job fails)."""


def real_job(rng: random.Random, index: int) -> PlannedJob:
    """A real job (``real-gang`` or ``real-failing``) drawn from ``rng``."""
    shape = rng.choice(REAL_SHAPES)
    name = f"{shape}-{index:04d}"
    seconds = rng.choice((2, 3, 4, 5, 6))
    if shape == "real-gang":
        replicas = rng.randint(2, 3)
        tasks = [_real_task("rank", replicas, f"{INDEX_SET}sleep {seconds}", seconds)]
        job = _job(name, tasks, min_available=replicas)
        job["spec"]["plugins"] = {"env": []}
        return PlannedJob(f"{NAMESPACE}/{name}", shape, job, "Completed")
    script = f'{INDEX_SET}sleep 1; if [ "$VC_TASK_INDEX" = 1 ]; then exit 3; fi; sleep {seconds}'
    tasks = [_real_task("rank", 2, script, 1 + seconds)]
    job = _job(name, tasks, min_available=2)
    job["spec"]["plugins"] = {"env": []}
    job["spec"]["maxRetry"] = 2
    job["spec"]["policies"] = [{"event": "PodFailed", "action": "RestartJob"}]
    return PlannedJob(f"{NAMESPACE}/{name}", shape, job, "Failed")


def big_job(index: int, *, pods: int, cpu: str) -> PlannedJob:
    """The starving job: ``pods`` pods of ``cpu`` each, all at once, elected as target."""
    name = f"big-{index:04d}"
    tasks = [_task("trainer", pods, cpu, "4Gi", 3.0)]
    return PlannedJob(
        f"{NAMESPACE}/{name}",
        "big",
        _job(name, tasks, min_available=pods, target=True),
        "Completed",
    )


def generate(
    count: int, seed: int, *, big_pods: int, big_cpu: str, real_every: int = 0
) -> list[PlannedJob]:
    """``count`` jobs in submission order; the big job sits a third of the way in.

    Args:
        count: how many jobs (at least 1).
        seed: the generator's seed.
        big_pods: pods of the big job (at most the number of nodes).
        big_cpu: cpu of each of its pods (most of a node).
        real_every: every this many jobs one is a real job (0: none); the others are
            drawn as without real jobs.

    Returns:
        The jobs, each with a unique key.
    """
    rng = random.Random(seed)
    real_rng = random.Random(f"real-{seed}")
    big_at = count // 3
    jobs = []
    for index in range(count):
        if index == big_at:
            jobs.append(big_job(index, pods=big_pods, cpu=big_cpu))
        elif real_every and index % real_every == real_every - 1:
            jobs.append(real_job(real_rng, index))
        else:
            jobs.append(_ordinary(rng, index))
    return jobs
