"""Elect: which starving job becomes the reservation's target (docs/design.md#reservation, Volcano's
v1.5.1 elect.go and reserve.go)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, CaseRun, SchedulingCase, plugin, run_case, tier
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.results import ReservationChangeKind
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.plugins.reservation_arguments import ReservationArgs
from vcbus.core.scheduling.snapshot import PodGroupState, PodState

ELECT = "volcano@v1.5.1 pkg/scheduler/actions/elect/elect.go"
TARGET_FN = "volcano@v1.5.1 pkg/scheduler/plugins/reservation/reservation.go targetJobFn"
PENDING, INQUEUE = PodGroupPhase.PENDING, PodGroupPhase.INQUEUE
NODES = [
    build_node(f"n{i}", {"cpu": "4", "memory": "8Gi"}, labels={"kubernetes.io/hostname": f"n{i}"})
    for i in (1, 2)
]
EVERY_WAITING_JOB_STARVES: Arguments = {"target-min-waiting": "0s"}
"""Every waiting job that does not fit now starves: the tests of the election order use it."""
BUSY_PG = build_podgroup(
    "busy",
    "ns",
    "default",
    1,
    None,
    PodGroupPhase.RUNNING,
    creation=datetime(2025, 1, 1, tzinfo=UTC),
)
BUSY = [
    build_pod("ns", f"busy-w-{i}", f"n{i}", PodPhase.RUNNING, {"cpu": "3"}, "busy") for i in (1, 2)
]
"""An old job (nobody's overtaker) leaving 1 cpu per node: the 4-cpu jobs do not fit now."""


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
            origin=f"{ELECT}; {TARGET_FN}; vcbus docs/design.md#reservation",
            podgroups=[BUSY_PG, *podgroups],
            pods=[*BUSY, *(pods or [])],
            nodes=NODES,
            queues=queues or [build_queue("default")],
            reservation=reservation,
            tiers=(
                tier(
                    plugin("gang"),
                    plugin(
                        "reservation",
                        arguments=EVERY_WAITING_JOB_STARVES if arguments is None else arguments,
                    ),
                ),
            ),
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
    """docs/design.md#determinism: Volcano took the first in map order; vcbus the smaller job
    key."""
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
        arguments={**EVERY_WAITING_JOB_STARVES, "target-min-resources.cpu": "5"},
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
            origin=f"{ELECT}; vcbus docs/design.md#reservation",
            podgroups=[_job("done", phase=INQUEUE), _job("next", waited=30), BUSY_PG],
            pods=[
                build_pod("ns", "done-w-0", "n1", PodPhase.RUNNING, {"cpu": "4"}, "done"),
                *BUSY,
            ],
            nodes=NODES,
            queues=[build_queue("default")],
            reservation=Reservation(
                target_job=JobKey("ns/done"),
                locked_nodes=frozenset({"n1", "n2"}),
                generation=4,
                elected_at=NOW - timedelta(minutes=1),
            ),
            tiers=(
                tier(plugin("gang"), plugin("reservation", arguments=EVERY_WAITING_JOB_STARVES)),
            ),
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
        min_resources={"cpu": "4"},
        creation=datetime(2025, 12, 31, tzinfo=UTC),
    )
    _elect([_job("seen", waited=60), old], "ns/old")


# docs/design.md#reservation (revised): only a feasible, starving job is a target; a lock is
# bounded.
NO_THRESHOLD: Arguments = {}


def _run(
    podgroups: list[PodGroupState],
    pods: list[PodState],
    *,
    expected: str | None,
    arguments: Arguments | None = None,
    reservation: Reservation | None = None,
    expect_reason: dict[str, str | None] | None = None,
    name: str = "elect",
) -> CaseRun:
    return run_case(
        SchedulingCase(
            name=name,
            origin=f"{ELECT}; vcbus docs/design.md#reservation, docs/design.md#pending-reasons",
            podgroups=[BUSY_PG, *podgroups],
            pods=[*BUSY, *pods],
            nodes=NODES,
            queues=[build_queue("default")],
            reservation=reservation,
            tiers=(tier(plugin("gang"), plugin("reservation", arguments=arguments or {})),),
            actions=("elect",),
            expect_reservation=(expected, ()),
            expect_reason=expect_reason,
        )
    )


def test_nobody_is_elected_when_no_job_is_overtaken() -> None:
    """No harm: a pending job that nobody behind it overtook is not starving."""
    _run(
        [_job("first", phase=INQUEUE, created=60), _job("second", created=30)],
        [build_pod("ns", "first-w-0", None, PodPhase.PENDING, {"cpu": "4"}, "first")],
        expected=None,
    )


def test_overtaken_job_is_elected_when_a_later_job_runs_where_it_could() -> None:
    """A job behind it (created later) holds a node the big job could use: it starves."""
    run = _run(
        [
            _job("big", phase=INQUEUE, cpus="8", created=60),
            _job("later", phase=PodGroupPhase.RUNNING, cpus="1", created=10),
        ],
        [
            build_pod("ns", "big-w-0", None, PodPhase.PENDING, {"cpu": "4"}, "big"),
            build_pod("ns", "big-w-1", None, PodPhase.PENDING, {"cpu": "4"}, "big"),
            build_pod("ns", "later-w-0", "n1", PodPhase.RUNNING, {"cpu": "1"}, "later"),
        ],
        expected="ns/big",
    )
    [elected] = run.result.reservation_changes
    assert elected.reason.startswith("starving (overtaken by ns/later): priority 0")


def test_job_is_not_overtaken_by_one_running_where_it_could_never_go() -> None:
    """The later job runs on a node the big job's selector excludes: not overtaken."""
    _run(
        [
            _job("picky", phase=INQUEUE, created=60),
            _job("later", phase=PodGroupPhase.RUNNING, cpus="1", created=10),
        ],
        [
            build_pod(
                "ns",
                "picky-w-0",
                None,
                PodPhase.PENDING,
                {"cpu": "4"},
                "picky",
                selector={"kubernetes.io/hostname": "n1"},
            ),
            build_pod("ns", "later-w-0", "n1", PodPhase.RUNNING, {"cpu": "1"}, "later"),
        ],
        expected="ns/picky",
        name="where it could go",
    )
    _run(
        [
            _job("picky", phase=INQUEUE, created=60),
            _job("later", phase=PodGroupPhase.RUNNING, cpus="1", created=10),
        ],
        [
            build_pod(
                "ns",
                "picky-w-0",
                None,
                PodPhase.PENDING,
                {"cpu": "4"},
                "picky",
                selector={"kubernetes.io/hostname": "n2"},
            ),
            build_pod("ns", "later-w-0", "n1", PodPhase.RUNNING, {"cpu": "1"}, "later"),
        ],
        expected=None,
    )


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (
            build_pod("ns", "job-w-0", None, PodPhase.PENDING, {"cpu": "6"}, "job"),
            "2 Insufficient cpu",
        ),
        (
            build_pod(
                "ns",
                "job-w-0",
                None,
                PodPhase.PENDING,
                {"cpu": "1"},
                "job",
                selector={"disk": "ssd"},
            ),
            "2 node(s) didn't match Pod's node affinity/selector",
        ),
    ],
    ids=["pod larger than every node", "selector no node matches"],
)
def test_infeasible_job_is_never_elected_and_says_why_when_annotated(
    pod: PodState, message: str
) -> None:
    """Even the annotation does not make a job no node could hold a target
    (docs/design.md#reservation, docs/design.md#pending-reasons)."""
    job = _job("job", phase=INQUEUE, cpus="1", annotations={"volcano.sh/target-job": "true"})
    run = run_case(
        SchedulingCase(
            name="infeasible",
            origin=f"{ELECT}; vcbus docs/design.md#reservation, docs/design.md#pending-reasons",
            podgroups=[job],
            pods=[pod],
            nodes=NODES,
            queues=[build_queue("default")],
            tiers=(tier(plugin("gang"), plugin("reservation")),),
            actions=("elect",),
            expect_reservation=(None, ()),
            expect_reason={"ns/job": "Infeasible"},
        )
    )
    [update] = run.result.status_updates
    assert message in update.conditions[0].message
    assert "0/2 nodes could ever hold pod job-w-0" in update.conditions[0].message


def test_infeasible_target_is_released_when_nodes_change() -> None:
    """A target whose nodes went away (here: too small for it now) is released at once."""
    run = run_case(
        SchedulingCase(
            name="infeasible target",
            origin=f"{ELECT}; vcbus docs/design.md#reservation (revised)",
            podgroups=[_job("big", phase=INQUEUE, cpus="4")],
            pods=[build_pod("ns", "big-w-0", None, PodPhase.PENDING, {"cpu": "5"}, "big")],
            nodes=NODES,
            queues=[build_queue("default")],
            reservation=Reservation(
                target_job=JobKey("ns/big"),
                locked_nodes=frozenset({"n1"}),
                generation=2,
                elected_at=NOW - timedelta(seconds=5),
            ),
            tiers=(tier(plugin("gang"), plugin("reservation")),),
            actions=("elect",),
            expect_reservation=(None, ()),
        )
    )
    [unlocked] = run.result.reservation_changes
    assert unlocked.kind is ReservationChangeKind.UNLOCKED
    assert unlocked.reason.startswith("target job is infeasible: 0/2 nodes")
    assert unlocked.backoff_until is None


def test_target_is_released_with_a_backoff_when_lock_max_passes() -> None:
    run = run_case(
        SchedulingCase(
            name="expired",
            origin=f"{ELECT}; vcbus docs/design.md#reservation, docs/design.md#pending-reasons",
            podgroups=[_job("stuck", phase=INQUEUE, cpus="4"), BUSY_PG],
            pods=[
                build_pod("ns", "stuck-w-0", None, PodPhase.PENDING, {"cpu": "4"}, "stuck"),
                *BUSY,
            ],
            nodes=NODES,
            queues=[build_queue("default")],
            reservation=Reservation(
                target_job=JobKey("ns/stuck"),
                locked_nodes=frozenset({"n1", "n2"}),
                generation=7,
                elected_at=NOW - timedelta(minutes=2),
            ),
            tiers=(
                tier(
                    plugin("gang"),
                    plugin(
                        "reservation",
                        arguments={
                            "lock-max": "2m",
                            "lock-backoff": "1m",
                            "target-min-waiting": "0s",
                        },
                    ),
                ),
            ),
            actions=("elect",),
            expect_reservation=(None, ()),
            expect_reason={"ns/stuck": "ReservationExpired"},
        )
    )
    [unlocked] = run.result.reservation_changes
    assert unlocked.reason.startswith("ReservationExpired: not ready 120s after its election")
    assert unlocked.backoff_until == NOW + timedelta(minutes=1)
    assert run.session.reservation.backoff == ((JobKey("ns/stuck"), NOW + timedelta(minutes=1)),)


def test_job_in_backoff_is_elected_again_only_when_the_backoff_ends() -> None:
    job = _job("again", phase=INQUEUE, waited=600)
    pods = [build_pod("ns", "again-w-0", None, PodPhase.PENDING, {"cpu": "4"}, "again")]
    until = NOW + timedelta(seconds=30)
    backoff = Reservation(generation=3, backoff=((JobKey("ns/again"), until),))
    _run(
        [job],
        pods,
        expected=None,
        arguments=EVERY_WAITING_JOB_STARVES,
        reservation=backoff,
        expect_reason={"ns/again": "ReservationExpired"},
    )
    ended = Reservation(generation=3, backoff=((JobKey("ns/again"), NOW),))
    _run([job], pods, expected="ns/again", arguments=EVERY_WAITING_JOB_STARVES, reservation=ended)


def test_lock_timeout_must_be_shorter_than_lock_max() -> None:
    with pytest.raises(ValueError, match="lock-timeout \\(600s\\) must be shorter than lock-max"):
        ReservationArgs.parse({"lock-timeout": "10m"})


def test_overtaken_job_is_not_elected_when_it_fits_now() -> None:
    """The next cycle places it anyway: not starving (docs/design.md#reservation)."""
    _run(
        [
            _job("fits", phase=INQUEUE, cpus="1", created=60),
            _job("later", phase=PodGroupPhase.RUNNING, cpus="1", created=10),
        ],
        [
            build_pod("ns", "fits-w-0", None, PodPhase.PENDING, {"cpu": "1"}, "fits"),
            build_pod("ns", "later-w-0", "n1", PodPhase.RUNNING, {"cpu": "1"}, "later"),
        ],
        expected=None,
    )


def test_job_is_not_overtaken_by_a_lower_priority_one_that_ran_before_it_came() -> None:
    _run(
        [_job("vip", phase=INQUEUE, priority=10, cpus="4", created=5)],
        [build_pod("ns", "vip-w-0", None, PodPhase.PENDING, {"cpu": "4"}, "vip")],
        expected=None,
    )
