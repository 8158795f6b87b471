"""The action table: configuration name → builder (explicit, no import-time registration).

podgroup-enqueue runs ``elect, enqueue, reserve``; the allocator runs ``allocate, backfill``
(docs/design.md#reservation), and ``preempt``, ``reclaim`` when configured.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from vcbus.core.scheduling.actions import (
    allocate,
    backfill,
    elect,
    enqueue,
    preempt,
    reclaim,
    reserve,
)
from vcbus.core.scheduling.framework.action import Action

ACTIONS: Mapping[str, Callable[[], Action]] = {
    allocate.NAME: allocate.new,
    backfill.NAME: backfill.new,
    elect.NAME: elect.new,
    enqueue.NAME: enqueue.new,
    preempt.NAME: preempt.new,
    reclaim.NAME: reclaim.new,
    reserve.NAME: reserve.new,
}

__all__ = ["ACTIONS"]
