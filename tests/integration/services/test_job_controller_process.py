"""The job-controller as a process (`vcbus serve job-controller`), SIGKILLed mid-job."""

from __future__ import annotations

from tests.conftest import VOLCANO_EXAMPLES
from tests.support.processes import Processes, event, service_env
from vcbus.contracts import PodCreated, TaskCounts, Topic
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.job_controller.app import build_service

from .conftest import PARTITIONS
from .controller_inputs import (
    admitted,
    created_podgroups,
    created_pods,
    enqueued,
    is_in_phase,
    phases,
    pod_phase,
    publish,
    statuses,
)
from .topic_tail import tailing

OUTPUTS = [Topic.PODGROUPS, Topic.PODS, Topic.JOBS_STATUS]
R, S = PodPhase.RUNNING, PodPhase.SUCCEEDED


async def test_job_completes_with_each_pod_created_once_when_controller_is_killed_mid_job(
    bus: AioKafkaBus, settings: Settings, kafka_bootstrap: str
) -> None:
    """SIGKILL right after the second stage's pods appear; the next stage is reported while
    the controller is down; a new process restores the job from the changelog and goes on.

    When the kill lands between publishing the pods and committing, the restarted process
    handles the input again and repeats those PodCreated: only as the same events (same
    ids, same pod uids; only the handling time differs), so no pod is created twice.
    """
    prefix = settings.topic_prefix
    await ensure_topics(bus, [build_service(settings, SystemClock())], prefix, PARTITIONS)
    env = service_env(
        kafka_bootstrap,
        prefix,
        VCBUS_PARTITIONS=str(PARTITIONS),
        VCBUS_POLL_TIMEOUT="0.1",
        VCBUS_SESSION_TIMEOUT_MS="3000",
    )
    job = admitted(VOLCANO_EXAMPLES / "task-start-dependency" / "job.yaml", prefix, offset=0)
    key = job.job
    replicas = {"job-nginx1": 1, "job-nginx2": 5, "job-nginx3": 5}
    serve = ("vcbus.services.cli", "serve", "job-controller")

    def of_task(task: str) -> list[PodCreated]:
        return [c for c in created_pods(tail, key) if c.pod.task == task]

    with Processes() as processes:
        async with tailing(bus, prefix, OUTPUTS) as tail:
            first = processes.start("job-controller-1", *serve, "--instance", "1", env=env)
            await publish(bus, prefix, [job])
            assert await tail.wait_for(lambda: bool(created_podgroups(tail, key)))
            inqueue = enqueued(created_podgroups(tail, key)[0])
            await publish(bus, prefix, [inqueue])
            assert await tail.wait_for(lambda: len(of_task("job-nginx1")) == 1)
            nginx1_running = [pod_phase(c, R) for c in of_task("job-nginx1")]
            await publish(bus, prefix, nginx1_running)
            assert await tail.wait_for(lambda: bool(of_task("job-nginx2")))
            first.kill()
            assert first.returncode == -9

            # the cluster goes on while the controller is down; upstream redelivers too
            assert await tail.wait_for(lambda: len(of_task("job-nginx2")) == 5)
            nginx2_running = [pod_phase(c, R) for c in of_task("job-nginx2")]
            await publish(bus, prefix, [job, inqueue, *nginx1_running, *nginx2_running])
            second = processes.start("job-controller-2", *serve, "--instance", "2", env=env)
            assert await tail.wait_for(lambda: len(of_task("job-nginx3")) == 5)
            await publish(bus, prefix, [pod_phase(c, R) for c in of_task("job-nginx3")])
            await publish(bus, prefix, [pod_phase(c, S) for c in created_pods(tail, key)])
            assert await tail.wait_for(lambda: is_in_phase(tail, key, JobPhase.COMPLETED))
        assert second.terminate() == 0

    # the restarted process read the job's state back from the changelog
    restored = second.matching(event("store_restored", store="jobs"))
    assert sum(line["records"] for line in restored) > 0
    # no pod was created twice: one PodCreated (one id, one uid) per pod name
    ids: dict[str, set[tuple[str, str]]] = {}
    for created in tail.events(Topic.PODS):
        assert isinstance(created, PodCreated)
        ids.setdefault(created.pod.name, set()).add((created.event_id, created.pod.uid))
    assert all(len(found) == 1 for found in ids.values()), ids
    for task, count in replicas.items():
        assert sorted(c.pod.name for c in of_task(task)) == [
            f"job-{task}-{i}" for i in range(count)
        ]
    # and the job went through its phases with nothing lost
    assert phases(tail, key) == [JobPhase.PENDING, JobPhase.RUNNING, JobPhase.COMPLETED]
    assert statuses(tail, key)[-1].task_status_count == {
        task: TaskCounts(succeeded=count) for task, count in replicas.items()
    }
