"""Reserve: nodes locked for the target by lock mode, escalation, release
(docs/design.md#reservation, Volcano's v1.5.1 elect.go and reserve.go)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, CaseRun, SchedulingCase, plugin, run_case, tier
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.results import ReservationChange, ReservationChangeKind
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.snapshot import PodGroupState, PodState

RESERVE = "volcano@v1.5.1 pkg/scheduler/actions/reserve/reserve.go"
RESERVED_NODES_FN = "volcano@v1.5.1 pkg/scheduler/plugins/reservation/reservation.go"
TARGET = JobKey("ns/target")
ELECTED = NOW - timedelta(seconds=30)

# n3 and n1 are the idlest (3 cpu free); n2 has 2; n4 has 1; n5 is cordoned and empty.
NODES = [
    build_node("n1", {"cpu": "4", "memory": "8Gi"}),
    build_node("n2", {"cpu": "4", "memory": "8Gi"}),
    build_node("n3", {"cpu": "4", "memory": "8Gi"}),
    build_node("n4", {"cpu": "4", "memory": "8Gi"}),
    build_node("n5", {"cpu": "4", "memory": "8Gi"}, unschedulable=True),
]
BUSY = [
    build_pod("ns", "busy-w-0", "n1", PodPhase.RUNNING, {"cpu": "1"}, "busy"),
    build_pod("ns", "busy-w-1", "n2", PodPhase.RUNNING, {"cpu": "2"}, "busy"),
    build_pod("ns", "busy-w-2", "n3", PodPhase.RUNNING, {"cpu": "1"}, "busy"),
    build_pod("ns", "busy-w-3", "n4", PodPhase.RUNNING, {"cpu": "3"}, "busy"),
]
BUSY_PG = build_podgroup("busy", "ns", "default", 1, None, PodGroupPhase.RUNNING)


def _target(phase: PodGroupPhase = PodGroupPhase.INQUEUE) -> PodGroupState:
    return build_podgroup("target", "ns", "default", 2, None, phase, min_resources={"cpu": "8"})


def _target_pods(node: str | None = None) -> list[PodState]:
    phase = PodPhase.RUNNING if node else PodPhase.PENDING
    return [
        build_pod("ns", f"target-w-{i}", node, phase, {"cpu": "4"}, "target", task="w")
        for i in range(2)
    ]


def _reserve(
    *,
    locked: frozenset[str] = frozenset(),
    locked_at: timedelta | None = None,
    arguments: Arguments | None = None,
    podgroups: list[PodGroupState] | None = None,
    pods: list[PodState] | None = None,
    expect: tuple[str | None, frozenset[str]],
) -> CaseRun:
    return run_case(
        SchedulingCase(
            name="reserve",
            origin=f"{RESERVE}; {RESERVED_NODES_FN} reservedNodesFn; docs/design.md#reservation",
            podgroups=podgroups if podgroups is not None else [BUSY_PG, _target()],
            pods=pods if pods is not None else [*BUSY, *_target_pods()],
            nodes=NODES,
            queues=[build_queue("default")],
            reservation=Reservation(
                target_job=TARGET,
                locked_nodes=locked,
                elected_at=ELECTED,
                generation=2,
                locked_at=NOW - locked_at if locked_at is not None else None,
            ),
            tiers=(tier(plugin("gang"), plugin("reservation", arguments=arguments)),),
            actions=("reserve",),
            expect_reservation=expect,
        )
    )


def _only(run: CaseRun) -> ReservationChange:
    [change] = run.result.reservation_changes
    return change


def test_single_mode_locks_the_idlest_node_with_the_smaller_name_when_none_is_locked() -> None:
    change = _only(_reserve(expect=("ns/target", frozenset({"n1"}))))
    assert (change.kind, change.nodes, change.mode, change.generation) == (
        ReservationChangeKind.LOCKED,
        ("n1",),
        "single",
        2,
    )


def test_single_mode_locks_one_more_node_when_the_lock_interval_has_passed() -> None:
    _reserve(
        locked=frozenset({"n1"}),
        locked_at=timedelta(seconds=1),
        expect=("ns/target", frozenset({"n1", "n3"})),
    )


def test_single_mode_waits_when_the_lock_interval_has_not_passed() -> None:
    run = _reserve(
        locked=frozenset({"n1"}),
        locked_at=timedelta(seconds=5),
        arguments={"lock-interval": "10s"},
        expect=("ns/target", frozenset({"n1"})),
    )
    assert run.result.reservation_changes == ()


def test_single_mode_skips_cordoned_nodes_when_choosing() -> None:
    _reserve(
        locked=frozenset({"n1", "n2", "n3", "n4"}),
        locked_at=timedelta(seconds=1),
        expect=("ns/target", frozenset({"n1", "n2", "n3", "n4"})),
    )


@pytest.mark.parametrize(
    ("lock_nodes", "expected"),
    [(2, {"n1", "n3"}), ("3", {"n1", "n2", "n3"}), ("50%", {"n1", "n2", "n3"})],
    ids=["count", "count as text", "share of five nodes, rounded up"],
)
def test_multi_mode_locks_several_nodes_at_once_when_configured(
    lock_nodes: int | str, expected: set[str]
) -> None:
    change = _only(
        _reserve(
            arguments={"lock-mode": "multi", "lock-nodes": lock_nodes},
            expect=("ns/target", frozenset(expected)),
        )
    )
    assert change.mode == "multi"


IDLE_N1_N3 = [p for p in BUSY if p.node not in ("n1", "n3")]
"""n1 and n3 drained: 4 idle cpu each."""


def test_single_mode_locks_no_more_when_the_locked_nodes_hold_the_target() -> None:
    run = _reserve(
        locked=frozenset({"n1", "n3"}),
        locked_at=timedelta(seconds=5),
        pods=[*IDLE_N1_N3, *_target_pods()],
        expect=("ns/target", frozenset({"n1", "n3"})),
    )
    assert run.result.reservation_changes == ()


def test_multi_mode_stops_at_the_node_that_makes_the_target_fit() -> None:
    """docs/design.md#reservation: the fewest nodes that hold the target; n1 and n3 hold its 8 cpu
    now, so a step of four stops after them."""
    change = _only(
        _reserve(
            arguments={"lock-mode": "multi", "lock-nodes": 4},
            pods=[*IDLE_N1_N3, *_target_pods()],
            expect=("ns/target", frozenset({"n1", "n3"})),
        )
    )
    assert change.nodes == ("n1", "n3")


def test_only_nodes_the_target_could_use_are_locked() -> None:
    """n1 and n3 are the idlest, but the target's pods may only go to n2 and n4."""
    pods = [
        build_pod(
            "ns",
            f"target-w-{i}",
            None,
            PodPhase.PENDING,
            {"cpu": "4"},
            "target",
            task="w",
            selector={"pool": "b"},
        )
        for i in range(2)
    ]
    labelled = [
        build_node(n.name, {"cpu": "4", "memory": "8Gi"}, labels={"pool": "b"})
        if n.name in {"n2", "n4"}
        else n
        for n in NODES
    ]
    run_case(
        SchedulingCase(
            name="usable nodes",
            origin=f"{RESERVED_NODES_FN}; vcbus docs/design.md#reservation",
            podgroups=[BUSY_PG, _target()],
            pods=[*BUSY, *pods],
            nodes=labelled,
            queues=[build_queue("default")],
            reservation=Reservation(target_job=TARGET, elected_at=ELECTED, generation=2),
            tiers=(
                tier(plugin("gang"), plugin("reservation", arguments={"lock-mode": "cluster"})),
            ),
            actions=("reserve",),
            expect_reservation=("ns/target", frozenset({"n1", "n2", "n3", "n4", "n5"})),
        )
    )
    run_case(
        SchedulingCase(
            name="usable nodes, multi",
            origin=f"{RESERVED_NODES_FN}; vcbus docs/design.md#reservation",
            podgroups=[BUSY_PG, _target()],
            pods=[*BUSY, *pods],
            nodes=labelled,
            queues=[build_queue("default")],
            reservation=Reservation(target_job=TARGET, elected_at=ELECTED, generation=2),
            tiers=(
                tier(
                    plugin("gang"),
                    plugin("reservation", arguments={"lock-mode": "multi", "lock-nodes": 4}),
                ),
            ),
            actions=("reserve",),
            expect_reservation=("ns/target", frozenset({"n2", "n4"})),
        )
    )


def test_cluster_mode_locks_every_node_when_the_target_is_elected() -> None:
    change = _only(
        _reserve(
            arguments={"lock-mode": "cluster"},
            expect=("ns/target", frozenset({"n1", "n2", "n3", "n4", "n5"})),
        )
    )
    assert change.nodes == ("n1", "n2", "n3", "n4", "n5")


def test_lock_escalates_to_the_whole_cluster_when_the_lock_timeout_passes() -> None:
    change = _only(
        _reserve(
            locked=frozenset({"n1"}),
            locked_at=timedelta(seconds=1),
            arguments={"lock-timeout": "30s"},
            expect=("ns/target", frozenset({"n1", "n2", "n3", "n4", "n5"})),
        )
    )
    assert (change.mode, change.nodes) == ("cluster", ("n2", "n3", "n4", "n5"))
    assert "lock-timeout 30s" in change.reason


def test_lock_does_not_escalate_when_the_lock_timeout_is_ahead() -> None:
    _reserve(
        locked=frozenset({"n1"}),
        locked_at=timedelta(seconds=1),
        arguments={"lock-timeout": "31s"},
        expect=("ns/target", frozenset({"n1", "n3"})),
    )


def test_every_lock_is_released_in_one_change_when_the_target_is_ready() -> None:
    change = _only(
        _reserve(
            locked=frozenset({"n1", "n3"}),
            pods=[*BUSY, *_target_pods("n5")],
            expect=(None, frozenset()),
        )
    )
    assert (change.kind, change.job, change.nodes, change.generation) == (
        ReservationChangeKind.UNLOCKED,
        TARGET,
        ("n1", "n3"),
        2,
    )
    assert change.reason == "target job is ready"


def test_every_lock_is_released_when_the_target_is_gone() -> None:
    run = _reserve(
        locked=frozenset({"n1"}), podgroups=[BUSY_PG], pods=BUSY, expect=(None, frozenset())
    )
    assert _only(run).reason == "target job is gone"
    assert run.session.reservation.generation == 2


def test_nothing_is_locked_when_there_is_no_target() -> None:
    run = run_case(
        SchedulingCase(
            name="no target",
            origin=RESERVE,
            podgroups=[BUSY_PG, _target()],
            pods=[*BUSY, *_target_pods()],
            nodes=NODES,
            queues=[build_queue("default")],
            tiers=(tier(plugin("gang"), plugin("reservation")),),
            actions=("reserve",),
            expect_reservation=(None, ()),
        )
    )
    assert run.result.reservation_changes == ()
