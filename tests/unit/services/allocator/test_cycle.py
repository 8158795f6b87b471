"""The allocator's cycle: bindings and condition changes as events, deterministic ids."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.events.pods_status import BindingRefused
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.scheduler import default_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import run_cycle

CTX = Ctx(now=datetime(2026, 1, 1, tzinfo=UTC))


def _snapshot(cpus: str = "4") -> ClusterSnapshot:
    return ClusterSnapshot.build(
        nodes=[build_node("n1", {"cpu": cpus, "memory": "8Gi", "pods": 110})],
        queues=[build_queue("default")],
        podgroups=[build_podgroup("job", "ns", "default", 2)],
        pods=[
            build_pod("ns", f"job-w-{i}", None, PodPhase.PENDING, {"cpu": "1"}, "job")
            for i in range(2)
        ],
    )


def test_cycle_emits_bindings_and_a_scheduled_condition_when_the_gang_fits() -> None:
    result = run_cycle(_snapshot(), default_conf(), CTX)
    assert [(str(b.pod.name), str(b.node)) for b in result.bindings] == [
        ("job-w-0", "n1"),
        ("job-w-1", "n1"),
    ]
    [changed] = result.conditions
    assert changed.job == JobKey("ns/job")
    assert changed.conditions[0].type == "Scheduled"
    assert result.events == (*result.bindings, *result.conditions)


def test_cycle_emits_gang_unschedulable_when_the_gang_does_not_fit() -> None:
    result = run_cycle(_snapshot(cpus="1"), default_conf(), CTX)
    assert result.bindings == ()
    [changed] = result.conditions
    [condition] = changed.conditions
    assert (condition.type, condition.reason) == ("Unschedulable", "GangUnschedulable")
    assert condition.message == "gang 0/2 ready; queue default is at its deserved share (cpu 1)"


def test_event_ids_are_the_same_when_the_cycle_runs_twice() -> None:
    first = run_cycle(_snapshot(), default_conf(), CTX)
    second = run_cycle(_snapshot(), default_conf(), CTX)
    assert [e.event_id for e in first.events] == [e.event_id for e in second.events]


def test_no_condition_is_emitted_when_it_is_already_known() -> None:
    """Conditions are published only on change versus the snapshot's."""
    view = ClusterView.from_snapshot(_snapshot(cpus="1"))
    first = run_cycle(view.snapshot(), default_conf(), CTX)
    view.assume(first.conditions)
    second = run_cycle(view.snapshot(), default_conf(), CTX)
    assert second.conditions == ()


def test_pods_are_not_placed_again_when_their_bindings_are_assumed() -> None:
    view = ClusterView.from_snapshot(_snapshot())
    first = run_cycle(view.snapshot(), default_conf(), CTX)
    view.assume([*first.bindings, *first.conditions])
    second = run_cycle(view.snapshot(), default_conf(), CTX)
    assert second.bindings == ()
    assert second.conditions == ()


def test_binding_gets_a_new_event_id_when_retried_after_a_refusal() -> None:
    view = ClusterView.from_snapshot(_snapshot())
    first = run_cycle(view.snapshot(), default_conf(), CTX)
    view.assume(first.bindings)
    for binding in first.bindings:
        view.apply(
            BindingRefused(
                event_id=f"r-{binding.pod.name}",
                occurred_at=CTX.now,
                pod=PodKey(f"ns/{binding.pod.name}"),
                job=JobKey("ns/job"),
                task="",
                node=NodeName("n1"),
                reason="Overcommitted",
            )
        )
    retry = run_cycle(view.snapshot(), default_conf(), CTX)
    assert [b.attempt for b in retry.bindings] == [1, 1]
    assert {b.event_id for b in retry.bindings}.isdisjoint({b.event_id for b in first.bindings})
