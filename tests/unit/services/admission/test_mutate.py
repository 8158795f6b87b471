"""Mutation: Volcano's defaults (mutate_job.go) and the minAvailable table of
docs/design.md#minavailable."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.unit.services.admission.builders import build_job, build_task
from vcbus.contracts.objects.job import ANNOTATION_DEPENDENT_JOB
from vcbus.services.admission.mutate import mutate


def test_queue_scheduler_and_max_retry_are_defaulted_when_unset() -> None:
    job = build_job(build_task(), queue="")

    spec = mutate(job).spec

    assert (spec.queue, spec.scheduler_name, spec.max_retry) == ("default", "volcano", 3)


def test_user_values_are_kept_when_queue_scheduler_and_max_retry_are_set() -> None:
    job = build_job(build_task(), queue="q1", schedulerName="other", maxRetry=5)

    spec = mutate(job).spec

    assert (spec.queue, spec.scheduler_name, spec.max_retry) == ("q1", "other", 5)


def test_negative_max_retry_is_left_for_validation_when_submitted() -> None:
    assert mutate(build_job(build_task(), maxRetry=-1)).spec.max_retry == -1


def test_tasks_get_default_names_and_max_retry_when_unset() -> None:
    """Port of volcano ``mutate_job_test.go`` ``TestCreatePatchExecution``.

    "patch default task name": two unnamed tasks become ``default0`` and ``default1``,
    each with ``maxRetry`` 3 (``defaultMaxRetry``).
    """
    job = build_job(build_task(name=""), build_task(name=""), min_available=1)

    tasks = mutate(job).spec.tasks

    assert [(task.name, task.max_retry) for task in tasks] == [("default0", 3), ("default1", 3)]


def test_dns_policy_is_cluster_first_with_host_net_when_host_network_has_none() -> None:
    pod_spec = {"hostNetwork": True, "containers": [{"name": "c", "image": "i"}]}
    job = build_job(build_task(pod_spec=pod_spec))

    template_spec = mutate(job).spec.tasks[0].template.spec

    assert template_spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "dnsPolicy" not in job.spec.tasks[0].template.spec


def test_dns_policy_is_kept_when_host_network_sets_one() -> None:
    pod_spec = {"hostNetwork": True, "dnsPolicy": "Default", "containers": []}

    template_spec = mutate(build_job(build_task(pod_spec=pod_spec))).spec.tasks[0].template.spec

    assert template_spec["dnsPolicy"] == "Default"


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ({"tensorflow": []}, {"tensorflow": (), "svc": ()}),
        ({"pytorch": ["--port=23456"]}, {"pytorch": ("--port=23456",), "svc": ()}),
        ({"ray": []}, {"ray": (), "svc": ()}),
        ({"mpi": []}, {"mpi": (), "svc": (), "ssh": ()}),
        ({"mpi": [], "svc": ["--x"]}, {"mpi": (), "svc": ("--x",), "ssh": ()}),
        ({"env": []}, {"env": ()}),
    ],
    ids=["tensorflow", "pytorch", "ray", "mpi", "mpi-with-svc", "env"],
)
def test_svc_and_ssh_plugins_are_added_when_frameworks_need_them(
    plugins: dict[str, list[str]], expected: dict[str, tuple[str, ...]]
) -> None:
    job = build_job(build_task("master"), build_task("worker"), plugins=plugins)

    assert mutate(job).spec.plugins == expected


def test_dependent_job_annotation_is_added_when_a_task_has_depends_on() -> None:
    job = build_job(build_task("a"), build_task("b", depends_on=["a"]))

    assert mutate(job).metadata.annotations == {ANNOTATION_DEPENDENT_JOB: "true"}


def test_no_annotation_is_added_when_no_task_has_depends_on() -> None:
    assert mutate(build_job(build_task())).metadata.annotations == {}


@dataclass(frozen=True)
class MinCase:
    """One row of docs/design.md#minavailable's table: submitted minimums → mutated minimums."""

    name: str
    job_min: int
    tasks: tuple[tuple[int, int | None], ...]  # (replicas, minAvailable)
    expected_job_min: int
    expected_task_mins: tuple[int | None, ...]


A1_TABLE = [
    MinCase("row1-all-unset", 0, ((2, None), (3, None)), 5, (2, 3)),
    MinCase("row2-task-mins-set", 0, ((2, 1), (3, None)), 4, (1, 3)),
    MinCase("row2-all-task-mins-set", 0, ((4, 2), (3, 1)), 3, (2, 1)),
    MinCase("row3-one-task", 2, ((5, None),), 2, (2,)),
    MinCase("row4-several-tasks-none-set", 3, ((2, None), (3, None)), 3, (None, None)),
    MinCase("row5-some-task-mins-set", 4, ((2, 1), (3, None)), 4, (1, 3)),
]


@pytest.mark.parametrize("case", A1_TABLE, ids=lambda case: case.name)
def test_min_available_follows_spec_a1_when_mutated(case: MinCase) -> None:
    """docs/design.md#minavailable; row 1 and row 2 are Volcano's e2e examples (Volcano's
    mutate_job.go).

    ``test/e2e/admission/job_mutate_test.go``: tasks r=2, r=3 → job minAvailable 5;
    tasks (r=2, min=1), (r=3) → 4. Rows 3 and 4 change Volcano's outcome: Volcano fills
    every unset task minimum with its replicas, so row 4's tasks would get 2 and 3.
    """
    tasks = [
        build_task(f"t{index}", replicas, min_available=minimum)
        for index, (replicas, minimum) in enumerate(case.tasks)
    ]

    spec = mutate(build_job(*tasks, min_available=case.job_min)).spec

    assert spec.min_available == case.expected_job_min
    assert tuple(task.min_available for task in spec.tasks) == case.expected_task_mins


@pytest.mark.parametrize(
    ("partition", "replicas", "expected"),
    [
        ({"totalPartitions": 3, "partitionSize": 3, "minPartitions": 2}, 9, 6),
        ({"totalPartitions": 2, "partitionSize": 2}, 4, 4),
    ],
    ids=["min-partitions", "no-min-partitions"],
)
def test_partition_policy_sets_task_min_available_when_unset(
    partition: dict[str, int], replicas: int, expected: int
) -> None:
    """Port of volcano HEAD ``mutate_job_test.go`` partition cases (Volcano's mutate_job.go).

    r=9, total 3, min 2, size 3 → task minAvailable 6; without minPartitions, r=4 → 4.
    """
    job = build_job(build_task(replicas=replicas, partitionPolicy=partition))

    spec = mutate(job).spec

    assert spec.tasks[0].min_available == expected
    assert spec.min_available == expected


def test_submitted_job_is_unchanged_when_mutated() -> None:
    job = build_job(build_task(name="", replicas=2), queue="")

    mutate(job)

    assert (job.spec.queue, job.spec.tasks[0].name, job.spec.tasks[0].min_available) == (
        "",
        "",
        None,
    )
