"""The shell of a scheduling service: a view fed by tables, cycles, lease, traced publishing.

podgroup-enqueue and the allocator differ only in their pure cycle and the topics they
follow; this builds the rest once (`app.py` follows the state topics into a
view, triggers cycles on change and on a timer, publishes, assumes its own decisions, and
only the lease holder publishes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeGuard, TypeVar

import structlog

from vcbus.contracts import Event, Topic
from vcbus.core.bus.records import Record
from vcbus.core.runtime.clock import Clock, SystemClock
from vcbus.core.runtime.cycle import run_cycles
from vcbus.core.runtime.service import Runtime, Service
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.traces import JobTraces
from vcbus.core.scheduling import ClusterEvent
from vcbus.core.step import Ctx

SCHEDULING_TOPICS = (
    Topic.PODGROUPS,
    Topic.PODGROUPS_STATUS,
    Topic.PODGROUPS_CONDITIONS,
    Topic.PODS,
    Topic.PODS_STATUS,
    Topic.BINDINGS,
    Topic.NODES,
    Topic.QUEUES,
    Topic.RESERVATIONS,
    Topic.CAPACITY_RESERVATIONS,
)
"""What a scheduling service's view follows: the whole cluster, its own outputs included."""

log = structlog.get_logger("vcbus.cycle")

E = TypeVar("E", bound=Event)
"""The events a scheduling service's view folds (``vcbus.core.scheduling.ClusterEvent``)."""

Decide = Callable[[Ctx], Sequence[E]]
"""Runs one cycle on the current view and returns the events to publish."""


def scheduling_service(
    name: str,
    clock: Clock,
    *,
    folds: Callable[[Event], TypeGuard[E]],
    apply: Callable[[E], None],
    decide: Decide[E],
    assume: Callable[[Sequence[E]], None],
    next_due: Callable[[datetime], datetime | None] | None = None,
    cycle_span: str,
    action: str,
    rest: float,
    debounce: float = 0.005,
    interval: float = 1.0,
) -> Service:
    """A singleton service that runs ``decide`` when its view changes or time-based rules are due.

    Args:
        name: the service name.
        clock: where time comes from.
        folds: whether the view folds an event; every event of ``SCHEDULING_TOPICS`` is
            one, and one that is not goes to the ``.DLT`` as a fold that raised would.
        apply: folds one event into the view.
        decide: one cycle on the view; returns the events to publish.
        assume: folds the cycle's own published events into the view at once.
        next_due: the next moment a cycle may change something with no input, given now.
        cycle_span: the cycle's root span name (``allocator.cycle``).
        action: the per-job span's verb (``allocate`` → ``allocate <job>``).
        rest: under a stream of changes, rest this many times the last cycle's duration
            (at most a second) after a cycle before the next (``Settings.cycle_rest``), so
            a service that could cycle back to back cycles at most ``1 / (1 + rest)`` of
            the time (``make bench``, 5,000 nodes x 2,000 jobs, two runs each: rest 1
            786-850 pods/s, rest 2 869-882, rest 3 844-867; probe p50 157-171 ms at 1,
            171 at 2, 185 at 3).
        debounce: seconds to wait for more changes after one.
        interval: seconds between cycles at the latest.

    Returns:
        The service.
    """
    traces = JobTraces()

    def follow(event: Event, record: Record) -> None:
        if not folds(event):
            raise TypeError(f"the {name} view does not fold {type(event).__name__}")
        apply(event)
        traces.observe(event, record)

    table = Table("cluster", SCHEDULING_TOPICS, follow)

    async def cycles(runtime: Runtime) -> None:
        async def once() -> bool:
            started = clock.monotonic()
            ctx = Ctx(now=clock.now())
            if isinstance(clock, SystemClock):
                # A cycle may take seconds on a busy machine: decided beside the event loop,
                # which goes on sending the lease's heartbeats; the view is not folded
                # meanwhile. On a virtual clock the run stays on the loop, deterministic.
                async with table.folding:
                    events = await asyncio.to_thread(decide, ctx)
            else:
                events = decide(ctx)
            decided = clock.monotonic()
            if not events:
                return False
            if runtime.lease is not None and not runtime.lease.is_active:
                # the lease lapsed or moved while deciding: another replica may be active
                # now, so these decisions are dropped and the holder makes its own
                log.warning(
                    "cycle_discarded",
                    events=len(events),
                    decide_ms=round((decided - started) * 1000, 3),
                    reason="the lease lapsed while deciding",
                )
                return True
            await traces.publish_cycle(runtime, cycle_span, action, events)
            assume(events)
            runtime.stats["published"] = runtime.stats.get("published", 0) + len(events)
            log.info(
                "cycle_decided",
                events=len(events),
                decide_ms=round((decided - started) * 1000, 3),
                publish_ms=round((clock.monotonic() - decided) * 1000, 3),
            )
            return True

        due = (lambda: next_due(clock.now())) if next_due is not None else None
        await run_cycles(
            runtime, table, once, debounce=debounce, interval=interval, next_due=due, rest=rest
        )

    return Service(name=name, tables=[table], tasks=[cycles], singleton=True)


def folds_cluster_event(event: Event) -> TypeGuard[ClusterEvent]:
    """Whether a ``ClusterView`` folds ``event`` (every event of ``SCHEDULING_TOPICS`` does)."""
    return isinstance(event, ClusterEvent)
