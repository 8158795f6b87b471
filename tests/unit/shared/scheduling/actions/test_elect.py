"""Elect: which starving job becomes the reservation's target (SPEC A6, B3.12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contracts.keys import JobKey
from contracts.objects.pod import PodPhase
from contracts.objects.podgroup import PodGroupPhase
from contracts.objects.queue import Queue, QueueState
from shared.scheduling.framework.conf import Arguments
from shared.scheduling.framework.results import ReservationChangeKind
from shared.scheduling.snapshot import PodGroupState, PodState, Reservation
from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, SchedulingCase, plugin, run_case, tier

ELECT = "volcano@v1.5.1 pkg/scheduler/actions/elect/elect.go"
TARGET_FN = "volcano@v1.5.1 pkg/scheduler/plugins/reservation/reservation.go targetJobFn"
PENDING, INQUEUE = PodGroupPhase.PENDING, PodGroupPhase.INQUEUE
NODES = [build_node(f"n{i}", {"cpu": "4", "memory": "8Gi"}) for i in (1, 2)]


def _job(
    name: str,
    *,
    priority: int = 0,
    waited: int = 0,
    created: int = 0,
    cpus: str = "4",
    phase: PodGroupPhase = PENDING,
    queue: str = "default",
    annotations: dict[str, str] | None = None,
) -> PodGroupState:
    """A one-pod job first seen ``waited`` seconds ago, created ``created`` seconds ago."""
    return build_podgroup(
        name,
        "ns",
        queue,
        1,
        None,
        phase,
        priority=priority,
        min_resources={"cpu": cpus},
        creation=NOW - timedelta(seconds=created),
        first_seen=NOW - timedelta(seconds=waited),
        annotations=annotations,
    )


def _elect(
    podgroups: list[PodGroupState],
    expected: str | None,
    *,
    arguments: Arguments | None = None,
    pods: list[PodState] | None = None,
    reservation: Reservation | None = None,
    queues: list[Queue] | None = None,
    name: str = "elect",
) -> None:
    run_case(
        SchedulingCase(
            name=name,
            origin=f"{ELECT}; {TARGET_FN}; vcbus SPEC A6",
            podgroups=podgroups,
            pods=pods or [],
            nodes=NODES,
            queues=queues or [build_queue("default")],
            reservation=reservation,
            tiers=(tier(plugin("gang"), plugin("reservation", arguments=arguments)),),
            actions=("elect",),
            expect_reservation=(expected, ()),
        )
    )


def test_highest_priority_job_is_elected_when_no_threshold_is_set() -> None:
    _elect([_job("low", waited=100), _job("high", priority=10, waited=1)], "ns/high")


def test_longest_waiting_job_is_elected_when_priorities_are_equal() -> None:
    _elect([_job("newer", waited=10, created=500), _job("older", waited=60)], "ns/older")


def test_older_job_is_elected_when_priority_and_waiting_are_equal() -> None:
    _elect([_job("young", waited=5, created=10), _job("old", waited=5, created=20)], "ns/old")


def test_smaller_key_is_elected_when_everything_else_is_equal() -> None:
    """A7: Volcano took the first in map order; vcbus the smaller job key."""
    _elect([_job("b", waited=5), _job("a", waited=5)], "ns/a")


def test_annotated_job_is_elected_when_others_have_higher_priority() -> None:
    _elect(
        [
            _job("vip", priority=100, waited=100),
            _job("chosen", annotations={"volcano.sh/target-job": "true"}),
        ],
        "ns/chosen",
    )


def test_only_jobs_above_the_resource_threshold_are_elected_when_it_is_set() -> None:
    _elect(
        [_job("small", priority=10, cpus="1", waited=100), _job("big", cpus="6")],
        "ns/big",
        arguments={"target-min-resources.cpu": "5"},
    )


def test_nobody_is_elected_when_no_job_passes_the_thresholds() -> None:
    _elect(
        [_job("small", cpus="1", waited=10)],
        None,
        arguments={"target-min-resources.cpu": "5", "target-min-waiting": "1m"},
    )


def test_job_waiting_past_the_threshold_is_elected_when_a_higher_priority_one_is_not() -> None:
    _elect(
        [_job("fresh", priority=10, waited=5), _job("patient", waited=120)],
        "ns/patient",
        arguments={"target-min-waiting": "2m"},
    )


@pytest.mark.parametrize(
    ("podgroup", "queues", "pods"),
    [
        (_job("running", phase=PodGroupPhase.RUNNING), None, None),
        (_job("too-big", cpus="9"), None, None),
        (_job("closed", queue="shut"), [build_queue("shut", state=QueueState.CLOSED)], None),
        (_job("capped", queue="small"), [build_queue("small", 1, {"cpu": "2"})], None),
        (_job("orphan", queue="missing"), None, None),
        (
            _job("ready", phase=INQUEUE),
            None,
            [build_pod("ns", "ready-w-0", "n1", PodPhase.RUNNING, {"cpu": "4"}, "ready")],
        ),
    ],
    ids=[
        "running",
        "larger than the cluster",
        "closed queue",
        "larger than its queue",
        "no queue",
        "ready",
    ],
)
def test_job_is_not_elected_when_it_cannot_or_need_not_be_helped(
    podgroup: PodGroupState, queues: list[Queue] | None, pods: list[PodState] | None
) -> None:
    _elect(
        [podgroup],
        None,
        queues=[build_queue("default"), *(queues or [])],
        pods=pods,
    )


def test_current_target_is_kept_when_it_still_starves() -> None:
    """v1.5.1: elect does nothing while a target exists."""
    _elect(
        [_job("current", waited=1), _job("rival", priority=50, waited=500)],
        "ns/current",
        reservation=Reservation(target_job=JobKey("ns/current"), generation=3),
    )


def test_ready_target_is_released_and_a_new_one_elected_when_elect_runs() -> None:
    """The release is one unlock of every node; the election takes the next generation."""
    run = run_case(
        SchedulingCase(
            name="re-elect",
            origin=f"{ELECT}; vcbus SPEC A6",
            podgroups=[_job("done", phase=INQUEUE), _job("next", waited=30)],
            pods=[build_pod("ns", "done-w-0", "n1", PodPhase.RUNNING, {"cpu": "4"}, "done")],
            nodes=NODES,
            queues=[build_queue("default")],
            reservation=Reservation(
                target_job=JobKey("ns/done"),
                locked_nodes=frozenset({"n1", "n2"}),
                generation=4,
                elected_at=NOW - timedelta(minutes=1),
            ),
            tiers=(tier(plugin("gang"), plugin("reservation")),),
            actions=("elect",),
            expect_reservation=("ns/next", ()),
        )
    )
    unlocked, elected = run.result.reservation_changes
    assert (unlocked.kind, unlocked.job, unlocked.nodes) == (
        ReservationChangeKind.UNLOCKED,
        JobKey("ns/done"),
        ("n1", "n2"),
    )
    assert unlocked.generation == 4
    assert (elected.kind, elected.job, elected.generation) == (
        ReservationChangeKind.ELECTED,
        JobKey("ns/next"),
        5,
    )
    assert run.session.reservation.elected_at == NOW


def test_waiting_counts_from_creation_when_the_job_was_never_seen() -> None:
    old = build_podgroup(
        "old",
        "ns",
        "default",
        1,
        None,
        PENDING,
        min_resources={"cpu": "1"},
        creation=datetime(2025, 12, 31, tzinfo=UTC),
    )
    _elect([_job("seen", waited=60), old], "ns/old")
