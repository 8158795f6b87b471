"""docs/design.md#dependent-jobs: dependent jobs are gang-scheduled stage by stage and never
deadlock."""

from __future__ import annotations

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import SchedulingCase, run_case
from vcbus.contracts.objects.pod import PodPhase

PENDING, RUNNING = PodPhase.PENDING, PodPhase.RUNNING


def test_first_stage_is_placed_when_later_stages_have_no_pods_yet() -> None:
    """volcano-sh/volcano#2944: minMember counts both stages; vcbus places stage one on its own
    minimum."""
    case = SchedulingCase(
        name="first stage",
        origin="vcbus docs/design.md#dependent-jobs",
        podgroups=[build_podgroup("dag", "ns", "default", 4, {"a": 2, "b": 2}, dependent=True)],
        pods=[
            build_pod("ns", f"dag-a-{i}", None, PENDING, {"cpu": "1"}, "dag", task="a")
            for i in range(2)
        ],
        nodes=[build_node("n1", {"cpu": "8", "pods": 110})],
        queues=[build_queue("default")],
        expect_bind_count=2,
        expect_condition={"ns/dag": "Scheduled"},
    )
    run_case(case)


def test_same_job_deadlocks_when_not_marked_dependent() -> None:
    """Volcano's behaviour without the dependent-job marker: the gang is invalid, nothing binds."""
    case = SchedulingCase(
        name="not dependent",
        origin="volcano-sh/volcano#2944",
        podgroups=[build_podgroup("dag", "ns", "default", 4, {"a": 2, "b": 2})],
        pods=[
            build_pod("ns", f"dag-a-{i}", None, PENDING, {"cpu": "1"}, "dag", task="a")
            for i in range(2)
        ],
        nodes=[build_node("n1", {"cpu": "8", "pods": 110})],
        queues=[build_queue("default")],
        expect_binds={},
    )
    run_case(case)


def test_second_stage_is_gang_scheduled_on_its_own_minimum_when_its_pods_exist() -> None:
    """Stage two (b, min 2) is placed all together once its pods exist."""
    case = SchedulingCase(
        name="second stage",
        origin="vcbus docs/design.md#dependent-jobs",
        podgroups=[build_podgroup("dag", "ns", "default", 4, {"a": 2, "b": 2}, dependent=True)],
        pods=[
            *[
                build_pod("ns", f"dag-a-{i}", "n1", RUNNING, {"cpu": "1"}, "dag", task="a")
                for i in range(2)
            ],
            *[
                build_pod("ns", f"dag-b-{i}", None, PENDING, {"cpu": "1"}, "dag", task="b")
                for i in range(3)
            ],
        ],
        nodes=[
            build_node("n1", {"cpu": "3", "pods": 110}),
            build_node("n2", {"cpu": "1", "pods": 110}),
        ],
        queues=[build_queue("default")],
        expect_bind_count=2,
    )
    run = run_case(case)
    assert {str(d.key) for d in run.result.decisions} == {"ns/dag-b-0", "ns/dag-b-1"}


def test_other_jobs_minimum_goes_first_when_a_dependent_job_is_ready() -> None:
    """docs/design.md#dependent-jobs: after its minimum, a dependent job gets no more turns this
    cycle, so the other job's minimum is placed before the dependent job's extra replicas."""
    case = SchedulingCase(
        name="no push back",
        origin="vcbus docs/design.md#dependent-jobs",
        podgroups=[
            build_podgroup("dag", "ns", "default", 1, {"a": 1}, dependent=True, priority=10),
            build_podgroup("other", "ns", "default", 2, {"w": 2}),
        ],
        pods=[
            *[
                build_pod(
                    "ns", f"dag-a-{i}", None, PENDING, {"cpu": "1"}, "dag", task="a", priority=10
                )
                for i in range(3)
            ],
            *[
                build_pod("ns", f"other-w-{i}", None, PENDING, {"cpu": "1"}, "other", task="w")
                for i in range(2)
            ],
        ],
        nodes=[build_node("n1", {"cpu": "3", "pods": 110})],
        queues=[build_queue("default")],
        expect_binds={"ns/dag-a-0": "n1", "ns/other-w-0": "n1", "ns/other-w-1": "n1"},
    )
    run_case(case)
