"""The action table: configuration name → builder (explicit, no import-time registration).

``enqueue``, ``elect`` and ``reserve`` (podgroup-enqueue's actions) are added here when they
exist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from shared.scheduling.actions import allocate, backfill
from shared.scheduling.framework.action import Action

ACTIONS: Mapping[str, Callable[[], Action]] = {
    allocate.NAME: allocate.new,
    backfill.NAME: backfill.new,
}

__all__ = ["ACTIONS"]
