"""``queues``: queues declared, changed or closed by users."""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.objects.queue import Queue


class QueueDeclared(Event, tag="queue.declared.v1", frozen=True, kw_only=True):
    """A queue was declared or changed (its state says whether it is open)."""

    queue: Queue


class QueueDeleted(Event, tag="queue.deleted.v1", frozen=True, kw_only=True):
    """A queue was removed."""

    name: str


QueuesEvent = QueueDeclared | QueueDeleted
