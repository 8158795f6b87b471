"""The state of one simulated node: its spec, the pods bound to it and what they use."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import msgspec

from contracts.keys import JobKey, NodeName, PodKey
from contracts.objects.node import Node
from contracts.objects.pod import PodPhase
from contracts.quantity import PODS, Resources, add

ACTIVE_PHASES = frozenset({PodPhase.PENDING, PodPhase.RUNNING})
"""Phases in which a pod holds its node's capacity (terminal pods free it, as in Volcano)."""


class SimPod(msgspec.Struct, frozen=True, kw_only=True):
    """A pod bound to a simulated node, with its run settings read at bind time.

    ``seq`` is the node's binding number of this pod: with ``uid`` it tells apart two
    incarnations of the same pod name, so event ids never collide. ``invalid`` holds the
    message of an unreadable ``vcbus.io/*`` annotation: such a pod fails when it would
    start.
    """

    key: PodKey
    uid: str
    job: JobKey
    task: str
    requests: Resources
    seq: int
    phase: PodPhase
    bound_at: datetime
    starts_at: datetime
    run_seconds: float | None = None
    exit_code: int = 0
    invalid: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def is_active(self) -> bool:
        """Whether the pod holds capacity (Pending or Running)."""
        return self.phase in ACTIVE_PHASES

    @property
    def ends_at(self) -> datetime | None:
        """When a Running pod's run time is over, or None when it runs until deleted."""
        if self.started_at is None or self.run_seconds is None:
            return None
        return self.started_at + timedelta(seconds=self.run_seconds)

    @property
    def due_at(self) -> datetime | None:
        """When the pod's next timed transition is due, or None when there is none."""
        match self.phase:
            case PodPhase.PENDING:
                return self.starts_at
            case PodPhase.RUNNING:
                return self.ends_at
            case _:
                return None


class SimNode(msgspec.Struct, frozen=True, kw_only=True):
    """One simulated node: the Node as published, its bound pods and their usage.

    ``generation`` counts the node's published changes (ids of ``nodes`` events).
    A removed node stays as a tombstone (``removed``, no pods) so that ``generation`` and
    ``seq`` keep growing if it is added again. ``used`` is the sum of the requests of the
    active pods, plus one ``pods`` slot each; ``pods`` is sorted by key.
    """

    node: Node
    generation: int = 1
    removed: bool = False
    seq: int = 0
    pods: tuple[SimPod, ...] = ()
    used: Resources = {}

    @property
    def name(self) -> NodeName:
        """The node's name."""
        return NodeName(self.node.name)

    def find(self, key: PodKey) -> SimPod | None:
        """Return the pod bound here under ``key``, or None."""
        for pod in self.pods:
            if pod.key == key:
                return pod
        return None


def demand(requests: Resources) -> Resources:
    """Return what a pod takes from a node: its requests and one ``pods`` slot.

    Args:
        requests: the pod's resource requests in base units.

    Returns:
        The requests with ``pods`` set to 1, keys sorted.
    """
    return add({name: amount for name, amount in requests.items() if name != PODS}, {PODS: 1})


def usage(pods: Iterable[SimPod]) -> Resources:
    """Return the resources held by the active pods among ``pods``.

    Args:
        pods: the pods bound to a node.

    Returns:
        The sum of their demands (see :func:`demand`), keys sorted.
    """
    total: Resources = {}
    for pod in pods:
        if pod.is_active:
            total = add(total, demand(pod.requests))
    return total


def with_pods(node: SimNode, pods: Iterable[SimPod]) -> SimNode:
    """Return ``node`` holding ``pods`` (sorted by key), with ``used`` recomputed.

    Args:
        node: the node before the change.
        pods: the pods it holds after the change.

    Returns:
        The new node state.
    """
    ordered = tuple(sorted(pods, key=lambda pod: pod.key))
    return msgspec.structs.replace(node, pods=ordered, used=usage(ordered))
