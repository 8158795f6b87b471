"""The allocator as node lifecycle controller: NotReady nodes take nothing, lost pods fail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.events.nodes import NodeHeartbeat, NodeRemoved
from vcbus.contracts.keys import NodeName
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.node_lifecycle import NodeLifecycleConf
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.scheduler import default_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import run_cycle
from vcbus.services.allocator.node_lifecycle import cordon_not_ready, lost_pods, next_due

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONF = NodeLifecycleConf(grace_seconds=40, eviction_seconds=300)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def beat(node: str, seconds: float) -> NodeHeartbeat:
    return NodeHeartbeat(
        event_id=f"hb-{node}-{seconds}",
        occurred_at=at(seconds),
        name=NodeName(node),
        node=build_node(node, {"cpu": "4", "pods": 10}),
        at=at(seconds),
    )


def snapshot(*heartbeats: NodeHeartbeat, pending: int = 0) -> ClusterSnapshot:
    """Node ``real`` (heartbeats given) runs job ``ran``; ``sim`` never heartbeats and runs
    ``sim``; job ``new`` waits with ``pending`` pods."""
    nodes = [build_node(name, {"cpu": "4", "pods": 10}) for name in ("real", "sim")]
    running = [
        build_pod("ns", "ran-w-0", "real", PodPhase.RUNNING, {"cpu": "1"}, "ran"),
        build_pod("ns", "ran-w-1", "real", PodPhase.PENDING, {"cpu": "1"}, "ran", binding=True),
        build_pod("ns", "done-w-0", "real", PodPhase.SUCCEEDED, {"cpu": "1"}, "done"),
        build_pod("ns", "sim-w-0", "sim", PodPhase.RUNNING, {"cpu": "1"}, "sim"),
    ]
    waiting = [
        build_pod("ns", f"new-w-{i}", None, PodPhase.PENDING, {"cpu": "1"}, "new")
        for i in range(pending)
    ]
    groups = [build_podgroup(name, "ns", "default", 1) for name in ("ran", "done", "sim")]
    if pending:
        groups.append(build_podgroup("new", "ns", "default", pending))
    return ClusterSnapshot.build(
        nodes=nodes,
        queues=[build_queue("default")],
        podgroups=groups,
        pods=[*running, *waiting],
        heartbeats=heartbeats,
    )


def test_a_silent_node_takes_no_new_pod_once_the_grace_period_has_passed() -> None:
    silent = cordon_not_ready(snapshot(beat("real", 0), pending=2), at(41), CONF)

    result = run_cycle(silent, default_conf(), Ctx(now=at(41)))

    assert silent.nodes["real"].unschedulable
    assert not silent.nodes["sim"].unschedulable
    assert {str(b.node) for b in result.bindings} == {"sim"}


def test_a_node_within_its_grace_period_is_left_schedulable() -> None:
    fresh = snapshot(beat("real", 0))

    assert cordon_not_ready(fresh, at(39), CONF) is fresh


def test_simulated_nodes_are_never_cordoned_nor_lost() -> None:
    never = snapshot()

    assert cordon_not_ready(never, at(10**6), CONF) is never
    assert lost_pods(never, at(10**6), CONF) == ()


def test_active_pods_of_a_node_silent_past_the_eviction_timeout_end_failed_node_lost() -> None:
    assert lost_pods(snapshot(beat("real", 0)), at(339), CONF) == ()

    lost = lost_pods(snapshot(beat("real", 0)), at(340), CONF)

    assert [(str(e.pod), e.phase, e.reason, str(e.node)) for e in lost] == [
        ("ns/ran-w-0", PodPhase.FAILED, "NodeLost", "real"),
        ("ns/ran-w-1", PodPhase.FAILED, "NodeLost", "real"),
    ]
    assert [e.pod_uid for e in lost] == ["ns-ran-w-0", "ns-ran-w-1"]
    assert lost[0].message.startswith("node real sent no heartbeat since 2026-01-01T00:00:00")


def test_lost_statuses_have_the_same_ids_whenever_they_are_decided() -> None:
    first = lost_pods(snapshot(beat("real", 0)), at(340), CONF)
    later = lost_pods(snapshot(beat("real", 0)), at(900), CONF)

    assert [e.event_id for e in first] == [e.event_id for e in later]


def test_lost_pods_are_decided_once_when_the_view_folds_its_own_statuses() -> None:
    view = ClusterView.from_snapshot(snapshot(beat("real", 0)))
    lost = lost_pods(view.snapshot(), at(340), CONF)

    view.assume(lost)

    assert lost
    assert lost_pods(view.snapshot(), at(341), CONF) == ()


def test_a_node_that_heartbeats_again_is_schedulable_again() -> None:
    view = ClusterView.from_snapshot(snapshot(beat("real", 0)))
    assert cordon_not_ready(view.snapshot(), at(100), CONF).nodes["real"].unschedulable

    view.apply(beat("real", 99))

    recovered = view.snapshot()
    assert not cordon_not_ready(recovered, at(100), CONF).nodes["real"].unschedulable
    assert lost_pods(recovered, at(350), CONF) == ()


def test_an_older_heartbeat_read_late_does_not_replace_a_newer_one() -> None:
    view = ClusterView.from_snapshot(snapshot(beat("real", 50)))

    view.apply(beat("real", 0))

    assert view.snapshot().heartbeats["real"].at == at(50)


def test_a_heartbeat_alone_registers_its_node_as_a_compacted_topic_keeps_it() -> None:
    view = ClusterView()

    view.apply(beat("real", 0))

    assert view.snapshot().nodes["real"] == build_node("real", {"cpu": "4", "pods": 10})


def test_active_pods_of_a_removed_real_node_end_node_lost_at_once() -> None:
    view = ClusterView.from_snapshot(snapshot(beat("real", 0)))
    view.apply(NodeRemoved(event_id="rm", occurred_at=at(1), name=NodeName("real")))

    lost = lost_pods(view.snapshot(), at(1), CONF)

    assert [(str(e.pod), e.reason, e.message) for e in lost] == [
        ("ns/ran-w-0", "NodeLost", "node real was removed"),
        ("ns/ran-w-1", "NodeLost", "node real was removed"),
    ]
    assert next_due(view.snapshot(), at(1), CONF) is None


def test_the_next_due_moment_is_the_next_not_ready_or_lost_time() -> None:
    state = snapshot(beat("real", 0))

    assert next_due(state, at(0), CONF) == at(40)
    assert next_due(state, at(40), CONF) == at(340)
    assert next_due(state, at(340), CONF) is None
    assert next_due(snapshot(), at(0), CONF) is None
