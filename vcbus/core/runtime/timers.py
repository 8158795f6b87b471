"""Timers: components that want to run when a moment arrives (policy timeouts, pod run times)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from vcbus.core.bus.outbox import Outbox


class Timer(Protocol):
    """Something a service runs when time passes."""

    def next_due(self) -> datetime | None:
        """The earliest moment this timer wants to run, or ``None``."""
        ...

    async def fire(self, now: datetime, outbox: Outbox) -> None:
        """Run everything due at ``now``; put the events to publish into ``outbox``.

        Called after every batch and every poll that brought nothing, so a timer may also
        keep a periodic duty that is no deadline (a resync sweep): ``next_due`` says only
        when something must happen by itself, which a sweep never makes.

        The timer opens the spans its events are sent under (no record's span is current).
        """
        ...
