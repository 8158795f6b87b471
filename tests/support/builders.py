"""Builders of scheduler inputs, after Volcano's ``pkg/scheduler/util/test_utils.go``
(``BuildNode``, ``BuildPod``, ``BuildPodGroup``, ``BuildQueue``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from vcbus.contracts.keys import job_key
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.node import Node, Taint
from vcbus.contracts.objects.pod import Pod, PodPhase, Toleration
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.contracts.quantity import parse_resources
from vcbus.core.scheduling.scenario_objects import pod_index
from vcbus.core.scheduling.snapshot import PodGroupState, PodState

Quantities = Mapping[str, str | int | float]


def build_node(
    name: str,
    allocatable: Quantities,
    labels: Mapping[str, str] | None = None,
    *,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
) -> Node:
    """A node (``util.BuildNode``); ``allocatable`` like ``{"cpu": "2", "pods": 10}``."""
    return Node(
        name=name,
        allocatable=parse_resources(allocatable),
        labels=dict(labels or {}),
        taints=tuple(taints),
        unschedulable=unschedulable,
    )


def build_pod(  # noqa: PLR0917 - positional like util.BuildPod, for side-by-side ports
    namespace: str,
    name: str,
    node: str | None,
    phase: PodPhase,
    requests: Quantities | None,
    group: str,
    *,
    task: str = "",
    selector: Mapping[str, str] | None = None,
    priority: int = 1,
    index: int | None = None,
    uid: str | None = None,
    creation: datetime | None = None,
    tolerations: Sequence[Toleration] = (),
    annotations: Mapping[str, str] | None = None,
    priority_class_name: str = "",
    binding: bool = False,
    attempt: int = 0,
    releasing: bool = False,
    grace: int | None = None,
    labels: Mapping[str, str] | None = None,
) -> PodState:
    """A pod and its state (``util.BuildPod``); uid ``<ns>-<name>`` as Volcano's builder."""
    pod = Pod(
        name=name,
        namespace=namespace,
        job=job_key(namespace, group),
        task=task,
        index=pod_index(name) if index is None else index,
        podgroup=group,
        uid=uid or f"{namespace}-{name}",
        requests=parse_resources(requests or {}),
        priority=priority,
        priority_class_name=priority_class_name,
        node_selector=dict(selector or {}),
        tolerations=tuple(tolerations),
        annotations=dict(annotations or {}),
        labels=dict(labels or {}),
        creation_timestamp=creation,
        termination_grace_period_seconds=grace,
    )
    return PodState(
        pod=pod, phase=phase, node=node, binding=binding, attempt=attempt, releasing=releasing
    )


def build_podgroup(  # noqa: PLR0917 - positional like util.BuildPodGroup
    name: str,
    namespace: str,
    queue: str,
    min_member: int,
    min_task_member: Mapping[str, int] | None = None,
    phase: PodGroupPhase = PodGroupPhase.INQUEUE,
    *,
    priority: int = 0,
    min_resources: Quantities | None = None,
    dependent: bool = False,
    creation: datetime | None = None,
    uid: str | None = None,
    conditions: Sequence[Condition] = (),
    annotations: Mapping[str, str] | None = None,
    first_seen: datetime | None = None,
    status_conditions: Sequence[Condition] = (),
) -> PodGroupState:
    """A PodGroup and its phase (``util.BuildPodGroup``)."""
    pg = PodGroup(
        name=name,
        namespace=namespace,
        job=job_key(namespace, name),
        queue=queue,
        min_member=min_member,
        min_task_member=dict(min_task_member or {}),
        min_resources=parse_resources(min_resources or {}),
        priority=priority,
        dependent=dependent,
        uid=uid or f"{namespace}-{name}",
        creation_timestamp=creation,
        annotations=dict(annotations or {}),
    )
    return PodGroupState(
        podgroup=pg,
        phase=phase,
        conditions=tuple(conditions),
        status_conditions=tuple(status_conditions),
        first_seen=first_seen,
    )


def build_queue(
    name: str,
    weight: int = 1,
    capability: Quantities | None = None,
    *,
    state: QueueState = QueueState.OPEN,
    priority: int = 0,
    guarantee: Quantities | None = None,
    reclaimable: bool = True,
) -> Queue:
    """A queue (``util.BuildQueue``)."""
    return Queue(
        name=name,
        weight=weight,
        capability=parse_resources(capability or {}),
        guarantee=parse_resources(guarantee or {}),
        state=state,
        priority=priority,
        reclaimable=reclaimable,
    )
