"""The scheduler's queue (volcano@v1.12.0 ``pkg/scheduler/api/queue_info.go``).

Part of the working model (``model``).
"""

from __future__ import annotations

from dataclasses import dataclass

from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.core.scheduling.resource import CPU, MEMORY, Resource

__all__ = ["QueueInfo"]


@dataclass(slots=True, eq=False)
class QueueInfo:
    """A queue (volcano ``QueueInfo``)."""

    name: str
    queue: Queue
    weight: int
    capability: Resource | None
    guarantee: Resource
    state: QueueState
    priority: int

    @classmethod
    def from_queue(cls, queue: Queue) -> QueueInfo:
        """Build from the contract, capability cpu/memory ≤ 0 meaning unlimited (``PROP``)."""
        capability: Resource | None = None
        if queue.capability:
            raw: dict[str, float] = {k: float(v) for k, v in queue.capability.items()}
            for name in (CPU, MEMORY):
                if raw.get(name, 0.0) <= 0:
                    raw[name] = float("inf")
            capability = Resource(raw)
        return cls(
            name=queue.name,
            queue=queue,
            weight=queue.weight,
            capability=capability,
            guarantee=Resource({k: float(v) for k, v in queue.guarantee.items()}),
            state=queue.state,
            priority=queue.priority,
        )

    def is_open(self) -> bool:
        """Whether the queue takes new work."""
        return self.state is QueueState.OPEN
