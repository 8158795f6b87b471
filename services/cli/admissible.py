"""Whether a job can ever run, and its place among the jobs waiting in its queue.

Kueue keeps a workload that cannot be admitted apart as inadmissible (kueue@v0.9
``pkg/queue/cluster_queue.go``, ``inadmissibleWorkloads``) and says why on its
``QuotaReserved`` condition (``request > maximum capacity``), rather than leaving it pending
with a reason that looks passing. vcbus marks a job ``Inadmissible`` in the two cases that
nothing but a new queue or node can mend: its gang minimum (its PodGroup's
``minResources``) is more than its queue's capability, or one of its pods asks for more
than any node offers. Capacity that is merely in use (Volcano's ``QueueOverCapability``
against the cluster's total) is not such a case: it frees.

The place in the queue follows Volcano's job order within a queue (volcano@v1.10
``pkg/scheduler/plugins/priority/priority.go`` ``JobOrderFn``, then creation time): higher
priority first, then older first, among the queue's PodGroups not yet ``Inqueue``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contracts import (
    JobAdmitted,
    NodeChanged,
    NodeRegistered,
    PodGroupCreated,
    PodGroupPhaseChanged,
    PodGroupUpdated,
    QueueDeclared,
    Topic,
)
from contracts.objects import DEFAULT_QUEUE
from contracts.objects.pod_spec import pod_requests
from contracts.quantity import Resources
from services.cli.usage import resources_text

if TYPE_CHECKING:
    from services.cli.status import StatusStore

INADMISSIBLE = "Inadmissible"


def _short(amounts: Resources, over: Resources) -> list[str]:
    """The resources of ``amounts`` that are more than ``over`` offers."""
    return sorted(n for n, v in amounts.items() if v > 0 and v > over.get(n, 0))


def inadmissible(store: StatusStore, key: str) -> str | None:
    """Why job ``key`` can never run, or ``None`` (also when the store cannot tell).

    Needs ``jobs.admitted`` and, for each check, ``podgroups`` and ``queues`` (capability)
    or ``nodes`` (the largest node) in the store.
    """
    admitted = store.get(Topic.JOBS_ADMITTED, key)
    if not isinstance(admitted, JobAdmitted):
        return None
    queue_name = admitted.job.spec.queue or DEFAULT_QUEUE
    group = store.get(Topic.PODGROUPS, key)
    queue = store.get(Topic.QUEUES, queue_name)
    if isinstance(group, PodGroupCreated | PodGroupUpdated) and isinstance(queue, QueueDeclared):
        capability = queue.queue.capability
        minimum = {n: v for n, v in group.podgroup.min_resources.items() if n in capability}
        short = _short(minimum, capability)
        if short:
            return (
                f"its minimum needs {resources_text(minimum, names=tuple(short))}, more than "
                f"queue {queue_name}'s capability {resources_text(capability, names=tuple(short))}"
            )
    nodes = [
        event.node.allocatable
        for name in store.keys(Topic.NODES)
        if isinstance(event := store.get(Topic.NODES, name), NodeRegistered | NodeChanged)
    ]
    if not nodes:
        return None
    for task in admitted.job.spec.tasks:
        if task.replicas <= 0:
            continue
        requests = pod_requests(task.template.spec)
        if all(_short(requests, node) for node in nodes):
            largest = max(nodes, key=lambda node: tuple(node.get(n, 0) for n in sorted(requests)))
            names = tuple(sorted(n for n, v in requests.items() if v > 0))
            return (
                f"a pod of task {task.name} requests {resources_text(requests, names=names)}; "
                f"no node offers that much (largest: {resources_text(largest, names=names)})"
            )
    return None


@dataclass(frozen=True, slots=True)
class Place:
    """Where a waiting job stands in its queue: ``position`` of ``waiting``."""

    queue: str
    position: int
    waiting: int


def place_in_queue(store: StatusStore, key: str) -> Place | None:
    """The job's place among its queue's waiting PodGroups (``None``: it does not wait).

    Needs ``podgroups`` and ``podgroups.status`` read whole.
    """
    mine = store.get(Topic.PODGROUPS, key)
    if not isinstance(mine, PodGroupCreated | PodGroupUpdated) or not _waiting(store, key):
        return None
    queue = mine.podgroup.queue
    order: list[tuple[int, str, str]] = []
    for other in store.keys(Topic.PODGROUPS):
        event = store.get(Topic.PODGROUPS, other)
        if not isinstance(event, PodGroupCreated | PodGroupUpdated):
            continue
        group = event.podgroup
        if group.queue == queue and _waiting(store, other):
            created = group.creation_timestamp.isoformat() if group.creation_timestamp else ""
            order.append((-group.priority, created, other))
    order.sort()
    position = next(i for i, (_, _, k) in enumerate(order, start=1) if k == key)
    return Place(queue, position, len(order))


def _waiting(store: StatusStore, key: str) -> bool:
    status = store.get(Topic.PODGROUPS_STATUS, key)
    return not isinstance(status, PodGroupPhaseChanged) or str(status.phase) == "Pending"
