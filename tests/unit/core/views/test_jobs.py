"""A job as folded, its PodGroup phase as shown, and its pod counts in words."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from vcbus.contracts import (
    JobAdmitted,
    JobDeleted,
    JobKey,
    JobStatusChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
)
from vcbus.contracts.objects import (
    Condition,
    Job,
    JobPhase,
    JobSpec,
    ObjectMeta,
    PodGroup,
    PodGroupPhase,
    PodTemplate,
    TaskSpec,
)
from vcbus.core.views.jobs import JobFold, pod_counts, podgroup_phase

NOW = datetime(2026, 1, 1, tzinfo=UTC)
JOB = JobKey("default/a")


def created(name: str = "a-pg", uid: str = "") -> PodGroupCreated:
    group = PodGroup(name=name, namespace="default", job=JOB, queue="q", min_member=1, uid=uid)
    return PodGroupCreated(event_id=f"c-{name}", occurred_at=NOW, podgroup=group)


def phase(value: PodGroupPhase, name: str = "a-pg", uid: str = "") -> PodGroupPhaseChanged:
    return PodGroupPhaseChanged(
        event_id=f"p-{name}", occurred_at=NOW, job=JOB, podgroup=name, phase=value, uid=uid
    )


def deleted(name: str = "a-pg") -> PodGroupDeleted:
    return PodGroupDeleted(event_id=f"d-{name}", occurred_at=NOW, job=JOB, name=name)


def test_a_deleted_podgroup_shows_deleted_not_its_last_phase():
    assert podgroup_phase(phase(PodGroupPhase.RUNNING), deleted()) == "Deleted"
    assert podgroup_phase(None, deleted()) == "Deleted"


def test_a_replaced_podgroup_does_not_lend_its_phase_to_its_successor():
    assert podgroup_phase(phase(PodGroupPhase.RUNNING), created("a-pg-2")) == "Pending"
    old, new = phase(PodGroupPhase.RUNNING, uid="u1"), created(uid="u2")
    assert podgroup_phase(old, new) == "Pending"
    assert podgroup_phase(phase(PodGroupPhase.INQUEUE, uid="u2"), new) == "Inqueue"


def test_the_phase_is_the_status_when_the_podgroup_is_current_or_not_read():
    assert podgroup_phase(phase(PodGroupPhase.INQUEUE), created()) == "Inqueue"
    assert podgroup_phase(phase(PodGroupPhase.INQUEUE)) == "Inqueue"
    assert podgroup_phase(None, created()) == "Pending"
    assert podgroup_phase(None) == ""


def test_pod_counts_say_the_minimum_apart_from_the_counts():
    status = JobStatusChanged(
        event_id="s", occurred_at=NOW, job=JOB, phase=JobPhase.RUNNING, min_available=3
    )
    assert pod_counts(status) == "0 running (min available 3)"
    busy = msgspec.structs.replace(status, running=6, succeeded=1, failed=2, pending=1)
    assert pod_counts(busy) == "6 running, 1 succeeded, 2 failed, 1 pending (min available 3)"


def test_a_deleted_job_stays_deleted_and_a_readmission_starts_a_new_view() -> None:
    fold = JobFold()
    running = JobStatusChanged(event_id="s", occurred_at=NOW, job=JOB, phase=JobPhase.RUNNING)
    manifest = Job(metadata=ObjectMeta(name="a", namespace="default"))
    readmitted = JobAdmitted(
        event_id="a2", occurred_at=NOW, job=JOB, manifest=manifest, spec_digest="d2"
    )

    for event in (created(), phase(PodGroupPhase.RUNNING), running):
        fold.apply(event)
    fold.apply(JobDeleted(event_id="d", occurred_at=NOW, job=JOB))
    deleted = fold.jobs[JOB]
    fold.apply(readmitted)

    assert (deleted.phase, deleted.deleted, deleted.podgroup_phase) == ("Deleted", True, "Running")
    assert (fold.jobs[JOB].phase, fold.jobs[JOB].deleted, fold.jobs[JOB].status) == (
        "Admitted",
        False,
        None,
    )


def _admitted(replicas: int, digest: str, *, cpu: str = "1") -> JobAdmitted:
    task = TaskSpec(
        name="w",
        replicas=replicas,
        min_available=replicas,
        template=PodTemplate(spec={"containers": [{"name": "c", "resources": {"cpu": cpu}}]}),
    )
    spec = JobSpec(min_available=replicas, tasks=(task,))
    manifest = Job(metadata=ObjectMeta(name="a", namespace="default"), spec=spec)
    return JobAdmitted(
        event_id=f"adm-{digest}", occurred_at=NOW, job=JOB, manifest=manifest, spec_digest=digest
    )


def _status(trace: str, *, refusal: str = "") -> JobStatusChanged:
    extra = (Condition(type="UpdateRejected", reason="UpdateRejected", message=refusal),)
    return JobStatusChanged(
        event_id=f"s-{trace}",
        occurred_at=NOW,
        job=JOB,
        phase=JobPhase.RUNNING,
        conditions=(Condition(type="Running"), *(extra if refusal else ())),
        trace_id=trace,
    )


def test_an_allowed_update_replaces_the_spec_and_a_refused_one_keeps_spec_and_trace() -> None:
    fold = JobFold()
    fold.apply(_admitted(2, "d1"))
    fold.apply(_status("t1"))
    fold.apply(_admitted(3, "d2"))
    job = fold.jobs[JOB]
    assert job.admitted is not None
    assert job.admitted.spec_digest == "d2"
    fold.apply(_status("t2"))

    fold.apply(_admitted(3, "d3", cpu="2"))  # a template change: the controller refuses it
    fold.apply(_status("t3", refusal="job updates may not change fields"))
    assert (job.admitted.spec_digest, job.trace_id) == ("d2", "t2")
    assert job.update_rejected == "job updates may not change fields"


def test_a_job_deleted_then_submitted_again_takes_any_spec() -> None:
    fold = JobFold()
    fold.apply(_admitted(2, "d1"))
    fold.apply(JobDeleted(event_id="del", occurred_at=NOW, job=JOB))
    fold.apply(_admitted(2, "d2", cpu="2"))
    admitted = fold.jobs[JOB].admitted
    assert admitted is not None
    assert admitted.spec_digest == "d2"
