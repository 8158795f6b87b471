"""Waiting in clock time: the virtual clock wakes waiters only when it is advanced."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.runtime.clock import EPOCH, ArrivalStamps, SystemClock, VirtualClock


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_sleep_ends_only_when_clock_passes_its_deadline():
    clock = VirtualClock()
    task = asyncio.create_task(clock.sleep(1.0))
    await _settle()
    clock.advance(0.5)
    await _settle()
    assert not task.done()
    clock.advance(0.5)
    await _settle()
    assert task.done()


async def test_wait_for_returns_false_when_timeout_passes_in_virtual_time():
    clock = VirtualClock()
    event = asyncio.Event()
    task = asyncio.create_task(clock.wait_for(event, 2.0))
    await _settle()
    assert clock.next_wakeup() == EPOCH + timedelta(seconds=2)
    clock.advance(2.0)
    assert await task is False
    assert clock.next_wakeup() is None


async def test_wait_for_returns_true_and_drops_its_waiter_when_event_is_set():
    clock = VirtualClock()
    event = asyncio.Event()
    task = asyncio.create_task(clock.wait_for(event, 5.0))
    await _settle()
    event.set()
    assert await task is True
    assert clock.next_wakeup() is None


async def test_waiters_wake_in_deadline_order_when_clock_jumps_past_them():
    clock = VirtualClock()
    woken: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woken.append(name)

    tasks = [
        asyncio.create_task(sleeper("late", 3.0)),
        asyncio.create_task(sleeper("early", 1.0)),
        asyncio.create_task(sleeper("middle", 2.0)),
    ]
    await _settle()
    clock.set(EPOCH + timedelta(seconds=10))
    await asyncio.gather(*tasks)
    assert woken == ["early", "middle", "late"]


async def test_zero_wait_yields_without_registering_when_timeout_is_zero():
    clock = VirtualClock()
    assert await clock.wait_for(asyncio.Event(), 0.0) is False
    await clock.sleep(0.0)
    assert clock.registered == 0


async def test_cancelled_sleep_leaves_no_waiter_when_task_is_cancelled():
    clock = VirtualClock()
    task = asyncio.create_task(clock.sleep(1.0))
    await _settle()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert clock.next_wakeup() is None


async def test_system_clock_wait_for_returns_true_when_event_is_already_set():
    event = asyncio.Event()
    event.set()
    assert await SystemClock().wait_for(event, 0.0) is True


async def test_getmany_waits_in_virtual_time_when_memory_bus_has_a_clock():
    clock = VirtualClock()
    bus = InMemoryBus(clock=clock)
    consumer = bus.consumer(["t"], group=None, client_id="c")
    await consumer.start()
    try:
        task = asyncio.create_task(consumer.getmany(timeout=30.0, max_records=10))
        await bus.drain_until_idle()
        assert not task.done()
        assert clock.next_wakeup() == EPOCH + timedelta(seconds=30)
        clock.advance(30.0)
        assert await task == []
    finally:
        await consumer.stop()


def test_arrival_stamps_keep_read_order_when_the_clock_stands_still():
    clock = VirtualClock(EPOCH)
    stamps = ArrivalStamps(clock)

    burst = [stamps.next() for _ in range(3)]

    assert burst == [EPOCH, EPOCH + timedelta(microseconds=1), EPOCH + timedelta(microseconds=2)]


def test_arrival_stamps_follow_the_clock_when_it_moves_past_them():
    clock = VirtualClock(EPOCH)
    stamps = ArrivalStamps(clock)
    stamps.next()
    stamps.next()

    clock.advance(1.0)

    assert stamps.next() == EPOCH + timedelta(seconds=1)


async def test_skip_idle_moves_idle_wait_to_its_last_period_before_the_moment():
    clock = VirtualClock()
    event = asyncio.Event()
    idle = asyncio.create_task(clock.wait_for(event, 1.0, idle=True))
    busy = asyncio.create_task(clock.sleep(7.5))
    await _settle()
    assert clock.next_due() == EPOCH + timedelta(seconds=7.5)
    clock.skip_idle(EPOCH + timedelta(seconds=7.5))
    assert clock.next_wakeup() == EPOCH + timedelta(seconds=7)
    clock.advance(7.0)
    assert await idle is False
    clock.advance(0.5)
    await busy


async def test_skip_idle_moves_no_waiter_past_the_horizon_of_an_idle_wait():
    clock = VirtualClock()
    event = asyncio.Event()
    due = EPOCH + timedelta(seconds=4.5)
    ruled = asyncio.create_task(clock.wait_for(event, 1.0, idle=True, horizon=due))
    other = asyncio.create_task(clock.wait_for(asyncio.Event(), 2.0, idle=True))
    await _settle()
    assert clock.next_due() is None
    clock.skip_idle(EPOCH + timedelta(seconds=10))
    assert clock.next_wakeup() == EPOCH + timedelta(seconds=4)
    clock.advance(4.0)
    assert await ruled is False
    assert await other is False


async def test_skip_idle_leaves_waits_that_are_not_idle_where_they_are():
    clock = VirtualClock()
    task = asyncio.create_task(clock.wait_for(asyncio.Event(), 1.0))
    await _settle()
    clock.skip_idle(EPOCH + timedelta(seconds=10))
    assert clock.next_wakeup() == EPOCH + timedelta(seconds=1)
    clock.advance(1.0)
    assert await task is False
