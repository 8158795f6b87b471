"""Validation rules: Volcano's admit_job.go and validate/util.go with docs/design.md#minavailable
and docs/design.md#every-violation, exact messages and reason codes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tests.unit.services.admission.builders import (
    build_job,
    build_queue,
    build_task,
    fake_container,
)
from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.objects.queue import QueueState
from vcbus.services.admission.rules import validate, volcano_message


def reasons(violations: tuple[Violation, ...]) -> list[str]:
    return [violation.reason for violation in violations]


def only(violations: tuple[Violation, ...]) -> Violation:
    assert len(violations) == 1, violations
    return violations[0]


# --- B1.2 early-return rows (E1–E5), all reported with the rest (docs/design.md#every-violation)
# ---


def test_every_early_return_is_reported_when_several_apply() -> None:
    """Volcano returns at the first of E1–E4; vcbus reports all of them
    (docs/design.md#every-violation)."""
    job = build_job(min_available=-1, maxRetry=-1, ttlSecondsAfterFinished=-1)

    violations = validate(job, {})

    assert [(v.path, v.reason, v.message) for v in violations] == [
        ("spec.minAvailable", "NegativeMinAvailable", "job 'minAvailable' must be >= 0."),
        ("spec.maxRetry", "NegativeMaxRetry", "'maxRetry' cannot be less than zero."),
        (
            "spec.ttlSecondsAfterFinished",
            "NegativeTtl",
            "'ttlSecondsAfterFinished' cannot be less than zero.",
        ),
        ("spec.tasks", "NoTasks", "No task specified in job spec"),
    ]


def test_a_job_whose_tasks_all_have_zero_replicas_is_admitted_as_volcano_does() -> None:
    """A running job may be scaled to 0; ``vcbus submit`` refuses to create one instead."""
    assert validate(build_job(build_task("a", 0), build_task("b", 0)), {}) == ()


@pytest.mark.parametrize(
    ("args", "tasks", "expected"),
    [
        ([], ("master", "worker"), []),
        ([], ("mpimaster", "mpiworker"), ["MpiMasterTaskNotFound", "MpiWorkerTaskNotFound"]),
        (["--master=mpimaster", "--worker=mpiworker"], ("mpimaster", "mpiworker"), []),
        (["--master", "head"], ("head", "worker"), []),
        (["-worker=w"], ("master", "x"), ["MpiWorkerTaskNotFound"]),
    ],
    ids=["defaults", "defaults-missing", "flags-with-equals", "flag-and-value", "single-dash"],
)
def test_mpi_master_and_worker_tasks_must_exist_when_mpi_plugin_is_used(
    args: list[str], tasks: tuple[str, str], expected: list[str]
) -> None:
    """E5 (v1.12 checks master and worker; HEAD only master)."""
    job = build_job(*(build_task(name) for name in tasks), plugins={"mpi": args})

    violations = validate(job, {})

    assert reasons(violations) == expected
    messages = {
        "MpiMasterTaskNotFound": "The specified mpi master task was not found",
        "MpiWorkerTaskNotFound": "The specified mpi worker task was not found",
    }
    assert [v.message for v in violations] == [messages[reason] for reason in expected]


# --- Volcano's admit_job.go task rows (T1–T9) -----------------------------------------------------


def test_task_min_available_above_replicas_is_refused_when_user_set_it() -> None:
    """T3, with the job minimum consistent (docs/design.md#minavailable) and within replicas (J2) so
    only T3 applies."""
    job = build_job(
        build_task(replicas=2, min_available=3),
        build_task("task-2", replicas=2, min_available=0),
        name="j",
        min_available=3,
    )

    violation = only(validate(job, {}))

    assert violation == Violation(
        path="spec.tasks[0].minAvailable",
        reason="GreaterThanReplicas",
        message="'minAvailable' is greater than 'replicas' in task: task-1, job: j",
    )


def test_every_duplicate_task_name_is_reported_when_names_repeat() -> None:
    """T5 without Volcano's ``break``: later tasks are still checked
    (docs/design.md#every-violation)."""
    job = build_job(build_task("a"), build_task("a"), build_task("a", replicas=-1), build_task("b"))

    violations = validate(job, {})

    assert [(v.path, v.reason) for v in violations] == [
        ("spec.tasks[1].name", "DuplicateTaskName"),
        ("spec.tasks[2].replicas", "NegativeReplicas"),
        ("spec.tasks[2].name", "DuplicateTaskName"),
    ]
    assert violations[0].message == "duplicated task name a"


def test_long_pod_names_are_refused_when_the_last_replica_overflows() -> None:
    """T7: ``<job>-<task>-<replicas-1>`` must be a qualified name (≤ 63 characters)."""
    job = build_job(build_task("t" * 30, replicas=100), name="j" * 30)

    violation = only(validate(job, {}))

    assert violation.reason == "InvalidPodName"
    assert violation.message == (
        f"create pod with name {'j' * 30}-{'t' * 30}-99 validate failed "
        "[name part must be no more than 63 characters]"
    )


def test_job_name_must_be_a_dns1123_subdomain_when_validated() -> None:
    """J1 with docs/design.md#names-and-numbers, in Kubernetes' ``IsDNS1123Subdomain`` text."""
    job = build_job(build_task(), name="-bad-")

    violation = only(validate(job, {}))

    assert (violation.path, violation.reason) == ("metadata.name", "InvalidJobName")
    assert violation.message == (
        "create job with name -bad- validate failed [a lowercase RFC 1123 subdomain must "
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]"
    )


@pytest.mark.parametrize("name", ["A", "a_b", "a..b", "a.", "x" * 254, "ok\n"])
def test_job_name_the_api_server_refuses_is_refused(name: str) -> None:
    """docs/design.md#names-and-numbers: qualified names such as ``A`` or ``a_b`` are not
    subdomains."""
    violation = only(validate(build_job(build_task(), name=name), {}))

    assert violation.reason == "InvalidJobName"


@pytest.mark.parametrize(
    ("labels", "annotations", "reasons"),
    [
        ({"app": "web", "example.com/tier": "a_b.C-1"}, {"note": "x" * 1000}, []),
        ({"bad key": "v"}, {}, ["InvalidLabelKey"]),
        ({"k": "-v"}, {}, ["InvalidLabelValue"]),
        ({"k": "v" * 64}, {}, ["InvalidLabelValue"]),
        ({}, {"Example.COM/Note": "ok", "a/b/c": "x"}, ["InvalidAnnotationKey"]),
        ({}, {"a": "x" * 200_000, "b": "y" * 70_000}, ["AnnotationsTooLong"]),
    ],
    ids=["valid", "key", "value", "value-too-long", "annotation-key", "annotations-too-long"],
)
def test_labels_and_annotations_are_validated_as_the_api_server_does(
    labels: dict[str, str], annotations: dict[str, str], reasons: list[str]
) -> None:
    """Job metadata and task template metadata alike (docs/design.md#names-and-numbers)."""
    task = build_task()
    task["template"]["metadata"] = {"labels": labels, "annotations": annotations}
    job = build_job(task, name="j")
    job = msgspec.structs.replace(
        job, metadata=msgspec.structs.replace(job.metadata, labels=labels, annotations=annotations)
    )

    violations = validate(job, {})

    assert sorted(v.reason for v in violations) == sorted(reasons * 2)
    assert {v.path.split(".")[0] for v in violations} <= {"metadata", "spec"}


def test_spec_b12_observed_example_is_reproduced_exactly() -> None:
    """Volcano's admit_job.go: task replicas −1 with job minAvailable 1 (v1.12
    ``admit_job_test.go``)."""
    job = build_job(build_task(replicas=-1), name="replica-lessthanzero", min_available=1)

    assert volcano_message(validate(job, {})) == (
        "'replicas' < 0 in task: task-1, job: replica-lessthanzero; "
        "job 'minAvailable' should not be greater than total replicas in tasks;"
    )


@pytest.mark.parametrize(
    ("pod_spec", "expected"),
    [
        ({}, [("containers", "Required", "Required value")]),
        (
            {"containers": [{"image": "i"}]},
            [("containers[0].name", "MissingContainerName", "Required value")],
        ),
        (
            {"containers": [{"name": "c"}]},
            [("containers[0].image", "MissingImage", "Required value")],
        ),
        (
            {"initContainers": [fake_container()], "containers": [fake_container()]},
            [("containers[0].name", "DuplicateContainerName", 'Duplicate value: "fake-name"')],
        ),
        (
            {"containers": [fake_container()], "restartPolicy": "Sometimes"},
            [
                (
                    "restartPolicy",
                    "InvalidRestartPolicy",
                    'Unsupported value: "Sometimes": '
                    'supported values: "Always", "Never", "OnFailure"',
                )
            ],
        ),
        ({"containers": "nginx"}, [("containers", "InvalidType", "Invalid value: must be a list")]),
    ],
    ids=["no-containers", "no-name", "no-image", "duplicate-name", "restart-policy", "not-a-list"],
)
def test_pod_template_errors_use_kubernetes_field_errors_when_invalid(
    pod_spec: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    """T8 (the ported part of ``ValidatePodTemplate``), printed ``spec.task[<i>].<error>``."""
    violations = validate(build_job(build_task(pod_spec=pod_spec)), {})

    assert [(v.path, v.reason, v.message) for v in violations] == [
        (
            f"spec.tasks[0].template.spec.{field}",
            reason,
            f"spec.task[0].template.spec.{field}: {text}",
        )
        for field, reason, text in expected
    ]


def test_each_bad_quantity_is_its_own_violation_when_resources_are_invalid() -> None:
    container = fake_container(
        resources={
            "requests": {"cpu": "lots", "memory": "-1Gi", "nvidia.com/gpu": "2"},
            "limits": {"cpu": "1x", "nvidia.com/gpu": "1"},
        }
    )
    job = build_job(build_task(pod_spec={"containers": [container]}))

    violations = validate(job, {})

    prefix = "spec.tasks[0].template.spec.containers[0].resources"
    assert [(v.path, v.reason) for v in violations] == [
        (f"{prefix}.requests.cpu", "InvalidQuantity"),
        (f"{prefix}.requests.memory", "NegativeQuantity"),
        (f"{prefix}.limits.cpu", "InvalidQuantity"),
        (f"{prefix}.requests.nvidia.com/gpu", "RequestExceedsLimit"),
    ]
    assert violations[1].message == (
        "spec.task[0].template.spec.containers[0].resources.requests.memory: "
        'Invalid value: "-1Gi": must be greater than or equal to 0'
    )
    assert violations[3].message.endswith(
        'Invalid value: "2": must be less than or equal to nvidia.com/gpu limit of 1'
    )


def test_topology_policy_is_checked_per_container_when_set() -> None:
    """T9 through ``validate``: a Guaranteed pod with 1.5 CPUs is refused."""
    resources = {
        "requests": {"cpu": "1500m", "memory": "1Gi"},
        "limits": {"cpu": "1500m", "memory": "1Gi"},
    }
    task = build_task(
        topologyPolicy="single-numa-node",
        pod_spec={"containers": [fake_container(resources=resources)]},
    )

    violation = only(validate(build_job(task), {}))

    assert violation.reason == "NonIntegerCpuRequest"
    assert violation.message == "the cpu request isn't an integer in spec.task[0] container[0]."


# --- Volcano's admit_job.go job rows (J1–J10) -----------------------------------------------------


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (
            QueueState.CLOSED,
            "can only submit job to queue with state `Open`, queue `q` status is `Closed`",
        ),
        (
            QueueState.CLOSING,
            "can only submit job to queue with state `Open`, queue `q` status is `Closing`",
        ),
    ],
    ids=["closed", "closing"],
)
def test_queue_must_be_open_when_jobs_are_submitted(state: QueueState, message: str) -> None:
    """J7."""
    violation = only(
        validate(build_job(build_task(), queue="q"), {"q": build_queue("q", state=state)})
    )

    assert (violation.path, violation.reason, violation.message) == (
        "spec.queue",
        "QueueNotOpen",
        message,
    )


def test_default_queue_exists_when_no_queue_is_declared() -> None:
    """docs/design.md#every-violation: ``default`` exists from the start; the queue defaults to it
    (Volcano's mutate_job.go)."""
    assert validate(build_job(build_task(), queue=""), {}) == ()


def test_declared_default_queue_is_used_when_closed() -> None:
    closed = {"default": build_queue("default", state=QueueState.CLOSED)}

    assert reasons(validate(build_job(build_task()), closed)) == ["QueueNotOpen"]


def test_unknown_queue_is_named_when_not_declared() -> None:
    """J6, in Kubernetes' lister wording."""
    violation = only(validate(build_job(build_task(), queue="gpu"), {}))

    assert (
        violation.message == 'unable to find job queue: queue.scheduling.volcano.sh "gpu" not found'
    )


def test_parent_queue_counts_children_when_jobs_target_it() -> None:
    """J9."""
    queues = {
        "eng": build_queue("eng"),
        "eng-a": build_queue("eng-a", parent="eng"),
        "eng-b": build_queue("eng-b", parent="eng"),
    }

    violation = only(validate(build_job(build_task(), queue="eng"), queues))

    assert violation.message == "can only submit job to leaf queue, queue `eng` has 2 child queues"


def test_every_unknown_plugin_is_reported_when_several_are_named() -> None:
    """J4: one violation per unknown plugin; ``svc``/``ssh`` added by mutation are known."""
    job = build_job(
        build_task("master"), build_task("worker"), plugins={"zz": [], "mpi": [], "aa": []}
    )

    assert [v.message for v in validate(job, {})] == [
        "unable to find job plugin: aa",
        "unable to find job plugin: zz",
    ]


def test_root_queue_is_refused_when_jobs_target_it() -> None:
    """J8: ``root`` always exists in Volcano, so it is refused even when undeclared."""
    violation = only(validate(build_job(build_task(), queue="root"), {}))

    assert (violation.path, violation.reason, violation.message) == (
        "spec.queue",
        "RootQueue",
        "can not submit job to root queue",
    )


def test_volume_claim_name_must_be_a_dns_subdomain_when_given() -> None:
    """J5: ``ValidatePersistentVolumeName``."""
    volumes = [{"mountPath": "/d", "volumeClaimName": "My_PVC"}]

    violation = only(validate(build_job(build_task(), volumes=volumes), {}))

    assert (violation.path, violation.reason) == (
        "spec.volumes[0].volumeClaimName",
        "InvalidVolumeClaimName",
    )
    assert violation.message.startswith(
        "invalid VolumeClaimName My_PVC : [a lowercase RFC 1123 subdomain must consist of"
    )


def test_conflicting_volume_claims_are_refused_when_both_are_given() -> None:
    """J5: claim name and claim together."""
    volumes = [
        {"mountPath": "/d", "volumeClaimName": "pvc", "volumeClaim": {"accessModes": ["RWO"]}}
    ]

    violation = only(validate(build_job(build_task(), volumes=volumes), {}))

    assert violation.reason == "ConflictingVolumeClaim"
    assert violation.message.startswith("conflict: If you want to use an existing PVC")


# --- B1.3 partition policy and network topology (HEAD) --------------------------------------


PARTITION_CASES = [
    (9, None, {"totalPartitions": 0, "partitionSize": 3}, "InvalidTotalPartitions",
     "'TotalPartitions' must be greater than 0"),
    (9, None, {"totalPartitions": 3, "partitionSize": 0}, "InvalidPartitionSize",
     "'PartitionSize' must be greater than 0"),
    (8, None, {"totalPartitions": 3, "partitionSize": 3}, "ReplicasNotPartitioned",
     "'Replicas' are not equal to TotalPartitions*PartitionSize"),
    (9, 5, {"totalPartitions": 3, "partitionSize": 3, "minPartitions": 2},
     "MinAvailableNotPartitioned", "'MinAvailable' is not equal to MinPartitions*PartitionSize"),
    (9, None, {"totalPartitions": 3, "partitionSize": 3, "minPartitions": 4},
     "InvalidMinPartitions", "'MinPartitions' must be between 0 and TotalPartitions (3)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("replicas", "min_available", "partition", "reason", "text"),
    PARTITION_CASES,
    ids=["total", "size", "replicas", "min-available", "min-partitions"],
)
def test_partition_policy_is_consistent_when_given(
    replicas: int, min_available: int | None, partition: dict[str, int], reason: str, text: str
) -> None:
    """Volcano's admit_job.go: first failing check of HEAD ``validateJobCreate``, plus minPartitions
    bounds."""
    task = build_task(replicas=replicas, min_available=min_available, partitionPolicy=partition)
    job = build_job(task, name="j", min_available=min_available or 0)

    violations = validate(job, {})

    assert reason in reasons(violations)
    assert f"{text} in task: task-1, job: j" in volcano_message(violations)


def test_network_topology_tiers_exclude_each_other_when_both_set() -> None:
    job = build_job(
        build_task(), networkTopology={"highestTierAllowed": 1, "highestTierName": "rack"}
    )

    assert only(validate(job, {})).message == (
        "must not specify 'highestTierAllowed' and 'highestTierName' "
        "in networkTopology simultaneously"
    )


# --- docs/design.md#minavailable ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job_min", "replicas", "allowed"),
    [(5, (2, 3), True), (6, (2, 3), False)],
    ids=["within-replicas", "above-replicas"],
)
def test_job_minimum_without_task_minimums_is_accepted_iff_within_replicas(
    job_min: int, replicas: tuple[int, int], allowed: bool
) -> None:
    """docs/design.md#minavailable row 4: several tasks, none with a minimum → accept iff job min ≤
    Σ replicas."""
    job = build_job(
        *(build_task(f"t{i}", r) for i, r in enumerate(replicas)), min_available=job_min
    )

    assert (validate(job, {}) == ()) == allowed


@pytest.mark.parametrize(
    ("job_min", "tasks"),
    [(4, ((2, 1), (3, None))), (3, ((4, 2), (3, 1))), (6, ((6, None), (2, 0)))],
    ids=["unset-counted-as-replicas", "all-set", "zero-task-minimum"],
)
def test_job_minimum_equal_to_task_minimums_is_accepted(
    job_min: int, tasks: tuple[tuple[int, int | None], ...]
) -> None:
    """docs/design.md#minavailable row 5 accepted: job min = Σ task mins, unset ones counted as
    replicas."""
    job = build_job(
        *(build_task(f"t{i}", r, min_available=m) for i, (r, m) in enumerate(tasks)),
        min_available=job_min,
    )

    assert validate(job, {}) == ()


def test_job_minimum_different_from_task_minimums_is_refused_with_both_numbers() -> None:
    """docs/design.md#minavailable row 5 refused (volcano-sh/volcano#1755 and #2895: task minimums
    silently ignored)."""
    job = build_job(
        build_task("master", 1, min_available=1),
        build_task("worker", 4, min_available=2),
        build_task("ps", 2),
        min_available=3,
    )

    violation = only(validate(job, {}))

    assert violation == Violation(
        path="spec.minAvailable",
        reason="MinAvailableMismatch",
        message=(
            "job 'minAvailable' is 3 but the tasks' minimums add up to 5 "
            "(master 1, worker 2, ps 2 (replicas; minAvailable unset)); when they differ "
            "Volcano silently ignores the task minimums. Set spec.minAvailable to 5 (or remove "
            "it: it then defaults to the sum), "
            "or change the tasks' minAvailable so they add up to 3"
        ),
    )


def test_single_task_takes_the_job_minimum_when_it_has_none() -> None:
    """docs/design.md#minavailable row 3: accepted, the task's minimum is the job's (not its
    replicas)."""
    assert validate(build_job(build_task(replicas=5), min_available=2), {}) == ()


def test_partition_minimum_counts_as_a_task_minimum_when_job_minimum_differs() -> None:
    """A partition policy with minPartitions declares a task minimum (HEAD mutate)."""
    partition = {"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2}
    job = build_job(
        build_task("a", 6, partitionPolicy=partition), build_task("b", 2), min_available=3
    )

    assert reasons(validate(job, {})) == ["MinAvailableMismatch"]


# --- Volcano's validate/util.go lifecycle policies ------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        "*",
        "PodFailed",
        "PodEvicted",
        "PodPending",
        "Unknown",
        "TaskCompleted",
        "TaskFailed",
        "JobUpdated",
    ],
)
def test_policy_event_is_accepted_when_externally_allowed(event: str) -> None:
    assert (
        validate(build_job(build_task(), policies=[{"event": event, "action": "RestartJob"}]), {})
        == ()
    )


@pytest.mark.parametrize("event", ["OutOfSync", "CommandIssued", "PodRunning"])
def test_policy_event_is_refused_when_internal(event: str) -> None:
    violation = only(
        validate(build_job(build_task(), policies=[{"event": event, "action": "AbortJob"}]), {})
    )

    assert violation.path == "spec.policies[0].event"
    assert violation.message == (
        f'spec.policies[0].event: Invalid value: "{event}": invalid policy event; valid events are '
        "[* JobUpdated PodEvicted PodFailed PodPending TaskCompleted TaskFailed Unknown]"
    )


@pytest.mark.parametrize(
    "action",
    [
        "AbortJob",
        "RestartJob",
        "RestartTask",
        "RestartPod",
        "RestartPartition",
        "TerminateJob",
        "CompleteJob",
        "ResumeJob",
    ],
)
def test_policy_action_is_accepted_when_externally_allowed(action: str) -> None:
    assert (
        validate(build_job(build_task(), policies=[{"event": "PodFailed", "action": action}]), {})
        == ()
    )


@pytest.mark.parametrize(
    "action", ["SyncJob", "EnqueueJob", "SyncQueue", "OpenQueue", "CloseQueue", ""]
)
def test_policy_action_is_refused_when_internal_or_missing(action: str) -> None:
    violation = only(
        validate(build_job(build_task(), policies=[{"event": "PodFailed", "action": action}]), {})
    )

    assert violation.reason == "InvalidPolicyAction"
    assert (
        f'Invalid value: "{action}": invalid policy action; valid actions are ['
        in violation.message
    )


def test_exit_code_policy_action_is_not_validated_as_in_volcano() -> None:
    """Volcano's validate/util.go: "The action of an exit-code policy is not validated"."""
    assert (
        validate(build_job(build_task(), policies=[{"exitCode": 3, "action": "SyncJob"}]), {}) == ()
    )


def test_events_and_event_are_merged_when_a_policy_lists_both() -> None:
    """``events ∪ {event}`` de-duplicated: repeating an event inside one policy is fine."""
    policies = [
        {"events": ["PodFailed", "PodEvicted"], "event": "PodFailed", "action": "RestartJob"},
        {"event": "PodEvicted", "action": "AbortJob"},
    ]

    violation = only(validate(build_job(build_task(), policies=policies), {}))

    assert (violation.path, violation.message) == (
        "spec.policies[1].event",
        "duplicate event PodEvicted  across different policy",
    )


def test_every_policy_error_is_reported_when_a_list_has_several() -> None:
    """docs/design.md#every-violation: Volcano stops at the first policy error of a list."""
    policies = [
        {"action": "AbortJob"},
        {"event": "Nope", "action": "Nope"},
        {"exitCode": 0},
        {"exitCode": 2},
        {"exitCode": 2},
    ]

    assert reasons(validate(build_job(build_task(policies=policies)), {})) == [
        "PolicyWithoutEventOrExitCode",
        "InvalidPolicyAction",
        "InvalidPolicyEvent",
        "InvalidExitCode",
        "DuplicateExitCode",
    ]


# --- Volcano's validate/util.go with docs/design.md#every-violation: dependsOn --------------------


def test_cycle_gets_volcanos_dag_message_when_tasks_depend_on_each_other() -> None:
    job = build_job(
        build_task("a", depends_on=["c"]),
        build_task("b", depends_on=["a"]),
        build_task("c", depends_on=["b"]),
        build_task("d", depends_on=["c"]),
    )

    violation = only(validate(job, {}))

    assert violation == Violation(
        path="spec.tasks",
        reason="NotADag",
        message=(
            "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): "
            "tasks on a cycle: a, b, c"
        ),
    )


def test_self_dependency_is_its_own_violation_and_a_cycle() -> None:
    job = build_job(build_task("a", depends_on=["a"]))

    assert [(v.path, v.reason, v.message) for v in validate(job, {})] == [
        ("spec.tasks[0].dependsOn.name[0]", "SelfDependency", "task a depends on itself"),
        (
            "spec.tasks",
            "NotADag",
            "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): "
            "tasks on a cycle: a",
        ),
    ]


def test_duplicate_dependency_is_its_own_violation_when_a_name_repeats() -> None:
    """docs/design.md#every-violation: Volcano calls ``[a, a]`` "not a DAG" (in-degree 2, one
    edge)."""
    job = build_job(build_task("a"), build_task("b", depends_on=["a", "a"]))

    violation = only(validate(job, {}))

    assert (violation.path, violation.reason, violation.message) == (
        "spec.tasks[1].dependsOn.name[1]",
        "DuplicateDependency",
        "dependsOn of task b names task a more than once",
    )


def test_unknown_dependency_names_the_task_when_it_does_not_exist() -> None:
    violation = only(validate(build_job(build_task("a", depends_on=["ghost"])), {}))

    assert violation.message == "dependsOn of task a names unknown task ghost"


@pytest.mark.parametrize(
    ("iteration", "allowed"), [(None, True), ("any", True), ("all", True), ("each", False)]
)
def test_iteration_must_be_any_or_all_when_given(iteration: str | None, allowed: bool) -> None:
    job = build_job(
        build_task("a"),
        build_task("b"),
        build_task("c", depends_on=["a", "b"], iteration=iteration),
    )

    violations = validate(job, {})

    assert (violations == ()) == allowed
    if not allowed:
        assert only(violations).message == (
            "dependsOn.iteration of task c must be 'any' or 'all' (or absent), got 'each'"
        )


def test_default_task_names_are_used_when_dependencies_name_them() -> None:
    """Mutation runs first: ``default0`` is a real task name for dependsOn."""
    job = build_job(build_task(""), build_task("", depends_on=["default0"]))

    assert validate(job, {}) == ()


# --- vcbus limits and bounds ----------------------------------------------------------------


def test_replicas_above_the_limit_are_refused_when_a_task_asks_too_much() -> None:
    violation = only(validate(build_job(build_task(replicas=11)), {}, max_replicas=10))

    assert (violation.path, violation.reason, violation.message) == (
        "spec.tasks[0].replicas",
        "TooManyReplicas",
        "task task-1 asks for 11 replicas; the limit is 10 pods per task",
    )


def test_total_replicas_above_the_limit_are_refused_when_tasks_add_up_too_much() -> None:
    job = build_job(build_task("a", 6), build_task("b", 6))

    violation = only(validate(job, {}, max_replicas=10))

    assert (violation.path, violation.reason) == ("spec.tasks", "TooManyReplicas")


def test_numbers_beyond_int32_are_refused_when_submitted() -> None:
    job = build_job(build_task(replicas=2**40, maxRetry=2**31), maxRetry=2**31)

    assert [(v.path, v.reason) for v in validate(job, {}, max_replicas=2**50)] == [
        ("spec.maxRetry", "OutOfRange"),
        ("spec.tasks[0].replicas", "OutOfRange"),
        ("spec.tasks[0].maxRetry", "OutOfRange"),
    ]


def test_invalid_namespace_is_refused_when_not_a_dns_label() -> None:
    violation = only(validate(build_job(build_task(), namespace="Team_A"), {}))

    assert (violation.path, violation.reason) == ("metadata.namespace", "InvalidNamespace")


def test_every_violation_is_reported_at_once_when_a_job_has_many() -> None:
    """docs/design.md#every-violation: never stop at the first."""
    job = build_job(
        build_task("Bad_Name", replicas=-1, min_available=-2),
        build_task(
            "ok", depends_on=["nowhere"], policies=[{"event": "PodRunning", "action": "SyncJob"}]
        ),
        name="j",
        queue="missing",
        plugins={"unknown": []},
    )

    assert reasons(validate(job, {})) == [
        "NegativeReplicas",
        "NegativeTaskMinAvailable",
        "InvalidTaskName",
        "InvalidPolicyAction",
        "InvalidPolicyEvent",
        "UnknownPlugin",
        "QueueNotFound",
        "UnknownDependency",
    ]
