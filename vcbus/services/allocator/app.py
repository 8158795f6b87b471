"""Wiring of the allocator: follows the state topics into a view, runs allocate cycles, binds.

A cycle that sees new node locks (``reservations``) publishes ``LocksHonoured`` before
its bindings: from then on no other job's pod is bound to those nodes. A cycle that places
the target (or first sees it placed) publishes ``LocksLifted`` before its bindings: from
then on the other jobs use those nodes again, ahead of podgroup-enqueue's unlock.

One replica is active (the lease); standbys follow the same topics and take over on
rebalance. The cluster refuses any binding that would overcommit a node, so even two
active allocators could not overcommit.

The allocator is also the node lifecycle controller of real nodes (docs/design.md#real-nodes,
:mod:`vcbus.services.allocator.node_lifecycle`): each cycle, a node silent past the grace period
is unschedulable, and the pods of one silent past the eviction timeout end ``NodeLost``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from vcbus.contracts import BindingCreated, LocksHonoured, LocksLifted
from vcbus.core.authority import Role, sign_binding, signing_key_from
from vcbus.core.node_lifecycle import NodeLifecycleConf
from vcbus.core.runtime.clock import Clock
from vcbus.core.runtime.scheduler import folds_cluster_event, scheduling_service
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings, SettingsError
from vcbus.core.scheduling import ClusterEvent, ClusterView
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.framework.results import CycleObserver
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.model import naive_utc
from vcbus.core.scheduling.scheduler import default_conf
from vcbus.core.step import Ctx

from . import node_lifecycle
from .cycle import locks_honoured, locks_lifted, next_due, run_cycle

NAME = "allocator"


def build_service(
    settings: Settings,
    clock: Clock,
    *,
    conf: SchedulerConf | None = None,
    on_cycle: CycleObserver | None = None,
    lifecycle: NodeLifecycleConf | None = None,
) -> Service:
    """The allocator: ``allocate, backfill`` on change, at will-bind timeouts, each second.

    ``on_cycle`` is told each cycle's time and session result (``vcbus simulate --cycles``).
    ``lifecycle`` bounds a real node's silence (default: from ``settings``'
    ``VCBUS_NODE_MONITOR_GRACE_SECONDS`` and ``VCBUS_POD_EVICTION_TIMEOUT_SECONDS``).
    """
    conf = conf or default_conf()
    lifecycle = lifecycle or NodeLifecycleConf.from_env(settings.extra)
    try:
        key = signing_key_from(settings.extra, Role.ALLOCATOR)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    view = ClusterView()
    cache = SessionCache()

    honoured: list[LocksHonoured] = []
    lifted: list[LocksLifted] = []

    def decide(ctx: Ctx) -> Sequence[ClusterEvent]:
        snapshot = view.snapshot()
        lost = node_lifecycle.lost_pods(snapshot, ctx.now, lifecycle)
        snapshot = node_lifecycle.cordon_not_ready(snapshot, ctx.now, lifecycle)
        result = run_cycle(snapshot, conf, ctx, cache=cache)
        if on_cycle is not None:
            on_cycle(ctx.now, result.session)
        notes: list[ClusterEvent] = []
        locks = locks_honoured(snapshot.reservation, honoured[-1] if honoured else None, ctx)
        if locks is not None:
            notes.append(locks)
        lift = locks_lifted(
            snapshot.reservation,
            result.session.locks_lifted,
            lifted[-1] if lifted else None,
            ctx,
        )
        if lift is not None:
            notes.append(lift)
        events = (*lost, *notes, *result.events)
        if key is None:
            return events
        # a node agent starts only what the allocator signed (docs/security.md)
        return tuple(sign_binding(key, e) if isinstance(e, BindingCreated) else e for e in events)

    def assume(events: Sequence[ClusterEvent]) -> None:
        # what this allocator last published is recorded once it is published: a cycle
        # whose events were dropped (its lease lapsed) must say the same again next time
        view.assume(events)
        for event in events:
            if isinstance(event, LocksHonoured):
                honoured[:] = [event]
            elif isinstance(event, LocksLifted):
                lifted[:] = [event]

    def due(now: datetime) -> datetime | None:
        snapshot = view.snapshot()
        moments = [
            moment
            for moment in (
                next_due(snapshot, now),
                node_lifecycle.next_due(snapshot, now, lifecycle),
            )
            if moment is not None
        ]
        return min(moments, key=naive_utc) if moments else None

    return scheduling_service(
        NAME,
        clock,
        folds=folds_cluster_event,
        apply=view.apply,
        decide=decide,
        assume=assume,
        next_due=due,
        cycle_span="allocator.cycle",
        action="allocate",
        rest=settings.cycle_rest,
    )
