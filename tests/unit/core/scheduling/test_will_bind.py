"""Will-bind: capacity reserved for a dependent job's later stages, handed over, released."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from tests.support.builders import build_podgroup
from tests.unit.core.scheduling.will_bind_builders import (
    MPI,
    NOW,
    RUNNING,
    binds,
    build_conf,
    build_held,
    build_master,
    build_mpi_podgroup,
    build_nodes,
    build_small,
    build_snapshot,
    build_workers,
    run,
    used_cpu,
)
from vcbus.contracts.objects.job import ANNOTATION_WILL_BIND
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import WILL_BIND_TIMEOUT
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.framework.conf import ConfError, SchedulerConf
from vcbus.core.scheduling.framework.results import SessionResult, WillBindChangeKind
from vcbus.core.scheduling.framework.session import Session, open_session
from vcbus.core.scheduling.framework.will_bind import (
    CAPACITY_RESERVED,
    CONDITION_TYPE,
    JOB_DELETED,
    JOB_ENDED,
    NOT_NEEDED,
    STAGE_BOUND,
    WILL_BIND_DISABLED,
    WillBindArgs,
)
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.plugins.overcommit import OvercommitPlugin
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.scheduler import parse_conf
from vcbus.core.scheduling.snapshot import PodGroupState, PodState


def _first_stage(*smalls: str, **arguments: str | bool | int) -> tuple[Session, SessionResult]:
    """Workers pending on two 4-cpu nodes, small 1-cpu jobs pending beside them."""
    groups = [build_small(name) for name in smalls]
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(), *(g for g, _ in groups)],
        pods=[*build_workers(), *(p for _, p in groups)],
        node_list=build_nodes("4", "4"),
    )
    return run(shot, build_conf(**arguments))


def test_master_capacity_is_reserved_when_the_workers_are_committed() -> None:
    ssn, result = _first_stage()
    assert binds(result) == {"ns/mpi-worker-0": "n1", "ns/mpi-worker-1": "n1"}
    [change] = result.will_bind_changes
    assert change.kind is WillBindChangeKind.RESERVED
    assert (change.job, change.reason) == (MPI, CAPACITY_RESERVED)
    assert [(p.task, p.index, p.node, dict(p.requests)) for p in change.pods] == [
        ("master", 0, "n2", {"cpu": 2000})
    ]
    assert change.held == change.pods
    assert change.expires_at == NOW + timedelta(minutes=10)
    assert used_cpu(ssn, "n2") == 2000


def test_small_jobs_cannot_take_the_reserved_room_when_they_come_in_the_same_cycle() -> None:
    _, result = _first_stage("s1", "s2", "s3", "s4")
    small = sorted(pod for pod in binds(result) if pod.startswith("ns/s"))
    assert small == ["ns/s1-w-0", "ns/s2-w-0"]


def test_small_jobs_take_the_masters_room_when_will_bind_is_off() -> None:
    _, result = _first_stage("s1", "s2", "s3", "s4", **{"will-bind": False})
    assert result.will_bind_changes == ()
    assert sum(pod.startswith("ns/s") for pod in binds(result)) == 4


def test_nothing_is_reserved_when_the_job_opts_out_by_annotation() -> None:
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(annotations={ANNOTATION_WILL_BIND: "false"})],
        pods=build_workers(),
        node_list=build_nodes("4", "4"),
    )
    _, result = run(shot)
    assert len(result.decisions) == 2
    assert result.will_bind_changes == ()


def test_timeout_of_a_new_reservation_comes_from_the_configuration() -> None:
    _, result = _first_stage(**{"will-bind-timeout": "90s"})
    assert result.will_bind_changes[0].expires_at == NOW + timedelta(seconds=90)


def _second_stage(
    *others: tuple[PodGroupState, PodState],
    node_list: list[Node] | None = None,
) -> tuple[Session, SessionResult]:
    """Workers Running on n1, master-0 reserved on n2, the master's pod just created."""
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(PodGroupPhase.RUNNING), *(g for g, _ in others)],
        pods=[*build_workers("n1", RUNNING), build_master(), *(p for _, p in others)],
        node_list=node_list or build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    return run(shot)


def test_master_binds_on_its_reserved_node_and_releases_it_when_its_pod_appears() -> None:
    """s1 (3 cpu) would fit on n2 only in the master's room, so it waits."""
    ssn, result = _second_stage(build_small("s1", cpu="3"))
    assert binds(result)["ns/mpi-master-0"] == "n2"
    assert "ns/s1-w-0" not in binds(result)
    [change] = result.will_bind_changes
    assert change.kind is WillBindChangeKind.RELEASED
    assert (change.reason, change.held) == (STAGE_BOUND, ())
    assert [(p.task, p.index) for p in change.pods] == [("master", 0)]
    assert MPI not in ssn.will_bind.held


def test_master_goes_to_its_reserved_node_when_another_node_scores_higher() -> None:
    """The reserved node wins over the scores (n3 is empty and larger)."""
    _, result = _second_stage(node_list=build_nodes("4", "4", "16"))
    assert binds(result) == {"ns/mpi-master-0": "n2"}


def test_master_goes_elsewhere_when_its_reserved_node_no_longer_passes_predicates() -> None:
    """The reserved node was cordoned: the phantom's room is given back, the pod placed anyway."""
    node_list = build_nodes("4", "4", "4")
    node_list[1] = msgspec.structs.replace(node_list[1], unschedulable=True)
    ssn, result = _second_stage(node_list=node_list)
    assert binds(result) == {"ns/mpi-master-0": "n3"}
    assert used_cpu(ssn, "n2") == 0
    assert result.will_bind_changes[0].reason == STAGE_BOUND


def test_reservation_is_held_again_when_the_stages_gang_cannot_be_placed() -> None:
    """Two masters needed, master-1 fits nowhere: the statement is discarded, master-0's
    phantom is counted on n2 again and nothing is released."""
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(PodGroupPhase.RUNNING, masters=2, master_cpu=3000)],
        pods=[*build_workers("n1", RUNNING), build_master(0, cpu="3"), build_master(1, cpu="3")],
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"), cpu=3000)],
    )
    ssn, result = run(shot)
    assert result.decisions == ()
    assert result.will_bind_changes == ()
    assert used_cpu(ssn, "n2") == 3000
    assert set(ssn.will_bind.held[MPI].accounted) == {("master", 0)}


def test_a_stage_is_reserved_whole_or_not_at_all_when_it_does_not_fit() -> None:
    """Two 3-cpu masters: one would fit on n2, the second nowhere, so none is reserved."""
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(masters=2, master_cpu=3000)],
        pods=build_workers(),
        node_list=build_nodes("4", "4"),
    )
    ssn, result = run(shot)
    assert len(result.decisions) == 2
    assert result.will_bind_changes == ()
    assert used_cpu(ssn, "n2") == 0


def test_stage_is_reserved_in_a_later_cycle_when_room_frees_up() -> None:
    """A running dependent job without a reservation gets one before other jobs are placed."""
    s1, s1_pod = build_small("s1", cpu="2")
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(PodGroupPhase.RUNNING), s1],
        pods=[*build_workers("n1", RUNNING), s1_pod],
        node_list=build_nodes("4", "2"),
    )
    ssn, result = run(shot)
    assert [c.kind for c in result.will_bind_changes] == [WillBindChangeKind.RESERVED]
    assert binds(result) == {}
    assert used_cpu(ssn, "n2") == 2000


@pytest.mark.parametrize(
    ("podgroups", "pods", "reason"),
    [
        pytest.param([], [], JOB_DELETED, id="podgroup deleted"),
        pytest.param(
            [build_mpi_podgroup(PodGroupPhase.PENDING, uid="uid-mpi-2")],
            [],
            JOB_DELETED,
            id="podgroup recreated",
        ),
        pytest.param(
            [build_mpi_podgroup(PodGroupPhase.COMPLETED)],
            build_workers("n1", PodPhase.SUCCEEDED),
            JOB_ENDED,
            id="job completed",
        ),
        pytest.param(
            [build_mpi_podgroup(PodGroupPhase.RUNNING)],
            build_workers("n1", PodPhase.FAILED),
            JOB_ENDED,
            id="no pod placed any more",
        ),
        pytest.param(
            [
                build_mpi_podgroup(
                    PodGroupPhase.RUNNING, annotations={ANNOTATION_WILL_BIND: "false"}
                )
            ],
            build_workers("n1", RUNNING),
            WILL_BIND_DISABLED,
            id="job opted out",
        ),
    ],
)
def test_reservation_is_released_when_its_job_can_no_longer_use_it(
    podgroups: list[PodGroupState], pods: list[PodState], reason: str
) -> None:
    shot = build_snapshot(
        podgroups=podgroups,
        pods=pods,
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    ssn, result = run(shot)
    [change] = result.will_bind_changes
    assert (change.kind, change.reason, change.held) == (WillBindChangeKind.RELEASED, reason, ())
    assert MPI not in ssn.will_bind.held
    assert used_cpu(ssn, "n2") == 0


def test_reservation_of_a_deleted_job_is_never_counted_when_the_session_opens() -> None:
    shot = build_snapshot(
        podgroups=[],
        pods=[],
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    ssn, _ = run(shot, SchedulerConf(actions=(), tiers=build_conf().tiers))
    assert used_cpu(ssn, "n2") == 0
    assert ssn.will_bind.reserved(MPI) == Resource()


def test_reservation_is_released_when_will_bind_is_switched_off() -> None:
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(PodGroupPhase.RUNNING)],
        pods=build_workers("n1", RUNNING),
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    _, result = run(shot, build_conf(**{"will-bind": False}))
    assert [c.reason for c in result.will_bind_changes] == [WILL_BIND_DISABLED]


def test_pods_the_job_no_longer_has_are_released_when_the_stage_shrank() -> None:
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(PodGroupPhase.RUNNING)],
        pods=build_workers("n1", RUNNING),
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"), ("master", 1, "n2"))],
    )
    ssn, result = run(shot)
    [change] = result.will_bind_changes
    assert (change.reason, [p.index for p in change.pods]) == (NOT_NEEDED, [1])
    assert [(p.task, p.index) for p in change.held] == [("master", 0)]
    assert used_cpu(ssn, "n2") == 2000


def test_job_is_requeued_with_a_reason_when_its_reservation_times_out() -> None:
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(PodGroupPhase.RUNNING)],
        pods=build_workers("n1", RUNNING),
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"), expires_at=NOW)],
    )
    ssn, result = run(shot)
    [change] = result.will_bind_changes
    assert (change.reason, change.held) == (WILL_BIND_TIMEOUT, ())
    assert "re-queued" in change.message
    assert used_cpu(ssn, "n2") == 0
    [update] = [u for u in result.podgroup_updates if u.job == MPI]
    [will_bind] = [c for c in update.conditions if c.type == CONDITION_TYPE]
    assert (will_bind.status, will_bind.reason) == ("False", WILL_BIND_TIMEOUT)


def test_no_new_reservation_is_made_when_the_job_timed_out_before() -> None:
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(PodGroupPhase.RUNNING)],
        pods=build_workers("n1", RUNNING),
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(timed_out=True)],
    )
    ssn, result = run(shot)
    assert result.will_bind_changes == ()
    assert used_cpu(ssn, "n2") == 0


def test_held_reservation_shows_as_a_will_bind_condition_when_the_session_closes() -> None:
    _, result = _first_stage()
    [update] = [u for u in result.podgroup_updates if u.job == MPI]
    assert [c.type for c in update.conditions] == ["Scheduled", CONDITION_TYPE]
    will_bind = update.conditions[1]
    assert (will_bind.status, will_bind.reason) == ("True", CAPACITY_RESERVED)
    assert will_bind.message == (
        "1 pod(s) of later stages reserved until 2026-01-01T00:10:00+00:00: master-0 on n2"
    )


# Accounting: reserved capacity is never counted twice -----------------------------------------
def test_node_used_and_reserved_stay_within_allocatable_when_reservations_are_made() -> None:
    ssn, _ = _first_stage("s1", "s2", "s3", "s4", "s5")
    for node in ssn.node_list:
        assert node.used.less_equal(node.allocatable), node.name
    assert used_cpu(ssn, "n1") + used_cpu(ssn, "n2") == 8000


def test_a_phantom_replaced_by_its_real_pod_is_counted_once_when_the_pod_binds() -> None:
    ssn, result = _second_stage()
    assert binds(result) == {"ns/mpi-master-0": "n2"}
    assert used_cpu(ssn, "n2") == 2000
    assert ssn.will_bind.reserved(MPI) == Resource()


def test_reserved_capacity_counts_as_used_for_enqueue_when_the_job_holds_it() -> None:
    """overcommit (factor 1): idle = 8 − 4 (workers) − 2 (reserved) = 2 cpu; the Inqueue MPI
    job's minResources (6) count only their part not reserved yet (4), so the reserved 2 cpu
    are counted once, and a 1-cpu job does not fit beside them."""
    enqueue = parse_conf(
        "actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n"
        "  - name: overcommit\n    arguments: {overcommit-factor: 1.0}\n"
    )
    s1 = build_podgroup(
        "s1", "ns", "default", 1, phase=PodGroupPhase.PENDING, min_resources={"cpu": "1"}
    )
    _, s1_pod = build_small("s1")
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(), s1],
        pods=[*build_workers("n1", RUNNING), s1_pod],
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    ssn = open_session(shot, enqueue.tiers, builders=PLUGIN_BUILDERS, now=NOW)
    overcommit = next(p for _, p in ssn.plugins if isinstance(p, OvercommitPlugin))
    assert (overcommit.idle["cpu"], overcommit.inqueue["cpu"]) == (2000, 4000)
    ACTIONS["enqueue"]().execute(ssn)
    assert ssn.jobs[s1.podgroup.job].phase is PodGroupPhase.PENDING
    assert "ClusterOverused" in ssn.enqueue_reasons[s1.podgroup.job]


# Configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "arguments",
    ["{will-bind: maybe}", "{will-bind-timeout: 0}", "{will-bind-timeout: soon}"],
)
def test_configuration_is_refused_when_a_will_bind_argument_is_malformed(arguments: str) -> None:
    text = f'actions: "allocate"\nconfigurations:\n- name: allocate\n  arguments: {arguments}\n'
    with pytest.raises(ConfError, match="action 'allocate'"):
        parse_conf(text)


def test_will_bind_is_on_with_a_ten_minute_timeout_when_nothing_is_configured() -> None:
    assert WillBindArgs.parse({}) == WillBindArgs(enabled=True, timeout=timedelta(minutes=10))
    assert WillBindArgs.parse({"will-bind": "false"}).enabled is False
