"""What pods hold, per node and per queue, and what nodes offer, from the status store.

A pod holds its requests on its node while it is bound and Pending or Running (the read
model's rule, :func:`vcbus.core.views.pod_fold.active_by_node`, which ``vcbus up`` and
``simulate`` count with too); it holds them for its job's queue too. ``vcbus get
nodes|queues`` and the dashboard count with these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from vcbus.contracts import (
    JobAdmitted,
    NodeChanged,
    NodeHeartbeat,
    NodeRegistered,
    PodGroupCreated,
    PodGroupUpdated,
    Topic,
)
from vcbus.contracts.objects import DEFAULT_QUEUE, Node
from vcbus.contracts.quantity import Resources
from vcbus.core.views.pod_fold import active_by_node

if TYPE_CHECKING:
    from vcbus.services.cli.status_store import StatusStore


def add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    """Add ``amounts`` to ``total``, resource by resource."""
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def used_by_node(store: StatusStore) -> dict[str, dict[str, int]]:
    """What the active pods on each node request, with ``pods``: how many they are."""
    used: dict[str, dict[str, int]] = {}
    for node, pods in active_by_node(store.pods.values()).items():
        amounts = used[node] = {}
        for pod in pods:
            add(amounts, pod.requests)
        amounts["pods"] = len(pods)
    return used


def queue_of(store: StatusStore, job: str) -> str:
    """The queue of job ``job``: its PodGroup's, else its admitted spec's (``""``: unknown)."""
    spec = store.get(Topic.PODGROUPS, job)
    if isinstance(spec, PodGroupCreated | PodGroupUpdated):
        return spec.podgroup.queue
    admitted = store.get(Topic.JOBS_ADMITTED, job)
    if isinstance(admitted, JobAdmitted):
        return admitted.manifest.spec.queue or DEFAULT_QUEUE
    return ""


def used_by_queue(store: StatusStore) -> dict[str, dict[str, int]]:
    """What the active, bound pods of each queue's jobs request."""
    held: dict[str, dict[str, int]] = {}
    queues: dict[str, str] = {}
    for pod in store.pods.values():
        if not pod.is_active:
            continue
        queue = queues.get(pod.job)
        if queue is None:
            queue = queues[pod.job] = queue_of(store, pod.job)
        add(held.setdefault(queue, {}), pod.requests)
    return held


def node_of(store: StatusStore, name: str) -> Node | None:
    """Node ``name`` as registered (a real node's heartbeat carries it too); ``None`` if gone."""
    event = store.get(Topic.NODES, name)
    return event.node if isinstance(event, NodeRegistered | NodeChanged | NodeHeartbeat) else None


def allocatable(store: StatusStore, node: str) -> Resources:
    """What node ``node`` offers (nothing for a node not registered)."""
    found = node_of(store, node)
    return found.allocatable if found is not None else {}


def cluster_total(store: StatusStore) -> dict[str, int]:
    """What every node offers, together."""
    total: dict[str, int] = {}
    for name in store.keys(Topic.NODES):
        add(total, allocatable(store, name))
    return total
