"""The admission core: one submission in, exactly one event out, with deterministic ids."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.services.admission.builders import build_job, build_queue, build_task, manifest
from vcbus.contracts._base import derive_event_id
from vcbus.contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
)
from vcbus.contracts.events.jobs_rejected import JobRejected, RejectionsCleared, SubmissionOrigin
from vcbus.contracts.events.jobs_submitted import (
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
)
from vcbus.contracts.events.queues import QueueDeclared, QueueDeleted
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.core.step import Ctx
from vcbus.services.admission.core import (
    AdmissionLimits,
    Submission,
    apply_queue_event,
    decide,
    queues_from_manifests,
    spec_digest,
)
from vcbus.services.admission.decode import decode_submission
from vcbus.services.admission.mutate import mutate

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CTX = Ctx(now=NOW)
LIMITS = AdmissionLimits()
ORIGIN = SubmissionOrigin(topic="vcbus.jobs.submitted", partition=3, offset=42)


def submit(payload: bytes, *, offset: int = 42) -> Submission:
    return Submission(
        payload=payload,
        origin=SubmissionOrigin(topic=ORIGIN.topic, partition=ORIGIN.partition, offset=offset),
    )


def test_valid_job_is_admitted_mutated_when_submitted() -> None:
    job = build_job(build_task("a", 2), build_task("b", 3), name="j1", namespace="team-a", queue="")

    (event,) = decide({}, submit(manifest(job)), CTX, LIMITS)

    assert isinstance(event, JobAdmitted)
    assert event.job == "team-a/j1"
    mutated = mutate(job)
    assert event.manifest == msgspec.structs.replace(
        mutated, metadata=msgspec.structs.replace(mutated.metadata, creation_timestamp=NOW)
    )
    assert event.manifest.spec.min_available == 5
    assert event.occurred_at == NOW
    assert event.spec_digest == spec_digest(job)


def test_creation_time_is_the_admission_time_when_the_submission_names_another() -> None:
    job = build_job(build_task("a", 1), name="j1")
    earlier = datetime(2020, 1, 1, tzinfo=UTC)
    stamped = msgspec.structs.replace(
        job, metadata=msgspec.structs.replace(job.metadata, creation_timestamp=earlier)
    )

    (event,) = decide({}, submit(manifest(stamped)), CTX, LIMITS)

    assert isinstance(event, JobAdmitted)
    assert event.manifest.metadata.creation_timestamp == NOW
    assert event.event_id == derive_event_id(
        "job.admitted.v1", f"{ORIGIN.topic}/{ORIGIN.partition}", 42
    )


def test_identical_resubmission_has_one_digest_and_a_new_event_id_when_read_at_another_offset() -> (
    None
):
    """YAML and JSON of one job have one digest (the controller's no-op); redelivery ids differ."""
    job = build_job(build_task(), name="j1")
    as_yaml = b"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n" + (
        b"metadata: {name: j1, namespace: test}\n"
        b"spec: {minAvailable: 0, queue: default, tasks: [{name: task-1, replicas: 1, "
        b"template: {metadata: {labels: {name: test}}, spec: {containers: "
        b"[{name: fake-name, image: 'busybox:1.24'}]}}}]}\n"
    )
    assert decode_submission(as_yaml) == job

    (first,) = decide({}, submit(manifest(job), offset=1), CTX, LIMITS)
    (second,) = decide({}, submit(as_yaml, offset=2), CTX, LIMITS)

    assert isinstance(first, JobAdmitted)
    assert isinstance(second, JobAdmitted)
    assert first.spec_digest == second.spec_digest
    assert first.event_id != second.event_id
    (again,) = decide({}, submit(manifest(job), offset=1), CTX, LIMITS)
    assert isinstance(again, JobAdmitted)
    assert again.event_id == first.event_id


def test_changed_spec_is_admitted_as_a_new_event_when_resubmitted() -> None:
    """Admission is stateless: an UPDATE is forwarded; the job-controller applies B1.6."""
    (first,) = decide(
        {}, submit(manifest(build_job(build_task(replicas=1), name="j"))), CTX, LIMITS
    )
    (second,) = decide(
        {}, submit(manifest(build_job(build_task(replicas=2), name="j")), offset=43), CTX, LIMITS
    )

    assert isinstance(first, JobAdmitted)
    assert isinstance(second, JobAdmitted)
    assert first.job == second.job
    assert first.spec_digest != second.spec_digest
    assert first.event_id != second.event_id


def test_invalid_job_is_rejected_with_every_violation_and_the_payload() -> None:
    payload = manifest(build_job(build_task("x", replicas=-1), build_task("x"), name="j"))

    (event,) = decide({}, submit(payload), CTX, LIMITS)

    assert isinstance(event, JobRejected)
    assert event.job == "test/j"
    assert [v.reason for v in event.violations] == ["NegativeReplicas", "DuplicateTaskName"]
    assert event.payload == payload.decode()
    assert event.payload_truncated is False
    assert event.origin == ORIGIN
    assert event.event_id == derive_event_id("job.rejected.v1", "vcbus.jobs.submitted/3", 42)


def test_undecodable_payload_is_rejected_with_replaced_bytes_and_no_key() -> None:
    (event,) = decide({}, submit(b"\xffkind: Job"), CTX, LIMITS)

    assert isinstance(event, JobRejected)
    assert event.job is None
    assert [v.reason for v in event.violations] == ["InvalidEncoding"]
    assert event.payload == "\ufffdkind: Job"


def test_long_payload_is_cut_and_flagged_when_rejected() -> None:
    limits = AdmissionLimits(max_payload_bytes=100, max_rejected_payload_bytes=10)

    (event,) = decide({}, submit(b"x" * 150), CTX, limits)

    assert isinstance(event, JobRejected)
    assert [v.reason for v in event.violations] == ["PayloadTooLarge"]
    assert (event.payload, event.payload_truncated) == ("x" * 10, True)


def test_replica_limit_comes_from_the_limits_when_configured() -> None:
    payload = manifest(build_job(build_task(replicas=6)))

    (event,) = decide({}, submit(payload), CTX, AdmissionLimits(max_replicas=5))

    assert isinstance(event, JobRejected)
    assert [v.reason for v in event.violations] == ["TooManyReplicas"]


def test_queue_view_decides_the_queue_rules_when_jobs_arrive() -> None:
    payload = manifest(build_job(build_task(), queue="gpu"))
    queues = apply_queue_event(
        {}, QueueDeclared(event_id="q", occurred_at=NOW, queue=build_queue("gpu"))
    )

    (admitted,) = decide(queues, submit(payload), CTX, LIMITS)
    closed = apply_queue_event(
        queues,
        QueueDeclared(
            event_id="q2", occurred_at=NOW, queue=build_queue("gpu", state=QueueState.CLOSED)
        ),
    )
    (refused,) = decide(closed, submit(payload), CTX, LIMITS)

    assert isinstance(admitted, JobAdmitted)
    assert isinstance(refused, JobRejected)
    assert [v.reason for v in refused.violations] == ["QueueNotOpen"]


def test_deleted_queue_is_forgotten_when_the_queues_topic_says_so() -> None:
    queues = {"gpu": build_queue("gpu"), "cpu": build_queue("cpu")}

    after = apply_queue_event(queues, QueueDeleted(event_id="d", occurred_at=NOW, name="gpu"))

    assert after == {"cpu": build_queue("cpu")}
    assert queues == {"gpu": build_queue("gpu"), "cpu": build_queue("cpu")}


@pytest.mark.parametrize(
    ("command", "accepted", "tag"),
    [
        (JobDeleteRequested, JobDeleteAccepted, "job.delete_accepted.v1"),
        (JobAbortRequested, JobAbortAccepted, "job.abort_accepted.v1"),
        (JobResumeRequested, JobResumeAccepted, "job.resume_accepted.v1"),
    ],
    ids=["delete", "abort", "resume"],
)
def test_command_is_accepted_with_an_id_derived_from_its_job_and_position(
    command: type[JobDeleteRequested | JobAbortRequested | JobResumeRequested],
    accepted: type[JobDeleteAccepted | JobAbortAccepted | JobResumeAccepted],
    tag: str,
) -> None:
    payload = msgspec.json.encode(
        command(event_id="cmd-1", occurred_at=NOW, job=JobKey("team-a/j1"))
    )

    (event,) = decide({}, submit(payload), CTX, LIMITS)

    assert event == accepted(
        event_id=derive_event_id(tag, "team-a/j1", "vcbus.jobs.submitted/3/42"),
        occurred_at=NOW,
        job=JobKey("team-a/j1"),
    )


def test_commands_reusing_a_client_event_id_are_two_commands_and_a_redelivery_is_one() -> None:
    """The delete of the job's next life is not taken for the delete of its last one."""
    first = JobDeleteRequested(event_id="reused", occurred_at=NOW, job=JobKey("team-a/j1"))
    payload = msgspec.json.encode(first)

    (once,) = decide({}, submit(payload, offset=10), CTX, LIMITS)
    (redelivered,) = decide({}, submit(payload, offset=10), CTX, LIMITS)
    (later,) = decide({}, submit(payload, offset=99), CTX, LIMITS)

    assert once.event_id == redelivered.event_id
    assert later.event_id != once.event_id


@pytest.mark.parametrize(
    "key", ["j1", "/j1", "team-a/", "a/b/c", "Team_A/j1", "team-a/A", "team-a/a_b", "team-a/a..b"]
)
def test_command_is_rejected_when_its_job_key_is_malformed(key: str) -> None:
    payload = msgspec.json.encode(
        JobDeleteRequested(event_id="c", occurred_at=NOW, job=JobKey(key))
    )

    (event,) = decide({}, submit(payload), CTX, LIMITS)

    assert isinstance(event, JobRejected)
    assert [v.reason for v in event.violations] == ["InvalidJobKey"]


@pytest.mark.parametrize("name", ["GPU", "gpu_a", "gpu..a"])
def test_queue_whose_name_is_not_a_dns1123_subdomain_is_refused_when_read(name: str) -> None:
    with pytest.raises(ValueError, match=f"queue name '{name}'"):
        queues_from_manifests([{"name": name, "weight": 1}])


def test_volcano_queue_manifests_become_queues_when_read() -> None:
    documents: list[object] = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "research"},
            "spec": {
                "weight": 4,
                "capability": {"cpu": "8", "memory": "16Gi"},
                "guarantee": {"resource": {"cpu": "500m"}},
                "parent": "root",
                "reclaimable": False,
            },
            "status": {"state": "Closed"},
        },
        None,
        {"name": "flat", "weight": 2},
    ]

    queues = queues_from_manifests(documents)

    assert queues == {
        "research": Queue(
            name="research",
            weight=4,
            capability={"cpu": 8000, "memory": 16 * 2**30},
            guarantee={"cpu": 500},
            state=QueueState.CLOSED,
            parent="root",
            reclaimable=False,
        ),
        "flat": Queue(name="flat", weight=2),
    }


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"apiVersion": "apps/v1", "kind": "Deployment"},
            "expected a scheduling.volcano.sh/v1beta1 Queue",
        ),
        (
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"},
            "metadata.name: a queue needs a non-empty name",
        ),
        (
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "q"},
                "spec": {"capability": {"cpu": "lots"}},
            },
            "quantities must match",
        ),
        ("text", "expected a Queue object"),
        (
            {"name": "q", "capability": {"cpu": [2]}},
            "capability.cpu: expected a quantity such as 32, 500m or 256Gi",
        ),
        ({"name": "q", "guarantee": {"cpu": "lots"}}, "guarantee: "),
        ({"name": "q", "weight": "3"}, "weight: expected a whole number, got '3'"),
    ],
    ids=[
        "other-kind",
        "no-name",
        "bad-quantity",
        "not-a-mapping",
        "flat-capability-not-a-quantity",
        "flat-guarantee-bad-quantity",
        "flat-weight-not-an-integer",
    ],
)
def test_bad_queue_manifest_is_refused_with_its_position(document: object, message: str) -> None:
    with pytest.raises(ValueError, match="queue document 1: ") as error:
        queues_from_manifests([document])

    assert message in str(error.value)


@pytest.mark.parametrize("cpus", [2, "2", "2000m"])
def test_flat_queue_reads_kubernetes_quantities_when_given_as_in_a_scenario(cpus: object) -> None:
    document = {"name": "q", "capability": {"cpu": cpus, "memory": "4Gi"}, "guarantee": {"cpu": 1}}

    (queue,) = queues_from_manifests([document]).values()

    assert queue.capability == {"cpu": 2000, "memory": 4 * 2**30}
    assert queue.guarantee == {"cpu": 1000}


# --- property: decide is total -----------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "task-1", "", "Bad_Name", "x" * 70, "default0"])
NUMBERS = st.one_of(st.integers(-3, 12), st.sampled_from([2**31, 2**63, -(2**40)]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=8), st.floats())

POD_SPECS = st.one_of(
    st.fixed_dictionaries(
        {
            "containers": st.lists(
                st.fixed_dictionaries(
                    {"name": NAMES, "image": st.sampled_from(["", "busybox"])},
                    optional={
                        "resources": st.dictionaries(
                            st.sampled_from(["requests", "limits"]),
                            st.dictionaries(
                                st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]),
                                st.one_of(
                                    st.sampled_from(["1", "500m", "2Gi", "-1", "x"]), SCALARS
                                ),
                                max_size=3,
                            ),
                            max_size=2,
                        )
                    },
                ),
                max_size=3,
            )
        },
        optional={"hostNetwork": st.booleans(), "restartPolicy": st.sampled_from(["Never", "Bad"])},
    ),
    st.dictionaries(st.text(max_size=5), SCALARS, max_size=3),
)

TASKS = st.fixed_dictionaries(
    {"name": NAMES, "replicas": NUMBERS, "template": st.fixed_dictionaries({"spec": POD_SPECS})},
    optional={
        "minAvailable": NUMBERS,
        "maxRetry": NUMBERS,
        "topologyPolicy": st.sampled_from(["", "none", "restricted"]),
        "dependsOn": st.fixed_dictionaries(
            {"name": st.lists(NAMES, max_size=3)},
            optional={"iteration": st.sampled_from(["", "any", "all", "each"])},
        ),
        "policies": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "event": st.sampled_from(["PodFailed", "*", "OutOfSync", ""]),
                    "events": st.lists(st.sampled_from(["PodEvicted", "*"]), max_size=2),
                    "action": st.sampled_from(["RestartJob", "SyncJob", ""]),
                    "exitCode": st.integers(-1, 2),
                },
            ),
            max_size=3,
        ),
        "partitionPolicy": st.fixed_dictionaries(
            {"totalPartitions": NUMBERS, "partitionSize": NUMBERS},
            optional={"minPartitions": NUMBERS},
        ),
    },
)

JOBS = st.fixed_dictionaries(
    {
        "apiVersion": st.just("batch.volcano.sh/v1alpha1"),
        "kind": st.just("Job"),
        "metadata": st.fixed_dictionaries(
            {"name": NAMES}, optional={"namespace": st.sampled_from(["", "ns", "Bad/NS"])}
        ),
        "spec": st.fixed_dictionaries(
            {"tasks": st.lists(TASKS, max_size=4)},
            optional={
                "minAvailable": NUMBERS,
                "maxRetry": NUMBERS,
                "queue": st.sampled_from(["", "default", "root", "gpu", "parent"]),
                "plugins": st.dictionaries(
                    st.sampled_from(["mpi", "svc", "tensorflow", "nope"]),
                    st.lists(st.sampled_from(["--master=a", "--worker", "b"]), max_size=2),
                    max_size=2,
                ),
                "volumes": st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "mountPath": st.sampled_from(["", "/d"]),
                            "volumeClaimName": NAMES,
                        },
                    ),
                    max_size=2,
                ),
                "ttlSecondsAfterFinished": NUMBERS,
                "minSuccess": NUMBERS,
                "networkTopology": st.dictionaries(
                    st.sampled_from(["highestTierAllowed", "highestTierName"]), SCALARS
                ),
            },
        ),
    }
)

QUEUES = {
    "gpu": Queue(name="gpu", state=QueueState.CLOSED),
    "parent": Queue(name="parent"),
    "child": Queue(name="child", parent="parent"),
}


def _check_one_event(payload: bytes) -> None:
    events = decide(QUEUES, submit(payload), CTX, LIMITS)

    assert len(events) == 1
    (event,) = events
    if isinstance(event, JobRejected):
        assert event.violations
        assert all(v.reason and v.message for v in event.violations)
    else:
        assert isinstance(event, JobAdmitted | JobDeleteAccepted | JobAbortAccepted)


@settings(max_examples=300, deadline=None)
@given(job=JOBS, as_yaml=st.booleans())
def test_decide_answers_exactly_once_when_given_random_job_shaped_mappings(
    job: dict[str, Any], as_yaml: bool
) -> None:
    payload = msgspec.yaml.encode(job) if as_yaml else msgspec.json.encode(job)

    _check_one_event(payload)


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=200))
def test_decide_answers_exactly_once_when_given_garbage_bytes(payload: bytes) -> None:
    _check_one_event(payload)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("{}[]:,-'\"&*!| \n\tabc01#?")), max_size=200))
def test_decide_answers_exactly_once_when_given_yaml_looking_noise(text: str) -> None:
    _check_one_event(text.encode())


def test_digest_is_equal_when_equal_jobs_hold_distinct_string_objects() -> None:
    """msgspec omits defaults by identity; the digest must not depend on it."""
    job = build_job(build_task())
    same = msgspec.structs.replace(job, kind="".join(["J", "ob"]))

    assert same == job
    assert spec_digest(same) == spec_digest(job)


def test_a_job_whose_record_key_names_another_job_is_refused_naming_both_when_submitted() -> None:
    """Attack: a record keyed ``team-a/j1`` (its partition, what readers of the key expect)
    carries the manifest of another job, ``team-b/j2``."""
    job = build_job(build_task("a", 1), name="j2", namespace="team-b", queue="")
    submission = Submission(payload=manifest(job), origin=ORIGIN, key="team-a/j1")

    (event,) = decide({}, submission, CTX, LIMITS)

    assert isinstance(event, JobRejected)
    (violation,) = event.violations
    assert violation.reason == "KeyMismatch"
    assert "'team-a/j1'" in violation.message
    assert "'team-b/j2'" in violation.message
    assert event.job == JobKey("team-b/j2")


def test_a_job_whose_record_key_is_its_namespace_and_name_is_admitted_when_submitted() -> None:
    job = build_job(build_task("a", 1), name="j2", namespace="team-b", queue="")
    keyed = Submission(payload=manifest(job), origin=ORIGIN, key="team-b/j2")
    unkeyed = Submission(payload=manifest(job), origin=ORIGIN)

    assert isinstance(decide({}, keyed, CTX, LIMITS)[0], JobAdmitted)
    assert isinstance(decide({}, unkeyed, CTX, LIMITS)[0], JobAdmitted)


def test_a_clear_of_rejected_records_is_answered_with_admissions_time_and_the_origins() -> None:
    """The answer names the time its readers compare each rejection's own time with."""
    junk = SubmissionOrigin(topic="vcbus.jobs.submitted", partition=0, offset=7)
    command = msgspec.json.encode(
        {
            "type": "rejections.clear_requested.v1",
            "event_id": "client-chosen",
            "occurred_at": "2026-03-01T11:00:00Z",
            "origins": [{"topic": junk.topic, "partition": 0, "offset": 7}],
        }
    )
    (answer,) = decide({}, submit(command), CTX, LIMITS)
    assert isinstance(answer, RejectionsCleared)
    assert (answer.before, answer.origins) == (NOW, (junk,))
    (again,) = decide({}, submit(command), CTX, LIMITS)
    assert again.event_id == answer.event_id  # a redelivery is the same answer
    (elsewhere,) = decide({}, submit(command, offset=43), CTX, LIMITS)
    assert elsewhere.event_id != answer.event_id
    too_many: dict[str, object] = {
        "type": "rejections.clear_requested.v1",
        "event_id": "x",
        "occurred_at": "2026-03-01T11:00:00Z",
    }
    too_many["origins"] = [{"topic": "t", "partition": 0, "offset": n} for n in range(101)]
    (refused,) = decide({}, submit(msgspec.json.encode(too_many)), CTX, LIMITS)
    assert isinstance(refused, JobRejected)
    assert refused.violations[0].reason == "InvalidCommand"
