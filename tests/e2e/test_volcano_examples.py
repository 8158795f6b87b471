"""Volcano's own example Jobs run to Completed through the five services as processes.

The test adds only ``vcbus.io/run-seconds`` to every task template (docs/design.md#simulated-pods),
and a new name where two examples share one. Stages of dependsOn jobs
(docs/design.md#dependent-jobs) are read back from the topics: a dependent task's first pod is
created only once the tasks it depends on are ready (every replica Running, as they have no
minAvailable).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

import pytest

from tests.conftest import VOLCANO_EXAMPLES
from tests.e2e.system import (
    System,
    describe,
    read_topic,
    submit,
    wait_for_jobs,
    with_run_seconds,
)
from vcbus.contracts import PodCreated, PodPhaseChanged, Topic
from vcbus.contracts.objects import JobPhase, PodPhase
from vcbus.core.views.live import StatusView

pytestmark = pytest.mark.timeout(240)

EXAMPLES = {
    "job.yaml": "volcano-job",
    "task-start-dependency/job.yaml": "nginx-stages",
    "task-start-dependency/mpi.yaml": "mpi-depends-on",
    "integrations/mpi/mpi-example.yaml": "mpi-example",
    "integrations/tensorflow/dist-mnist/tf-dist-mnist-example.yaml": "tf-dist-mnist",
    "kubecon-2019-china/tf-sample/tf-example.yaml": "tf-benchmark",
}
"""Example file → the job name it runs under (two MPI and two TF examples share names)."""

RUN_SECONDS = 1.0


@dataclass(frozen=True)
class Finished:
    """What the topics held once every example job was final."""

    view: StatusView
    keys: list[str]
    created: list[PodCreated]
    phases: list[PodPhaseChanged]
    system: System

    def first_created(self, job: str, task: str) -> datetime:
        """When the first pod of ``task`` was created."""
        times = [e.occurred_at for e in self.created if e.pod.job == job and e.pod.task == task]
        assert times, f"no pod of {job} {task} was created"
        return min(times)

    def ready_at(self, job: str, task: str, replicas: int) -> datetime:
        """When ``replicas`` pods of ``task`` had been Running (the task became ready)."""
        first_running: dict[str, datetime] = {}
        for e in self.phases:
            if e.job == job and e.task == task and e.phase == PodPhase.RUNNING:
                first_running.setdefault(e.pod, e.occurred_at)
        times = sorted(first_running.values())
        assert len(times) >= replicas, f"{job} {task}: {len(times)}/{replicas} pods ran"
        return times[replicas - 1]

    def creation_offsets(self, job: str, task: str) -> list[int]:
        """Offsets of the ``PodCreated`` records of ``task`` (one partition per job)."""
        return [
            offset for offset, e in self._created_offsets if e.pod.job == job and e.pod.task == task
        ]

    _created_offsets: list[tuple[int, PodCreated]]


@pytest.fixture(scope="module")
def finished(system: System) -> Finished:
    """Submit every example, wait until all are final, read the pods topics back."""
    return asyncio.run(_run_examples(system))


async def _run_examples(system: System) -> Finished:
    keys: list[str] = []
    for path, name in EXAMPLES.items():
        text = with_run_seconds((VOLCANO_EXAMPLES / path).read_text(), RUN_SECONDS, name=name)
        keys.extend(item.label for item in await submit(system, text))
    view = await wait_for_jobs(system, keys)
    pods = await read_topic(system, Topic.PODS)
    statuses = await read_topic(system, Topic.PODS_STATUS)
    created = [(record.offset, e) for record, e in pods if isinstance(e, PodCreated)]
    return Finished(
        view=view,
        keys=keys,
        created=[e for _, e in created],
        phases=[e for _, e in statuses if isinstance(e, PodPhaseChanged)],
        system=system,
        _created_offsets=created,
    )


def test_every_volcano_example_completes_when_services_run_as_processes(
    finished: Finished,
) -> None:
    phases = {
        key: str(finished.view.jobs[key].phase)
        for key in finished.keys
        if key in finished.view.jobs
    }

    assert phases == dict.fromkeys(finished.keys, str(JobPhase.COMPLETED)), describe(
        finished.view, finished.system
    )


def test_depends_on_stages_start_in_order_when_nginx_tasks_depend_on_each_other(
    finished: Finished,
) -> None:
    """nginx2 waits for nginx1 (1 replica), nginx3 for all 5 replicas of nginx2."""
    job = "default/nginx-stages"

    nginx1_ready = finished.ready_at(job, "job-nginx1", 1)
    nginx2_ready = finished.ready_at(job, "job-nginx2", 5)

    assert finished.first_created(job, "job-nginx2") >= nginx1_ready
    assert finished.first_created(job, "job-nginx3") >= nginx2_ready
    stages = [finished.creation_offsets(job, f"job-nginx{n}") for n in (1, 2, 3)]
    assert max(stages[0]) < min(stages[1])
    assert max(stages[1]) < min(stages[2])


def test_mpi_master_is_created_after_every_worker_runs_when_it_depends_on_them(
    finished: Finished,
) -> None:
    """Volcano's task-start-dependency/mpi.yaml: the master waits for all 10 workers."""
    job = "default/mpi-depends-on"

    workers_ready = finished.ready_at(job, "mpiworker", 10)

    assert finished.first_created(job, "mpimaster") >= workers_ready
    assert max(finished.creation_offsets(job, "mpiworker")) < min(
        finished.creation_offsets(job, "mpimaster")
    )
