"""Enqueue: Volcano's TestEnqueue table, ported, then B3.5, A5, A6 and A8 cases of vcbus."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, SchedulingCase, go_plugin, plugin, run_case, tier
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.core.scheduling.framework.conf import Configuration, Kind, SchedulerConf
from vcbus.core.scheduling.framework.results import SessionResult
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.scheduler import run_session
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState

PENDING, RUNNING = PodPhase.PENDING, PodPhase.RUNNING
PG_PENDING, PG_INQUEUE = PodGroupPhase.PENDING, PodGroupPhase.INQUEUE
PG_RUNNING = PodGroupPhase.RUNNING

ENQUEUE_TEST = "volcano@ed72c7c8 pkg/scheduler/actions/enqueue/enqueue_test.go TestEnqueue"

# TestEnqueue's tiers, without the sla plugin (not ported; its 3m waiting time never elapses
# in these cases, so it only abstains there).
ENQUEUE_TIERS = (
    tier(
        go_plugin("drf", Kind.JOB_ORDER, Kind.JOB_ENQUEUED),
        go_plugin("proportion", Kind.QUEUE_ORDER, Kind.JOB_ENQUEUED),
        go_plugin("gang", Kind.JOB_ORDER),
    ),
)

VOLCANO_CASES = [
    SchedulingCase(
        name="when podgroup status is inqueue",
        origin=f"{ENQUEUE_TEST}/when podgroup status is inqueue",
        podgroups=[build_podgroup("pg1", "c1", "c1", 2, None, PG_INQUEUE)],
        pods=[
            build_pod("c1", "p1", None, PENDING, {"cpu": "1", "memory": "1G"}, "pg1"),
            build_pod("c1", "p2", None, PENDING, {"cpu": "1", "memory": "1G"}, "pg1"),
        ],
        queues=[build_queue("c1", 1, {"cpu": "4", "memory": "4G"}), build_queue("c2", 1)],
        tiers=ENQUEUE_TIERS,
        actions=("enqueue",),
        expect_phase={"c1/pg1": PG_INQUEUE},
    ),
    SchedulingCase(
        name="when podgroup status is pending",
        origin=f"{ENQUEUE_TEST}/when podgroup status is pending",
        podgroups=[
            build_podgroup("pg1", "c1", "c1", 1, None, PG_PENDING),
            build_podgroup("pg2", "c1", "c2", 1, None, PG_PENDING),
        ],
        pods=[
            build_pod("c1", "p1", None, PENDING, {"cpu": "3", "memory": "1G"}, "pg1"),
            build_pod("c1", "p2", None, PENDING, {"cpu": "1", "memory": "1G"}, "pg2"),
        ],
        queues=[
            build_queue("c1", 1, {"cpu": "4", "memory": "4G"}),
            build_queue("c2", 1, {"cpu": "4", "memory": "4G"}),
        ],
        tiers=ENQUEUE_TIERS,
        actions=("enqueue",),
        expect_phase={"c1/pg1": PG_INQUEUE, "c1/pg2": PG_INQUEUE},
    ),
    SchedulingCase(
        name="when podgroup status is running",
        origin=f"{ENQUEUE_TEST}/when podgroup status is running",
        podgroups=[build_podgroup("pg1", "c1", "c1", 2, None, PG_RUNNING)],
        pods=[
            build_pod("c1", "p1", "n1", RUNNING, {"cpu": "1", "memory": "1G"}, "pg1"),
            build_pod("c1", "p2", "n1", RUNNING, {"cpu": "1", "memory": "1G"}, "pg1"),
        ],
        queues=[build_queue("c1", 1, {"cpu": "4", "memory": "4G"})],
        tiers=ENQUEUE_TIERS,
        actions=("enqueue",),
        expect_phase={"c1/pg1": PG_RUNNING},
    ),
    SchedulingCase(
        name="pggroup cannot enqueue because the specified queue is c1, but there is only c2",
        origin=(
            f"{ENQUEUE_TEST}/pggroup cannot enqueue because the specified queue is c1, "
            "but there is only c2"
        ),
        podgroups=[build_podgroup("pg1", "c1", "c1", 0, None, PG_PENDING)],
        queues=[build_queue("c2", 1, {"cpu": "4", "memory": "4G"})],
        tiers=ENQUEUE_TIERS,
        actions=("enqueue",),
        expect_phase={"c1/pg1": PG_PENDING},
        expect_reason={"c1/pg1": "QueueNotFound"},
        note=(
            "Volcano expects no status at all; vcbus keeps it Pending and says why"
            " (docs/design.md#pending-reasons)."
        ),
    ),
    SchedulingCase(
        name="pggroup cannot enqueue because queue resources are less than podgroup MinResources",
        origin=(
            f"{ENQUEUE_TEST}/pggroup cannot enqueue because queue resources are less than "
            "podgroup MinResources"
        ),
        podgroups=[
            build_podgroup(
                "pg1", "c1", "c1", 1, None, PG_PENDING, min_resources={"cpu": "8", "memory": "8G"}
            )
        ],
        queues=[build_queue("c1", 1, {"cpu": "1", "memory": "1G"})],
        tiers=ENQUEUE_TIERS,
        actions=("enqueue",),
        expect_phase={"c1/pg1": PG_PENDING},
        expect_reason={"c1/pg1": "QueueOverCapability"},
    ),
]


@pytest.mark.parametrize("case", VOLCANO_CASES, ids=lambda c: c.name)
def test_volcano_enqueue_table_holds_when_ported(case: SchedulingCase) -> None:
    run_case(case)


# vcbus cases ----------------------------------------------------------------------------------
OVERCOMMIT_ONLY = (tier(plugin("overcommit")),)
ENQUEUE_DEFAULT = (
    tier(plugin("priority"), plugin("gang"), plugin("conformance"), plugin("reservation")),
    tier(plugin("overcommit"), plugin("drf"), plugin("proportion")),
)
NODE_10 = build_node("n1", {"cpu": "10", "memory": "20Gi", "pods": 110})


def _pending(name: str, cpus: str, *, minute: int = 0, queue: str = "default") -> PodGroupState:
    return build_podgroup(
        name,
        "ns",
        queue,
        1,
        None,
        PG_PENDING,
        min_resources={"cpu": cpus},
        creation=datetime(2026, 1, 1, 0, minute, tzinfo=UTC),
    )


def test_big_job_does_not_block_later_jobs_when_it_is_rejected() -> None:
    """Volcano's enqueue.go: no head-of-line blocking; the older big job stays Pending, small ones
    go in."""
    run_case(
        SchedulingCase(
            name="no head-of-line blocking",
            origin="vcbus, Volcano's enqueue.go",
            podgroups=[_pending("big", "20", minute=0), _pending("s1", "2", minute=1)],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=OVERCOMMIT_ONLY,
            actions=("enqueue",),
            expect_phase={"ns/big": PG_PENDING, "ns/s1": PG_INQUEUE},
            # 20 cpu on a 10-cpu cluster: it could never run (docs/design.md#reservation,
            # docs/design.md#pending-reasons rank it first).
            expect_reason={"ns/big": "Infeasible", "ns/s1": None},
        )
    )


def test_jobs_are_enqueued_up_to_the_overcommit_factor_when_only_overcommit_votes() -> None:
    """Volcano's enqueue.go: idle = 1.2 × 10 cpu = 12; three 4-cpu jobs fit, the fourth does not."""
    run_case(
        SchedulingCase(
            name="default factor",
            origin="vcbus Volcano's enqueue.go overcommit-factor 1.2",
            podgroups=[_pending(f"j{i}", "4", minute=i) for i in range(4)],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=OVERCOMMIT_ONLY,
            actions=("enqueue",),
            expect_phase={
                "ns/j0": PG_INQUEUE,
                "ns/j1": PG_INQUEUE,
                "ns/j2": PG_INQUEUE,
                "ns/j3": PG_PENDING,
            },
        )
    )


def test_factor_below_one_is_replaced_by_the_default_when_configured() -> None:
    """Volcano's enqueue.go: overcommit-factor 0.5 is taken as 1.2, so 12 cpu go in, not 5."""
    run_case(
        SchedulingCase(
            name="factor below one",
            origin="vcbus Volcano's enqueue.go (overcommit validate)",
            podgroups=[_pending("j0", "6", minute=0), _pending("j1", "6", minute=1)],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=(tier(plugin("overcommit", arguments={"overcommit-factor": 0.5})),),
            actions=("enqueue",),
            expect_phase={"ns/j0": PG_INQUEUE, "ns/j1": PG_INQUEUE},
        )
    )


def test_proportion_caps_the_queue_at_the_cluster_when_both_plugins_vote() -> None:
    """Volcano's enqueue.go: with proportion too, the single queue is capped at 10 cpu, not 12."""
    run_case(
        SchedulingCase(
            name="proportion neutralises the factor",
            origin="vcbus, Volcano's enqueue.go",
            podgroups=[_pending(f"j{i}", "4", minute=i) for i in range(3)],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=ENQUEUE_DEFAULT,
            actions=("enqueue",),
            expect_phase={"ns/j0": PG_INQUEUE, "ns/j1": PG_INQUEUE, "ns/j2": PG_PENDING},
            # the queue has no capability: the job waits for the cluster, not for a cap
            expect_reason={"ns/j2": "ClusterOverused"},
        )
    )


def test_only_requested_dimensions_are_compared_when_memory_is_short() -> None:
    """Volcano's enqueue.go: minResources asks cpu only, so a cluster out of memory still takes
    it."""
    full = build_pod("ns", "hog-0", "n1", RUNNING, {"cpu": "1", "memory": "20Gi"}, "hog")
    run_case(
        SchedulingCase(
            name="requested dimensions",
            origin="vcbus Volcano's enqueue.go (LessEqualWithDimension)",
            podgroups=[
                build_podgroup("hog", "ns", "default", 1, None, PG_RUNNING),
                _pending("cpu-only", "4"),
            ],
            pods=[full],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=OVERCOMMIT_ONLY,
            actions=("enqueue",),
            expect_phase={"ns/cpu-only": PG_INQUEUE},
        )
    )


def test_podgroup_without_min_resources_is_enqueued_when_the_cluster_is_full() -> None:
    """Volcano's enqueue.go: no minResources → enqueued unconditionally."""
    run_case(
        SchedulingCase(
            name="no minResources",
            origin="vcbus Volcano's enqueue.go",
            podgroups=[
                _pending("big", "40", minute=0),
                build_podgroup("free", "ns", "default", 1, None, PG_PENDING),
            ],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=ENQUEUE_DEFAULT,
            actions=("enqueue",),
            expect_phase={"ns/big": PG_PENDING, "ns/free": PG_INQUEUE},
        )
    )


def test_dependent_job_stays_pending_when_its_whole_min_resources_do_not_fit() -> None:
    """docs/design.md#dependent-jobs: enqueue admits a dependent job on all stages' minResources,
    not the first's."""
    run_case(
        SchedulingCase(
            name="dependent whole minResources",
            origin="vcbus docs/design.md#dependent-jobs (enqueue on the whole job), B3.13",
            podgroups=[
                build_podgroup(
                    "dep",
                    "ns",
                    "default",
                    3,
                    {"first": 1, "second": 2},
                    PG_PENDING,
                    min_resources={"cpu": "16"},
                    dependent=True,
                )
            ],
            pods=[build_pod("ns", "dep-first-0", None, PENDING, {"cpu": "2"}, "dep", task="first")],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=OVERCOMMIT_ONLY,
            actions=("enqueue",),
            expect_phase={"ns/dep": PG_PENDING},
            # 16 cpu on a 10-cpu cluster: it could never run (docs/design.md#reservation,
            # docs/design.md#pending-reasons rank it first).
            expect_reason={"ns/dep": "Infeasible"},
        )
    )


def test_dependent_job_is_enqueued_when_its_whole_min_resources_fit() -> None:
    run_case(
        SchedulingCase(
            name="dependent fits",
            origin="vcbus docs/design.md#dependent-jobs",
            podgroups=[
                build_podgroup(
                    "dep",
                    "ns",
                    "default",
                    3,
                    {"first": 1, "second": 2},
                    PG_PENDING,
                    min_resources={"cpu": "6"},
                    dependent=True,
                )
            ],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            tiers=ENQUEUE_DEFAULT,
            actions=("enqueue",),
            expect_phase={"ns/dep": PG_INQUEUE},
            expect_reason={"ns/dep": "WaitingForDependency"},
        )
    )


@pytest.mark.parametrize(
    ("queue", "reason"),
    [
        (build_queue("q", state=QueueState.CLOSED), "QueueClosed"),
        (build_queue("q", 1, {"cpu": "2"}), "QueueOverCapability"),
        (build_queue("q"), "ClusterOverused"),
    ],
    ids=["closed", "over capability", "cluster overused"],
)
def test_highest_ranked_reason_is_reported_when_several_plugins_reject(queue, reason) -> None:
    """docs/design.md#pending-reasons: QueueClosed > QueueOverCapability > ClusterOverused, whatever
    votes first."""
    hog = build_pod("ns", "hog-0", "n1", RUNNING, {"cpu": "10"}, "hog")
    run_case(
        SchedulingCase(
            name=f"reason {reason}",
            origin="vcbus docs/design.md#pending-reasons",
            podgroups=[
                build_podgroup("hog", "ns", "other", 1, None, PG_RUNNING),
                _pending("job", "4", queue="q"),
            ],
            pods=[hog],
            nodes=[NODE_10],
            queues=[queue, build_queue("other")],
            tiers=(tier(plugin("overcommit"), plugin("proportion")),),
            actions=("enqueue",),
            expect_phase={"ns/job": PG_PENDING},
            expect_reason={"ns/job": reason},
        )
    )


def test_other_jobs_wait_for_the_target_when_the_reservation_target_is_pending() -> None:
    """docs/design.md#reservation: the target is tried first; while it is Pending, no other job is
    enqueued."""
    hog = build_pod("ns", "hog-0", "n1", RUNNING, {"cpu": "6"}, "hog")
    run_case(
        SchedulingCase(
            name="reservation gate",
            origin="vcbus docs/design.md#reservation (enqueue gate)",
            podgroups=[
                build_podgroup("hog", "ns", "default", 1, None, PG_RUNNING),
                _pending("small", "1", minute=0),
                _pending("target", "8", minute=5),
            ],
            pods=[hog],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            reservation=Reservation(target_job=JobKey("ns/target"), generation=1),
            tiers=(tier(plugin("reservation")), tier(plugin("overcommit"))),
            actions=("enqueue",),
            expect_phase={"ns/target": PG_PENDING, "ns/small": PG_PENDING},
            expect_reason={"ns/target": "ClusterOverused", "ns/small": "WaitingForReservation"},
        )
    )


def test_other_jobs_are_enqueued_when_the_target_goes_in_first() -> None:
    run_case(
        SchedulingCase(
            name="target first",
            origin="vcbus docs/design.md#reservation (target tried first)",
            podgroups=[_pending("small", "1", minute=0), _pending("target", "8", minute=5)],
            nodes=[NODE_10],
            queues=[build_queue("default")],
            reservation=Reservation(target_job=JobKey("ns/target"), generation=1),
            tiers=(tier(plugin("reservation")), tier(plugin("overcommit"))),
            actions=("enqueue",),
            expect_phase={"ns/target": PG_INQUEUE, "ns/small": PG_INQUEUE},
        )
    )


def _weighted_pass(queues: list[Queue], jobs_per_queue: int) -> SessionResult:
    podgroups = [
        _pending(f"{queue.name}-{i:02d}", "1", minute=i, queue=queue.name)
        for queue in queues
        for i in range(jobs_per_queue)
    ]
    return run_session(
        ClusterSnapshot.build(
            nodes=[build_node("n1", {"cpu": "16", "memory": "64Gi", "pods": 110})],
            queues=queues,
            podgroups=podgroups,
        ),
        SchedulerConf(actions=("enqueue",), tiers=ENQUEUE_DEFAULT),
        now=NOW,
    )


def _admitted_per_queue(queues: list[Queue], jobs_per_queue: int) -> dict[str, int]:
    result = _weighted_pass(queues, jobs_per_queue)
    admitted: dict[str, int] = {queue.name: 0 for queue in queues}
    for update in result.podgroup_updates:
        if update.phase is PG_INQUEUE:
            admitted[update.job.split("/")[1].split("-")[0]] += 1
    return admitted


def test_admission_budget_follows_queue_weights_when_two_queues_saturate() -> None:
    """docs/design.md#queue-shares: 16 cpu × 1.2 = 19 one-cpu jobs go in, split 1:3 by weight
    (Volcano: 10/9)."""
    admitted = _admitted_per_queue([build_queue("heavy", 3), build_queue("light", 1)], 16)
    assert admitted == {"heavy": 14, "light": 5}


def test_a_queue_alone_takes_the_whole_budget_when_the_other_asks_nothing() -> None:
    """docs/design.md#queue-shares is work conserving: an idle heavy queue leaves nothing unused."""
    admitted = _admitted_per_queue([build_queue("light", 1)], 30)
    assert admitted == {"light": 16}


def test_each_pick_is_recorded_with_the_queue_share_when_enqueue_runs() -> None:
    """The pass, as ``vcbus simulate --cycles`` shows it: the least-served queue first."""
    steps = _weighted_pass([build_queue("heavy", 3), build_queue("light", 1)], 16).enqueue_steps
    picks = [(s.queue, round(s.share or 0.0, 3), s.admitted) for s in steps[:6]]
    assert picks == [
        ("heavy", 0.0, True),
        ("light", 0.0, True),
        ("heavy", 0.083, True),
        ("heavy", 0.167, True),
        ("heavy", 0.25, True),
        ("light", 0.25, True),
    ]
    refused = [s for s in steps if not s.admitted]
    assert refused
    assert {s.reason for s in refused} == {"ClusterOverused"}


def _full_cluster(*, take_back: bool, reservation: Reservation | None = None) -> SchedulingCase:
    """A 10-cpu cluster held by a running low-priority job; a high-priority job of 4 cpu."""
    high = build_podgroup(
        "high", "ns", "default", 1, None, PG_PENDING, priority=1000, min_resources={"cpu": "4"}
    )
    return SchedulingCase(
        name="take-back",
        origin="vcbus preempt and reclaim (take-back enqueue)",
        podgroups=[
            build_podgroup("low", "ns", "default", 1, None, PG_RUNNING, priority=10),
            high,
        ],
        pods=[build_pod("ns", "low-w-0", "n1", RUNNING, {"cpu": "10"}, "low")],
        nodes=[NODE_10],
        queues=[build_queue("default")],
        tiers=ENQUEUE_DEFAULT,
        actions=("enqueue",),
        configurations=(
            (Configuration(name="enqueue", arguments={"take-back": True}),) if take_back else ()
        ),
        reservation=reservation,
    )


def test_take_back_enqueues_a_job_its_preempt_could_place_on_a_full_cluster() -> None:
    run_case(replace(_full_cluster(take_back=True), expect_phase={"ns/high": PG_INQUEUE}))


def test_without_take_back_the_job_stays_pending_on_a_full_cluster() -> None:
    run_case(replace(_full_cluster(take_back=False), expect_phase={"ns/high": PG_PENDING}))


def test_take_back_admits_no_other_job_while_a_reservation_target_is_pending() -> None:
    """docs/design.md#reservation: the target's gate holds for take-back too."""
    target = build_podgroup(
        "target", "ns", "default", 1, None, PG_PENDING, min_resources={"cpu": "20"}
    )
    base = _full_cluster(
        take_back=True,
        reservation=Reservation(target_job=JobKey("ns/target"), locked_nodes=frozenset({"n1"})),
    )
    run_case(
        replace(base, podgroups=[*base.podgroups, target], expect_phase={"ns/high": PG_PENDING})
    )
