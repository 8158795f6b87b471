"""Reclaim: Volcano's ``TestReclaim`` table, ported, then vcbus's rules (reclaimable queues,
commit together)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import SchedulingCase, go_plugin, plugin, run_case, tier
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.objects.queue import QueueState
from vcbus.core.scheduling.framework.conf import Kind
from vcbus.core.scheduling.framework.results import NominationChangeKind

PENDING, RUNNING = PodPhase.PENDING, PodPhase.RUNNING
R1 = {"cpu": "1", "memory": "1G"}
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
NOT_PREEMPTABLE = {"volcano.sh/preemptable": "false"}
LOW, MID, HIGH = 100, 500, 1000

RECLAIM_TEST = "volcano@v1.12.0 pkg/scheduler/actions/reclaim/reclaim_test.go"

# TestReclaim's tiers (capacity is not a vcbus plugin).
RECLAIM_TIERS = (
    tier(
        go_plugin("conformance", Kind.RECLAIMABLE),
        go_plugin("gang", Kind.RECLAIMABLE, Kind.JOB_STARVING),
        go_plugin("proportion", Kind.RECLAIMABLE, Kind.QUEUE_ORDER, Kind.PREEMPTIVE),
        go_plugin("priority", Kind.JOB_ORDER, Kind.TASK_ORDER),
    ),
)


def _node(cpu: str) -> Node:
    return build_node("n1", {"cpu": cpu, "memory": f"{cpu}Gi", "pods": 10})


VOLCANO_CASES = [
    SchedulingCase(
        name="Two Queue with one Queue overusing resource, should reclaim",
        origin=f"{RECLAIM_TEST} TestReclaim/Two Queue with one Queue overusing resource, "
        "should reclaim",
        podgroups=[
            build_podgroup("pg1", "c1", "q1", 1, priority=LOW),
            build_podgroup("pg2", "c1", "q2", 1, priority=HIGH),
        ],
        pods=[
            build_pod("c1", "preemptee1", "n1", RUNNING, R1, "pg1", annotations=NOT_PREEMPTABLE),
            build_pod("c1", "preemptee2", "n1", RUNNING, R1, "pg1", annotations=PREEMPTABLE),
            build_pod("c1", "preemptee3", "n1", RUNNING, R1, "pg1", annotations=NOT_PREEMPTABLE),
            build_pod("c1", "preemptor1", None, PENDING, R1, "pg2"),
        ],
        nodes=[_node("3")],
        queues=[build_queue("q1"), build_queue("q2")],
        tiers=RECLAIM_TIERS,
        actions=("reclaim",),
        expect_evicted=["c1/preemptee2"],
    ),
    SchedulingCase(
        name="sort reclaimees when reclaiming from overusing queue",
        origin=f"{RECLAIM_TEST} TestReclaim/sort reclaimees when reclaiming from overusing queue",
        podgroups=[
            build_podgroup("pg1", "c1", "q1", 1, priority=MID),
            build_podgroup("pg2", "c1", "q2", 1, priority=LOW),
            build_podgroup("pg3", "c1", "q3", 1, priority=HIGH),
        ],
        pods=[
            build_pod("c1", "preemptee1-1", "n1", RUNNING, R1, "pg1", annotations=PREEMPTABLE),
            build_pod("c1", "preemptee1-2", "n1", RUNNING, R1, "pg1", annotations=PREEMPTABLE),
            build_pod("c1", "preemptee2-1", "n1", RUNNING, R1, "pg2", annotations=PREEMPTABLE),
            build_pod("c1", "preemptee2-2", "n1", RUNNING, R1, "pg2", annotations=NOT_PREEMPTABLE),
            build_pod("c1", "preemptor1", None, PENDING, R1, "pg3"),
        ],
        nodes=[_node("4")],
        queues=[build_queue("q1"), build_queue("q2"), build_queue("q3")],
        tiers=RECLAIM_TIERS,
        actions=("reclaim",),
        expect_evicted=["c1/preemptee2-1"],
    ),
    SchedulingCase(
        name="sort reclaimees when reclaiming from overusing queues with different queue priority",
        origin=f"{RECLAIM_TEST} TestReclaim/sort reclaimees when reclaiming from overusing "
        "queues with different queue priority",
        podgroups=[
            build_podgroup("pg1", "c1", "q1", 1, priority=MID),
            build_podgroup("pg2", "c1", "q2", 1, priority=MID),
            build_podgroup("pg3", "c1", "q3", 1, priority=MID),
        ],
        pods=[
            build_pod("c1", "preemptee1-1", "n1", RUNNING, R1, "pg1", annotations=PREEMPTABLE),
            build_pod("c1", "preemptee1-2", "n1", RUNNING, R1, "pg1", annotations=NOT_PREEMPTABLE),
            build_pod("c1", "preemptee2-1", "n1", RUNNING, R1, "pg2", annotations=PREEMPTABLE),
            build_pod("c1", "preemptee2-2", "n1", RUNNING, R1, "pg2", annotations=NOT_PREEMPTABLE),
            build_pod("c1", "preemptor1", None, PENDING, R1, "pg3"),
        ],
        nodes=[_node("4")],
        queues=[
            build_queue("q1", priority=5),
            build_queue("q2", priority=10),
            build_queue("q3", priority=1),
        ],
        tiers=RECLAIM_TIERS,
        actions=("reclaim",),
        expect_evicted=["c1/preemptee1-1"],
    ),
    SchedulingCase(
        name="can not reclaim resources when queue is not open(proportion plugin)",
        origin=f"{RECLAIM_TEST} TestReclaim/can not reclaim resources when queue is not "
        "open(proportion plugin)",
        podgroups=[
            build_podgroup("pg1", "c1", "q1", 1, phase=PodGroupPhase.RUNNING, priority=LOW),
            build_podgroup("pg2", "c1", "q2", 1, priority=HIGH),
        ],
        pods=[
            build_pod("c1", "preemptee1", "n1", RUNNING, R1, "pg1", annotations=NOT_PREEMPTABLE),
            build_pod("c1", "preemptee2", "n1", RUNNING, R1, "pg1", annotations=PREEMPTABLE),
            build_pod("c1", "preemptee3", "n1", RUNNING, R1, "pg1", annotations=NOT_PREEMPTABLE),
            build_pod("c1", "preemptor1", None, PENDING, R1, "pg2"),
        ],
        nodes=[_node("3")],
        queues=[build_queue("q1"), build_queue("q2", state=QueueState.CLOSED)],
        tiers=RECLAIM_TIERS,
        actions=("reclaim",),
        expect_evicted=[],
    ),
]
"""Not ported: ``preemptionPolicy: Never`` (#3642; vcbus pods carry none) and the capacity
plugin's case (no capacity plugin in vcbus)."""


@pytest.mark.parametrize("case", VOLCANO_CASES, ids=lambda c: c.name)
def test_reclaim_volcano_cases(case: SchedulingCase) -> None:
    run_case(case)


FULL_TIERS = (
    tier(plugin("priority"), plugin("gang"), plugin("conformance")),
    tier(plugin("drf"), plugin("predicates"), plugin("proportion"), plugin("nodeorder")),
)


def _two_queues(*, reclaimable: bool = True, light_min: int = 2) -> SchedulingCase:
    return SchedulingCase(
        name="light queue reclaims",
        origin="vcbus preempt and reclaim",
        podgroups=[
            build_podgroup("heavy-0", "c1", "heavy", 1),
            build_podgroup("heavy-1", "c1", "heavy", 1),
            build_podgroup("light", "c1", "light", light_min),
        ],
        pods=[
            build_pod("c1", "heavy-0-w-0", "n1", RUNNING, R1, "heavy-0"),
            build_pod("c1", "heavy-0-w-1", "n1", RUNNING, R1, "heavy-0"),
            build_pod("c1", "heavy-1-w-0", "n1", RUNNING, R1, "heavy-1"),
            build_pod("c1", "heavy-1-w-1", "n1", RUNNING, R1, "heavy-1"),
            build_pod("c1", "light-w-0", None, PENDING, R1, "light"),
            build_pod("c1", "light-w-1", None, PENDING, R1, "light"),
        ],
        nodes=[_node("4")],
        queues=[build_queue("heavy", reclaimable=reclaimable), build_queue("light")],
        tiers=FULL_TIERS,
        actions=("allocate", "reclaim"),
    )


def test_a_queue_below_its_share_reclaims_from_a_reclaimable_queue_above_it() -> None:
    run = run_case(_two_queues())
    assert len(run.result.evictions) == 2
    assert {e.note.taker for e in run.result.evictions if e.note} == {"light"}
    assert {e.reason for e in run.result.evictions} == {"Reclaimed"}
    (nominated,) = run.result.nomination_changes
    assert nominated.kind is NominationChangeKind.NOMINATED


def test_a_queue_that_is_not_reclaimable_keeps_its_pods() -> None:
    run = run_case(_two_queues(reclaimable=False))
    assert run.result.evictions == ()


def test_nothing_is_evicted_when_the_reclaimers_gang_cannot_be_placed_whole() -> None:
    """light needs 3 pods but has 2: its gang can never be pipelined, so no victim goes."""
    run = run_case(_two_queues(light_min=3))
    assert run.result.evictions == ()


def _closed_queue_reclaims(*kinds: Kind) -> SchedulingCase:
    """Volcano's "queue is not open" case, with proportion's flags as given."""
    (case,) = [c for c in VOLCANO_CASES if "queue is not open" in c.name]
    tiers = (
        tier(
            go_plugin("conformance", Kind.RECLAIMABLE),
            go_plugin("gang", Kind.RECLAIMABLE, Kind.JOB_STARVING),
            go_plugin("proportion", Kind.RECLAIMABLE, Kind.QUEUE_ORDER, *kinds),
            go_plugin("priority", Kind.JOB_ORDER, Kind.TASK_ORDER),
        ),
    )
    return dataclasses.replace(case, tiers=tiers, expect_evicted=None)


def test_the_preemptive_check_is_skipped_when_the_plugin_disables_it() -> None:
    """``enablePreemptive: false``: the session skips proportion's ``Preemptive`` (volcano
    ``session_plugins.go``), so a closed queue's job reclaims; with it on, it may not."""
    checked = run_case(_closed_queue_reclaims(Kind.PREEMPTIVE))
    skipped = run_case(_closed_queue_reclaims())

    assert [e.key for e in checked.result.evictions] == []
    assert [e.key for e in skipped.result.evictions] == ["c1/preemptee2"]
