"""The cluster ends an evicted pod after its grace period, holding its resources until then."""

from __future__ import annotations

import msgspec

from vcbus.contracts._base import derive_event_id
from vcbus.contracts.events.bindings import PodEvictionRequested
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.core.step import Tick
from vcbus.services.cluster.core import REASON_EVICTED, decide, next_deadline
from vcbus.services.cluster.model import SimNode

from .builders import (
    CONF,
    at,
    bind,
    build_binding,
    build_ctx,
    build_node,
    build_pod,
    build_sim_node,
    key_of,
)


def build_eviction(pod: Pod, node: str = "n1", uid: str | None = None) -> PodEvictionRequested:
    return PodEvictionRequested(
        event_id=derive_event_id("test.evict", pod.name, node),
        occurred_at=at(0),
        pod=key_of(pod),
        pod_uid=pod.uid if uid is None else uid,
        job=pod.job,
        task=pod.task,
        node=NodeName(node),
        reason="Preempted",
        taker="default/high",
        preemptor=JobKey("default/high"),
        message="preempted by job default/high (priority 1000 > 10)",
    )


def _running(state: SimNode, seconds: float = 0) -> SimNode:
    step = decide(state, _tick(seconds), build_ctx(seconds), CONF)
    assert step.state is not None
    return step.state


def _evict(state: SimNode, pod: Pod, seconds: float, uid: str | None = None) -> SimNode:
    step = decide(state, build_eviction(pod, uid=uid), build_ctx(seconds), CONF)
    assert step.state is not None
    assert step.emit == ()
    return step.state


def test_evicted_pod_holds_its_resources_until_the_default_grace_period_of_30s_is_over():
    pod = build_pod(cpu="4", memory="1Gi")
    state = _evict(_running(bind(build_sim_node(), pod)), pod, 5)
    assert next_deadline(state) == at(35)
    other = build_pod("j2-worker-0", job="j2", cpu="1")
    refused = decide(state, build_binding(other), build_ctx(10), CONF)
    assert refused.emit[0].reason == "NodeOvercommitted"  # type: ignore[attr-defined]
    ended = decide(state, _tick(35), build_ctx(35), CONF)
    assert ended.state is not None
    assert ended.state.used.get("cpu", 0) == 0
    (event,) = ended.emit
    assert isinstance(event, PodPhaseChanged)
    assert (event.phase, event.reason) == (PodPhase.FAILED, REASON_EVICTED)
    assert event.message == "preempted by job default/high (priority 1000 > 10)"
    assert event.occurred_at == at(35)


def test_evicted_pod_ends_after_its_templates_termination_grace_period():
    pod = msgspec.structs.replace(build_pod(), termination_grace_period_seconds=3)
    state = _evict(_running(bind(build_sim_node(), pod)), pod, 1)
    assert next_deadline(state) == at(4)


def test_evicted_pod_ends_at_once_when_its_grace_period_is_zero():
    pod = msgspec.structs.replace(build_pod(), termination_grace_period_seconds=0)
    step = decide(_running(bind(build_sim_node(), pod)), build_eviction(pod), build_ctx(2), CONF)
    assert [e.reason for e in step.emit] == [REASON_EVICTED]  # type: ignore[attr-defined]


def test_second_eviction_request_keeps_the_first_grace_period():
    pod = build_pod()
    state = _evict(_running(bind(build_sim_node(), pod)), pod, 0)
    again = _evict(state, pod, 20)
    assert next_deadline(again) == at(30)


def test_eviction_of_another_incarnation_or_an_unknown_pod_changes_nothing():
    pod = build_pod()
    state = bind(build_sim_node(), pod)
    assert decide(state, build_eviction(pod, uid="other"), build_ctx(1), CONF).state is state
    stranger = build_pod("j9-worker-0", job="j9")
    assert decide(state, build_eviction(stranger), build_ctx(1), CONF).state is state


def test_pod_that_finishes_before_its_grace_period_ends_as_it_would_have():
    pod = build_pod(annotations={"vcbus.io/run-seconds": "10"})
    state = _evict(_running(bind(build_sim_node(), pod)), pod, 1)
    ended = decide(state, _tick(40), build_ctx(40), CONF)
    assert [(e.phase, e.reason) for e in ended.emit] == [  # type: ignore[attr-defined]
        (PodPhase.SUCCEEDED, "Completed")
    ]


def test_evicted_pending_pod_starts_then_ends_evicted():
    pod = build_pod(annotations={"vcbus.io/start-seconds": "2"})
    state = _evict(bind(build_sim_node(build_node()), pod), pod, 1)
    ended = decide(state, _tick(31), build_ctx(31), CONF)
    assert [(e.phase, e.reason) for e in ended.emit] == [  # type: ignore[attr-defined]
        (PodPhase.RUNNING, "Started"),
        (PodPhase.FAILED, REASON_EVICTED),
    ]


def _tick(seconds: float) -> Tick:
    return Tick(now=at(seconds))
