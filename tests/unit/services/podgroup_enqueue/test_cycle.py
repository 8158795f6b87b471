"""podgroup-enqueue's cycle: phase changes and reservation events, deterministic, on change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.podgroups import PodGroupCreated
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods import PodCreated
from vcbus.contracts.events.queues import QueueDeclared
from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.scheduler import default_conf, default_enqueue_conf, parse_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import run_cycle as allocate
from vcbus.services.podgroup_enqueue.cycle import CycleResult, next_due, run_cycle

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DEPLOY = Path(__file__).parents[4] / "deploy" / "scheduler"


def _ctx(seconds: float = 0) -> Ctx:
    return Ctx(now=T0 + timedelta(seconds=seconds))


def _snapshot(cpus: str) -> ClusterSnapshot:
    """Two 4-cpu nodes, a busy pod (other queue) on n1, a Pending 2-pod job asking ``cpus``.

    The busy job arrived after the job (it overtook it: the job starves,
    docs/design.md#reservation).
    """
    return ClusterSnapshot.build(
        nodes=[build_node(n, {"cpu": "4", "memory": "8Gi"}) for n in ("n1", "n2")],
        queues=[build_queue("default"), build_queue("other")],
        podgroups=[
            build_podgroup("busy", "ns", "other", 1, None, PodGroupPhase.RUNNING, creation=T0),
            build_podgroup(
                "job",
                "ns",
                "default",
                2,
                None,
                PodGroupPhase.PENDING,
                min_resources={"cpu": cpus},
                uid="uid-job",
                first_seen=T0 - timedelta(minutes=1),
            ),
        ],
        pods=[
            build_pod("ns", "busy-0", "n1", PodPhase.RUNNING, {"cpu": "3"}, "busy"),
            *(
                build_pod("ns", f"job-w-{i}", None, PodPhase.PENDING, {"cpu": "2"}, "job")
                for i in range(2)
            ),
        ],
    )


def _events(result: CycleResult) -> list[str]:
    return [type(e).__name__ for e in result.events]


def test_pending_podgroup_goes_inqueue_when_it_fits() -> None:
    result = run_cycle(_snapshot("4"), default_enqueue_conf(), _ctx())
    changes = [e for e in result.phases if e.job == JobKey("ns/job")]
    [change] = changes
    assert (change.previous_phase, change.phase, change.conditions) == (
        PodGroupPhase.PENDING,
        PodGroupPhase.INQUEUE,
        (),
    )
    assert change.uid == "uid-job"
    assert change.occurred_at == T0


def test_pending_podgroup_gets_its_reason_when_the_cluster_is_overused() -> None:
    result = run_cycle(_snapshot("8"), default_enqueue_conf(), _ctx())
    [change] = [e for e in result.phases if e.job == JobKey("ns/job")]
    assert change.phase is PodGroupPhase.PENDING
    [condition] = change.conditions
    assert (condition.type, condition.reason) == ("Unschedulable", "ClusterOverused")


def test_no_phase_change_is_emitted_when_the_view_already_knows_it() -> None:
    view = ClusterView.from_snapshot(_snapshot("8"))
    first = run_cycle(view.snapshot(), default_enqueue_conf(), _ctx())
    view.assume(first.events)
    second = run_cycle(view.snapshot(), default_enqueue_conf(), _ctx(0.5))
    assert [e for e in second.phases if e.job == JobKey("ns/job")] == []


def test_event_ids_are_the_same_when_the_cycle_runs_twice() -> None:
    first = run_cycle(_snapshot("8"), default_enqueue_conf(), _ctx())
    second = run_cycle(_snapshot("8"), default_enqueue_conf(), _ctx(3))
    assert [e.event_id for e in first.events] == [e.event_id for e in second.events]
    assert len({e.event_id for e in first.events}) == len(first.events)


def test_starving_job_is_elected_and_a_node_locked_when_nothing_is_reserved() -> None:
    result = run_cycle(_snapshot("8"), default_enqueue_conf(), _ctx())
    assert _events(result)[:2] == ["TargetJobElected", "NodesLocked"]
    elected, locked = result.reservations
    assert isinstance(elected, TargetJobElected)
    assert isinstance(locked, NodesLocked)
    assert (elected.job, elected.generation) == (JobKey("ns/job"), 1)
    assert (locked.nodes, locked.mode, locked.generation) == ((NodeName("n2"),), "single", 1)


def test_every_lock_is_released_in_one_event_when_the_target_is_bound() -> None:
    view = ClusterView.from_snapshot(_snapshot("8"))
    view.assume(run_cycle(view.snapshot(), default_enqueue_conf(), _ctx()).events)
    view.assume(run_cycle(view.snapshot(), default_enqueue_conf(), _ctx(1)).events)
    assert view.snapshot().reservation.locked_nodes == frozenset({"n1", "n2"})
    snapshot = view.snapshot()
    for i in range(2):
        pod = snapshot.pods[next(k for k in snapshot.pods if k.endswith(f"job-w-{i}"))].pod
        view.apply(BindingCreated(event_id=f"b{i}", occurred_at=T0, pod=pod, node=NodeName("n2")))
    result = run_cycle(view.snapshot(), default_enqueue_conf(), _ctx(2))
    [unlocked] = [e for e in result.reservations if isinstance(e, NodesUnlocked)]
    assert (unlocked.job, unlocked.nodes, unlocked.reason) == (
        JobKey("ns/job"),
        (NodeName("n1"), NodeName("n2")),
        "target job is ready",
    )
    view.assume(result.events)
    assert view.snapshot().reservation.target_job is None


def test_podgroup_goes_running_when_its_pods_are_bound() -> None:
    snapshot = ClusterSnapshot.build(
        nodes=[build_node("n1", {"cpu": "4"})],
        queues=[build_queue("default")],
        podgroups=[build_podgroup("job", "ns", "default", 1, None, PodGroupPhase.INQUEUE)],
        pods=[build_pod("ns", "job-w-0", "n1", PodPhase.RUNNING, {"cpu": "1"}, "job")],
    )
    [change] = run_cycle(snapshot, default_enqueue_conf(), _ctx()).phases
    assert isinstance(change, PodGroupPhaseChanged)
    assert change.phase is PodGroupPhase.RUNNING


def test_next_lock_step_is_due_after_the_lock_interval_when_a_target_is_locked() -> None:
    view = ClusterView.from_snapshot(_snapshot("8"))
    view.assume(run_cycle(view.snapshot(), default_enqueue_conf(), _ctx()).events)
    assert next_due(view.snapshot(), default_enqueue_conf(), T0) == T0 + timedelta(seconds=1)


def test_nothing_is_due_when_the_configuration_has_no_reservation_plugin() -> None:
    assert next_due(_snapshot("8"), default_conf(), T0) is None


def test_deployed_configurations_parse_when_read() -> None:
    enqueue = parse_conf((DEPLOY / "podgroup-enqueue.yaml").read_text())
    allocator = parse_conf((DEPLOY / "allocator.yaml").read_text())
    assert enqueue.actions == ("elect", "enqueue", "reserve")
    assert allocator.actions == ("allocate", "backfill")
    names = [option.name for tier in enqueue.tiers for option in tier.plugins]
    assert names == [
        option.name for tier in default_enqueue_conf().tiers for option in tier.plugins
    ]
    assert allocator.tiers == default_conf().tiers


def test_allocator_keeps_other_jobs_off_locked_nodes_when_it_folds_the_reservations() -> None:
    """A6 end to end: reservations topic → the allocator's ClusterView → snapshot → predicate."""
    enqueue_view = ClusterView.from_snapshot(_snapshot("8"))
    allocator_view = ClusterView.from_snapshot(_snapshot("8"))
    result = run_cycle(enqueue_view.snapshot(), default_enqueue_conf(), _ctx())
    for event in result.reservations:
        allocator_view.apply(event)
    assert allocator_view.snapshot().reservation.locked_nodes == frozenset({"n2"})
    allocator_view.apply(
        QueueDeclared(event_id="q", occurred_at=T0, queue=build_queue("smalls", weight=10))
    )
    small = build_podgroup("small", "ns", "smalls", 1, None, PodGroupPhase.INQUEUE)
    allocator_view.apply(PodGroupCreated(event_id="s", occurred_at=T0, podgroup=small.podgroup))
    pod = build_pod("ns", "small-w-0", None, PodPhase.PENDING, {"cpu": "2"}, "small").pod
    allocator_view.apply(PodCreated(event_id="p", occurred_at=T0, pod=pod))
    allocator_view.set_phase(JobKey("ns/small"), PodGroupPhase.INQUEUE)
    allocated = allocate(allocator_view.snapshot(), default_conf(), _ctx())
    assert allocated.bindings == ()
    [changed] = [c for c in allocated.conditions if c.job == JobKey("ns/small")]
    assert changed.conditions[0].message == (
        "gang 0/1 ready; 1 node Insufficient cpu, 1 node locked for target job ns/job"
    )


def _locked_for_target(target_cpus: str) -> ClusterSnapshot:
    """Two idle 8-cpu nodes locked for a Pending target; an earlier job Inqueue, unbound.

    The Inqueue job's minResources (12 cpu) leave the overcommit budget (16 x 1.2) too
    small for the target, and its pods may not bind on nodes locked for the target.
    """
    return ClusterSnapshot.build(
        nodes=[build_node(n, {"cpu": "8", "memory": "32Gi"}) for n in ("n1", "n2")],
        queues=[build_queue("default")],
        podgroups=[
            build_podgroup(
                "target",
                "ns",
                "default",
                2,
                None,
                PodGroupPhase.PENDING,
                min_resources={"cpu": target_cpus},
                first_seen=T0,
            ),
            build_podgroup(
                "small", "ns", "default", 2, None, min_resources={"cpu": "12"}, first_seen=T0
            ),
        ],
        pods=[
            build_pod("ns", f"small-w-{i}", None, PodPhase.PENDING, {"cpu": "6"}, "small")
            for i in range(2)
        ],
        reservation=Reservation(
            target_job=JobKey("ns/target"),
            locked_nodes=frozenset({"n1", "n2"}),
            elected_at=T0,
            generation=1,
            locked_at=T0,
        ),
    )


def _phases(result: CycleResult) -> dict[str, PodGroupPhase]:
    return {str(e.job): e.phase for e in result.phases}


def test_target_is_enqueued_on_its_locked_nodes_when_other_jobs_hold_the_budget() -> None:
    snapshot = _locked_for_target("12")
    assert allocate(snapshot, default_conf(), _ctx(60)).bindings == ()

    result = run_cycle(snapshot, default_enqueue_conf(), _ctx(60))

    assert _phases(result)["ns/target"] is PodGroupPhase.INQUEUE


def test_target_waits_when_its_locked_nodes_cannot_hold_it() -> None:
    result = run_cycle(_locked_for_target("17"), default_enqueue_conf(), _ctx(60))

    assert _phases(result).get("ns/target", PodGroupPhase.PENDING) is PodGroupPhase.PENDING
