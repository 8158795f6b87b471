"""The job-controller on a real broker, fed as admission, podgroup-enqueue and the cluster would."""

from __future__ import annotations

from tests.conftest import ROOT, VOLCANO_EXAMPLES
from tests.support.bus_contract import running
from vcbus.contracts import (
    JobAdmitted,
    JobStatusChanged,
    PodCreated,
    PodGroupCreated,
    PodGroupDeleted,
    TaskCounts,
    Topic,
)
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import (
    ANNOTATION_GROUP_NAME,
    ANNOTATION_RUN_SECONDS,
    LABEL_JOB_NAME,
    LABEL_JOB_VERSION,
    LABEL_QUEUE_NAME,
    LABEL_TASK_INDEX,
    LABEL_TASK_SPEC,
    PodPhase,
)
from vcbus.contracts.quantity import parse_resources
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
    written,
)
from .topic_tail import TopicTail, tailing

EXAMPLES = ROOT / "examples" / "jobs"
OUTPUTS = [Topic.PODGROUPS, Topic.PODS, Topic.JOBS_STATUS]
R, S = PodPhase.RUNNING, PodPhase.SUCCEEDED


def _podgroup(tail: TopicTail, job: JobAdmitted) -> PodGroupCreated:
    (created,) = created_podgroups(tail, job.job)
    return created


def _has_podgroup(tail: TopicTail, *jobs: JobAdmitted) -> bool:
    return all(created_podgroups(tail, job.job) for job in jobs)


def _pods_by_task(tail: TopicTail, job: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for created in created_pods(tail, job):
        out.setdefault(created.pod.task, []).append(created.pod.name)
    return out


async def test_jobs_complete_with_every_output_written_when_cluster_runs_their_pods(
    bus: AioKafkaBus, settings: Settings
) -> None:
    """A gang job (one task) and a job with task minimums (two tasks), side by side.

    PodGroup from the job, pods once it is Inqueue, then Pending → Running → Completed
    with per-task counts as the cluster reports the pods Running, then Succeeded.
    """
    prefix = settings.topic_prefix
    service = build_service(settings, SystemClock())
    await ensure_topics(bus, [service], prefix, PARTITIONS)
    gang = admitted(EXAMPLES / "gang.yaml", prefix, offset=0)
    tf = admitted(EXAMPLES / "tensorflow-task-minimums.yaml", prefix, offset=1)
    replicas = {gang.job: {"worker": 4}, tf.job: {"ps": 2, "worker": 4}}

    async with tailing(bus, prefix, OUTPUTS) as tail, running(service, bus, settings):
        await publish(bus, prefix, [gang, tf])
        assert await tail.wait_for(lambda: _has_podgroup(tail, gang, tf))
        assert await tail.wait_for(
            lambda: all(is_in_phase(tail, job.job, JobPhase.PENDING) for job in (gang, tf))
        )
        assert created_pods(tail, gang.job) == []  # no pods before the PodGroup is Inqueue

        await publish(bus, prefix, [enqueued(_podgroup(tail, gang)), enqueued(_podgroup(tail, tf))])
        assert await tail.wait_for(
            lambda: all(
                len(created_pods(tail, key)) == sum(tasks.values())
                for key, tasks in replicas.items()
            )
        )
        pods = created_pods(tail, gang.job) + created_pods(tail, tf.job)
        await publish(bus, prefix, [pod_phase(created, R) for created in pods])
        assert await tail.wait_for(
            lambda: all(
                statuses(tail, key)[-1].running == sum(tasks.values())
                for key, tasks in replicas.items()
            )
        )
        await publish(bus, prefix, [pod_phase(created, S) for created in pods])
        assert await tail.wait_for(
            lambda: all(is_in_phase(tail, job.job, JobPhase.COMPLETED) for job in (gang, tf))
        )

    # PodGroups: one each, with the gang's minimums and resources (docs/design.md#minavailable)
    gang_group, tf_group = _podgroup(tail, gang).podgroup, _podgroup(tail, tf).podgroup
    assert (gang_group.min_member, gang_group.min_task_member) == (4, {"worker": 4})
    assert gang_group.min_resources == parse_resources({"cpu": "4", "memory": "4Gi"})
    assert (tf_group.min_member, tf_group.min_task_member) == (3, {"ps": 1, "worker": 2})
    assert tf_group.min_resources == parse_resources({"cpu": "4500m", "memory": "9Gi"})
    assert {gang_group.queue, tf_group.queue} == {"default"}
    # the PodGroup of a finished job is deleted; nothing else was written to podgroups
    for job, group in ((gang, gang_group), (tf, tf_group)):
        (_, deleted) = written(tail, Topic.PODGROUPS, job.job)
        assert isinstance(deleted, PodGroupDeleted)
        assert deleted.name == group.name

    # pods: one PodCreated per replica, labelled as Volcano labels them; never deleted
    assert _pods_by_task(tail, gang.job) == {"worker": [f"gang-worker-{i}" for i in range(4)]}
    assert _pods_by_task(tail, tf.job) == {
        "ps": ["tf-mnist-ps-0", "tf-mnist-ps-1"],
        "worker": [f"tf-mnist-worker-{i}" for i in range(4)],
    }
    assert all(isinstance(event, PodCreated) for event in tail.unique(Topic.PODS))
    for created in pods:
        pod = created.pod
        group = gang_group if pod.job == gang.job else tf_group
        assert pod.podgroup == group.name
        assert pod.labels[LABEL_JOB_NAME] == pod.job.split("/")[1]
        assert pod.labels[LABEL_TASK_SPEC] == pod.task
        assert pod.labels[LABEL_TASK_INDEX] == str(pod.index)
        assert pod.labels[LABEL_QUEUE_NAME] == "default"
        assert pod.labels[LABEL_JOB_VERSION] == "0"
        assert pod.annotations[ANNOTATION_GROUP_NAME] == group.name
        assert ANNOTATION_RUN_SECONDS in pod.annotations
    assert len({created.pod.uid for created in pods}) == len(pods)
    assert created_pods(tail, gang.job)[0].pod.requests == parse_resources(
        {"cpu": "1", "memory": "1Gi"}
    )

    # statuses: only JobStatusChanged, the phases in order, and the counts at each end
    assert all(isinstance(event, JobStatusChanged) for event in tail.unique(Topic.JOBS_STATUS))
    assert phases(tail, gang.job) == [JobPhase.PENDING, JobPhase.RUNNING, JobPhase.COMPLETED]
    # the worker task's TaskCompleted → CompleteJob policy passes through Completing
    assert phases(tail, tf.job) == [
        JobPhase.PENDING,
        JobPhase.RUNNING,
        JobPhase.COMPLETING,
        JobPhase.COMPLETED,
    ]
    for job in (gang, tf):
        tasks = replicas[job.job]
        first, *_, last = statuses(tail, job.job)
        assert (first.phase, first.min_available) == (
            JobPhase.PENDING,
            job.manifest.spec.min_available,
        )
        assert first.task_status_count == {}
        after_inqueue = next(s for s in statuses(tail, job.job) if s.pending)
        assert after_inqueue.phase is JobPhase.PENDING
        assert after_inqueue.task_status_count == {
            task: TaskCounts(pending=count) for task, count in tasks.items()
        }
        first_running = next(s for s in statuses(tail, job.job) if s.phase is JobPhase.RUNNING)
        assert first_running.running >= (job.manifest.spec.min_available or 0)
        assert (last.succeeded, last.running, last.pending) == (sum(tasks.values()), 0, 0)
        assert last.task_status_count == {
            task: TaskCounts(succeeded=count) for task, count in tasks.items()
        }


async def test_dependent_tasks_get_pods_stage_by_stage_when_their_dependencies_run(
    bus: AioKafkaBus, settings: Settings
) -> None:
    """Volcano's task-start-dependency example: nginx1 → nginx2 → nginx3
    (docs/design.md#dependent-jobs)."""
    prefix = settings.topic_prefix
    service = build_service(settings, SystemClock())
    await ensure_topics(bus, [service], prefix, PARTITIONS)
    job = admitted(VOLCANO_EXAMPLES / "task-start-dependency" / "job.yaml", prefix, offset=0)
    key = job.job
    nginx1 = ["job-job-nginx1-0"]
    nginx2 = [f"job-job-nginx2-{i}" for i in range(5)]
    nginx3 = [f"job-job-nginx3-{i}" for i in range(5)]

    def created() -> list[str]:
        return [c.pod.name for c in created_pods(tail, key)]

    def pods_named(names: list[str]) -> list[PodCreated]:
        return [c for c in created_pods(tail, key) if c.pod.name in names]

    def counts_are(**tasks: TaskCounts) -> bool:
        """The last status counts exactly these tasks' pods (the pods the controller made)."""
        found = statuses(tail, key)
        wanted = {f"job-{task}": counts for task, counts in tasks.items()}
        return bool(found) and found[-1].task_status_count == wanted

    def counted_and_seen(names: list[str], **tasks: TaskCounts) -> bool:
        """As :func:`counts_are`, and every pod of ``names`` read from the pods topic too:
        the status and the pods are on different topics, which the tail may read in any
        order, and the next step publishes phases for these pods."""
        return counts_are(**tasks) and len(pods_named(names)) == len(names)

    async with tailing(bus, prefix, OUTPUTS) as tail, running(service, bus, settings):
        await publish(bus, prefix, [job])
        assert await tail.wait_for(lambda: _has_podgroup(tail, job))
        group = _podgroup(tail, job).podgroup
        assert group.dependent
        assert group.min_member == 1

        await publish(bus, prefix, [enqueued(_podgroup(tail, job))])
        assert await tail.wait_for(lambda: counted_and_seen(nginx1, nginx1=TaskCounts(pending=1)))

        await publish(bus, prefix, [pod_phase(c, R) for c in pods_named(nginx1)])
        assert await tail.wait_for(
            lambda: counted_and_seen(
                nginx2, nginx1=TaskCounts(running=1), nginx2=TaskCounts(pending=5)
            )
        )
        await publish(bus, prefix, [pod_phase(c, R) for c in pods_named(nginx2[:4])])
        assert await tail.wait_for(
            lambda: counts_are(
                nginx1=TaskCounts(running=1), nginx2=TaskCounts(pending=1, running=4)
            )
        )

        await publish(bus, prefix, [pod_phase(c, R) for c in pods_named(nginx2[4:])])
        assert await tail.wait_for(
            lambda: counted_and_seen(
                nginx3,
                nginx1=TaskCounts(running=1),
                nginx2=TaskCounts(running=5),
                nginx3=TaskCounts(pending=5),
            )
        )
        await publish(bus, prefix, [pod_phase(c, R) for c in pods_named(nginx3)])
        await publish(bus, prefix, [pod_phase(c, S) for c in created_pods(tail, key)])
        assert await tail.wait_for(lambda: is_in_phase(tail, key, JobPhase.COMPLETED))

    # each stage's pods were created once, after the stage before it (the pods topic's order)
    assert created() == nginx1 + nginx2 + nginx3
    assert statuses(tail, key)[1].conditions[0].reason == "WaitingForDependency"
    assert phases(tail, key) == [JobPhase.PENDING, JobPhase.RUNNING, JobPhase.COMPLETED]
    assert counts_are(
        nginx1=TaskCounts(succeeded=1),
        nginx2=TaskCounts(succeeded=5),
        nginx3=TaskCounts(succeeded=5),
    )
