"""The allocator's will-bind events: reserved with the first stage, folded by every reader."""

from __future__ import annotations

from datetime import timedelta

from tests.unit.core.scheduling.will_bind_builders import (
    MPI,
    NOW,
    build_master,
    build_mpi_podgroup,
    build_nodes,
    build_snapshot,
    build_workers,
)
from vcbus.contracts.events.capacity_reservations import CapacityReleased, CapacityReserved
from vcbus.contracts.events.pods import PodCreated
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.topics import Topic, key_of, topic_of
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.scheduler import default_conf, parse_conf
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import CycleResult, next_due, run_cycle
from vcbus.services.podgroup_enqueue.cycle import run_cycle as enqueue

CTX = Ctx(now=NOW)


def _view() -> ClusterView:
    return ClusterView.from_snapshot(
        build_snapshot(
            podgroups=[build_mpi_podgroup()], pods=build_workers(), node_list=build_nodes("4", "4")
        )
    )


def _assume(view: ClusterView, result: CycleResult) -> None:
    view.assume([*result.bindings, *result.reservations, *result.conditions])


def test_cycle_publishes_the_reservation_after_the_bindings_when_the_first_stage_binds() -> None:
    result = run_cycle(_view().snapshot(), default_conf(), CTX)
    [reserved] = result.reservations
    assert isinstance(reserved, CapacityReserved)
    assert topic_of(reserved).topic is Topic.CAPACITY_RESERVATIONS
    assert key_of(reserved) == MPI
    assert [(p.task, p.index, p.node) for p in reserved.held] == [("master", 0, "n2")]
    assert (reserved.uid, reserved.expires_at) == ("uid-mpi", NOW + timedelta(minutes=10))
    assert result.events == (*result.bindings, reserved, *result.conditions)


def test_event_ids_are_the_same_when_the_cycle_runs_twice() -> None:
    first = run_cycle(_view().snapshot(), default_conf(), CTX)
    second = run_cycle(_view().snapshot(), default_conf(), CTX)
    assert [e.event_id for e in first.reservations] == [e.event_id for e in second.reservations]


def test_nothing_is_reserved_twice_when_the_cycle_assumes_its_own_events() -> None:
    view = _view()
    _assume(view, run_cycle(view.snapshot(), default_conf(), CTX))
    again = run_cycle(view.snapshot(), default_conf(), Ctx(now=NOW + timedelta(seconds=1)))
    assert again.reservations == ()
    assert again.bindings == ()


def test_next_cycle_is_due_at_the_timeout_when_a_reservation_is_held() -> None:
    view = _view()
    _assume(view, run_cycle(view.snapshot(), default_conf(), CTX))
    assert next_due(view.snapshot(), NOW) == NOW + timedelta(minutes=10)
    assert next_due(view.snapshot(), NOW + timedelta(minutes=10)) is None


def test_reservation_is_released_with_a_reason_when_the_timeout_passes() -> None:
    view = _view()
    _assume(view, run_cycle(view.snapshot(), default_conf(), CTX))
    late = run_cycle(view.snapshot(), default_conf(), Ctx(now=NOW + timedelta(minutes=10)))
    [released] = late.reservations
    assert isinstance(released, CapacityReleased)
    assert (released.reason, released.held) == ("WillBindTimeout", ())
    _assume(view, late)
    assert view.snapshot().will_bind[MPI].timed_out


def test_standby_restores_the_reservation_and_binds_the_stage_when_the_master_appears() -> None:
    """A standby that replays the topics holds the same reservation as the active replica."""
    active = _view()
    first = run_cycle(active.snapshot(), default_conf(), CTX)
    _assume(active, first)
    standby = _view()
    _assume(standby, first)
    assert standby.snapshot().will_bind == active.snapshot().will_bind
    for i in range(2):
        standby.apply(
            PodPhaseChanged(
                event_id=f"run-{i}",
                occurred_at=NOW,
                pod=PodKey(f"ns/mpi-worker-{i}"),
                job=MPI,
                task="worker",
                node=NodeName("n1"),
                phase=PodPhase.RUNNING,
            )
        )
    standby.apply(PodCreated(event_id="m", occurred_at=NOW, pod=build_master().pod))
    result = run_cycle(standby.snapshot(), default_conf(), Ctx(now=NOW + timedelta(seconds=2)))
    assert {b.pod.name: b.node for b in result.bindings} == {"mpi-master-0": "n2"}
    [released] = result.reservations
    assert isinstance(released, CapacityReleased)
    assert released.reason == "StageBound"


def test_podgroup_enqueue_counts_the_reservation_as_used_when_it_folds_the_topic() -> None:
    """2 nodes × 4 cpu, factor 1.2, the MPI job Running: idle is 9.6 − 4 (workers) − 2
    (reserved) = 3.6 cpu, so a job asking 4 cpu stays Pending; the same view without the
    reservation event has 5.6 cpu idle and enqueues it."""
    conf = parse_conf(
        "actions: enqueue\ntiers:\n- plugins:\n  - name: gang\n  - name: overcommit\n"
    )
    small = {"name": "s1", "namespace": "ns", "minMember": 1, "minResources": {"cpu": "4"}}
    with_reservation, without = _view(), _view()
    cycle = run_cycle(with_reservation.snapshot(), default_conf(), CTX)
    _assume(with_reservation, cycle)
    without.assume([*cycle.bindings, *cycle.conditions])
    for view in (with_reservation, without):
        view.add_scenario_objects({"podgroups": [small]}, {}, seen_at=NOW)
        view.set_phase(MPI, PodGroupPhase.RUNNING)
    later = Ctx(now=NOW + timedelta(seconds=1))
    held = {
        u.job: u for u in enqueue(with_reservation.snapshot(), conf, later).session.status_updates
    }
    free = {u.job: u for u in enqueue(without.snapshot(), conf, later).session.status_updates}
    s1 = JobKey("ns/s1")
    assert held[s1].conditions[0].reason == "ClusterOverused"
    assert free[s1].phase is PodGroupPhase.INQUEUE
