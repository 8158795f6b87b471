"""JobInfo counters and readiness: Volcano's job_info tests, ported, and the A4/A5 rules."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from vcbus.contracts.keys import JobKey, PodKey, job_key
from vcbus.contracts.objects.pod import Pod
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.core.scheduling.fit_errors import (
    NODE_POD_NUMBER_EXCEEDED,
    NODE_RESOURCE_FIT_FAILED,
    FitErrors,
)
from vcbus.core.scheduling.model import JobInfo, Resource, TaskInfo, TaskStatus

JOB_INFO_TEST = "volcano@06ed9f98 pkg/scheduler/api/job_info_test.go"


def task(
    uid: str,
    status: TaskStatus,
    request: dict[str, float] | None = None,
    *,
    role: str = "",
    node: str | None = None,
    index: int = 0,
) -> TaskInfo:
    """A task as Volcano's ``newTaskFunc`` builds it (uid = name)."""
    resreq = Resource(request or {})
    pod = Pod(
        name=uid, namespace="ns", job=JobKey("ns/job"), task=role, index=index, podgroup="job"
    )
    return TaskInfo(
        uid=uid,
        key=PodKey(f"ns/{uid}"),
        name=uid,
        namespace="ns",
        job=JobKey("ns/job"),
        role=role,
        index=index,
        priority=1,
        resreq=resreq,
        status=status,
        node_name=node,
        pod=pod,
        best_effort=resreq.is_empty(),
    )


def job(
    min_available: int,
    tasks: list[TaskInfo],
    min_task: dict[str, int] | None = None,
    *,
    dependent: bool = False,
) -> JobInfo:
    """A job of ``tasks`` (``NewJobInfo`` then ``MinAvailable``)."""
    info = JobInfo(
        uid="job",
        key=job_key("ns", "job"),
        name="job",
        namespace="ns",
        queue="default",
        priority=0,
        min_available=min_available,
        podgroup=PodGroup(name="job", namespace="ns", job=job_key("ns", "job")),
        phase=PodGroupPhase.INQUEUE,
        task_min_available=dict(min_task or {}),
        dependent=dependent,
    )
    for t in tasks:
        info.add_task_info(t)
    if dependent:
        present = set(info.roles())
        info.wait_create = sum(
            m for r, m in info.task_min_available.items() if m > 0 and r not in present
        )
    return info


@dataclass(frozen=True)
class JobInfoCase:
    name: str
    origin: str
    min_available: int
    tasks: list[TaskInfo]
    pending_best_effort: int
    ready: bool
    pipelined: bool
    starving: bool


CPU_100M = {"cpu": 100.0}


def _mixed() -> list[TaskInfo]:
    return [
        task("pending-besteffort-task-1", TaskStatus.PENDING),
        task("pipelined-besteffort-task-1", TaskStatus.PIPELINED),
        task("running-besteffort-task-1", TaskStatus.RUNNING),
        task("pending-unbesteffort-task-1", TaskStatus.PENDING, CPU_100M),
        task("pipelined-unbesteffort-task-1", TaskStatus.PIPELINED, CPU_100M),
        task("running-unbesteffort-task-1", TaskStatus.RUNNING, CPU_100M),
    ]


JOB_INFO_CASES = [
    JobInfoCase(
        "starving job",
        f"{JOB_INFO_TEST} TestJobInfo/starving job",
        5,
        _mixed(),
        1,
        ready=False,
        pipelined=True,
        starving=True,
    ),
    JobInfoCase(
        "ready job",
        f"{JOB_INFO_TEST} TestJobInfo/ready job",
        3,
        _mixed(),
        1,
        ready=True,
        pipelined=True,
        starving=False,
    ),
]


@pytest.mark.parametrize("case", JOB_INFO_CASES, ids=lambda c: c.name)
def test_readiness_counters_match_volcano_when_porting_test_job_info(case: JobInfoCase) -> None:
    info = job(case.min_available, case.tasks)
    assert info.pending_best_effort_task_num() == case.pending_best_effort
    assert info.is_ready() is case.ready
    assert info.is_pipelined() is case.pipelined
    assert info.is_starving() is case.starving


def test_allocated_and_total_request_add_up_when_adding_tasks() -> None:
    """volcano job_info_test.go TestAddTaskInfo/add 1 pending owner pod, 1 running owner pod.

    Volcano's expected resources also hold ``pods: 3``/``pods: 4``; vcbus keeps the pod
    count out of resources (B3.11).
    """
    tasks = [
        task("p1", TaskStatus.PENDING, {"cpu": 1000, "memory": 1e9}),
        task("p2", TaskStatus.RUNNING, {"cpu": 2000, "memory": 2e9}, node="n1"),
        task("p3", TaskStatus.BOUND, {"cpu": 1000, "memory": 1e9}, node="n1"),
        task("p4", TaskStatus.BOUND, {"cpu": 1000, "memory": 1e9}, node="n1"),
    ]
    info = job(0, tasks)
    assert info.allocated == Resource({"cpu": 4000, "memory": 4e9})
    assert info.total_request == Resource({"cpu": 5000, "memory": 5e9})
    assert set(info.tasks_by_status[TaskStatus.RUNNING]) == {"p2"}
    assert set(info.tasks_by_status[TaskStatus.PENDING]) == {"p1"}
    assert set(info.tasks_by_status[TaskStatus.BOUND]) == {"p3", "p4"}


@pytest.mark.parametrize(
    ("name", "statuses", "removed", "allocated", "total"),
    [
        (
            "add 1 pending owner pod, 2 running owner pod, remove 1 running owner pod",
            [TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.RUNNING],
            1,
            3000,
            4000,
        ),
        (
            "add 2 pending owner pod, 1 running owner pod, remove 1 pending owner pod",
            [TaskStatus.PENDING, TaskStatus.BOUND, TaskStatus.RUNNING],
            1,
            3000,
            4000,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_counters_drop_the_task_when_deleting_one(
    name: str, statuses: list[TaskStatus], removed: int, allocated: int, total: int
) -> None:
    """volcano job_info_test.go TestDeleteTaskInfo (p1 1 cpu, p2 2 cpu, p3 3 cpu; p2 removed)."""
    tasks = [
        task(f"p{i + 1}", status, {"cpu": 1000.0 * (i + 1)}, node=None if i == 0 else "n1")
        for i, status in enumerate(statuses)
    ]
    info = job(0, tasks)
    info.delete_task_info(tasks[removed])
    assert info.allocated.amount("cpu") == allocated, name
    assert info.total_request.amount("cpu") == total
    assert "p2" not in info.tasks


def test_fit_error_counts_schedulable_pending_tasks_when_they_were_placed_then_discarded() -> None:
    """volcano job_info_test.go TestTaskSchedulingReason/task3 ~ 5 are schedulable."""
    tasks = [task(f"task-{i}", TaskStatus.PENDING, {"cpu": 1000}) for i in range(1, 7)]
    info = job(6, tasks)
    for i, node in ((3, "node1"), (4, "node2"), (5, "node3")):
        info.tasks[f"task-{i}"].last_transaction = (TaskStatus.ALLOCATED, node)
    errors = FitErrors(total=3)
    errors.add(NODE_POD_NUMBER_EXCEEDED, 1)
    errors.add(NODE_RESOURCE_FIT_FAILED, 2)
    info.nodes_fit_errors["task-6"] = errors
    origin = (
        ". Origin reason is task-6: 0/3 nodes are unavailable: 1 node(s) pod number exceeded, "
        "2 node(s) resource fit failed."
    )
    summary = (
        "pod group is not ready, 6 Pending, 6 minAvailable; Pending: 3 Schedulable, "
        "3 Unschedulable" + origin
    )
    info.job_fit_errors = ""
    assert info.fit_error() == summary
    info.job_fit_errors = info.fit_error()
    assert info.task_scheduling_reason("task-1")[1] == info.job_fit_errors
    assert info.task_scheduling_reason("task-3")[1] == (
        "Pod ns/task-3 can possibly be assigned to node1, once minAvailable is satisfied"
    )
    assert info.task_scheduling_reason("task-6")[1] == (
        "0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 node(s) resource fit failed."
    )


def test_releasing_scheduled_count_excludes_tasks_when_they_have_no_node() -> None:
    """volcano job_info_test.go TestReleasingScheduledTaskNum."""
    info = job(
        0,
        [
            task("scheduled-1", TaskStatus.RELEASING, node="node-1"),
            task("unscheduled", TaskStatus.RELEASING),
            task("scheduled-2", TaskStatus.RELEASING, node="node-2"),
            task("running", TaskStatus.RUNNING, node="node-3"),
        ],
    )
    assert info.releasing_scheduled_task_num() == 2


def test_scheduled_count_includes_finished_tasks_when_counting() -> None:
    """volcano job_info_test.go TestScheduledTaskNum."""
    info = job(
        0,
        [
            task("running", TaskStatus.RUNNING),
            task("bound", TaskStatus.BOUND),
            task("failed", TaskStatus.FAILED),
            task("succeeded", TaskStatus.SUCCEEDED),
            task("pending", TaskStatus.PENDING),
            task("releasing", TaskStatus.RELEASING),
        ],
    )
    assert info.scheduled_task_num() == 4


@pytest.mark.parametrize(
    ("name", "minimums", "total"),
    [
        (
            "task member changed from single to multiple roles",
            {"master": 1, "worker": 2, "gpu": 1},
            4,
        ),
        ("task member decreased", {"master": 1, "worker": 2}, 3),
        ("task member increased", {"master": 2, "worker": 5, "gpu": 3}, 10),
        ("task member replaced completely", {"new-master": 1, "new-worker": 3}, 4),
        ("task member changed to empty", {}, 0),
    ],
)
def test_task_minimum_total_is_the_sum_when_min_task_member_changes(
    name: str, minimums: dict[str, int], total: int
) -> None:
    """volcano job_info_test.go TestParseMinMemberInfoChanged (the final state of each case)."""
    assert job(0, [], minimums).task_min_available_total == total, name


# --- docs/design.md#task-level-gang: task minimums enforced whenever they exist -------------------


def test_job_is_not_ready_when_a_task_minimum_is_unmet_even_if_job_minimum_is_smaller() -> None:
    """docs/design.md#task-level-gang: Volcano ignores task minimums when minAvailable < Σ; vcbus
    does not (volcano-sh/volcano#1755)."""
    tasks = [
        task("m0", TaskStatus.ALLOCATED, CPU_100M, role="master"),
        task("w0", TaskStatus.ALLOCATED, CPU_100M, role="worker"),
        task("w1", TaskStatus.PENDING, CPU_100M, role="worker"),
    ]
    info = job(2, tasks, {"master": 1, "worker": 2})
    assert info.is_ready()
    assert not info.check_task_ready()


def test_job_is_invalid_when_a_role_has_fewer_pods_than_its_minimum() -> None:
    info = job(1, [task("m0", TaskStatus.PENDING, CPU_100M, role="master")], {"master": 2})
    assert not info.check_task_valid()


# --- docs/design.md#dependent-jobs: dependent jobs ------------------------------------------------


def test_dependent_job_skips_roles_without_pods_when_checking_task_minimums() -> None:
    """docs/design.md#dependent-jobs: a dependent job's later stage (no pods yet) does not fail the
    task checks."""
    tasks = [task(f"a{i}", TaskStatus.ALLOCATED, CPU_100M, role="a") for i in range(2)]
    info = job(4, tasks, {"a": 2, "b": 2}, dependent=True)
    assert info.wait_create == 2
    assert info.gang_min == 2
    assert info.check_task_valid()
    assert info.check_task_ready()
    assert info.is_ready()


def test_non_dependent_job_waits_for_every_role_when_pods_are_missing() -> None:
    tasks = [task(f"a{i}", TaskStatus.ALLOCATED, CPU_100M, role="a") for i in range(2)]
    info = job(4, tasks, {"a": 2, "b": 2})
    assert not info.check_task_valid()
    assert not info.is_ready()


@dataclass(frozen=True)
class ContinueCase:
    name: str
    min_available: int
    min_task: dict[str, int]
    tasks: list[TaskInfo] = field(default_factory=list)
    failed: tuple[str, ...] = ()
    expected: bool = True


CONTINUE_CASES = [
    ContinueCase(
        "every pod needed stops",
        2,
        {},
        [task("a", TaskStatus.PENDING, CPU_100M), task("b", TaskStatus.PENDING, CPU_100M)],
        ("a",),
        expected=False,
    ),
    ContinueCase(
        "failed role below its minimum stops",
        2,
        {"master": 2, "worker": 0},
        [
            task("m0", TaskStatus.ALLOCATED, CPU_100M, role="master"),
            task("m1", TaskStatus.PENDING, CPU_100M, role="master"),
            task("w0", TaskStatus.PENDING, CPU_100M, role="worker"),
            task("w1", TaskStatus.PENDING, CPU_100M, role="worker"),
        ],
        ("m1",),
        expected=False,
    ),
    ContinueCase(
        "failed role at its minimum continues",
        2,
        {"master": 1, "worker": 1},
        [
            task("m0", TaskStatus.ALLOCATED, CPU_100M, role="master"),
            task("m1", TaskStatus.PENDING, CPU_100M, role="master"),
            task("w0", TaskStatus.PENDING, CPU_100M, role="worker"),
            task("w1", TaskStatus.PENDING, CPU_100M, role="worker"),
        ],
        ("m1",),
        expected=True,
    ),
    ContinueCase(
        "too few tasks left for the job minimum stops",
        3,
        {},
        [
            task("a0", TaskStatus.PENDING, CPU_100M, role="a"),
            task("a1", TaskStatus.PENDING, CPU_100M, role="a"),
            task("b0", TaskStatus.PENDING, CPU_100M, role="b"),
            task("b1", TaskStatus.PENDING, CPU_100M, role="b"),
        ],
        ("a0",),
        expected=False,
    ),
]


@pytest.mark.parametrize("case", CONTINUE_CASES, ids=lambda c: c.name)
def test_allocation_continues_only_when_both_gang_rules_can_still_hold(case: ContinueCase) -> None:
    """Port of ``NeedContinueAllocating`` with both rules together (module docstring)."""
    info = job(case.min_available, case.tasks, case.min_task)
    for uid in case.failed:
        info.nodes_fit_errors[uid] = FitErrors(total=1)
    assert info.need_continue_allocating() is case.expected


def test_status_update_moves_allocated_resources_when_task_is_placed() -> None:
    t = task("p", TaskStatus.PENDING, {"cpu": 500})
    info = job(1, [t])
    info.update_task_status(t, TaskStatus.ALLOCATED)
    assert info.allocated.amount("cpu") == 500
    assert info.ready_task_num() == 1
    info.update_task_status(t, TaskStatus.PENDING)
    assert info.allocated.amount("cpu") == 0
    assert info.ready_task_num() == 0


def test_adding_tasks_at_once_gives_the_same_job_as_adding_them_one_by_one() -> None:
    """``add_task_infos`` (the session's build) equals ``add_task_info`` for each task."""
    shared = {"cpu": 500.0, "memory": 1024.0**3}
    tasks = [
        task("a-0", TaskStatus.RUNNING, shared, role="a", node="n1"),
        task("a-1", TaskStatus.PENDING, shared, role="a"),
        task("b-0", TaskStatus.BOUND, {"cpu": 250.0, "nvidia.com/gpu": 1000.0}, role="b"),
        task("b-1", TaskStatus.PENDING, None, role="b"),
        task("c-0", TaskStatus.SUCCEEDED, shared, role="c", node="n2"),
        task("a-2", TaskStatus.RUNNING, shared, role="a", node="n2"),
    ]
    one_by_one = job(2, tasks, {"a": 1, "b": 1})
    at_once = job(2, [], {"a": 1, "b": 1})
    at_once.add_task_infos(tasks)

    def state(info: JobInfo) -> tuple[object, ...]:
        return (
            list(info.tasks),
            {s: list(b) for s, b in info.tasks_by_status.items()},
            info.total_request.as_dict(),
            info.allocated.as_dict(),
            info.count(*TaskStatus),
            [info.role_count(r, tuple(TaskStatus)) for r in info.roles()],
            info.ready_task_num(),
            info.valid_task_num(),
            info.pending_best_effort_task_num(),
            info.check_task_ready(),
            info.check_task_valid(),
            info.check_task_pipelined(),
        )

    assert state(at_once) == state(one_by_one)
    assert at_once.total_request.amount("memory") == 4 * 1024.0**3
    assert at_once.allocated.amount("nvidia.com/gpu") == 1000.0
