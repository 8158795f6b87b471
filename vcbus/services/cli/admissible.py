"""Whether a waiting job is admissible, and its place among the jobs waiting in its queue.

Kueue keeps a workload it cannot admit apart as inadmissible (kueue@v0.9
``pkg/queue/cluster_queue.go``, ``inadmissibleWorkloads``) and says why on its
``QuotaReserved`` condition, rather than leaving it pending with a reason that looks
passing. vcbus marks a job ``Inadmissible`` when its highest-ranked pending reason says it
cannot be enqueued as it is: ``Infeasible`` (no node could ever hold one of its minimum
pods, or the cluster as a whole cannot hold its minimum: podgroup-enqueue decides it,
docs/design.md#reservation, docs/design.md#pending-reasons) or ``QueueOverCapability``
whose minimum alone is over its queue's capability (the message ends with
:data:`vcbus.core.reasons.NEVER_ADMITTED`); a job that waits for its queue's running jobs
to leave room is not. The reasons are the services'; nothing is computed again here.

The place in the queue follows Volcano's job order within a queue (volcano@v1.10
``pkg/scheduler/plugins/priority/priority.go`` ``JobOrderFn``, then creation time): higher
priority first, then older first, among the queue's PodGroups not yet ``Inqueue``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vcbus.contracts import PodGroupCreated, PodGroupPhaseChanged, PodGroupUpdated, Topic
from vcbus.core.reasons import INFEASIBLE, NEVER_ADMITTED, QUEUE_OVER_CAPABILITY

if TYPE_CHECKING:
    from vcbus.services.cli.status_store import Reason, StatusStore

INADMISSIBLE = "Inadmissible"
NOT_ENQUEUEABLE = frozenset({INFEASIBLE, QUEUE_OVER_CAPABILITY})
"""Pending reasons that may make a job inadmissible (:func:`never_admitted`)."""


def never_admitted(reason: Reason) -> bool:
    """Whether ``reason`` says the job can never be admitted as it is."""
    if reason.code == INFEASIBLE:
        return True
    return reason.code == QUEUE_OVER_CAPABILITY and reason.message.endswith(NEVER_ADMITTED)


def inadmissible(reasons: Sequence[Reason]) -> Reason | None:
    """The reason that makes a job inadmissible: the first of ``reasons`` that does."""
    return next((r for r in reasons if never_admitted(r)), None)


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
