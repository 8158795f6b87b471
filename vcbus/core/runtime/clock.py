"""Clocks: the system clock for services, a virtual clock for simulation and tests.

A clock also says how to wait in its own time: ``sleep`` and ``wait_for`` (an event, with a
timeout). On the system clock these are asyncio's waits. On a :class:`VirtualClock` they
are registered waiters that only :meth:`VirtualClock.advance` wakes, so a driver can run a
whole system on one event loop without ever sleeping: let it run until nothing is runnable,
move the clock to :meth:`VirtualClock.next_wakeup`, repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Where time comes from, and how to wait in it."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic scale, for durations."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...

    async def wait_for(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait until ``event`` is set or ``timeout`` seconds of this clock's time passed.

        Returns:
            Whether the event is set when the wait ends.
        """
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``."""
        await asyncio.sleep(seconds)

    async def wait_for(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait for ``event`` at most ``timeout`` seconds (``asyncio.timeout``)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await event.wait()
        return event.is_set()


EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

ONE_MICROSECOND = timedelta(microseconds=1)


class ArrivalStamps:
    """Times that strictly increase, one per arrival, to the microsecond.

    ``next()`` is the clock's time, or a microsecond after the previous stamp when the clock
    has not moved past it (a burst read in one instant, a virtual clock). So records
    stamped in the order they are read keep that order in their times.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last: datetime | None = None

    def next(self) -> datetime:
        """The next stamp."""
        now = self._clock.now()
        if self._last is not None and now <= self._last:
            now = self._last + ONE_MICROSECOND
        self._last = now
        return now


@dataclass(eq=False)
class _Waiter:
    due: datetime
    wake: Callable[[], None]
    active: bool = field(default=True)
    period: timedelta | None = None
    """An idle wait's timeout: waking it only starts the same wait again (see ``skip_idle``)."""
    horizon: datetime | None = None
    """An idle wait's last moment to skip to: something of its own is due then."""


class VirtualClock:
    """A clock that moves only when told to; waiters are woken when it advances.

    Waiters due at the same moment are woken in the order they started waiting, so a run
    on one event loop is deterministic.

    An *idle* wait (``wait_for(..., idle=True)``) is one whose timeout only starts the same
    wait again: a poll with nothing to read, a cycle on a timer with nothing new. Waking it
    every period until something happens changes nothing but the cost, so a driver that
    knows the next moment anything is due calls :meth:`skip_idle` first: each idle waiter
    moves, by whole periods, to its last wake-up at or before that moment. The waits then
    run as if they had woken all along, and a virtual run costs by events, not by seconds.
    """

    def __init__(self, start: datetime = EPOCH) -> None:
        self._now = start
        self._start = start
        self._waiters: list[tuple[datetime, int, _Waiter]] = []
        self._order = itertools.count()
        self.registered = 0
        """How many waits have started so far (a driver's progress signal)."""

    def now(self) -> datetime:
        """The virtual time."""
        return self._now

    def monotonic(self) -> float:
        """Virtual seconds since the start."""
        return (self._now - self._start).total_seconds()

    def advance(self, seconds: float) -> None:
        """Move time forward and wake, in order, whoever waits until then."""
        self._now += timedelta(seconds=seconds)
        while self._waiters and self._waiters[0][0] <= self._now:
            _, _, waiter = heapq.heappop(self._waiters)
            if waiter.active:
                waiter.active = False
                waiter.wake()

    def set(self, moment: datetime) -> None:
        """Move time forward to ``moment`` (never backwards)."""
        if moment > self._now:
            self.advance((moment - self._now).total_seconds())

    def next_wakeup(self) -> datetime | None:
        """The earliest moment someone waits for, or None when nobody waits."""
        while self._waiters and not self._waiters[0][2].active:
            heapq.heappop(self._waiters)
        return self._waiters[0][0] if self._waiters else None

    def next_due(self) -> datetime | None:
        """The earliest moment a waiter that is not idle waits for, or None."""
        dues = [w.due for _, _, w in self._waiters if w.active and w.period is None]
        return min(dues, default=None)

    def skip_idle(self, until: datetime) -> None:
        """Move each idle waiter due before ``until`` to its last wake-up at or before it.

        No waiter moves past the earliest horizon of an idle wait (a cycle whose own rule
        is due then): every waiter wakes at its last wake-up before it, as it would have
        had each period been woken. The waiters keep their order of registration among
        those due at one moment.
        """
        horizons = [w.horizon for _, _, w in self._waiters if w.active and w.horizon is not None]
        if horizons:
            until = min(until, *horizons)
        moved = False
        for index, (due, order, waiter) in enumerate(self._waiters):
            if waiter.active and waiter.period is not None and due < until:
                waiter.due = due + ((until - due) // waiter.period) * waiter.period
                self._waiters[index] = (waiter.due, order, waiter)
                moved = True
        if moved:
            heapq.heapify(self._waiters)

    def _register(
        self,
        seconds: float,
        wake: Callable[[], None],
        *,
        idle: bool = False,
        horizon: datetime | None = None,
    ) -> _Waiter:
        delay = timedelta(seconds=seconds)
        waiter = _Waiter(
            self._now + delay,
            wake,
            period=delay if idle else None,
            horizon=horizon if idle else None,
        )
        heapq.heappush(self._waiters, (waiter.due, next(self._order), waiter))
        self.registered += 1
        return waiter

    async def sleep(self, seconds: float) -> None:
        """Wait until the clock has advanced ``seconds`` (a zero wait yields once)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        waiter = self._register(seconds, wake)
        try:
            await future
        finally:
            waiter.active = False

    async def wait_for(
        self,
        event: asyncio.Event,
        timeout: float,
        *,
        idle: bool = False,
        horizon: datetime | None = None,
    ) -> bool:
        """Wait for ``event`` until the clock has advanced ``timeout`` seconds.

        The timeout is asyncio's own (``asyncio.timeout``), expired by the clock instead of
        the event loop's time, so cancellation behaves as in any asyncio wait. ``idle``: a
        wait that its timeout only repeats (:meth:`skip_idle` may skip its repeats);
        ``horizon``: an idle wait's repeats are skipped up to that moment at most.
        """
        if event.is_set():
            return True
        if timeout <= 0:
            await asyncio.sleep(0)
            return event.is_set()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(None) as deadline:

                def wake() -> None:
                    if not deadline.expired():
                        deadline.reschedule(loop.time())

                waiter = self._register(timeout, wake, idle=idle, horizon=horizon)
                try:
                    await event.wait()
                finally:
                    waiter.active = False
        return event.is_set()


async def wait_idle(
    clock: Clock, event: asyncio.Event, timeout: float, *, horizon: datetime | None = None
) -> bool:
    """``clock.wait_for``, for a wait whose timeout only starts the same wait again.

    On a :class:`VirtualClock` the wait is idle (``VirtualClock.skip_idle``), its repeats
    skipped up to ``horizon`` at most (the moment something of its own is due); on any
    other clock it is an ordinary wait.
    """
    if isinstance(clock, VirtualClock):
        return await clock.wait_for(event, timeout, idle=True, horizon=horizon)
    return await clock.wait_for(event, timeout)
