"""Timers: components that want to run when a moment arrives (policy timeouts, pod run times)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from contracts._base import Event


class Timer(Protocol):
    """Something a service runs when time passes."""

    def next_due(self) -> datetime | None:
        """The earliest moment this timer wants to run, or ``None``."""
        ...

    async def fire(self, now: datetime) -> Sequence[Event]:
        """Run everything due at ``now`` and return the events to publish."""
        ...
