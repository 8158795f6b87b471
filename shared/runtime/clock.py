"""Clocks: the system clock for services, a virtual clock for simulation and tests."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Where time comes from."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic scale, for durations."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()


EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class VirtualClock:
    """A clock that moves only when told to; waiters are woken when it advances."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._now = start
        self._start = start
        self._advanced = asyncio.Event()

    def now(self) -> datetime:
        """The virtual time."""
        return self._now

    def monotonic(self) -> float:
        """Virtual seconds since the start."""
        return (self._now - self._start).total_seconds()

    def advance(self, seconds: float) -> None:
        """Move time forward and wake whoever waits for it."""
        self._now += timedelta(seconds=seconds)
        self._advanced.set()
        self._advanced = asyncio.Event()

    def set(self, moment: datetime) -> None:
        """Move time forward to ``moment`` (never backwards)."""
        if moment > self._now:
            self.advance((moment - self._now).total_seconds())
