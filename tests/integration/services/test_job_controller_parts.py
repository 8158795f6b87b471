"""A job's state in parts on a real broker: written, restored by a new replica, finished.

Parts of 4 pods stand for the 512 of a real job, so a 10-pod job takes the path a
10,000-pod job takes: its record and three parts on the changelog, each a record of its
own, read back by the next replica, which then completes the job from them.
"""

from __future__ import annotations

from tests.support.bus_contract import read_topic, running
from vcbus.contracts import Topic
from vcbus.contracts.limits import MAX_EVENT_BYTES
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import changelog_topic, ensure_topics
from vcbus.services.job_controller.app import NAME, build_service

from .conftest import PARTITIONS
from .controller_inputs import (
    admitted,
    created_podgroups,
    created_pods,
    enqueued,
    is_in_phase,
    pod_phase,
    publish,
    statuses,
)
from .topic_tail import tailing

OUTPUTS = [Topic.PODGROUPS, Topic.PODS, Topic.JOBS_STATUS]


async def test_a_job_kept_in_parts_is_restored_by_the_next_replica_which_completes_it(
    bus: AioKafkaBus, settings: Settings, tmp_path
) -> None:
    prefix = settings.topic_prefix
    first = build_service(settings, SystemClock(), pods_per_part=4)
    await ensure_topics(bus, [first], prefix, PARTITIONS)
    manifest = tmp_path / "ten.yaml"
    manifest.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: ten}\n"
        "spec:\n  tasks:\n    - name: w\n      replicas: 10\n"
        "      template: {spec: {containers: [{name: c, image: busybox}]}}\n"
    )
    job = admitted(manifest, prefix, offset=0)

    async with tailing(bus, prefix, OUTPUTS) as tail:
        async with running(first, bus, settings):
            await publish(bus, prefix, [job])
            assert await tail.wait_for(lambda: bool(created_podgroups(tail, job.job)))
            (group,) = created_podgroups(tail, job.job)
            await publish(bus, prefix, [enqueued(group)])
            assert await tail.wait_for(lambda: len(created_pods(tail, job.job)) == 10)
            pods = created_pods(tail, job.job)
            await publish(bus, prefix, [pod_phase(created, PodPhase.RUNNING) for created in pods])
            assert await tail.wait_for(
                lambda: bool(statuses(tail, job.job)) and statuses(tail, job.job)[-1].running == 10
            )

        records = await read_topic(bus, changelog_topic(prefix, NAME, "jobs"), want=4)
        latest = {record.key or b"": record for record in records}
        assert sorted(latest) == [
            b"default/ten",
            b"default/ten#part/1",
            b"default/ten#part/2",
            b"default/ten#part/3",
        ]
        assert all(len(record.value or b"") <= MAX_EVENT_BYTES for record in records)

        second = build_service(settings, SystemClock(), pods_per_part=4)
        async with running(second, bus, settings):
            await publish(bus, prefix, [pod_phase(created, PodPhase.SUCCEEDED) for created in pods])
            assert await tail.wait_for(lambda: is_in_phase(tail, job.job, JobPhase.COMPLETED))
        last = statuses(tail, job.job)[-1]
        assert (last.succeeded, last.running, last.pending) == (10, 0, 0)
