"""Scheduling cycles rest after a cycle under a stream of changes, not after a quiet spell;
after a cycle that decided nothing, timer-only cycles run once in ten periods."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.runtime.clock import VirtualClock
from vcbus.core.runtime.cycle import run_cycles
from vcbus.core.runtime.service import Runtime
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table

CYCLE_SECONDS = 2.0
DEBOUNCE = 0.005


def _service(clock: VirtualClock) -> tuple[Runtime, Table]:
    """A runtime on ``clock`` and the table whose changes wake its cycles."""
    bus = InMemoryBus()
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="unused"))
    runtime = Runtime("svc", bus, clock, settings, bus.producer(client_id="p"))
    return runtime, Table("cluster", (), lambda event, record: None)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def _cycle_starts(changes_at: list[float], *, rest: float) -> list[float]:
    """Virtual moments cycles started when the table changed at ``changes_at``."""
    clock = VirtualClock()
    runtime, table = _service(clock)
    starts: list[float] = []

    async def cycle() -> bool:
        starts.append(clock.monotonic())
        await clock.sleep(CYCLE_SECONDS)
        return True

    task = asyncio.create_task(
        run_cycles(runtime, table, cycle, debounce=DEBOUNCE, interval=60.0, rest=rest, max_rest=5.0)
    )
    pending = sorted(changes_at)
    horizon = max(changes_at) + 30.0
    while True:
        await _settle()
        if pending and pending[0] <= clock.monotonic():
            pending.pop(0)
            table.changed.set()
            continue
        wakeup = clock.next_wakeup()
        due = (wakeup - clock.now()).total_seconds() if wakeup is not None else None
        step = min(
            x for x in (due, pending[0] - clock.monotonic() if pending else None) if x is not None
        )
        if clock.monotonic() + step > horizon:
            break
        clock.advance(step)
    runtime.stopping.set()
    task.cancel()
    return [round(start, 3) for start in starts]


async def test_a_change_after_a_quiet_spell_waits_only_the_debounce():
    starts = await _cycle_starts([0.0, 10.0], rest=1.0)

    assert starts == [DEBOUNCE, 10.0 + DEBOUNCE]


async def test_a_change_during_a_cycle_waits_rest_times_the_cycle_after_it_ends():
    starts = await _cycle_starts([0.0, 1.0], rest=1.0)

    # the first cycle runs 0.005 → 2.005; the change at 1.0 waits until 2.005 + 1 × 2
    assert starts == [DEBOUNCE, DEBOUNCE + CYCLE_SECONDS + 1.0 * CYCLE_SECONDS]


async def test_a_larger_rest_spaces_cycles_further_under_a_stream_of_changes():
    starts = await _cycle_starts([0.0, 1.0], rest=2.0)

    assert starts == [DEBOUNCE, DEBOUNCE + CYCLE_SECONDS + 2.0 * CYCLE_SECONDS]


async def test_a_rule_due_later_than_the_period_wakes_no_cycle_before_its_last_period():
    clock = VirtualClock()
    runtime, table = _service(clock)
    rule = clock.now() + timedelta(seconds=10.5)
    starts: list[float] = []

    async def cycle() -> bool:
        starts.append(clock.monotonic())
        return True

    def next_due() -> datetime | None:
        return rule if clock.now() < rule else None

    task = asyncio.create_task(
        run_cycles(runtime, table, cycle, debounce=DEBOUNCE, interval=1.0, next_due=next_due)
    )
    while clock.monotonic() < 20.0:
        await _settle()
        clock.skip_idle(clock.now() + timedelta(seconds=100))
        wakeup = clock.next_wakeup()
        assert wakeup is not None
        clock.set(wakeup)
    runtime.stopping.set()
    task.cancel()

    # a cycle each second up to the rule would decide nothing: the last period's and the
    # rule's own run, no other
    assert starts == [10.0, 10.5]


async def _timer_starts(decides: bool, *, change_at: float | None = None) -> list[float]:
    """Virtual moments cycles started over 25 s of 1 s periods, with at most one change."""
    clock = VirtualClock()
    runtime, table = _service(clock)
    starts: list[float] = []

    async def cycle() -> bool:
        starts.append(round(clock.monotonic(), 3))
        return decides

    task = asyncio.create_task(
        run_cycles(runtime, table, cycle, debounce=DEBOUNCE, interval=1.0, quiet_periods=10)
    )
    while clock.monotonic() < 25.0:
        await _settle()
        if change_at is not None and clock.monotonic() >= change_at:
            change_at = None
            table.changed.set()
            continue
        wakeup = clock.next_wakeup()
        assert wakeup is not None
        if change_at is not None:
            wakeup = min(wakeup, clock.now() + timedelta(seconds=change_at - clock.monotonic()))
        clock.set(wakeup)
    runtime.stopping.set()
    task.cancel()
    return starts


async def test_timer_cycles_after_one_that_decided_nothing_run_once_in_ten_periods():
    assert await _timer_starts(False) == [1.0, 11.0, 21.0]


async def test_timer_cycles_run_every_period_while_cycles_decide():
    assert await _timer_starts(True) == [float(s) for s in range(1, 25)]


async def test_a_change_while_timer_cycles_are_skipped_runs_a_cycle_after_the_debounce():
    assert await _timer_starts(False, change_at=4.5) == [
        1.0,
        4.5 + DEBOUNCE,
        14.5 + DEBOUNCE,
        24.5 + DEBOUNCE,
    ]
