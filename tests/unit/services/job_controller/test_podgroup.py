"""PodGroup built from a job: Volcano's job_controller_actions.go worked table, minTaskMember
(docs/design.md#minavailable), priorities."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.pod import Toleration
from vcbus.contracts.objects.podgroup import PodGroup, StageTask
from vcbus.services.job_controller.podgroup import (
    min_resources,
    min_task_member,
    tasks_by_priority,
)

from .builders import T0, build_job, build_podgroup, build_task

PRIORITY_CLASSES = {"master-pri": 100, "worker-pri": 1, "high": 1000}


@dataclass(frozen=True)
class Row:
    """One row of Volcano's job_controller_actions.go worked table: job M / master min / worker min
    → minMember / cpu."""

    job_min: int
    master_min: int | None
    worker_min: int | None
    min_member: int
    cpu_milli: int

    @property
    def name(self) -> str:
        def show(value: int | None) -> str:
            return "-" if value is None else str(value)

        return f"{self.job_min}/{show(self.master_min)}/{show(self.worker_min)}"


# volcano docs/design/min-avaiable-member-resource.md and job_controller_util_test.go,
# as Volcano's job_controller_actions.go lists them: master r=2 @50m (higher priority), worker r=2
# @100m.
WORKED_TABLE = [
    Row(0, None, 1, 3, 200),
    Row(0, 1, 1, 2, 150),
    Row(3, None, 1, 3, 200),
    Row(3, 1, None, 3, 250),
    Row(3, 1, 1, 3, 200),
    Row(2, 1, 1, 2, 150),
    Row(2, None, 1, 2, 100),
    Row(2, 1, None, 2, 100),
]


def _worked_job(row: Row) -> Job:
    master = build_task(
        "master", 2, min_available=row.master_min, cpu="50m", priority_class="master-pri"
    )
    worker = build_task(
        "worker", 2, min_available=row.worker_min, cpu="100m", priority_class="worker-pri"
    )
    # Volcano's webhook sets an unset job minAvailable to Σ task minimums (replicas when unset).
    return build_job(worker, master, min_available=row.job_min or None)


@pytest.mark.parametrize("row", WORKED_TABLE, ids=lambda row: row.name)
def test_podgroup_has_min_member_and_cpu_of_worked_table_when_built_from_row(row: Row) -> None:
    """Worker is listed first in the spec: only the pod-template priority puts master first."""
    job = _worked_job(row)
    podgroup = build_podgroup(JobKey("default/job"), job, "u1", PRIORITY_CLASSES, created_at=T0)
    assert podgroup.min_member == row.min_member
    assert podgroup.min_resources["cpu"] == row.cpu_milli


def test_first_count_takes_replicas_not_minimums_when_job_minimum_below_task_total() -> None:
    """M < T: walk tasks by priority taking up to replicas each (Volcano's
    job_controller_actions.go)."""
    master = build_task("master", 3, min_available=1, cpu="1", priority_class="high")
    worker = build_task("worker", 3, min_available=3, cpu="10")
    job = build_job(master, worker, min_available=3)
    assert min_resources(job, PRIORITY_CLASSES) == {"cpu": 3000}


def test_surplus_pods_are_taken_after_minimums_when_job_minimum_exceeds_task_total() -> None:
    master = build_task("master", 3, min_available=1, cpu="1")
    worker = build_task("worker", 3, min_available=1, cpu="10", priority_class="high")
    job = build_job(master, worker, min_available=4)
    # step 1: worker 1 (10), master 1 (1); step 2: worker surplus 2 (20) → 4 pods.
    assert min_resources(job, PRIORITY_CLASSES) == {"cpu": 31000}


def test_tasks_keep_spec_order_when_priorities_are_equal() -> None:
    job = build_job(build_task("b"), build_task("a"), build_task("c", priority_class="high"))
    assert [t.name for t in tasks_by_priority(job, PRIORITY_CLASSES)] == ["c", "b", "a"]


def test_min_task_member_has_no_entries_when_no_task_has_a_minimum() -> None:
    """docs/design.md#minavailable, fourth case: only the job-level gang applies."""
    job = build_job(build_task("a", 2), build_task("b", 3), min_available=2)
    assert min_task_member(job) == {}


def test_min_task_member_counts_unset_tasks_as_replicas_when_another_task_has_a_minimum() -> None:
    job = build_job(build_task("a", 2, min_available=1), build_task("b", 3))
    assert min_task_member(job) == {"a": 1, "b": 3}


def test_podgroup_carries_name_queue_priority_and_dependent_flag_when_built() -> None:
    job = build_job(
        build_task("a"),
        build_task("b", depends_on=["a"]),
        priority_class="high",
    )
    podgroup = build_podgroup(JobKey("default/job"), job, "u1", PRIORITY_CLASSES, created_at=T0)
    assert podgroup == PodGroup(
        name="job-u1",
        namespace="default",
        job=JobKey("default/job"),
        queue="default",
        min_member=2,
        min_task_member={},
        min_resources={"cpu": 200},
        priority_class_name="high",
        priority=1000,
        annotations={"volcano.sh/dependent-job": "true"},
        dependent=True,
        creation_timestamp=T0,
        stages=(
            StageTask(name="b", replicas=1, min_available=1, requests={"cpu": 100}, priority=1000),
        ),
    )


def test_stages_describe_the_dependent_tasks_pods_when_the_job_has_depends_on() -> None:
    """Will-bind: the allocator reserves for a later stage from what its pods will ask."""
    job = build_job(
        build_task("worker", 3, min_available=2),
        build_task(
            "master",
            2,
            cpu="2",
            depends_on=["worker"],
            priority_class="master-pri",
            spec_extra={
                "nodeSelector": {"role": "master"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        ),
    )
    podgroup = build_podgroup(JobKey("default/job"), job, "u1", PRIORITY_CLASSES, created_at=T0)
    assert podgroup.stages == (
        StageTask(
            name="master",
            replicas=2,
            min_available=2,
            requests={"cpu": 2000},
            node_selector={"role": "master"},
            tolerations=(Toleration(key="gpu", operator="Exists", effect="NoSchedule"),),
            priority=100,
        ),
    )


def test_podgroup_has_no_stages_when_the_job_has_no_depends_on() -> None:
    job = build_job(build_task("a"), build_task("b"))
    podgroup = build_podgroup(JobKey("default/job"), job, "u1", PRIORITY_CLASSES, created_at=T0)
    assert podgroup.stages == ()


def test_podgroup_priority_is_zero_when_priority_class_is_unknown() -> None:
    job = build_job(build_task("a"), priority_class="nope")
    podgroup = build_podgroup(JobKey("default/job"), job, "u1", PRIORITY_CLASSES, created_at=T0)
    assert podgroup.priority == 0
    assert not podgroup.dependent
