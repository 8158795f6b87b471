"""The cluster core: bindings accepted and refused, the timed pod lifecycle, node commands."""

from __future__ import annotations

import random  # noqa: TID251 - tests seed their own Random for ctx.rng

import pytest

from tests.unit.services.cluster.builders import (
    CONF,
    at,
    bind,
    build_add,
    build_binding,
    build_cordon,
    build_ctx,
    build_delete,
    build_node,
    build_pod,
    build_remove,
    build_set_phase,
    build_sim_node,
    build_uncordon,
)
from vcbus.contracts.events.nodes import NodeChanged, NodeRegistered, NodeRemoved
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.keys import NodeName
from vcbus.contracts.objects.pod import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_RUN_SECONDS,
    ANNOTATION_START_SECONDS,
    PodPhase,
)
from vcbus.core.step import Tick
from vcbus.services.cluster.core import ClusterConf, decide, locate_pods, next_deadline

RUN_10S = {ANNOTATION_START_SECONDS: "2", ANNOTATION_RUN_SECONDS: "10"}


DELAYED = ClusterConf(start_delay_seconds=1.0)
"""Pods start a second after their binding: Pending on the node meanwhile."""
RUN_10S_AT_ONCE = {ANNOTATION_RUN_SECONDS: "10"}


def only_refusal(emit: tuple[object, ...]) -> BindingRefused:
    assert len(emit) == 1
    refused = emit[0]
    assert isinstance(refused, BindingRefused)
    return refused


def phases(emit: tuple[object, ...]) -> list[tuple[str, PodPhase]]:
    out = []
    for event in emit:
        assert isinstance(event, PodPhaseChanged)
        out.append((str(event.pod), event.phase))
    return out


# --- bindings ---------------------------------------------------------------------------


def test_pod_is_bound_pending_and_holds_capacity_when_it_fits_the_node():
    pod = build_pod(cpu="1500m", memory="2Gi")
    step = decide(build_sim_node(), build_binding(pod), build_ctx(3), DELAYED)

    (bound,) = step.emit
    assert isinstance(bound, PodPhaseChanged)
    assert (bound.pod, bound.node, bound.phase, bound.reason) == (
        "default/j1-worker-0",
        "n1",
        PodPhase.PENDING,
        "Bound",
    )
    assert (bound.job, bound.task, bound.pod_uid, bound.occurred_at) == (
        "default/j1",
        "worker",
        "uid-j1-worker-0",
        at(3),
    )
    assert step.state is not None
    assert step.state.used == {"cpu": 1500, "memory": 2 * 2**30, "pods": 1}


def test_pod_without_a_start_delay_is_running_as_it_is_bound_in_one_status():
    pod = build_pod(cpu="1500m", memory="2Gi", annotations=RUN_10S_AT_ONCE)
    step = decide(build_sim_node(), build_binding(pod), build_ctx(3), CONF)

    (bound,) = step.emit
    assert isinstance(bound, PodPhaseChanged)
    assert (bound.node, bound.phase, bound.reason, bound.occurred_at) == (
        "n1",
        PodPhase.RUNNING,
        "Bound",
        at(3),
    )
    assert step.state is not None
    assert step.state.used == {"cpu": 1500, "memory": 2 * 2**30, "pods": 1}
    assert next_deadline(step.state) == at(13)
    # the same id as the Running status a tick would have given
    later = decide(step.state, Tick(at(13)), build_ctx(13), CONF)
    assert phases(later.emit) == [("default/j1-worker-0", PodPhase.SUCCEEDED)]


def test_binding_is_left_to_its_node_when_the_cluster_never_added_the_node():
    """A node the simulated cluster never registered is a real node, run by its agent."""
    step = decide(None, build_binding(build_pod(), "real"), build_ctx(), CONF)

    assert step.emit == ()
    assert step.state is None


def test_binding_is_refused_node_not_found_when_the_node_was_removed():
    removed = decide(build_sim_node(), build_remove(), build_ctx(), CONF).state

    step = decide(removed, build_binding(build_pod()), build_ctx(1), CONF)

    assert only_refusal(step.emit).reason == "NodeNotFound"
    assert step.state == removed


def test_binding_is_refused_unschedulable_when_the_node_is_cordoned():
    cordoned = decide(build_sim_node(), build_cordon(), build_ctx(), CONF).state

    step = decide(cordoned, build_binding(build_pod()), build_ctx(), CONF)

    refused = only_refusal(step.emit)
    assert refused.reason == "NodeUnschedulable"
    assert refused.message == "node n1 is cordoned (unschedulable)"
    assert step.state == cordoned


def test_binding_is_refused_overcommitted_naming_the_short_dimension_when_cpu_is_used_up():
    state = bind(build_sim_node(), build_pod("a", cpu="3", memory="1Gi"))

    step = decide(state, build_binding(build_pod("b", cpu="2", memory="1Gi")), build_ctx(), CONF)

    refused = only_refusal(step.emit)
    assert refused.reason == "NodeOvercommitted"
    assert refused.message == (
        "binding pod default/b would overcommit node n1: cpu requested 2, free 1 of 4 allocatable"
    )
    assert step.state == state


def test_refusal_names_every_short_dimension_when_several_are_used_up():
    state = bind(build_sim_node(), build_pod("a", cpu="3", memory="7Gi"))

    step = decide(state, build_binding(build_pod("b", cpu="2", memory="2Gi")), build_ctx(), CONF)

    assert only_refusal(step.emit).message == (
        "binding pod default/b would overcommit node n1: "
        "cpu requested 2, free 1 of 4 allocatable; "
        "memory requested 2Gi, free 1Gi of 8Gi allocatable"
    )


def test_binding_is_refused_overcommitted_when_the_node_has_no_pod_slot_left():
    state = bind(build_sim_node(build_node(pods=1)), build_pod("a"))

    step = decide(state, build_binding(build_pod("b")), build_ctx(), CONF)

    assert only_refusal(step.emit).message == (
        "binding pod default/b would overcommit node n1: pods requested 1, free 0 of 1 allocatable"
    )


def test_pods_are_not_counted_against_a_limit_when_the_node_has_no_pods_allocatable():
    state = build_sim_node(build_node(pods=None))
    for index in range(4):
        state = bind(state, build_pod(f"p{index}", cpu="1", memory="1Gi"))

    assert len(state.pods) == 4


def test_binding_is_refused_overcommitted_when_the_node_lacks_a_requested_resource():
    pod = build_pod(cpu="1", extra={"nvidia.com/gpu": "1"})

    step = decide(build_sim_node(), build_binding(pod), build_ctx(), CONF)

    assert only_refusal(step.emit).message == (
        "binding pod default/j1-worker-0 would overcommit node n1: "
        "nvidia.com/gpu requested 1, free 0 of 0 allocatable"
    )


def test_pod_fits_exactly_when_requests_equal_the_free_capacity():
    state = bind(build_sim_node(), build_pod("a", cpu="3", memory="6Gi"))

    state = bind(state, build_pod("b", cpu="1", memory="2Gi"))

    assert state.used == {"cpu": 4000, "memory": 8 * 2**30, "pods": 2}


def test_binding_is_a_no_op_when_the_same_pod_is_bound_to_the_node_again():
    pod = build_pod()
    state = bind(build_sim_node(), pod)

    step = decide(state, build_binding(pod, attempt=1), build_ctx(5), CONF)

    assert step.emit == ()
    assert step.state == state


def test_binding_is_refused_already_bound_when_the_shell_knows_the_pod_on_another_node():
    step = decide(
        build_sim_node(),
        build_binding(build_pod()),
        build_ctx(),
        CONF,
        bound_elsewhere=NodeName("n2"),
    )

    refused = only_refusal(step.emit)
    assert refused.reason == "AlreadyBound"
    assert refused.message == "pod default/j1-worker-0 is already bound to node n2"


def test_binding_is_accepted_when_bound_elsewhere_names_this_node():
    step = decide(
        build_sim_node(),
        build_binding(build_pod()),
        build_ctx(),
        CONF,
        bound_elsewhere=NodeName("n1"),
    )

    assert phases(step.emit) == [("default/j1-worker-0", PodPhase.RUNNING)]


def test_binding_is_refused_already_bound_when_an_older_incarnation_holds_the_name():
    state = bind(build_sim_node(), build_pod(uid="old"))

    step = decide(state, build_binding(build_pod(uid="new")), build_ctx(), CONF)

    refused = only_refusal(step.emit)
    assert refused.reason == "AlreadyBound"
    assert refused.message == (
        "pod default/j1-worker-0 is already bound to node n1 as uid 'old', "
        "so uid 'new' cannot be bound until it is deleted"
    )


def test_refusal_has_the_same_id_when_the_same_binding_is_refused_twice():
    cordoned = decide(build_sim_node(), build_cordon(), build_ctx(), CONF).state
    binding = build_binding(build_pod())

    first = decide(cordoned, binding, build_ctx(1), CONF)
    again = decide(first.state, binding, build_ctx(2), CONF)
    retry = decide(first.state, build_binding(build_pod(), attempt=1), build_ctx(2), CONF)

    assert only_refusal(again.emit).event_id == only_refusal(first.emit).event_id
    assert only_refusal(retry.emit).event_id != only_refusal(first.emit).event_id


def test_bound_event_has_the_same_id_when_the_step_is_rerun_later_after_a_crash():
    state = build_sim_node()
    binding = build_binding(build_pod())

    first = decide(state, binding, build_ctx(1), CONF)
    rerun = decide(state, binding, build_ctx(7), CONF)

    assert [event.event_id for event in rerun.emit] == [event.event_id for event in first.emit]


def test_pod_events_have_new_ids_when_a_pod_name_is_bound_again_after_deletion():
    pod = build_pod(uid="")
    state = build_sim_node()
    first = decide(state, build_binding(pod), build_ctx(), CONF)
    assert first.state is not None
    deleted = decide(first.state, build_delete(pod), build_ctx(1), CONF).state

    second = decide(deleted, build_binding(pod, attempt=1), build_ctx(2), CONF)

    assert phases(second.emit) == [("default/j1-worker-0", PodPhase.RUNNING)]
    assert second.emit[0].event_id != first.emit[0].event_id


# --- the pod lifecycle ------------------------------------------------------------------


def test_pod_runs_then_succeeds_at_the_times_its_annotations_give():
    state = bind(build_sim_node(), build_pod(annotations=RUN_10S), seconds=0)
    assert next_deadline(state) == at(2)

    early = decide(state, Tick(at(1.9)), build_ctx(1.9), CONF)
    assert early.emit == ()

    started = decide(state, Tick(at(2)), build_ctx(2), CONF)
    (running,) = started.emit
    assert isinstance(running, PodPhaseChanged)
    assert (running.phase, running.occurred_at, running.reason) == (
        PodPhase.RUNNING,
        at(2),
        "Started",
    )
    assert next_deadline(started.state) == at(12)

    ended = decide(started.state, Tick(at(12)), build_ctx(12), CONF)
    (succeeded,) = ended.emit
    assert isinstance(succeeded, PodPhaseChanged)
    assert (succeeded.phase, succeeded.exit_code, succeeded.reason, succeeded.occurred_at) == (
        PodPhase.SUCCEEDED,
        0,
        "Completed",
        at(12),
    )
    assert next_deadline(ended.state) is None


def test_pod_fails_with_its_exit_code_when_the_exit_code_annotation_is_not_zero():
    annotations = {**RUN_10S, ANNOTATION_EXIT_CODE: "3"}
    state = bind(build_sim_node(), build_pod(annotations=annotations))

    step = decide(state, Tick(at(20)), build_ctx(20), CONF)

    assert phases(step.emit) == [
        ("default/j1-worker-0", PodPhase.RUNNING),
        ("default/j1-worker-0", PodPhase.FAILED),
    ]
    failed = step.emit[1]
    assert isinstance(failed, PodPhaseChanged)
    assert (failed.exit_code, failed.reason, failed.message) == (3, "Error", "ran 10s, exit code 3")


def test_pod_succeeds_when_the_exit_code_annotation_is_zero():
    annotations = {**RUN_10S, ANNOTATION_EXIT_CODE: "0"}
    state = bind(build_sim_node(), build_pod(annotations=annotations))

    step = decide(state, Tick(at(12)), build_ctx(12), CONF)

    assert phases(step.emit)[-1] == ("default/j1-worker-0", PodPhase.SUCCEEDED)


def test_pod_runs_until_deleted_when_it_has_no_run_seconds():
    state = bind(build_sim_node(), build_pod())
    running = decide(state, Tick(at(0)), build_ctx(0), CONF).state

    later = decide(running, Tick(at(10_000)), build_ctx(10_000), CONF)

    assert later.emit == ()
    assert next_deadline(running) is None
    assert running is not None
    assert running.pods[0].phase is PodPhase.RUNNING


def test_late_tick_emits_every_due_transition_in_time_order():
    state = build_sim_node()
    state = bind(state, build_pod("a", annotations={ANNOTATION_RUN_SECONDS: "5"}), seconds=0)
    state = bind(state, build_pod("b", annotations={ANNOTATION_START_SECONDS: "3"}), seconds=0)

    step = decide(state, Tick(at(9)), build_ctx(9), CONF)

    assert phases(step.emit) == [
        ("default/b", PodPhase.RUNNING),
        ("default/a", PodPhase.SUCCEEDED),
    ]
    assert [event.occurred_at for event in step.emit] == [at(3), at(5)]


def test_pod_starts_after_the_configured_delay_when_it_has_no_start_annotation():
    conf = ClusterConf(start_delay_seconds=0.5)
    state = bind(build_sim_node(), build_pod(), seconds=1, conf=conf)

    assert next_deadline(state) == at(1.5)


def test_start_delay_gets_seeded_jitter_when_the_conf_asks_for_it():
    conf = ClusterConf(start_delay_seconds=1.0, start_jitter_seconds=0.5)
    binding = build_binding(build_pod())

    def start(seed: int) -> object:
        step = decide(build_sim_node(), binding, build_ctx(0, random.Random(seed)), conf)
        return next_deadline(step.state)

    first, same, other = start(7), start(7), start(8)

    assert first == same
    assert first != other
    for deadline in (first, other):
        assert isinstance(deadline, type(at(0)))
        assert at(1.0) <= deadline <= at(1.5)


def test_start_delay_has_no_jitter_when_the_shell_gives_no_rng():
    conf = ClusterConf(start_delay_seconds=1.0, start_jitter_seconds=0.5)

    state = bind(build_sim_node(), build_pod(), conf=conf)

    assert next_deadline(state) == at(1.0)


def test_pod_fails_at_its_start_when_an_annotation_is_unreadable():
    annotations = {ANNOTATION_RUN_SECONDS: "soon", ANNOTATION_EXIT_CODE: "x"}
    state = bind(build_sim_node(), build_pod(annotations=annotations))

    step = decide(state, Tick(at(0)), build_ctx(0), CONF)

    (failed,) = step.emit
    assert isinstance(failed, PodPhaseChanged)
    assert (failed.phase, failed.reason) == (PodPhase.FAILED, "InvalidAnnotation")
    assert failed.message == (
        "annotation vcbus.io/run-seconds='soon' is not a number of seconds from 0 to 1e+09; "
        "annotation vcbus.io/exit-code='x' is not an integer"
    )


def test_pod_fails_at_its_start_when_its_run_time_would_overflow_the_clock():
    """1e300 seconds is finite but no due time can hold it: once the cluster's timer
    crashed on it, and the cluster with it, at every restart."""
    annotations = {ANNOTATION_RUN_SECONDS: "1e300"}
    state = bind(build_sim_node(), build_pod(annotations=annotations))

    step = decide(state, Tick(at(0)), build_ctx(0), CONF)

    (failed,) = step.emit
    assert isinstance(failed, PodPhaseChanged)
    assert (failed.phase, failed.reason) == (PodPhase.FAILED, "InvalidAnnotation")
    assert next_deadline(step.state) is None


def test_terminal_pod_frees_its_capacity_when_it_succeeds():
    annotations = {ANNOTATION_RUN_SECONDS: "1"}
    state = bind(build_sim_node(), build_pod("a", cpu="4", memory="1Gi", annotations=annotations))
    done = decide(state, Tick(at(1)), build_ctx(1), CONF).state
    assert done is not None

    step = decide(done, build_binding(build_pod("b", cpu="4", memory="1Gi")), build_ctx(2), CONF)

    assert phases(step.emit) == [("default/b", PodPhase.RUNNING)]


def test_tick_is_a_no_op_when_the_node_does_not_exist():
    step = decide(None, Tick(at(5)), build_ctx(5), CONF)

    assert step.emit == ()
    assert step.state is None


# --- pod deletion and scenario phases ---------------------------------------------------


def test_delete_frees_capacity_and_emits_nothing_when_the_pod_is_on_the_node():
    pod = build_pod("a", cpu="4", memory="1Gi")
    state = bind(build_sim_node(), pod)

    deleted = decide(state, build_delete(pod), build_ctx(1), CONF)

    assert deleted.emit == ()
    assert deleted.state is not None
    assert deleted.state.pods == ()
    assert deleted.state.used == {}
    bind(deleted.state, build_pod("b", cpu="4", memory="1Gi"), seconds=2)


def test_delete_is_a_no_op_when_the_node_does_not_hold_the_pod():
    state = bind(build_sim_node(), build_pod("a"))

    step = decide(state, build_delete(build_pod("other")), build_ctx(), CONF)

    assert step.state == state
    assert step.emit == ()


def test_delete_is_ignored_when_its_uid_names_an_older_incarnation():
    pod = build_pod(uid="new")
    state = bind(build_sim_node(), pod)

    stale = decide(state, build_delete(pod, uid="old"), build_ctx(), CONF)
    current = decide(state, build_delete(pod, uid="new"), build_ctx(), CONF)

    assert stale.state == state
    assert current.state is not None
    assert current.state.pods == ()


def test_scenario_phase_ends_a_running_pod_with_default_exit_codes():
    succeed, fail = build_pod("a"), build_pod("b")
    state = bind(bind(build_sim_node(), succeed), fail)
    state_or_none = decide(state, Tick(at(0)), build_ctx(), CONF).state

    first = decide(state_or_none, build_set_phase(succeed, PodPhase.SUCCEEDED), build_ctx(4), CONF)
    second = decide(first.state, build_set_phase(fail, PodPhase.FAILED), build_ctx(5), CONF)

    ended = [*first.emit, *second.emit]
    assert phases(tuple(ended)) == [
        ("default/a", PodPhase.SUCCEEDED),
        ("default/b", PodPhase.FAILED),
    ]
    assert [
        (e.exit_code, e.reason, e.occurred_at) for e in ended if isinstance(e, PodPhaseChanged)
    ] == [
        (0, "Completed", at(4)),
        (1, "Error", at(5)),
    ]
    assert second.state is not None
    assert second.state.used == {}


def test_scenario_phase_starts_a_pending_pod_now_and_restarts_its_run_clock():
    pod = build_pod(annotations={ANNOTATION_START_SECONDS: "100", ANNOTATION_RUN_SECONDS: "10"})
    state = bind(build_sim_node(), pod)

    step = decide(state, build_set_phase(pod, PodPhase.RUNNING), build_ctx(3), CONF)

    assert phases(step.emit) == [("default/j1-worker-0", PodPhase.RUNNING)]
    assert next_deadline(step.state) == at(13)


@pytest.mark.parametrize("phase", [PodPhase.PENDING, PodPhase.UNKNOWN, PodPhase.RUNNING])
def test_scenario_phase_is_a_no_op_when_it_asks_for_a_phase_the_pod_cannot_move_to(phase):
    pod = build_pod()
    running = decide(bind(build_sim_node(), pod), Tick(at(0)), build_ctx(), CONF).state

    step = decide(running, build_set_phase(pod, phase), build_ctx(1), CONF)

    assert step.emit == ()
    assert step.state == running


def test_scenario_phase_is_a_no_op_when_the_pod_already_ended():
    pod = build_pod(annotations={ANNOTATION_RUN_SECONDS: "1"})
    ended = decide(bind(build_sim_node(), pod), Tick(at(5)), build_ctx(5), CONF).state

    step = decide(ended, build_set_phase(pod, PodPhase.FAILED), build_ctx(6), CONF)

    assert step.emit == ()


def test_locate_pods_maps_each_pod_to_its_node_when_given_several_nodes():
    n1 = bind(build_sim_node(), build_pod("b"))
    n2 = bind(build_sim_node(build_node("n2")), build_pod("a"))
    gone = decide(
        bind(build_sim_node(build_node("n3")), build_pod("c")),
        build_remove("n3"),
        build_ctx(),
        CONF,
    )
    assert gone.state is not None

    assert locate_pods([n1, n2, gone.state]) == {"default/a": "n2", "default/b": "n1"}


# --- nodes ------------------------------------------------------------------------------


def test_node_is_registered_with_generation_one_when_first_added():
    node = build_node()

    step = decide(None, build_add(node), build_ctx(), CONF)

    (registered,) = step.emit
    assert isinstance(registered, NodeRegistered)
    assert registered.node == node
    assert step.state is not None
    assert (step.state.generation, step.state.removed) == (1, False)


def test_node_add_is_a_no_op_when_the_same_node_is_added_again():
    state = build_sim_node()

    step = decide(state, build_add(build_node()), build_ctx(), CONF)

    assert step.emit == ()
    assert step.state == state


def test_node_changes_without_evicting_when_it_is_added_again_with_less_allocatable():
    state = bind(build_sim_node(), build_pod("a", cpu="3", memory="1Gi"))

    step = decide(state, build_add(build_node(cpu="2")), build_ctx(), CONF)

    (changed,) = step.emit
    assert isinstance(changed, NodeChanged)
    assert changed.node.allocatable["cpu"] == 2000
    assert step.state is not None
    assert [pod.key for pod in step.state.pods] == ["default/a"]
    refused = decide(step.state, build_binding(build_pod("b", cpu="1")), build_ctx(), CONF)
    assert only_refusal(refused.emit).reason == "NodeOvercommitted"


def test_cordon_and_uncordon_publish_node_changes_once_each():
    state = build_sim_node()

    cordoned = decide(state, build_cordon(), build_ctx(), CONF)
    twice = decide(cordoned.state, build_cordon(), build_ctx(), CONF)
    uncordoned = decide(cordoned.state, build_uncordon(), build_ctx(), CONF)

    (first,) = cordoned.emit
    (second,) = uncordoned.emit
    assert isinstance(first, NodeChanged)
    assert isinstance(second, NodeChanged)
    assert (first.node.unschedulable, second.node.unschedulable) == (True, False)
    assert first.event_id != second.event_id
    assert twice.emit == ()
    assert uncordoned.state is not None
    assert bind(uncordoned.state, build_pod()).pods != ()


@pytest.mark.parametrize("command", [build_cordon, build_uncordon, build_remove])
def test_node_command_is_a_no_op_when_the_node_does_not_exist(command):
    step = decide(None, command("ghost"), build_ctx(), CONF)

    assert step.emit == ()
    assert step.state is None


def test_node_removal_fails_its_active_pods_as_node_lost_then_removes_the_node():
    done = build_pod("done", annotations={ANNOTATION_RUN_SECONDS: "1"})
    running, pending = (
        build_pod("running"),
        build_pod("pending", annotations={ANNOTATION_START_SECONDS: "60"}),
    )
    state = bind(bind(bind(build_sim_node(), done), running), pending)
    state_or_none = decide(state, Tick(at(5)), build_ctx(5), CONF).state

    step = decide(state_or_none, build_remove(), build_ctx(6), CONF)

    *lost, removed = step.emit
    assert phases(tuple(lost)) == [
        ("default/pending", PodPhase.FAILED),
        ("default/running", PodPhase.FAILED),
    ]
    assert {(e.reason, e.message, e.node) for e in lost if isinstance(e, PodPhaseChanged)} == {
        ("NodeLost", "node n1 was removed", "n1")
    }
    assert isinstance(removed, NodeRemoved)
    assert removed.name == "n1"
    assert step.state is not None
    assert (step.state.removed, step.state.pods, next_deadline(step.state)) == (True, (), None)
    assert decide(step.state, build_remove(), build_ctx(7), CONF).emit == ()


def test_node_is_registered_under_a_new_id_when_added_again_after_removal():
    first = decide(None, build_add(build_node()), build_ctx(), CONF)
    removed = decide(first.state, build_remove(), build_ctx(1), CONF)

    again = decide(removed.state, build_add(build_node()), build_ctx(2), CONF)

    (registered,) = again.emit
    assert isinstance(registered, NodeRegistered)
    assert registered.event_id != first.emit[0].event_id
    assert again.state is not None
    assert (again.state.generation, again.state.removed) == (3, False)


@pytest.mark.parametrize(
    ("field", "value"),
    [("start_delay_seconds", -1.0), ("start_jitter_seconds", float("nan"))],
)
def test_conf_is_refused_when_a_delay_is_negative_or_not_finite(field, value):
    with pytest.raises(ValueError, match=field):
        ClusterConf(**{field: value})


def test_next_deadline_is_none_when_the_node_does_not_exist():
    assert next_deadline(None) is None


def test_pods_start_after_their_own_delay_when_bound_at_different_times():
    state = bind(build_sim_node(), build_pod("a", annotations={ANNOTATION_START_SECONDS: "1"}))
    state = bind(state, build_pod("b", annotations={ANNOTATION_START_SECONDS: "0.25"}), seconds=2)

    step = decide(state, Tick(at(2.25)), build_ctx(2.25), CONF)

    assert [(str(e.pod), e.occurred_at) for e in step.emit if isinstance(e, PodPhaseChanged)] == [
        ("default/a", at(1)),
        ("default/b", at(2.25)),
    ]
