"""The agent's core: bindings accepted and refused, reports published, evictions and deletions."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import msgspec

from vcbus.contracts.events.bindings import BindingCreated, PodEvictionRequested
from vcbus.contracts.events.pods import PodDeleted
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.services.agent import core
from vcbus.services.agent.core import AgentConf, Forget, Stop
from vcbus.services.agent.model import AgentState, PodReport

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONF = AgentConf(
    node="host-a",
    host_ip="10.0.0.7",
    allocatable={"cpu": 2000, "memory": 4 * 2**30, "pods": 3},
    port_range=(31000, 31003),
)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def binding(
    index: int = 0, *, node: str = "host-a", cpu: int = 500, uid: str = ""
) -> BindingCreated:
    name = f"j-worker-{index}"
    pod = Pod(
        name=name,
        namespace="default",
        job=JobKey("default/j"),
        task="worker",
        index=index,
        podgroup="j",
        uid=uid or f"uid-{index}",
        requests={"cpu": cpu},
        termination_grace_period_seconds=5,
    )
    return BindingCreated(event_id=f"b-{name}-{uid}", occurred_at=T0, pod=pod, node=NodeName(node))


def bound(state: AgentState, index: int = 0, ports: tuple[int, ...] = (23456,)) -> AgentState:
    outcome = core.bind(state, binding(index), CONF, at(0), wanted_ports=ports)
    return outcome.state


def running(uid: str = "uid-0") -> AgentState:
    state = core.launched(bound(AgentState()), uid).state
    return core.observe(
        state, uid, PodReport(phase=PodPhase.RUNNING, ran=True, supervisor=9), CONF, at(1)
    ).state


def only(emit: tuple[object, ...]) -> PodPhaseChanged:
    assert len(emit) == 1
    assert isinstance(emit[0], PodPhaseChanged)
    return emit[0]


def test_a_binding_to_this_node_is_pending_with_the_nodes_address_and_its_host_ports() -> None:
    outcome = core.bind(AgentState(), binding(), CONF, at(0), wanted_ports=[23456, 22])
    event = only(outcome.emit)
    assert (event.phase, event.reason, event.node, event.host_ip) == (
        PodPhase.PENDING,
        "Bound",
        "host-a",
        "10.0.0.7",
    )
    assert sorted(event.ports) == [22, 23456]
    assert all(31000 <= port <= 31003 for port in event.ports.values())
    assert outcome.state.pods["uid-0"].ports == event.ports


def test_a_binding_to_another_node_is_not_this_agents() -> None:
    outcome = core.bind(AgentState(), binding(node="host-b"), CONF, at(0), wanted_ports=[])
    assert outcome == core.Outcome(AgentState())


def test_two_pods_never_share_a_host_port() -> None:
    state = bound(bound(AgentState(), 0, (23456, 22)), 1, (23456, 22))
    ports = [p for pod in state.pods.values() for p in pod.ports.values()]
    assert len(set(ports)) == 4


def test_ports_another_process_of_the_host_holds_are_not_handed_out() -> None:
    outcome = core.bind(
        AgentState(), binding(), CONF, at(0), wanted_ports=[80], busy_ports={31000, 31001}
    )
    assert only(outcome.emit).ports == {80: 31002}


def test_a_binding_read_again_before_its_pod_started_publishes_the_same_status() -> None:
    first = core.bind(AgentState(), binding(), CONF, at(0), wanted_ports=[])
    again = core.bind(first.state, binding(), CONF, at(5), wanted_ports=[])
    assert only(again.emit).event_id == only(first.emit).event_id
    assert again.state == first.state
    started = core.launched(first.state, "uid-0").state
    assert core.bind(started, binding(), CONF, at(5), wanted_ports=[]).emit == ()


def test_a_pod_that_does_not_fit_is_refused_as_the_simulated_cluster_refuses() -> None:
    state = bound(bound(AgentState(), 0), 1)
    outcome = core.bind(state, binding(2, cpu=1500), CONF, at(0), wanted_ports=[])
    (refused,) = outcome.emit
    assert isinstance(refused, BindingRefused)
    assert refused.reason == "NodeOvercommitted"
    assert "cpu requested 1500m, free 1 of 2 allocatable" in refused.message
    assert outcome.state == state


def test_a_pod_whose_ports_cannot_be_allocated_is_refused() -> None:
    state = bound(AgentState(), 0, (1, 2, 3))
    outcome = core.bind(state, binding(1), CONF, at(0), wanted_ports=[1, 2])
    (refused,) = outcome.emit
    assert isinstance(refused, BindingRefused)
    assert refused.reason == "PortsExhausted"


def test_a_started_pod_is_running_then_succeeded_as_its_supervisor_reports() -> None:
    state = running()
    final = PodReport(phase=PodPhase.SUCCEEDED, ran=True, exit_code=0, reason="Completed")
    outcome = core.observe(state, "uid-0", final, CONF, at(2))
    event = only(outcome.emit)
    assert (event.phase, event.reason, event.exit_code) == (PodPhase.SUCCEEDED, "Completed", 0)
    assert not outcome.state.pods["uid-0"].is_active


def test_an_exit_seen_only_when_final_is_published_running_then_failed() -> None:
    state = core.launched(bound(AgentState()), "uid-0").state
    final = PodReport(phase=PodPhase.FAILED, ran=True, exit_code=137, reason="OOMKilled")
    outcome = core.observe(state, "uid-0", final, CONF, at(2))
    assert [(e.phase, e.reason, e.exit_code) for e in outcome.emit] == [  # type: ignore[attr-defined]
        (PodPhase.RUNNING, "Started", None),
        (PodPhase.FAILED, "OOMKilled", 137),
    ]


def test_a_container_restart_is_published_with_its_count() -> None:
    report = PodReport(phase=PodPhase.RUNNING, ran=True, restart_count=1, supervisor=9)
    event = only(core.observe(running(), "uid-0", report, CONF, at(3)).emit)
    assert (event.phase, event.restart_count) == (PodPhase.RUNNING, 1)


def test_a_pod_waiting_to_start_is_published_pending_once_per_change() -> None:
    state = core.launched(bound(AgentState()), "uid-0").state
    waits = [
        PodReport(reason="ImagePullBackOff", message=f"pull {n} of 4 failed", supervisor=9)
        for n in (1, 1, 2)
    ]
    published: list[PodPhaseChanged] = []
    for second, report in enumerate(waits, start=1):
        outcome = core.observe(state, "uid-0", report, CONF, at(second))
        state = outcome.state
        published.extend(e for e in outcome.emit if isinstance(e, PodPhaseChanged))
    assert [(e.phase, e.reason, e.message) for e in published] == [
        (PodPhase.PENDING, "ImagePullBackOff", "pull 1 of 4 failed"),
        (PodPhase.PENDING, "ImagePullBackOff", "pull 2 of 4 failed"),
    ]
    assert len({e.event_id for e in published}) == 2
    started = PodReport(phase=PodPhase.RUNNING, ran=True, supervisor=9)
    assert only(core.observe(state, "uid-0", started, CONF, at(5)).emit).reason == "Started"


def test_a_pod_whose_supervisor_is_gone_ends_lost() -> None:
    event = only(core.observe(running(), "uid-0", None, CONF, at(3)).emit)
    assert (event.phase, event.reason) == (PodPhase.FAILED, "Lost")


def test_an_evicted_pod_is_stopped_then_ends_evicted_with_the_takers_message() -> None:
    request = PodEvictionRequested(
        event_id="e1",
        occurred_at=at(2),
        pod=PodKey("default/j-worker-0"),
        pod_uid="uid-0",
        job=JobKey("default/j"),
        task="worker",
        node=NodeName("host-a"),
        reason="Preempted",
        taker="default/big",
        preemptor=JobKey("default/big"),
    )
    stopping = core.evict(running(), request, CONF)
    assert stopping.actions == (Stop("uid-0"),)
    assert stopping.emit == ()
    stopped = PodReport(phase=PodPhase.FAILED, ran=True, exit_code=143, stopped=True)
    event = only(core.observe(stopping.state, "uid-0", stopped, CONF, at(3)).emit)
    assert (event.phase, event.reason, event.message) == (
        PodPhase.FAILED,
        "Evicted",
        "Preempted by default/big",
    )


def test_a_deleted_pod_is_stopped_then_forgotten_with_nothing_published() -> None:
    deleted = PodDeleted(
        event_id="d1",
        occurred_at=at(2),
        job=JobKey("default/j"),
        pod=PodKey("default/j-worker-0"),
        pod_uid="uid-0",
    )
    stopping = core.delete(running(), deleted)
    assert stopping.actions == (Stop("uid-0"),)
    ended = PodReport(phase=PodPhase.FAILED, ran=True, exit_code=143, stopped=True)
    outcome = core.observe(stopping.state, "uid-0", ended, CONF, at(3))
    assert outcome.emit == ()
    assert outcome.actions == (Forget("uid-0"),)
    assert core.forgotten(outcome.state, "uid-0") == AgentState(seq=1)


def test_a_deleted_pod_whose_supervisor_is_gone_is_forgotten_not_lost() -> None:
    deleted = PodDeleted(
        event_id="d1",
        occurred_at=at(2),
        job=JobKey("default/j"),
        pod=PodKey("default/j-worker-0"),
        pod_uid="uid-0",
    )
    stopping = core.delete(running(), deleted)
    outcome = core.observe(stopping.state, "uid-0", None, CONF, at(3))
    assert (outcome.emit, outcome.actions) == ((), (Forget("uid-0"),))


def test_a_binding_read_again_after_its_pod_was_deleted_and_forgotten_runs_nothing() -> None:
    """Killed before the binding's offset was committed, the agent reads the binding again
    after its pod ended, was deleted (its job restarted) and was forgotten: the pod is not
    bound again, so it is not run twice (a chaos run saw it end twice)."""
    ended = PodReport(phase=PodPhase.SUCCEEDED, ran=True, exit_code=0)
    state = core.observe(running(), "uid-0", ended, CONF, at(2)).state
    deleted = PodDeleted(
        event_id="d1",
        occurred_at=at(3),
        job=JobKey("default/j"),
        pod=PodKey("default/j-worker-0"),
        pod_uid="uid-0",
    )
    gone = core.delete(state, deleted)
    assert gone.actions == (Forget("uid-0"),)
    state = core.forgotten(gone.state, "uid-0")
    again = core.bind(state, binding(), CONF, at(4), wanted_ports=[], deleted={"uid-0"})
    assert (again.state, again.emit, again.actions) == (state, (), ())


def test_a_pod_another_node_has_bound_is_refused_already_bound() -> None:
    """Two allocators that both held the lease bound one pod to two agents (a chaos run
    under load): the second agent refuses, as the simulated cluster does."""
    outcome = core.bind(
        AgentState(), binding(), CONF, at(0), wanted_ports=[], bound_elsewhere="host-b"
    )
    assert outcome.state == AgentState()
    assert len(outcome.emit) == 1
    refused = outcome.emit[0]
    assert isinstance(refused, BindingRefused)
    assert (refused.reason, refused.pod_uid, refused.node) == ("AlreadyBound", "uid-0", "host-a")
    assert "already bound to node host-b" in refused.message
    here = core.bind(
        AgentState(), binding(), CONF, at(0), wanted_ports=[], bound_elsewhere="host-a"
    )
    assert only(here.emit).reason == "Bound"


def test_a_pod_deleted_before_its_binding_is_read_is_not_bound() -> None:
    outcome = core.bind(AgentState(), binding(), CONF, at(0), wanted_ports=[], deleted={"uid-0"})
    assert (outcome.state, outcome.emit) == (AgentState(), ())
    other = core.bind(AgentState(), binding(1), CONF, at(0), wanted_ports=[], deleted={"uid-0"})
    assert only(other.emit).reason == "Bound"


def test_an_old_deletion_without_uid_does_not_end_a_pod_that_reused_the_name() -> None:
    old = PodDeleted(
        event_id="d0",
        occurred_at=T0 - timedelta(seconds=1),
        job=JobKey("default/j"),
        pod=PodKey("default/j-worker-0"),
    )
    assert core.delete(running(), old).actions == ()


def test_without_cgroups_each_status_says_limits_are_not_enforced() -> None:
    loose = dataclasses.replace(CONF, limits_enforced=False)
    event = only(core.bind(AgentState(), binding(), loose, at(0), wanted_ports=[]).emit)
    assert "limits not enforced" in event.message


def test_a_binding_whose_fields_are_not_names_is_refused_naming_the_field() -> None:
    """A uid or a name that would become a path here (``..``, ``/``) starts nothing."""
    for uid in ("../../victim", "/etc", ".", "a/b", ""):
        forged = binding(uid="placeholder")
        forged = msgspec.structs.replace(forged, pod=msgspec.structs.replace(forged.pod, uid=uid))
        outcome = core.bind(AgentState(), forged, CONF, at(0), wanted_ports=())
        assert outcome.state == AgentState()
        (refused,) = outcome.emit
        assert isinstance(refused, BindingRefused)
        assert refused.reason == "InvalidBinding"
        assert "pod.uid" in refused.message
    forged = binding()
    forged = msgspec.structs.replace(forged, pod=msgspec.structs.replace(forged.pod, task="../t"))
    (refused,) = core.bind(AgentState(), forged, CONF, at(0), wanted_ports=()).emit
    assert isinstance(refused, BindingRefused)
    assert "pod.task" in refused.message


def test_each_pod_gets_a_uid_of_its_own_freed_when_forgotten() -> None:
    conf = dataclasses.replace(CONF, pod_users=(500, 501))
    state = core.bind(AgentState(), binding(0), conf, at(0), wanted_ports=()).state
    state = core.bind(state, binding(1), conf, at(0), wanted_ports=()).state
    assert {p.user for p in state.pods.values()} == {500, 501}
    (refused,) = core.bind(state, binding(2), conf, at(0), wanted_ports=()).emit
    assert isinstance(refused, BindingRefused)
    assert refused.reason == "PodUsersExhausted"
    freed = core.forgotten(state, "uid-0")
    again = core.bind(freed, binding(2), conf, at(0), wanted_ports=()).state
    assert again.pods["uid-2"].user == state.pods["uid-0"].user
