"""Backfill: best-effort pods, in queue/job/task order."""

from __future__ import annotations

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import (
    NOW,
    SchedulingCase,
    go_plugin,
    run_case,
    snapshot_of,
    tier,
)
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.actions.backfill import pick_up_pending_tasks
from vcbus.core.scheduling.framework.conf import Kind
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import PodState

BACKFILL_TEST = "volcano@07309f69 pkg/scheduler/actions/backfill/backfill_test.go"
PENDING = PodPhase.PENDING


def _pods(job: str) -> list[PodState]:
    pods = []
    for i in (1, 2, 3, 4):
        pods.append(
            build_pod("default", f"{job}-besteffort-task-{i}", None, PENDING, None, job, priority=i)
        )
        pods.append(
            build_pod(
                "default",
                f"{job}-unbesteffort-task-{i}",
                None,
                PENDING,
                {"cpu": "500m"},
                job,
                priority=i,
            )
        )
    return pods


def test_best_effort_tasks_come_in_job_then_a3_order_when_backfill_picks_them() -> None:
    """volcano backfill_test.go TestPickUpPendingTasks/test.

    Volcano expects task-4, 3, 2, 1 (priority) for pg2 then pg1. With
    docs/design.md#minimum-pods-first the pods within the task's minimum (``"": 3``; index < 3:
    task-1, task-2) come first, so vcbus gives task-2, task-1, then task-4, task-3 for each job.
    Volcano pipelines tasks 2 and 4 first; vcbus never pipelines best-effort tasks, so all are
    Pending here.
    """
    case = SchedulingCase(
        name="pick up pending tasks",
        origin=f"{BACKFILL_TEST} TestPickUpPendingTasks/test",
        podgroups=[
            build_podgroup("pg1", "default", "q1", 1, {"": 3}, priority=1),
            build_podgroup("pg2", "default", "q1", 1, {"": 3}, priority=2),
        ],
        pods=[*_pods("pg1"), *_pods("pg2")],
        queues=[build_queue("q1")],
        tiers=(
            tier(
                go_plugin("priority", Kind.PREEMPTABLE, Kind.TASK_ORDER, Kind.JOB_ORDER),
                go_plugin("drf", Kind.QUEUE_ORDER),
            ),
        ),
    )
    ssn = open_session(snapshot_of(case), case.tiers, builders=PLUGIN_BUILDERS, now=NOW)
    names = [t.name for t in pick_up_pending_tasks(ssn)]
    assert names == [
        "pg2-besteffort-task-2",
        "pg2-besteffort-task-1",
        "pg2-besteffort-task-4",
        "pg2-besteffort-task-3",
        "pg1-besteffort-task-2",
        "pg1-besteffort-task-1",
        "pg1-besteffort-task-4",
        "pg1-besteffort-task-3",
    ]


def test_best_effort_pods_are_bound_when_their_job_is_ready() -> None:
    """A gang of best-effort pods is ready as soon as it is pending (Volcano counts them)."""
    case = SchedulingCase(
        name="backfill binds",
        origin="vcbus",
        podgroups=[build_podgroup("be", "ns", "default", 2)],
        pods=[build_pod("ns", f"be-w-{i}", None, PENDING, None, "be") for i in range(2)],
        nodes=[
            build_node("n1", {"cpu": "1", "pods": 10}),
            build_node("n2", {"cpu": "1", "pods": 10}),
        ],
        queues=[build_queue("default")],
        actions=("allocate", "backfill"),
        expect_bind_count=2,
    )
    run_case(case)


def test_best_effort_pod_stays_pending_when_no_node_has_a_pod_slot() -> None:
    case = SchedulingCase(
        name="no pod slot",
        origin="vcbus",
        podgroups=[build_podgroup("be", "ns", "default", 1)],
        pods=[build_pod("ns", "be-w-0", None, PENDING, None, "be")],
        nodes=[build_node("n1", {"cpu": "1", "pods": 0})],
        queues=[build_queue("default")],
        actions=("backfill",),
        expect_binds={},
    )
    run = run_case(case)
    errors = next(iter(run.session.jobs["ns/be"].nodes_fit_errors.values()))  # type: ignore[index]
    assert errors.reasons == {"node(s) pod number exceeded": 1}
