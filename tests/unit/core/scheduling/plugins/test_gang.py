"""Gang conditions at session close: Volcano's gang tests, ported, with A8 reasons."""

from __future__ import annotations

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import SchedulingCase, go_plugin, run_case, tier
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.framework.conf import Kind

GANG_TEST = "volcano@781f4608 pkg/scheduler/plugins/gang/gang_test.go"
GANG_TIER = (tier(go_plugin("gang", Kind.JOB_READY, Kind.JOB_PIPELINED)),)
R1 = {"cpu": "1", "memory": "1G"}
N1 = build_node("n1", {"cpu": "10", "memory": "10G", "pods": 10})


def _pods(node: str | None, phase: PodPhase) -> list:  # type: ignore[type-arg]
    return [build_pod("c1", f"p{i}", node, phase, R1, "pg1") for i in (1, 2)]


CASES = [
    SchedulingCase(
        name="inqueue job waiting for gang should not set unschedulable",
        origin=f"{GANG_TEST} TestOnSessionCloseConditions/inqueue job waiting for gang should "
        "not set unschedulable",
        podgroups=[build_podgroup("pg1", "c1", "c1", 2)],
        pods=_pods(None, PodPhase.PENDING),
        nodes=[N1],
        queues=[build_queue("c1")],
        tiers=GANG_TIER,
        actions=(),
        expect_condition={"c1/pg1": None},
    ),
    SchedulingCase(
        name="inqueue job with fit errors should set unschedulable",
        origin=f"{GANG_TEST} TestOnSessionCloseConditions/inqueue job with fit errors should set "
        "unschedulable",
        podgroups=[build_podgroup("pg1", "c1", "c1", 2)],
        pods=_pods(None, PodPhase.PENDING),
        nodes=[build_node("n1", {"cpu": "1", "memory": "10G", "pods": 10})],
        queues=[build_queue("c1")],
        tiers=GANG_TIER,
        actions=("allocate",),
        expect_condition={"c1/pg1": "GangUnschedulable"},
        note=(
            "Volcano injects a fit error by hand; here allocate produces it (the node holds one "
            "of the two pods). The reason is A8's GangUnschedulable, not NotEnoughResources."
        ),
    ),
    SchedulingCase(
        name="pending job gets no condition from the allocator",
        origin=f"{GANG_TEST} TestOnSessionCloseConditions/pending job should set unschedulable",
        podgroups=[build_podgroup("pg1", "c1", "c1", 2, phase=PodGroupPhase.PENDING)],
        pods=_pods(None, PodPhase.PENDING),
        nodes=[N1],
        queues=[build_queue("c1")],
        tiers=GANG_TIER,
        actions=(),
        expect_condition={"c1/pg1": None},
        note=(
            "A8: Volcano marks a Pending PodGroup Unschedulable here; in vcbus the reasons of "
            "Pending PodGroups belong to the enqueue stage (QueueClosed, ClusterOverused …)."
        ),
    ),
    SchedulingCase(
        name="ready job should set scheduled",
        origin=f"{GANG_TEST} TestOnSessionCloseConditions/ready job should set scheduled",
        podgroups=[build_podgroup("pg1", "c1", "c1", 2)],
        pods=_pods("n1", PodPhase.RUNNING),
        nodes=[N1],
        queues=[build_queue("c1")],
        tiers=GANG_TIER,
        actions=(),
        expect_condition={"c1/pg1": "Scheduled"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_conditions_match_volcano_when_porting_gang_tests(case: SchedulingCase) -> None:
    run_case(case)


def test_condition_message_names_the_gang_count_and_fit_errors_when_unschedulable() -> None:
    run = run_case(CASES[1])
    [condition] = run.session.job_conditions[run.session.jobs["c1/pg1"].key]  # type: ignore[index]
    assert condition.type == "Unschedulable"
    assert condition.message == "gang 0/2 ready; 1 node Insufficient cpu"


def test_invalid_job_is_not_allocated_when_pods_are_fewer_than_min_member() -> None:
    """Gang validity: one pod of a three-pod gang cannot be placed alone (NotEnoughTasks)."""
    case = SchedulingCase(
        name="not enough tasks",
        origin="vcbus",
        podgroups=[build_podgroup("pg1", "c1", "c1", 3)],
        pods=[build_pod("c1", "p1", None, PodPhase.PENDING, R1, "pg1")],
        nodes=[N1],
        queues=[build_queue("c1")],
        expect_binds={},
    )
    run = run_case(case)
    [explanation] = run.result.explanations
    assert explanation.reason == "NotEnoughTasks"
    assert explanation.message == "Not enough valid tasks for gang-scheduling, valid: 1, min: 3"
