"""Will-bind properties over random clusters and job streams, across many cycles.

Dependent jobs (workers first, masters once the workers run, as the job-controller creates
them) and small jobs arrive at random; pods start after random delays; jobs are deleted,
fail or complete at random. After every cycle:

1. No reservation outlives its job: every reservation held belongs to a PodGroup that
   exists (same uid), is not Completed, still has a pod placed, and has not timed out.
2. Reserved capacity is never double counted: on every node, the requests of the pods
   placed there plus those of the phantoms held there fit its allocatable, and no phantom
   is held for a pod that is already placed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcbus.contracts.keys import JobKey, PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.model import naive_utc
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.services.simulation.snapshot import Simulation, simulation_of

Doc = dict[str, object]
_DONE = (PodPhase.SUCCEEDED, PodPhase.FAILED)


@dataclass(frozen=True)
class JobPlan:
    """A job: ``workers`` pods first, then ``masters`` (0: not a dependent job)."""

    name: str
    workers: int
    worker_cpu: int
    masters: int
    master_cpu: int
    start_delay: int
    """Cycles between a pod's binding and its Running."""
    run: int
    """Seconds the masters (or a small job's pods) run once bound."""


@st.composite
def job_plans(draw: st.DrawFn, name: str) -> JobPlan:
    dependent = draw(st.booleans())
    return JobPlan(
        name=name,
        workers=draw(st.integers(1, 3)),
        worker_cpu=draw(st.integers(1, 3)),
        masters=draw(st.integers(1, 2)) if dependent else 0,
        master_cpu=draw(st.integers(1, 3)),
        start_delay=draw(st.integers(0, 4)),
        run=draw(st.integers(1, 5)),
    )


@dataclass(frozen=True)
class Plan:
    """A cluster, then per cycle the jobs added and what happens to one existing job."""

    nodes: tuple[int, ...]
    stream: tuple[tuple[JobPlan, ...], ...]
    mishaps: tuple[tuple[str, int] | None, ...]
    timeout: int


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    nodes = tuple(draw(st.lists(st.integers(2, 8), min_size=1, max_size=4)))
    cycles = draw(st.integers(4, 14))
    stream = tuple(
        tuple(draw(job_plans(f"j{c}x{i}")) for i in range(draw(st.integers(0, 2))))
        for c in range(cycles)
    )
    mishap = st.tuples(st.sampled_from(["delete", "fail", "complete"]), st.integers(0, 20))
    mishaps = tuple(draw(st.none() | st.none() | mishap) for _ in range(cycles))
    return Plan(nodes, stream, mishaps, timeout=draw(st.integers(1, 6)))


def _pod(job: JobPlan, task: str, index: int, cpu: int, run: int | None) -> Doc:
    pod: Doc = {
        "name": f"{job.name}-{task}-{index}",
        "namespace": "ns",
        "podgroup": job.name,
        "task": task,
        "requests": {"cpu": str(cpu)},
    }
    if run is not None:
        pod["annotations"] = {"vcbus.io/run-seconds": str(run)}
    return pod


def _documents(job: JobPlan) -> tuple[Doc, list[Doc]]:
    dependent = job.masters > 0
    podgroup: Doc = {
        "name": job.name,
        "namespace": "ns",
        "minMember": job.workers + job.masters,
        "minResources": {"cpu": str(job.workers * job.worker_cpu + job.masters * job.master_cpu)},
        "phase": "Pending",
    }
    if dependent:
        podgroup.update(
            dependent=True,
            minTaskMember={"worker": job.workers, "master": job.masters},
            stages=[
                {
                    "name": "master",
                    "replicas": job.masters,
                    "requests": {"cpu": str(job.master_cpu)},
                }
            ],
        )
    run = None if dependent else job.run
    pods = [_pod(job, "worker", i, job.worker_cpu, run) for i in range(job.workers)]
    return podgroup, pods


class World:
    """The cluster and the job-controller around the scheduling cycles, as plain rules."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.jobs: dict[JobKey, JobPlan] = {}
        self.bound_at: dict[PodKey, int] = {}
        self.simulation: Simulation = simulation_of(
            {
                "config": {
                    "actions": "enqueue, allocate, backfill",
                    "configurations": [
                        {"name": "allocate", "arguments": {"will-bind-timeout": plan.timeout}}
                    ],
                },
                "nodes": [
                    {"name": f"n{i}", "allocatable": {"cpu": str(cpu), "pods": 110}}
                    for i, cpu in enumerate(plan.nodes)
                ],
            }
        )

    def add(self, jobs: tuple[JobPlan, ...]) -> None:
        podgroups, pods = [], []
        for job in jobs:
            podgroup, job_pods = _documents(job)
            podgroups.append(podgroup)
            pods.extend(job_pods)
            self.jobs[JobKey(f"ns/{job.name}")] = job
        self.simulation.add({"podgroups": podgroups, "pods": pods})

    def mishap(self, what: str, pick: int) -> None:
        snapshot = self.simulation.view.snapshot()
        jobs = sorted(snapshot.podgroups)
        if not jobs:
            return
        job = jobs[pick % len(jobs)]
        if what == "delete":
            self.simulation.delete_podgroup(job)
            return
        phase = PodPhase.FAILED if what == "fail" else PodPhase.SUCCEEDED
        for key, state in sorted(snapshot.pods.items()):
            if state.pod.job == job and state.phase not in _DONE:
                self.simulation.set_pod_phase(key, phase)

    def tick(self) -> None:
        """Start bound pods after their delay; create masters once the workers run."""
        cycle = self.simulation.cycle
        snapshot = self.simulation.view.snapshot()
        for key, state in sorted(snapshot.pods.items()):
            job = self.jobs.get(state.pod.job)
            if job is None or not state.node or state.phase is not PodPhase.PENDING:
                continue
            since = self.bound_at.setdefault(key, cycle)
            if cycle - since >= job.start_delay:
                self.simulation.set_pod_phase(key, PodPhase.RUNNING)
        snapshot = self.simulation.view.snapshot()
        for job_key, job in sorted(self.jobs.items()):
            if not job.masters or job_key not in snapshot.podgroups:
                continue
            tasks = [s for s in snapshot.pods.values() if s.pod.job == job_key]
            running = sum(
                1 for s in tasks if s.pod.task == "worker" and s.phase is PodPhase.RUNNING
            )
            if running >= job.workers and not any(s.pod.task == "master" for s in tasks):
                masters = [
                    _pod(job, "master", i, job.master_cpu, job.run) for i in range(job.masters)
                ]
                self.simulation.add({"pods": masters})


def _placed(snapshot: ClusterSnapshot, job: JobKey) -> int:
    return sum(
        1
        for s in snapshot.pods.values()
        if s.pod.job == job and (s.node or s.binding) and s.phase is not PodPhase.FAILED
    )


def _check(world: World, now_seconds: int) -> None:
    simulation = world.simulation
    snapshot = simulation.view.snapshot()
    now = simulation.start + timedelta(seconds=now_seconds)
    used: dict[str, float] = {}
    for state in snapshot.pods.values():
        if state.node and state.phase not in _DONE:
            used[state.node] = used.get(state.node, 0) + state.pod.requests.get("cpu", 0)
    for job, held in sorted(snapshot.will_bind.items()):
        if not held.pods:
            continue
        group = snapshot.podgroups.get(job)
        assert group is not None, f"reservation of deleted {job} outlived it"
        assert group.podgroup.uid == held.uid, f"reservation of an old {job}"
        assert group.phase is not PodGroupPhase.COMPLETED, f"reservation of completed {job}"
        assert _placed(snapshot, job) > 0, f"reservation of {job} with no pod placed"
        assert held.expires_at is not None
        assert naive_utc(now) < naive_utc(held.expires_at), f"{job} kept past its timeout"
        for pod in held.pods:
            real = snapshot.pods.get(PodKey(f"{job}-{pod.task}-{pod.index}"))
            assert real is None or not (real.node or real.binding), f"{pod} counted twice"
            used[pod.node] = used.get(pod.node, 0) + pod.requests.get("cpu", 0)
    for name, node in snapshot.nodes.items():
        assert used.get(name, 0) <= node.allocatable.get("cpu", 0), (name, used)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plans())
def test_no_reservation_outlives_its_job_and_none_is_counted_twice_over_random_runs(
    plan: Plan,
) -> None:
    world = World(plan)
    for cycle, (added, mishap) in enumerate(zip(plan.stream, plan.mishaps, strict=True)):
        world.add(added)
        if mishap is not None:
            world.mishap(*mishap)
        world.tick()
        world.simulation.run_cycle()
        _check(world, cycle)
