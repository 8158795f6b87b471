"""One podgroup-enqueue cycle: elect, enqueue, reserve on a snapshot; return the events.

The pure core of podgroup-enqueue: ``run_cycle(snapshot, conf, ctx) ->
CycleResult`` and ``next_due(snapshot, conf, now)`` for the time-based rules (waiting-time
threshold, lock interval, lock timeout). The shell publishes ``CycleResult.events`` in order
(reservations first, so locks are known before the PodGroups they hold back move), then
folds them into its ``ClusterView`` (``view.assume(result.events)``) so the next cycle does
not decide them again.

Deliberate deviations from Volcano:
- ``podgroups.status`` carries a phase change or a reason change (docs/design.md#pending-reasons),
  only when either differs from what the snapshot knows (Volcano rewrites the status every session).
- The phase ``Unknown`` (B3.8 rule 1) needs an Unschedulable verdict of the same session;
  this service allocates nothing, so it never reports Unknown. The allocator's last
  ``Unschedulable`` condition is mirrored as the reason instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.core.scheduling.events import ReservationEvent, phase_events, reservation_events
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.framework.results import SessionResult
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.plugins.reservation import ReservationPlugin, reservation_arguments
from vcbus.core.scheduling.scheduler import default_enqueue_conf, run_session
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx

__all__ = ["CycleResult", "default_enqueue_conf", "next_due", "run_cycle"]


@dataclass(frozen=True, slots=True)
class CycleResult:
    """The events one cycle publishes, and the session's full result."""

    reservations: tuple[ReservationEvent, ...]
    phases: tuple[PodGroupPhaseChanged, ...]
    session: SessionResult

    @property
    def events(self) -> tuple[ReservationEvent | PodGroupPhaseChanged, ...]:
        """Reservation events first, then phase changes (the order to publish them in)."""
        return (*self.reservations, *self.phases)


def run_cycle(
    snapshot: ClusterSnapshot,
    conf: SchedulerConf,
    ctx: Ctx,
    *,
    cache: SessionCache | None = None,
) -> CycleResult:
    """Run one scheduling cycle of podgroup-enqueue.

    Args:
        snapshot: the cluster as podgroup-enqueue's ``ClusterView`` knows it.
        conf: the scheduler configuration (default ``elect, enqueue, reserve``:
            ``default_enqueue_conf()``).
        ctx: the cycle's time.
        cache: the service's job recipes, kept from cycle to cycle (``None``: every job
            is derived afresh; the decisions are the same).

    Returns:
        The reservation events and PodGroup phase changes to publish, with the session.
    """
    result = run_session(snapshot, conf, now=ctx.now, cache=cache)
    return CycleResult(
        reservations=reservation_events(result, ctx.now),
        phases=phase_events(snapshot, result, ctx.now),
        session=result,
    )


def next_due(
    snapshot: ClusterSnapshot, conf: SchedulerConf, now: datetime | None = None
) -> datetime | None:
    """The next moment a cycle may change something with no new input.

    Args:
        snapshot: the view after the last cycle's own events were folded in.
        conf: the scheduler configuration.
        now: the time of the last cycle; only later moments are returned (without it, a
            moment already past may come back).

    Returns:
        The next lock step or lock timeout of the target, or the moment a job reaches the
        waiting-time threshold; ``None`` when nothing is due (no ``reservation`` plugin).
    """
    arguments = reservation_arguments(conf)
    if arguments is None:
        return None
    return ReservationPlugin(arguments).next_due(snapshot, now)
