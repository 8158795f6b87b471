"""Builders for the cluster core tests: nodes, pods, bindings and contexts at virtual times."""

from __future__ import annotations

import random  # noqa: TID251 - tests seed their own Random for ctx.rng
from datetime import UTC, datetime, timedelta

from vcbus.contracts._base import derive_event_id
from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.cluster_commands import (
    NodeAddRequested,
    NodeCordonRequested,
    NodeRemoveRequested,
    NodeUncordonRequested,
    PodPhaseSetRequested,
)
from vcbus.contracts.events.pods import PodDeleted
from vcbus.contracts.keys import JobKey, NodeName, PodKey, pod_key
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.contracts.quantity import parse_resources
from vcbus.core.step import Ctx
from vcbus.services.cluster.core import ClusterConf, decide
from vcbus.services.cluster.model import SimNode

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONF = ClusterConf()


def at(seconds: float) -> datetime:
    """Return the virtual time ``seconds`` after T0."""
    return T0 + timedelta(seconds=seconds)


def build_ctx(seconds: float = 0.0, rng: random.Random | None = None) -> Ctx:
    return Ctx(now=at(seconds), rng=rng)


def build_node(
    name: str = "n1",
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int | None = 110,
    unschedulable: bool = False,
    **extra: str,
) -> Node:
    quantities: dict[str, str | int] = {"cpu": cpu, "memory": memory, **extra}
    if pods is not None:
        quantities["pods"] = pods
    return Node(name=name, allocatable=parse_resources(quantities), unschedulable=unschedulable)


def build_pod(
    name: str = "j1-worker-0",
    *,
    job: str = "j1",
    task: str = "worker",
    uid: str | None = None,
    annotations: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    **requests: str,
) -> Pod:
    return Pod(
        name=name,
        namespace="default",
        job=JobKey(f"default/{job}"),
        task=task,
        index=0,
        podgroup=job,
        uid=f"uid-{name}" if uid is None else uid,
        requests=parse_resources({**(requests or {"cpu": "1", "memory": "1Gi"}), **(extra or {})}),
        annotations=annotations or {},
    )


def key_of(pod: Pod) -> PodKey:
    return pod_key(pod.namespace, pod.name)


def build_binding(pod: Pod, node: str = "n1", attempt: int = 0) -> BindingCreated:
    return BindingCreated(
        event_id=derive_event_id("test.binding", pod.name, f"{node}|{attempt}"),
        occurred_at=T0,
        pod=pod,
        node=NodeName(node),
    )


def build_delete(pod: Pod, uid: str = "") -> PodDeleted:
    return PodDeleted(
        event_id=derive_event_id("test.delete", pod.name, uid),
        occurred_at=T0,
        job=pod.job,
        pod=key_of(pod),
        task=pod.task,
        pod_uid=uid,
    )


def build_add(node: Node) -> NodeAddRequested:
    return NodeAddRequested(event_id=f"add-{node.name}", occurred_at=T0, node=node)


def build_cordon(name: str = "n1") -> NodeCordonRequested:
    return NodeCordonRequested(event_id=f"cordon-{name}", occurred_at=T0, name=NodeName(name))


def build_uncordon(name: str = "n1") -> NodeUncordonRequested:
    return NodeUncordonRequested(event_id=f"uncordon-{name}", occurred_at=T0, name=NodeName(name))


def build_remove(name: str = "n1") -> NodeRemoveRequested:
    return NodeRemoveRequested(event_id=f"remove-{name}", occurred_at=T0, name=NodeName(name))


def build_set_phase(
    pod: Pod, phase: PodPhase, exit_code: int | None = None
) -> PodPhaseSetRequested:
    return PodPhaseSetRequested(
        event_id=f"set-{pod.name}-{phase}",
        occurred_at=T0,
        pod=key_of(pod),
        phase=phase,
        exit_code=exit_code,
    )


def build_sim_node(node: Node | None = None) -> SimNode:
    """Return the state of a freshly added node."""
    state = decide(None, build_add(node or build_node()), build_ctx(), CONF).state
    assert state is not None
    return state


def bind(state: SimNode, pod: Pod, seconds: float = 0.0, conf: ClusterConf = CONF) -> SimNode:
    """Bind ``pod`` and return the new state, failing the test if it is refused."""
    step = decide(state, build_binding(pod, state.node.name), build_ctx(seconds), conf)
    assert step.state is not None
    assert step.state.find(key_of(pod)) is not None, step.emit
    return step.state
