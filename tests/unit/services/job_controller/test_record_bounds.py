"""What the job-controller writes about a job stays under the record limit
(docs/design.md#bounded-records)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from tests.unit.services.job_controller.builders import Driver, build_job, build_task, policy
from vcbus.contracts.events.jobs_admitted import JobAdmitted
from vcbus.contracts.events.jobs_rejected import SubmissionOrigin
from vcbus.contracts.events.pods import PodCreated
from vcbus.contracts.limits import MAX_EVENT_BYTES, POD_PART_PODS
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS, PodPhase
from vcbus.core.runtime.reactor import Entry
from vcbus.core.step import Ctx
from vcbus.services.admission.core import AdmissionLimits, Submission
from vcbus.services.admission.core import decide as admit
from vcbus.services.job_controller.state import JobRecord, RecordCodec

NODE = "n" * 63
"""A node name as long as admission's estimate allows for."""


def test_pods_carry_only_the_template_annotations_the_cluster_reads() -> None:
    """100 KiB of annotation × 100 replicas is written once, in the job, not per pod."""
    notes = {"team.example.com/notes": "x" * 100_000, ANNOTATION_RUN_SECONDS: "5"}
    driver = Driver(build_job(build_task("worker", 100, annotations=notes)))

    driver.start()

    created = [event for event in driver.emitted if isinstance(event, PodCreated)]
    assert len(created) == 100
    for event in created:
        assert event.pod.annotations[ANNOTATION_RUN_SECONDS] == "5"
        assert "team.example.com/notes" not in event.pod.annotations
        assert len(msgspec.json.encode(event)) < 2048


def largest_admitted(job_name: str, task_name: str) -> JobAdmitted:
    """The job with the most replicas admission admits, with a timed PodPending policy."""

    def answer(replicas: int) -> object:
        document = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": job_name, "namespace": "team-a"},
            "spec": {
                "policies": [{"event": "PodPending", "action": "RestartJob", "timeout": "1h"}],
                "tasks": [
                    {
                        "name": task_name,
                        "replicas": replicas,
                        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                    }
                ],
            },
        }
        submission = Submission(
            msgspec.json.encode(document), SubmissionOrigin(topic="t", partition=0, offset=0)
        )
        (event,) = admit(
            {}, submission, Ctx(now=datetime(2026, 1, 1, tzinfo=UTC)), AdmissionLimits()
        )
        return event

    low, high = 1, 10_000
    while low < high:
        middle = (low + high + 1) // 2
        if isinstance(answer(middle), JobAdmitted):
            low = middle
        else:
            high = middle - 1
    assert not isinstance(answer(low + 1), JobAdmitted)
    best = answer(low)
    assert isinstance(best, JobAdmitted)
    return best


def test_state_of_the_largest_job_admission_admits_fits_once_every_pod_is_bound() -> None:
    """Names near the 63 of a pod name, every pod bound to a long-named node and still
    Pending with its PodPending timer: the largest state the job can reach, 10,000 pods
    (admission's replica limit), is written in records of at most 1 MiB each."""
    job = largest_admitted("j" * 30, "t" * 25).manifest
    driver = Driver(
        build_job(
            *job.spec.tasks,
            name=job.metadata.name,
            namespace="team-a",
            policies=[policy("RestartJob", "PodPending", timeout="1h")],
        )
    )

    driver.start()
    for name in driver.pod_names():
        driver.pod(name, PodPhase.PENDING, node=NODE)

    record = driver.current
    assert len(record.pods) == job.spec.tasks[0].replicas
    assert all(pod.node == NODE for pod in record.pods)
    assert record.timers
    seen = tuple(f"pod-{index:08d}-{'e' * 40}" for index in range(512))
    entry = Entry[JobRecord](state=record, seen=seen, deadline=driver.now)
    codec = RecordCodec(Entry[JobRecord])
    records = codec.encode(entry)
    assert len(records) == 1 + 10_000 // POD_PART_PODS + 1  # the job's, then 20 parts
    assert max(len(written) for written in records) <= MAX_EVENT_BYTES
    assert codec.decode(records[0], records[1:]) == entry
