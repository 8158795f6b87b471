"""The action table: configuration name → builder (explicit, no import-time registration).

podgroup-enqueue runs ``elect, enqueue, reserve``; the allocator runs ``allocate, backfill``
(SPEC A6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from shared.scheduling.actions import allocate, backfill, elect, enqueue, reserve
from shared.scheduling.framework.action import Action

ACTIONS: Mapping[str, Callable[[], Action]] = {
    allocate.NAME: allocate.new,
    backfill.NAME: backfill.new,
    elect.NAME: elect.new,
    enqueue.NAME: enqueue.new,
    reserve.NAME: reserve.new,
}

ENQUEUE_ACTIONS: frozenset[str] = frozenset({elect.NAME, enqueue.NAME, reserve.NAME})
"""The actions of podgroup-enqueue; the others belong to the allocator."""

__all__ = ["ACTIONS", "ENQUEUE_ACTIONS"]
