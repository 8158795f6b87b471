"""One allocator cycle: run the configured actions on a snapshot, return the events to publish.

The pure core of the allocator: ``run_cycle(snapshot, conf, ctx) -> CycleResult``.
The shell publishes ``CycleResult.events`` and then calls ``ClusterView.assume`` with them.

Deliberate deviations from Volcano:
- Conditions are published on ``podgroups.conditions`` only when they differ from the ones the
  snapshot knows (the allocator's last publication), not rewritten every session.
- PodGroup phases are computed (``CycleResult.session.podgroup_updates``) but not published:
  ``podgroups.status`` has one writer, podgroup-enqueue.
- Will-bind reservations (vcbus, ``vcbus.core.scheduling.framework.will_bind``) are published on
  ``capacity.reservations``; ``next_due`` gives the moment the earliest one times out.
- Evictions (preempt, reclaim) are ``PodEvictionRequested`` commands on ``bindings``, the
  nominations of their preemptors ``PodsNominated``/``NominationEnded`` on
  ``capacity.reservations``; ``next_due`` also gives the moment a nomination expires.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

import msgspec

from vcbus.contracts._base import derive_event_id, tag_of
from vcbus.contracts.events.bindings import BindingCreated, PodEvictionRequested
from vcbus.contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReserved,
    LocksHonoured,
    LocksLifted,
    NominationEnded,
    PodsNominated,
)
from vcbus.contracts.events.podgroups_conditions import PodGroupConditionsChanged
from vcbus.contracts.keys import NodeName
from vcbus.contracts.objects.meta import Condition
from vcbus.core.scheduling.events import eviction_events, nomination_events, will_bind_events
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.framework.results import BindDecision, PodGroupUpdate, SessionResult
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.model import naive_utc
from vcbus.core.scheduling.scheduler import run_session
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx

BINDING_KIND = tag_of(BindingCreated)
LOCKS_KIND = tag_of(LocksHonoured)
LIFTED_KIND = tag_of(LocksLifted)
CONDITIONS_KIND = tag_of(PodGroupConditionsChanged)


@dataclass(frozen=True, slots=True)
class CycleResult:
    """The events one cycle publishes, and the session's full result."""

    bindings: tuple[BindingCreated, ...]
    conditions: tuple[PodGroupConditionsChanged, ...]
    session: SessionResult
    reservations: tuple[CapacityReserved | CapacityReleased, ...] = ()
    """Will-bind reservations made and released, in order."""
    evictions: tuple[PodEvictionRequested, ...] = ()
    """Pods to end for a preemptor (preempt, reclaim)."""
    nominations: tuple[PodsNominated | NominationEnded, ...] = ()
    """Nominations made and ended, in order."""

    @property
    def events(
        self,
    ) -> tuple[
        PodsNominated
        | NominationEnded
        | PodEvictionRequested
        | BindingCreated
        | CapacityReserved
        | CapacityReleased
        | PodGroupConditionsChanged,
        ...,
    ]:
        """Nominations, evictions, bindings, will-bind changes, then conditions.

        Nominations go first: a view that reads the evictions already knows whom the
        released capacity waits for.
        """
        return (
            *self.nominations,
            *self.evictions,
            *self.bindings,
            *self.reservations,
            *self.conditions,
        )


def binding_event(decision: BindDecision, ctx: Ctx) -> BindingCreated:
    """The ``BindingCreated`` of a decision; its id derives from pod key, uid, node, attempt."""
    entity = f"{decision.key}/{decision.pod.uid}/{decision.node}"
    return BindingCreated(
        event_id=derive_event_id(BINDING_KIND, entity, decision.attempt),
        occurred_at=ctx.now,
        pod=decision.pod,
        node=NodeName(decision.node),
        attempt=decision.attempt,
    )


def _digest(conditions: tuple[Condition, ...]) -> str:
    return hashlib.sha256(msgspec.json.encode(conditions)).hexdigest()[:16]


def conditions_event(
    update: PodGroupUpdate, previous: tuple[Condition, ...], ctx: Ctx
) -> PodGroupConditionsChanged:
    """The ``PodGroupConditionsChanged`` of an update; its id derives from the transition."""
    generation = f"{_digest(previous)}>{_digest(update.conditions)}"
    return PodGroupConditionsChanged(
        event_id=derive_event_id(CONDITIONS_KIND, update.job, generation),
        occurred_at=ctx.now,
        job=update.job,
        podgroup=update.podgroup,
        conditions=update.conditions,
    )


def locks_honoured(
    reservation: Reservation, last: LocksHonoured | None, ctx: Ctx
) -> LocksHonoured | None:
    """The ``LocksHonoured`` to publish before this cycle's bindings, if the locks changed.

    Args:
        reservation: the reservation in the snapshot the cycle runs on.
        last: what this allocator last published (``None`` after a start or takeover,
            which then publishes the current locks again under the same id).
        ctx: the cycle's time.

    Returns:
        The event when a target has locked nodes that differ from ``last``, else ``None``.
    """
    if reservation.target_job is None or not reservation.locked_nodes:
        return None
    nodes = tuple(sorted(NodeName(node) for node in reservation.locked_nodes))
    if (
        last is not None
        and last.job == reservation.target_job
        and last.generation == reservation.generation
        and last.nodes == nodes
    ):
        return None
    return LocksHonoured(
        event_id=derive_event_id(
            LOCKS_KIND, reservation.target_job, f"{reservation.generation}|{','.join(nodes)}"
        ),
        occurred_at=ctx.now,
        job=reservation.target_job,
        generation=reservation.generation,
        nodes=nodes,
    )


def locks_lifted(
    reservation: Reservation, lifted: bool, last: LocksLifted | None, ctx: Ctx
) -> LocksLifted | None:
    """The ``LocksLifted`` to publish before this cycle's bindings, once per reservation.

    Args:
        reservation: the reservation in the snapshot the cycle runs on.
        lifted: whether the cycle lifted the locks (the target's gang is placed).
        last: what this allocator last published.
        ctx: the cycle's time.
    """
    if not lifted or reservation.target_job is None or not reservation.locked_nodes:
        return None
    if last is not None and (last.job, last.generation) == (
        reservation.target_job,
        reservation.generation,
    ):
        return None
    return LocksLifted(
        event_id=derive_event_id(LIFTED_KIND, reservation.target_job, reservation.generation),
        occurred_at=ctx.now,
        job=reservation.target_job,
        generation=reservation.generation,
        nodes=tuple(sorted(NodeName(node) for node in reservation.locked_nodes)),
    )


def run_cycle(
    snapshot: ClusterSnapshot,
    conf: SchedulerConf,
    ctx: Ctx,
    *,
    cache: SessionCache | None = None,
) -> CycleResult:
    """Run one scheduling cycle of the allocator.

    Args:
        snapshot: the cluster as the allocator's ``ClusterView`` knows it.
        conf: the scheduler configuration (default: ``actions: "allocate, backfill"``).
        ctx: the cycle's time.
        cache: the service's job recipes, kept from cycle to cycle (``None``: every job
            is derived afresh; the decisions are the same).

    Returns:
        The bindings, will-bind changes and condition changes to publish, with the
        session's full result.
    """
    result = run_session(snapshot, conf, now=ctx.now, cache=cache)
    bindings = tuple(binding_event(d, ctx) for d in result.decisions)
    conditions = []
    for update in result.podgroup_updates:
        if not update.conditions_changed:
            continue
        state = snapshot.podgroups.get(update.job)
        previous = state.conditions if state is not None else ()
        conditions.append(conditions_event(update, previous, ctx))
    return CycleResult(
        bindings=bindings,
        conditions=tuple(conditions),
        session=result,
        reservations=will_bind_events(result, ctx.now),
        evictions=eviction_events(result, ctx.now),
        nominations=nomination_events(result, ctx.now),
    )


def next_due(snapshot: ClusterSnapshot, now: datetime | None = None) -> datetime | None:
    """The next moment a cycle may change something with no new input.

    A will-bind timeout, or the end of a nomination.

    Args:
        snapshot: the view after the last cycle's own events were folded in.
        now: the time of the last cycle; only later moments are returned.

    Returns:
        The earliest expiry of a held will-bind reservation after ``now``, or ``None``.
    """
    moments = [
        held.expires_at
        for held in snapshot.will_bind.values()
        if held.pods and held.expires_at is not None
    ]
    moments += [nomination.until for nomination in snapshot.nominations.values()]
    later = [m for m in moments if now is None or naive_utc(m) > naive_utc(now)]
    return min(later, key=naive_utc) if later else None
