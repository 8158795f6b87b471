"""Wiring of the allocator: follows the state topics into a view, runs allocate cycles, binds.

One replica is active (the lease); standbys follow the same topics and take over on
rebalance. The cluster refuses any binding that would overcommit a node, so even two
active allocators could not overcommit.
"""

from __future__ import annotations

from pathlib import Path

from contracts import Event, Topic
from shared.bus.records import Record
from shared.runtime.clock import Clock
from shared.runtime.cycle import run_cycles
from shared.runtime.service import Runtime, Service
from shared.runtime.settings import Settings
from shared.runtime.table import Table
from shared.runtime.traces import JobTraces
from shared.scheduling import ClusterView
from shared.scheduling.framework.conf import SchedulerConf, default_conf, parse_conf
from shared.step import Ctx

from .cycle import run_cycle

NAME = "allocator"

STATE_TOPICS = (
    Topic.PODGROUPS,
    Topic.PODGROUPS_STATUS,
    Topic.PODGROUPS_CONDITIONS,
    Topic.PODS,
    Topic.PODS_STATUS,
    Topic.BINDINGS,
    Topic.NODES,
    Topic.QUEUES,
    Topic.RESERVATIONS,
)


def load_conf(path: str | None) -> SchedulerConf:
    """The scheduler configuration from a volcano-scheduler.conf file, or the default."""
    return parse_conf(Path(path).read_text()) if path else default_conf()


def build_service(
    settings: Settings, clock: Clock, *, conf: SchedulerConf | None = None, debounce: float = 0.005
) -> Service:
    """The allocator: cycles on input change (debounced) and every second."""
    conf = conf or default_conf()
    view = ClusterView()
    traces = JobTraces()

    def apply(event: Event, record: Record) -> None:
        view.apply(event)  # type: ignore[arg-type]
        traces.observe(event, record)

    table = Table("cluster", STATE_TOPICS, apply)

    async def cycle(runtime: Runtime) -> None:
        async def once() -> None:
            result = run_cycle(view.snapshot(), conf, Ctx(now=clock.now()))
            if result.events:
                await traces.publish_cycle(runtime, "allocator.cycle", "allocate", result.events)
                view.assume([*result.bindings, *result.conditions])
                runtime.stats["bindings"] = runtime.stats.get("bindings", 0) + len(result.bindings)

        await run_cycles(runtime, table, once, debounce=debounce, interval=1.0)

    return Service(name=NAME, tables=[table], tasks=[cycle], singleton=True)
