"""The job-controller's inputs as its neighbours write them, and readers of what it wrote."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vcbus.contracts import (
    Event,
    JobAdmitted,
    JobStatusChanged,
    NodeName,
    PodCreated,
    PodGroupCreated,
    PodGroupPhaseChanged,
    PodPhaseChanged,
    SubmissionOrigin,
    Topic,
    derive_event_id,
    key_of,
    pod_key,
)
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.protocol import Bus
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.step import Ctx
from vcbus.services.admission.core import AdmissionLimits, Submission, decide

from .topic_tail import TopicTail


def admitted(path: Path, prefix: str, offset: int) -> JobAdmitted:
    """The ``JobAdmitted`` admission writes for the manifest at ``path`` (read at ``offset``)."""
    origin = SubmissionOrigin(topic=f"{prefix}{Topic.JOBS_SUBMITTED}", partition=0, offset=offset)
    (event,) = decide(
        {},
        Submission(payload=path.read_bytes(), origin=origin),
        Ctx(now=SystemClock().now()),
        AdmissionLimits(),
    )
    assert isinstance(event, JobAdmitted), event
    return event


def enqueued(podgroup: PodGroupCreated) -> PodGroupPhaseChanged:
    """podgroup-enqueue's answer: the PodGroup is Inqueue."""
    group = podgroup.podgroup
    return PodGroupPhaseChanged(
        event_id=derive_event_id("test.podgroup.inqueue", group.job, group.name),
        occurred_at=SystemClock().now(),
        job=group.job,
        podgroup=group.name,
        phase=PodGroupPhase.INQUEUE,
        previous_phase=PodGroupPhase.PENDING,
    )


def pod_phase(created: PodCreated, phase: PodPhase) -> PodPhaseChanged:
    """The cluster's report that a created pod is in ``phase`` (on node ``n1``)."""
    pod = created.pod
    return PodPhaseChanged(
        event_id=derive_event_id("test.pod.phase", pod.uid, phase.value),
        occurred_at=SystemClock().now(),
        pod=pod_key(pod.namespace, pod.name),
        job=pod.job,
        task=pod.task,
        node=NodeName("n1"),
        phase=phase,
        exit_code=0 if phase is PodPhase.SUCCEEDED else None,
        pod_uid=pod.uid,
    )


async def publish(bus: Bus, prefix: str, events: Sequence[Event]) -> None:
    """Publish events as their writers do (keyed, with headers) and wait for the acks."""
    producer = bus.producer(client_id="test-neighbours")
    try:
        await producer.send([event_record(event, prefix) for event in events])
    finally:
        await producer.stop()


def written(tail: TopicTail, topic: Topic, job: str) -> list[Event]:
    """The events of ``topic`` about one job (duplicates dropped), in the order written."""
    return [event for event in tail.unique(topic) if key_of(event) == job]


def created_podgroups(tail: TopicTail, job: str) -> list[PodGroupCreated]:
    """The PodGroups created for one job (duplicates dropped)."""
    return [e for e in written(tail, Topic.PODGROUPS, job) if isinstance(e, PodGroupCreated)]


def created_pods(tail: TopicTail, job: str) -> list[PodCreated]:
    """The pods created for one job (duplicates dropped), in the order written."""
    return [e for e in written(tail, Topic.PODS, job) if isinstance(e, PodCreated)]


def statuses(tail: TopicTail, job: str) -> list[JobStatusChanged]:
    """The statuses of one job (duplicates dropped), in the order written."""
    return [e for e in written(tail, Topic.JOBS_STATUS, job) if isinstance(e, JobStatusChanged)]


def phases(tail: TopicTail, job: str) -> list[JobPhase]:
    """The job's phases as its statuses went through them (repeats collapsed)."""
    out: list[JobPhase] = []
    for status in statuses(tail, job):
        if not out or out[-1] != status.phase:
            out.append(status.phase)
    return out


def is_in_phase(tail: TopicTail, job: str, phase: JobPhase) -> bool:
    """Whether the job's last status is in ``phase``."""
    found = statuses(tail, job)
    return bool(found) and found[-1].phase is phase
