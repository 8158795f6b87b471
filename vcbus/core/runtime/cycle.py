"""Scheduling cycles: run one when inputs changed (debounced) and on a timer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import structlog

from vcbus.core.runtime.clock import wait_idle
from vcbus.core.runtime.service import Runtime
from vcbus.core.runtime.table import Table

log = structlog.get_logger("vcbus.cycle")

Cycle = Callable[[], Awaitable[bool]]
"""Runs one cycle; whether it decided anything (published, or dropped for a lapsed lease)."""
NextDue = Callable[[], datetime | None]

QUIET_PERIODS = 10
"""After a cycle that decided nothing, a timer-only cycle runs once in this many intervals."""


async def run_cycles(
    runtime: Runtime,
    table: Table,
    cycle: Cycle,
    *,
    debounce: float,
    interval: float,
    next_due: NextDue | None = None,
    rest: float = 0.0,
    max_rest: float = 1.0,
    quiet_periods: int = QUIET_PERIODS,
) -> None:
    """Run ``cycle`` when inputs changed, when a time-based rule is due, or every ``interval``.

    After a change it waits ``debounce`` seconds for more changes before running, and the
    next cycle starts no sooner than ``rest`` times the last cycle's duration (at most
    ``max_rest`` seconds) after the last cycle ended: a cycle costs about the same for one
    change as for a hundred, so under a stream of changes the service cycles at most
    ``1 / (1 + rest)`` of the time and leaves the rest of the CPU to the services it shares
    the machine with, while a change after a quiet spell waits only the debounce. Every
    wait is in the runtime clock's time, so on a virtual clock cycles run in virtual time.

    A cycle on the timer alone (no change, no rule due) decides what the last one did: after
    a cycle that decided nothing, such cycles are skipped, all but one every
    ``quiet_periods`` intervals, a safety net that bounds what a rule missing from
    ``next_due`` could wait. An idle service then runs no session each second.

    Only the holder of the lease runs cycles; a standby keeps its view current, and its
    first period as the holder runs one.
    """
    last = 0.0
    ended = float("-inf")
    decided = True  # whether the last cycle decided anything: a first cycle always runs
    holding = False
    skipped = 0
    while not runtime.stopping.is_set():
        due = next_due() if next_due is not None else None
        rule_due = False
        if due is None:
            # Nothing time-based is due: a cycle on the timer decides what the last did.
            await wait_idle(runtime.clock, table.changed, interval)
        elif (due - runtime.clock.now()).total_seconds() > interval:
            # The rule is due after this period: until then, the same.
            await wait_idle(runtime.clock, table.changed, interval, horizon=due)
        else:
            # the rule is due within this period: the wait ends at its moment
            wait = max(0.0, min(interval, (due - runtime.clock.now()).total_seconds()))
            await runtime.clock.wait_for(table.changed, wait)
            rule_due = True
        changed = table.changed.is_set()
        if changed:
            now = runtime.clock.monotonic()
            start = max(now + debounce, ended + min(rest * last, max_rest))
            await runtime.clock.sleep(start - now)
            table.changed.clear()
        if runtime.lease is not None and not runtime.lease.is_active:
            holding = False
            continue
        if not (changed or rule_due) and holding and not decided and skipped < quiet_periods - 1:
            skipped += 1
            continue
        holding, skipped = True, 0
        started = runtime.clock.monotonic()
        decided = await cycle()
        runtime.stats["cycles"] = runtime.stats.get("cycles", 0) + 1
        ended = runtime.clock.monotonic()
        last = ended - started
        runtime.metrics.observe_cycle(last)
        log.debug("cycle_finished", duration_ms=round(last * 1000, 3))
