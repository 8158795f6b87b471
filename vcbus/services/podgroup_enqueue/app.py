"""Wiring of podgroup-enqueue: follows the state topics, runs elect/enqueue/reserve cycles.

It writes ``podgroups.status`` (phase and reason) and ``reservations`` (target elected,
nodes locked, nodes unlocked). One replica is active (the lease); standbys follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from vcbus.core.runtime.clock import Clock
from vcbus.core.runtime.scheduler import folds_cluster_event, scheduling_service
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.scheduling import ClusterEvent, ClusterView
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.framework.results import CycleObserver
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.scheduler import default_enqueue_conf
from vcbus.core.step import Ctx

from .cycle import next_due, run_cycle

NAME = "podgroup-enqueue"


def build_service(
    settings: Settings,
    clock: Clock,
    *,
    conf: SchedulerConf | None = None,
    on_cycle: CycleObserver | None = None,
) -> Service:
    """podgroup-enqueue: ``elect, enqueue, reserve`` on change, when rules are due, every second.

    ``on_cycle`` is told each cycle's time and session result (``vcbus simulate --cycles``).
    """
    conf = conf or default_enqueue_conf()
    view = ClusterView()
    cache = SessionCache()

    def decide(ctx: Ctx) -> Sequence[ClusterEvent]:
        result = run_cycle(view.snapshot(), conf, ctx, cache=cache)
        if on_cycle is not None:
            on_cycle(ctx.now, result.session)
        return result.events

    def due(now: datetime) -> datetime | None:
        return next_due(view.snapshot(), conf, now)

    return scheduling_service(
        NAME,
        clock,
        folds=folds_cluster_event,
        apply=view.apply,
        decide=decide,
        assume=view.assume,
        next_due=due,
        cycle_span="enqueue.cycle",
        action="enqueue",
        rest=settings.cycle_rest,
    )
