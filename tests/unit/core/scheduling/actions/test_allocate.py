"""Allocate: Volcano's own test tables, ported, then vcbus's seed examples."""

from __future__ import annotations

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import (
    NOW,
    SchedulingCase,
    go_plugin,
    run_case,
    snapshot_of,
    tier,
)
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.framework.conf import Configuration, Kind
from vcbus.core.scheduling.framework.session import close_session, open_session
from vcbus.core.scheduling.framework.statement import Statement
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.model import TaskStatus
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import PodGroupState, PodState

PENDING, RUNNING = PodPhase.PENDING, PodPhase.RUNNING
INQUEUE = PodGroupPhase.INQUEUE
R1 = {"cpu": "1", "memory": "1G"}
NODE_2C: dict[str, str | int | float] = {"cpu": "2", "memory": "4Gi", "pods": 10}

ALLOCATE_TEST = "volcano@00f36c3b pkg/scheduler/actions/allocate/allocate_test.go"
PROPORTION_TEST = "volcano@master pkg/scheduler/plugins/proportion/proportion_test.go"

# TestAllocate's tiers: gang, drf, proportion, predicates, nodeorder with the flags it sets.
ALLOCATE_TIERS = (
    tier(
        go_plugin("gang", Kind.JOB_ORDER, Kind.JOB_READY, Kind.JOB_PIPELINED, Kind.JOB_STARVING),
        go_plugin("drf", Kind.PREEMPTABLE, Kind.JOB_ORDER),
        go_plugin("proportion", Kind.QUEUE_ORDER, Kind.RECLAIMABLE, Kind.ALLOCATABLE),
        go_plugin("predicates", Kind.PREDICATE),
        go_plugin("nodeorder", Kind.NODE_ORDER),
    ),
)

# TestFareShareAllocate's tiers: no gang; proportion's Allocatable switched off.
FAIR_SHARE_TIERS = (
    tier(
        go_plugin("drf", Kind.PREEMPTABLE, Kind.JOB_ORDER),
        go_plugin("proportion", Kind.QUEUE_ORDER, Kind.RECLAIMABLE),
        go_plugin("predicates", Kind.PREDICATE),
        go_plugin("nodeorder", Kind.NODE_ORDER),
    ),
)


def _role(task: str) -> dict[str, str]:
    return {"task": task}


ALLOCATE_CASES = [
    SchedulingCase(
        name="prepredicate failed: node selector does not match",
        origin=f"{ALLOCATE_TEST} TestAllocate/prepredicate failed: node selector does not match",
        podgroups=[build_podgroup("pg1", "c1", "c1", 1)],
        pods=[
            build_pod(
                "c1", "p1", None, PENDING, R1, "pg1", task="master", selector={"nodeRole": "master"}
            ),
            build_pod(
                "c1", "p2", None, PENDING, R1, "pg1", task="worker", selector={"nodeRole": "worker"}
            ),
        ],
        nodes=[build_node("n1", NODE_2C, {"nodeRole": "worker"})],
        queues=[build_queue("c1")],
        tiers=ALLOCATE_TIERS,
        expect_binds={"c1/p2": "n1"},
    ),
    SchedulingCase(
        name="prepredicate failed and tasks are not used up, continue on until min member meet",
        origin=(
            f"{ALLOCATE_TEST} TestAllocate/prepredicate failed and tasks are not used up, "
            "continue on until min member meet"
        ),
        podgroups=[build_podgroup("pg1", "c1", "c1", 2, {"master": 1, "worker": 1})],
        pods=[
            build_pod(
                "c1", "p0", None, PENDING, R1, "pg1", task="master", selector={"nodeRole": "master"}
            ),
            build_pod(
                "c1", "p1", None, PENDING, R1, "pg1", task="master", selector={"nodeRole": "master"}
            ),
            build_pod(
                "c1", "p2", None, PENDING, R1, "pg1", task="worker", selector={"nodeRole": "worker"}
            ),
            build_pod(
                "c1", "p3", None, PENDING, R1, "pg1", task="worker", selector={"nodeRole": "worker"}
            ),
        ],
        nodes=[
            build_node("n1", {"cpu": "1", "memory": "2Gi", "pods": 10}, {"nodeRole": "master"}),
            build_node("n2", {"cpu": "1", "memory": "2Gi", "pods": 10}, {"nodeRole": "worker"}),
        ],
        queues=[build_queue("c1")],
        tiers=ALLOCATE_TIERS,
        expect_binds={"c1/p0": "n1", "c1/p2": "n2"},
    ),
    SchedulingCase(
        name="master's min member can not be allocated, break from allocating",
        origin=(
            f"{ALLOCATE_TEST} TestAllocate/master's min member can not be allocated, "
            "break from allocating"
        ),
        podgroups=[build_podgroup("pg1", "c1", "c1", 2, {"master": 2, "worker": 0})],
        pods=[
            build_pod(
                "c1", "p0", None, PENDING, R1, "pg1", task="master", selector={"nodeRole": "master"}
            ),
            build_pod(
                "c1", "p1", None, PENDING, R1, "pg1", task="master", selector={"nodeRole": "master"}
            ),
            build_pod(
                "c1", "p2", None, PENDING, R1, "pg1", task="worker", selector={"nodeRole": "worker"}
            ),
            build_pod(
                "c1", "p3", None, PENDING, R1, "pg1", task="worker", selector={"nodeRole": "worker"}
            ),
        ],
        nodes=[
            build_node("n1", {"cpu": "1", "memory": "2Gi", "pods": 10}, {"nodeRole": "master"}),
            build_node("n2", {"cpu": "2", "memory": "2Gi", "pods": 10}, {"nodeRole": "worker"}),
        ],
        queues=[build_queue("c1")],
        tiers=ALLOCATE_TIERS,
        expect_binds={},
    ),
    SchedulingCase(
        name="one Job with two Pods on one node",
        origin=f"{ALLOCATE_TEST} TestAllocate/one Job with two Pods on one node",
        podgroups=[build_podgroup("pg1", "c1", "c1", 0)],
        pods=[
            build_pod("c1", "p1", None, PENDING, R1, "pg1"),
            build_pod("c1", "p2", None, PENDING, R1, "pg1"),
        ],
        nodes=[build_node("n1", NODE_2C)],
        queues=[build_queue("c1")],
        tiers=ALLOCATE_TIERS,
        expect_binds={"c1/p1": "n1", "c1/p2": "n1"},
    ),
    SchedulingCase(
        name="two Jobs on one node",
        origin=f"{ALLOCATE_TEST} TestAllocate/two Jobs on one node",
        podgroups=[build_podgroup("pg1", "c1", "c1", 0), build_podgroup("pg2", "c2", "c2", 0)],
        pods=[
            build_pod("c1", "pg1-p-1", None, PENDING, R1, "pg1"),
            build_pod("c1", "pg1-p-2", None, PENDING, R1, "pg1"),
            build_pod("c2", "pg2-p-1", None, PENDING, R1, "pg2"),
            build_pod("c2", "pg2-p-2", None, PENDING, R1, "pg2"),
        ],
        nodes=[build_node("n1", {"cpu": "2", "memory": "4G", "pods": 10})],
        queues=[build_queue("c1"), build_queue("c2")],
        tiers=ALLOCATE_TIERS,
        expect_binds={"c2/pg2-p-1": "n1", "c1/pg1-p-1": "n1"},
    ),
    SchedulingCase(
        name="high priority queue should not block others",
        origin=f"{ALLOCATE_TEST} TestAllocate/high priority queue should not block others",
        podgroups=[build_podgroup("pg1", "c1", "c1", 0), build_podgroup("pg2", "c1", "c2", 0)],
        pods=[
            build_pod("c1", "p1", None, PENDING, {"cpu": "3", "memory": "1G"}, "pg1"),
            build_pod("c1", "p2", None, PENDING, R1, "pg2"),
        ],
        nodes=[build_node("n1", {"cpu": "2", "memory": "4G", "pods": 10})],
        queues=[build_queue("c1"), build_queue("c2")],
        tiers=ALLOCATE_TIERS,
        expect_binds={"c1/p2": "n1"},
    ),
    SchedulingCase(
        name="queue with low DRF share value has high priority, should allocate first",
        origin=(
            f"{ALLOCATE_TEST} TestFareShareAllocate/queue with low DRF share value has high "
            "priority, should allocate first"
        ),
        podgroups=[
            build_podgroup("pg-small-1", "ns-1", "q-1", 0, phase=PodGroupPhase.RUNNING),
            build_podgroup("pg-large-1", "ns-1", "q-1", 0),
            build_podgroup("pg-large-2", "ns-1", "q-2", 0),
        ],
        pods=[
            build_pod("ns-1", "pod-small-1", "node-1", RUNNING, R1, "pg-small-1"),
            build_pod(
                "ns-1", "pod-large-1", None, PENDING, {"cpu": "2", "memory": "2G"}, "pg-large-1"
            ),
            build_pod(
                "ns-1", "pod-large-2", None, PENDING, {"cpu": "3", "memory": "2G"}, "pg-large-2"
            ),
        ],
        nodes=[build_node("node-1", {"cpu": "5", "memory": "5G", "pods": 10})],
        queues=[build_queue("q-1"), build_queue("q-2")],
        tiers=FAIR_SHARE_TIERS,
        expect_binds={"ns-1/pod-large-2": "node-1"},
    ),
    SchedulingCase(
        name="queue's DRF share value will be updated and its priority will change",
        origin=(
            f"{ALLOCATE_TEST} TestFareShareAllocate/queue’s DRF share value will be updated "
            "and its priority will change before it is put back into the priority queue"
        ),
        podgroups=[
            build_podgroup("pg-small-1", "ns-1", "q-1", 0, phase=PodGroupPhase.RUNNING),
            build_podgroup("pg-large-1", "ns-1", "q-1", 0),
            build_podgroup("pg-small-2", "ns-1", "q-2", 0),
            build_podgroup("pg-large-2", "ns-1", "q-2", 0),
        ],
        pods=[
            build_pod("ns-1", "pod-small-1", "node-1", RUNNING, R1, "pg-small-1"),
            build_pod(
                "ns-1", "pod-large-1", None, PENDING, {"cpu": "2", "memory": "2G"}, "pg-large-1"
            ),
            build_pod(
                "ns-1", "pod-large-2", None, PENDING, {"cpu": "2", "memory": "2G"}, "pg-large-2"
            ),
            build_pod("ns-1", "pod-small-2", None, PENDING, R1, "pg-small-2"),
        ],
        nodes=[build_node("node-1", {"cpu": "5", "memory": "5G", "pods": 10})],
        queues=[build_queue("q-1"), build_queue("q-2")],
        tiers=FAIR_SHARE_TIERS,
        expect_binds={"ns-1/pod-large-1": "node-1", "ns-1/pod-large-2": "node-1"},
    ),
    SchedulingCase(
        name="queue's one job has no pending tasks, should be put back to queues for next job",
        origin=(
            f"{ALLOCATE_TEST} TestFareShareAllocate/queue’s one jobs has no pending tasks, "
            "should be put back to queues for next job"
        ),
        podgroups=[
            build_podgroup("pg-1", "ns-1", "q-1", 0, phase=PodGroupPhase.RUNNING),
            build_podgroup("pg-2", "ns-1", "q-1", 0),
        ],
        pods=[
            build_pod("ns-1", "pod-1", "node-1", RUNNING, R1, "pg-1"),
            build_pod("ns-1", "pod-2", None, PENDING, {"cpu": "2", "memory": "2G"}, "pg-2"),
        ],
        nodes=[build_node("node-1", {"cpu": "5", "memory": "5G", "pods": 10})],
        queues=[build_queue("q-1")],
        tiers=FAIR_SHARE_TIERS,
        expect_binds={"ns-1/pod-2": "node-1"},
    ),
]


def _proportion_nodes() -> list[Node]:
    return [
        build_node("n1", {"cpu": "2", "memory": "2G", "pods": 10}),
        build_node("n2", {"cpu": "2", "memory": "2G", "pods": 10}),
    ]


def _proportion_base() -> tuple[list[PodState], list[PodGroupState], list[Queue]]:
    pods = [
        build_pod("ns1", "pod1", "n1", RUNNING, {"cpu": "1", "memory": "2G"}, "pg1"),
        build_pod("ns1", "pod2", "n2", RUNNING, {"cpu": "2", "memory": "1G"}, "pg2"),
    ]
    podgroups = [
        build_podgroup(
            "pg1",
            "ns1",
            "q1",
            1,
            phase=PodGroupPhase.RUNNING,
            min_resources={"cpu": "1", "memory": "2G"},
        ),
        build_podgroup(
            "pg2",
            "ns1",
            "q2",
            1,
            phase=PodGroupPhase.RUNNING,
            min_resources={"cpu": "2", "memory": "1G"},
        ),
    ]
    queues = [
        build_queue("q1", 1, {"cpu": "2", "memory": "2G"}),
        build_queue("q2", 1, {"cpu": "3", "memory": "3G"}),
    ]
    return pods, podgroups, queues


ALL_ENABLE = (tier(go_plugin("proportion", Kind.ALLOCATABLE, Kind.OVERUSED, Kind.JOB_ENQUEUED)),)
ALLOCATABLE_ONLY = (tier(go_plugin("proportion", Kind.ALLOCATABLE)),)
ENQUEUE_NOTE = (
    "Volcano runs enqueue then allocate and the PodGroup starts Pending; enqueue is "
    "podgroup-enqueue's action, so the PodGroup starts Inqueue here."
)


def _proportion_cases() -> list[SchedulingCase]:
    pods, podgroups, queues = _proportion_base()
    return [
        SchedulingCase(
            name="memory exceed deserved, job only request cpu can be enqueued and allocated",
            origin=(
                f"{PROPORTION_TEST} TestEnqueueAndAllocable/case0: memory exceed derserved, job "
                "only request cpu can be enqueued and allocated"
            ),
            podgroups=[
                *podgroups,
                build_podgroup("pg3", "ns1", "q1", 1, min_resources={"cpu": "1"}),
            ],
            pods=[
                *pods,
                build_pod("ns1", "pod3", None, PENDING, {"cpu": "1", "memory": "0G"}, "pg3"),
            ],
            nodes=_proportion_nodes(),
            queues=queues,
            tiers=ALL_ENABLE,
            expect_binds={"ns1/pod3": "n1"},
            note=ENQUEUE_NOTE,
        ),
        SchedulingCase(
            name="cpu exceed deserved, job only request memory can be enqueued and allocated",
            origin=(
                f"{PROPORTION_TEST} TestEnqueueAndAllocable/case1: cpu exceed derserved, job "
                "only request memory can be enqueued and allocated"
            ),
            podgroups=[
                *podgroups,
                build_podgroup("pg4", "ns1", "q2", 1, min_resources={"memory": "1G"}),
            ],
            pods=[
                *pods,
                build_pod("ns1", "pod4", None, PENDING, {"cpu": "0", "memory": "1G"}, "pg4"),
            ],
            nodes=_proportion_nodes(),
            queues=queues,
            tiers=ALL_ENABLE,
            expect_binds={"ns1/pod4": "n2"},
            note=ENQUEUE_NOTE,
        ),
        SchedulingCase(
            name="exceed deserved, can not allocate",
            origin=(
                f"{PROPORTION_TEST} TestEnqueueAndAllocable/case3: exceed deserved, "
                "can not allocate"
            ),
            podgroups=[
                *podgroups,
                build_podgroup("pg5", "ns1", "q1", 1, min_resources={"cpu": "1", "memory": "1G"}),
            ],
            pods=[*pods, build_pod("ns1", "pod5", None, PENDING, R1, "pg5")],
            nodes=_proportion_nodes(),
            queues=queues,
            tiers=ALLOCATABLE_ONLY,
            expect_binds={},
            note=ENQUEUE_NOTE,
        ),
        SchedulingCase(
            name="queue with non-open state, can not allocate",
            origin=(
                f"{PROPORTION_TEST} TestEnqueueAndAllocable/case4: queue with  non-open state, "
                "can not enqueue"
            ),
            podgroups=[
                build_podgroup("pg6", "ns1", "q3", 1, min_resources={"cpu": "1", "memory": "1G"})
            ],
            pods=[build_pod("ns1", "pod6", None, PENDING, R1, "pg6")],
            nodes=_proportion_nodes(),
            queues=[build_queue("q3", 1, {"cpu": "3", "memory": "3G"}, state=QueueState.CLOSED)],
            tiers=ALL_ENABLE,
            expect_binds={},
            note=(
                "Volcano stops this job at enqueue (queue not Open); with the PodGroup already "
                "Inqueue, proportion's Allocatable refuses the closed queue in allocate."
            ),
        ),
        SchedulingCase(
            name="pods are assigned according to the order of queue priority",
            origin=(
                f"{PROPORTION_TEST} TestAllocate/case0: Pods are assigned according to the order "
                "of Queue Priority in which PGs are placed"
            ),
            podgroups=[
                build_podgroup("pg1", "ns1", "q1", 1, phase=PodGroupPhase.RUNNING),
                build_podgroup("pg2", "ns1", "q2", 1),
                build_podgroup("pg3", "ns1", "q3", 1),
            ],
            pods=[
                build_pod("ns1", "p1", "n1", RUNNING, {"cpu": "2", "memory": "4Gi"}, "pg1"),
                build_pod("ns1", "p2", None, PENDING, {"cpu": "2", "memory": "4Gi"}, "pg2"),
                build_pod("ns1", "p3", None, PENDING, {"cpu": "2", "memory": "4Gi"}, "pg3"),
            ],
            nodes=[
                build_node("n1", {"cpu": "2", "memory": "4Gi", "pods": 10}),
                build_node("n2", {"cpu": "2", "memory": "4Gi", "pods": 10}),
            ],
            queues=[
                build_queue("q1", 1, {"cpu": "2", "memory": "4Gi"}, priority=5),
                build_queue("q2", 1, {"cpu": "2", "memory": "4Gi"}, priority=1),
                build_queue("q3", 1, {"cpu": "2", "memory": "4Gi"}, priority=10),
            ],
            tiers=(tier(go_plugin("proportion", Kind.QUEUE_ORDER)),),
            expect_binds={"ns1/p3": "n2"},
            note="Volcano also runs reclaim here; it changes nothing in this case.",
        ),
    ]


@pytest.mark.parametrize("case", ALLOCATE_CASES + _proportion_cases(), ids=lambda c: c.name)
def test_binds_match_volcano_when_porting_its_allocate_tables(case: SchedulingCase) -> None:
    """Volcano's allocate and proportion tables give the same bindings in vcbus."""
    run_case(case)


# --- vcbus seed examples ------------------------------------------------------------------

SEED = "vcbus seed example"


def _master_worker(master_priority: int, worker_priority: int) -> list[PodState]:
    pods = [
        build_pod(
            "ns",
            f"job-master-{i}",
            None,
            PENDING,
            {"cpu": "1"},
            "job",
            task="master",
            priority=master_priority,
        )
        for i in range(5)
    ]
    pods += [
        build_pod(
            "ns",
            f"job-worker-{i}",
            None,
            PENDING,
            {"cpu": "1"},
            "job",
            task="worker",
            priority=worker_priority,
        )
        for i in range(3)
    ]
    return pods


def test_minimum_pods_placed_first_then_rest_when_master_has_high_priority() -> None:
    """docs/design.md#minimum-pods-first: master-0..2, worker-0..1 (the gang), then master-3,
    master-4, worker-2."""
    case = SchedulingCase(
        name="master high priority",
        origin=SEED,
        podgroups=[build_podgroup("job", "ns", "default", 5, {"master": 3, "worker": 2})],
        pods=_master_worker(100, 1),
        nodes=[build_node("n1", {"cpu": "16", "memory": "16Gi", "pods": 110})],
        queues=[build_queue("default")],
        bind_order=[
            "ns/job-master-0",
            "ns/job-master-1",
            "ns/job-master-2",
            "ns/job-worker-0",
            "ns/job-worker-1",
            "ns/job-master-3",
            "ns/job-master-4",
            "ns/job-worker-2",
        ],
    )
    run_case(case)


def test_minimum_pods_interleave_by_index_when_priorities_are_equal() -> None:
    """docs/design.md#minimum-pods-first: master-0, worker-0, master-1, worker-1, master-2, then
    worker-2, master-3, -4."""
    case = SchedulingCase(
        name="equal priorities",
        origin=SEED,
        podgroups=[build_podgroup("job", "ns", "default", 5, {"master": 3, "worker": 2})],
        pods=_master_worker(1, 1),
        nodes=[build_node("n1", {"cpu": "16", "memory": "16Gi", "pods": 110})],
        queues=[build_queue("default")],
        bind_order=[
            "ns/job-master-0",
            "ns/job-worker-0",
            "ns/job-master-1",
            "ns/job-worker-1",
            "ns/job-master-2",
            "ns/job-worker-2",
            "ns/job-master-3",
            "ns/job-master-4",
        ],
    )
    run_case(case)


def test_only_the_gang_is_placed_when_room_is_for_the_minimum_only() -> None:
    """Beyond-minimum pods are best effort: five cpus hold exactly the 3+2 minimum."""
    case = SchedulingCase(
        name="room for the minimum",
        origin=SEED,
        podgroups=[build_podgroup("job", "ns", "default", 5, {"master": 3, "worker": 2})],
        pods=_master_worker(100, 1),
        nodes=[build_node("n1", {"cpu": "5", "memory": "16Gi", "pods": 110})],
        queues=[build_queue("default")],
        expect_binds={
            "ns/job-master-0": "n1",
            "ns/job-master-1": "n1",
            "ns/job-master-2": "n1",
            "ns/job-worker-0": "n1",
            "ns/job-worker-1": "n1",
        },
        expect_condition={"ns/job": "Scheduled"},
    )
    run_case(case)


def test_nothing_is_bound_when_the_cluster_is_smaller_than_any_task_minimum() -> None:
    """Three cpus cannot hold master's minimum of 3 with worker's 2: no pod is bound."""
    case = SchedulingCase(
        name="cluster too small",
        origin=SEED,
        podgroups=[build_podgroup("job", "ns", "default", 5, {"master": 3, "worker": 2})],
        pods=_master_worker(100, 1),
        nodes=[
            build_node("n1", {"cpu": "2", "memory": "16Gi", "pods": 110}),
            build_node("n2", {"cpu": "1", "memory": "16Gi", "pods": 110}),
        ],
        queues=[build_queue("default")],
        expect_binds={},
        expect_condition={"ns/job": "GangUnschedulable"},
        expect_task_status={"ns/job": {TaskStatus.PENDING: 8}},
    )
    run = run_case(case)
    message = run.session.job_conditions[JobKey("ns/job")][0].message
    assert message.startswith("gang 0/5 ready; task master 0/3; task worker 0/2")


def test_two_gangs_never_both_end_half_placed_when_competing_for_one_cluster() -> None:
    """Two 3-pod gangs on 4 cpus: one is placed whole, the other not at all."""
    pods = [
        build_pod("ns", f"{job}-w-{i}", None, PENDING, {"cpu": "1"}, job, task="w")
        for job in ("a", "b")
        for i in range(3)
    ]
    case = SchedulingCase(
        name="two gangs",
        origin=SEED,
        podgroups=[
            build_podgroup("a", "ns", "default", 3),
            build_podgroup("b", "ns", "default", 3),
        ],
        pods=pods,
        nodes=[
            build_node("n1", {"cpu": "2", "pods": 110}),
            build_node("n2", {"cpu": "2", "pods": 110}),
        ],
        queues=[build_queue("default")],
        expect_bind_count=3,
    )
    run = run_case(case)
    jobs = {str(d.job) for d in run.result.decisions}
    assert len(jobs) == 1


def test_locked_node_takes_no_pod_when_the_job_is_not_the_target() -> None:
    """docs/design.md#reservation: n1 is locked for ns/target, so ns/other goes to n2 and never to
    n1."""
    case = SchedulingCase(
        name="locked node",
        origin=SEED,
        podgroups=[build_podgroup("other", "ns", "default", 2)],
        pods=[
            build_pod("ns", f"other-w-{i}", None, PENDING, {"cpu": "1"}, "other") for i in range(3)
        ],
        nodes=[
            build_node("n1", {"cpu": "8", "pods": 110}),
            build_node("n2", {"cpu": "2", "pods": 110}),
        ],
        queues=[build_queue("default")],
        reservation=Reservation(target_job=JobKey("ns/target"), locked_nodes=frozenset({"n1"})),
        expect_binds={"ns/other-w-0": "n2", "ns/other-w-1": "n2"},
    )
    run_case(case)


def test_locked_node_takes_pods_when_the_job_is_the_target() -> None:
    """docs/design.md#reservation: the target job may use the node locked for it."""
    case = SchedulingCase(
        name="target uses locked node",
        origin=SEED,
        podgroups=[build_podgroup("target", "ns", "default", 2)],
        pods=[
            build_pod("ns", f"target-w-{i}", None, PENDING, {"cpu": "2"}, "target")
            for i in range(2)
        ],
        nodes=[build_node("n1", {"cpu": "4", "pods": 110})],
        queues=[build_queue("default")],
        reservation=Reservation(target_job=JobKey("ns/target"), locked_nodes=frozenset({"n1"})),
        expect_binds={"ns/target-w-0": "n1", "ns/target-w-1": "n1"},
    )
    run_case(case)


def test_job_waits_for_reservation_when_only_locked_nodes_would_fit() -> None:
    """docs/design.md#pending-reasons: a gang blocked only by locks is WaitingForReservation."""
    case = SchedulingCase(
        name="waiting for reservation",
        origin=SEED,
        podgroups=[build_podgroup("other", "ns", "default", 1)],
        pods=[build_pod("ns", "other-w-0", None, PENDING, {"cpu": "1"}, "other")],
        nodes=[build_node("n1", {"cpu": "4", "pods": 110})],
        queues=[build_queue("default")],
        reservation=Reservation(target_job=JobKey("ns/target"), locked_nodes=frozenset({"n1"})),
        expect_binds={},
        expect_condition={"ns/other": "WaitingForReservation"},
    )
    run_case(case)


def test_gang_reason_is_queue_closed_when_its_queue_is_closed() -> None:
    """docs/design.md#pending-reasons: proportion refuses a closed queue's tasks; the condition says
    QueueClosed."""
    case = SchedulingCase(
        name="queue closed",
        origin=SEED,
        podgroups=[build_podgroup("job", "ns", "q", 1)],
        pods=[build_pod("ns", "job-w-0", None, PENDING, {"cpu": "1"}, "job")],
        nodes=[build_node("n1", {"cpu": "4", "pods": 110})],
        queues=[build_queue("q", state=QueueState.CLOSED)],
        expect_binds={},
        expect_condition={"ns/job": "QueueClosed"},
    )
    run_case(case)


def test_pending_podgroup_is_skipped_when_enqueue_runs_elsewhere() -> None:
    """vcbus allocate leaves Pending PodGroups to podgroup-enqueue."""
    case = SchedulingCase(
        name="pending skipped",
        origin=SEED,
        podgroups=[build_podgroup("job", "ns", "default", 1, phase=PodGroupPhase.PENDING)],
        pods=[build_pod("ns", "job-w-0", None, PENDING, {"cpu": "1"}, "job")],
        nodes=[build_node("n1", {"cpu": "4", "pods": 110})],
        queues=[build_queue("default")],
        expect_binds={},
    )
    run_case(case)


def test_pending_podgroup_is_promoted_when_promote_pending_is_configured() -> None:
    """Volcano's behaviour without an enqueue action, on request."""
    case = SchedulingCase(
        name="pending promoted",
        origin=SEED,
        podgroups=[build_podgroup("job", "ns", "default", 1, phase=PodGroupPhase.PENDING)],
        pods=[build_pod("ns", "job-w-0", None, PENDING, {"cpu": "1"}, "job")],
        nodes=[build_node("n1", {"cpu": "4", "pods": 110})],
        queues=[build_queue("default")],
        configurations=[Configuration(name="allocate", arguments={"promote-pending": True})],
        expect_binds={"ns/job-w-0": "n1"},
    )
    run_case(case)


def test_task_is_pipelined_not_bound_when_only_releasing_resources_fit() -> None:
    """A task fitting only future idle resources (a pod releasing) is Pipelined, not bound."""
    case = SchedulingCase(
        name="pipelined",
        origin=SEED,
        podgroups=[
            build_podgroup("job", "ns", "default", 1),
            build_podgroup("old", "ns", "default", 1, phase=PodGroupPhase.RUNNING),
        ],
        pods=[
            build_pod("ns", "job-w-0", None, PENDING, {"cpu": "2"}, "job"),
            build_pod("ns", "old-w-0", "n1", RUNNING, {"cpu": "2"}, "old"),
        ],
        nodes=[build_node("n1", {"cpu": "2", "pods": 110})],
        queues=[build_queue("default")],
    )
    ssn = open_session(snapshot_of(case), case.tiers, builders=PLUGIN_BUILDERS, now=NOW)
    victim = ssn.jobs[JobKey("ns/old")].tasks["ns-old-w-0"]
    Statement(ssn).evict(victim, "preempted")
    ACTIONS["allocate"]().execute(ssn)
    result = close_session(ssn)
    assert result.decisions == ()
    pipelined = ssn.jobs[JobKey("ns/job")].tasks_by_status[TaskStatus.PIPELINED]
    assert [t.node_name for t in pipelined.values()] == ["n1"]
