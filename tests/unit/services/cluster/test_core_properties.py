"""Properties of the cluster core over random sequences of bindings, deletes, ticks and commands."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.services.cluster.builders import (
    CONF,
    at,
    build_add,
    build_binding,
    build_cordon,
    build_ctx,
    build_delete,
    build_node,
    build_pod,
    build_remove,
    build_set_phase,
    build_uncordon,
)
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_RUN_SECONDS,
    ANNOTATION_START_SECONDS,
    Pod,
    PodPhase,
)
from vcbus.contracts.quantity import PODS, Resources, add
from vcbus.core.step import Step, Tick
from vcbus.services.cluster.core import ClusterInput, decide
from vcbus.services.cluster.model import ACTIVE_PHASES, SimNode, SimPod, usage

GPU = "nvidia.com/gpu"

OPS: tuple[str, ...] = (
    *("bind",) * 8,
    *("delete",) * 3,
    *("tick",) * 5,
    *("set",) * 2,
    *("cordon", "uncordon", "remove", "add", "add"),
)
"""Input kinds, weighted towards bindings and ticks."""


@dataclass(frozen=True)
class Case:
    node: Node
    pods: tuple[Pod, ...]
    ops: tuple[tuple[str, int, int], ...]


def sim_annotations() -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries(
        {},
        optional={
            ANNOTATION_START_SECONDS: st.sampled_from(["0", "0.5", "2", "bad"]),
            ANNOTATION_RUN_SECONDS: st.sampled_from(["0", "1", "3.5", "-1"]),
            ANNOTATION_EXIT_CODE: st.sampled_from(["0", "1", "137"]),
        },
    )


@st.composite
def pods(draw: st.DrawFn, index: int) -> Pod:
    return build_pod(
        f"p{draw(st.integers(0, 3))}",
        uid=f"u{index}",
        annotations=draw(sim_annotations()),
        cpu=f"{draw(st.integers(0, 6)) * 500}m",
        memory=f"{draw(st.integers(0, 4))}Gi",
        extra=draw(st.sampled_from([None, {GPU: "1"}, {GPU: "0"}])),
    )


@st.composite
def cases(draw: st.DrawFn) -> Case:
    node = build_node(
        cpu=str(draw(st.integers(1, 4))),
        memory=f"{draw(st.integers(1, 8))}Gi",
        pods=draw(st.none() | st.integers(1, 4)),
    )
    gpus = draw(st.integers(0, 2)) * 1000
    node = msgspec.structs.replace(
        node, allocatable=dict(sorted({**node.allocatable, GPU: gpus}.items()))
    )
    pool = tuple(draw(pods(index)) for index in range(6))
    op = st.tuples(
        st.sampled_from(OPS),
        st.integers(0, len(pool) - 1),
        st.integers(0, 4),
    )
    return Case(node, pool, tuple(draw(st.lists(op, max_size=40))))


def to_input(case: Case, name: str, index: int, arg: int, *, now: float, seq: int) -> ClusterInput:
    pod = case.pods[index]
    match name:
        case "bind":
            return build_binding(pod, attempt=seq)
        case "delete":
            return build_delete(pod, uid=(pod.uid if arg % 2 else ""))
        case "tick":
            return Tick(at(now))
        case "cordon":
            return build_cordon()
        case "uncordon":
            return build_uncordon()
        case "set":
            phase = (PodPhase.RUNNING, PodPhase.SUCCEEDED, PodPhase.FAILED, PodPhase.PENDING)[
                arg % 4
            ]
            return build_set_phase(pod, phase)
        case "remove":
            return build_remove()
        case _:
            return build_add(case.node)


def exceeded(state: SimNode | None) -> list[str]:
    """Return the dimensions on which the node's active pods exceed its allocatable."""
    if state is None:
        return []
    allocatable = state.node.allocatable
    return [
        name
        for name, amount in usage(state.pods).items()
        if not (name == PODS and PODS not in allocatable) and amount > allocatable.get(name, 0)
    ]


@dataclass(frozen=True)
class Applied:
    """One input applied to a state, then applied again to the result."""

    step: Step[SimNode | None]
    again: Step[SimNode | None]


def run(case: Case) -> list[Applied]:
    """Apply the case's inputs in order, each one twice."""
    state: SimNode | None = decide(None, build_add(case.node), build_ctx(), CONF).state
    now = 0.0
    applied = []
    for seq, (name, index, arg) in enumerate(case.ops):
        if name == "tick":
            now += arg * 0.75
        event = to_input(case, name, index, arg, now=now, seq=seq)
        ctx = build_ctx(now)
        step = decide(state, event, ctx, CONF)
        applied.append(Applied(step, decide(step.state, event, ctx, CONF)))
        state = step.state
    return applied


@settings(max_examples=300, deadline=None)
@given(cases())
def test_bound_requests_never_exceed_allocatable_when_inputs_arrive_in_any_order(case):
    for applied in run(case):
        state = applied.step.state
        assert exceeded(state) == []
        assert state is None or state.used == usage(state.pods)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_second_application_changes_nothing_when_an_input_is_applied_twice(case):
    """A re-applied input leaves the state as it was and emits nothing new (a refusal repeats)."""
    for applied in run(case):
        assert applied.again.state == applied.step.state
        assert applied.again.emit in ((), applied.step.emit)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_every_emitted_event_has_a_distinct_id_when_inputs_arrive_in_any_order(case):
    ids = [event.event_id for applied in run(case) for event in applied.step.emit]

    assert len(ids) == len(set(ids))


def summed(pods: tuple[SimPod, ...]) -> Resources:
    """The usage of ``pods`` summed from scratch, one demand at a time."""
    total: Resources = {}
    for pod in pods:
        if pod.phase in ACTIVE_PHASES:
            requests = {name: amount for name, amount in pod.requests.items() if name != PODS}
            total = add(total, add(requests, {PODS: 1}))
    return total


@settings(max_examples=300, deadline=None)
@given(cases())
def test_node_state_is_the_one_worked_out_from_its_pods_when_inputs_arrive_in_any_order(case):
    """Kept up step by step, the pod order, usage and due time equal those of the pods alone."""
    for applied in run(case):
        state = applied.step.state
        if state is None:
            continue
        dues = [due for pod in state.pods if (due := pod.due_at) is not None]
        assert [pod.key for pod in state.pods] == sorted(pod.key for pod in state.pods)
        assert list(state.used.items()) == list(summed(state.pods).items())
        assert state.due_at == min(dues, default=None)
