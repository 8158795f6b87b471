"""The events a session's result stands for: PodGroup phases, reservations, will-bind.

podgroup-enqueue publishes the phase and reservation changes (``podgroups.status``,
``reservations``), the allocator the will-bind changes (``capacity.reservations``), and the
snapshot scenario folds them back into its view, so all build them here, with deterministic
ids: a cycle run twice on the same snapshot emits the same ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import assert_never

import msgspec

from vcbus.contracts._base import derive_event_id, tag_of
from vcbus.contracts.events.bindings import PodEvictionRequested
from vcbus.contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReserved,
    NominationEnded,
    PodsNominated,
)
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.core.scheduling.framework.results import (
    EvictDecision,
    NominationChange,
    NominationChangeKind,
    PodGroupStatusUpdate,
    ReservationChange,
    ReservationChangeKind,
    SessionResult,
    WillBindChange,
    WillBindChangeKind,
)
from vcbus.core.scheduling.snapshot import ClusterSnapshot

PHASE_KIND = tag_of(PodGroupPhaseChanged)
ELECTED_KIND = tag_of(TargetJobElected)
LOCKED_KIND = tag_of(NodesLocked)
UNLOCKED_KIND = tag_of(NodesUnlocked)
CAPACITY_RESERVED_KIND = tag_of(CapacityReserved)
CAPACITY_RELEASED_KIND = tag_of(CapacityReleased)
EVICTION_KIND = tag_of(PodEvictionRequested)
NOMINATED_KIND = tag_of(PodsNominated)
NOMINATION_ENDED_KIND = tag_of(NominationEnded)

ReservationEvent = TargetJobElected | NodesLocked | NodesUnlocked
WillBindEvent = CapacityReserved | CapacityReleased


def _digest(value: object) -> str:
    return hashlib.sha256(msgspec.json.encode(value)).hexdigest()[:16]


def _task_states(
    snapshot: ClusterSnapshot, jobs: set[JobKey]
) -> dict[JobKey, list[tuple[str, str, str]]]:
    """The pods of ``jobs`` as (uid, phase, node), each job's in pod key order."""
    groups = snapshot.job_pods()
    return {
        job: [
            (state.pod.uid or str(key), state.phase.value, state.node or "")
            for key, state in groups[job]
        ]
        for job in sorted(jobs)
        if job in groups
    }


def phase_event(update: PodGroupStatusUpdate, tasks: object, now: datetime) -> PodGroupPhaseChanged:
    """The ``PodGroupPhaseChanged`` of one update.

    Its id derives from the PodGroup uid, the transition (phases and conditions before and
    after) and ``tasks`` (the job's pods and their states), so the same transition at another
    moment of the job's life gets another id.
    """
    generation = (
        f"{update.uid}:{update.previous_phase.value}>{update.phase.value}:"
        f"{_digest([update.previous_conditions, update.conditions, tasks])}"
    )
    return PodGroupPhaseChanged(
        event_id=derive_event_id(PHASE_KIND, update.job, generation),
        occurred_at=now,
        job=update.job,
        podgroup=update.podgroup,
        phase=update.phase,
        previous_phase=update.previous_phase,
        conditions=update.conditions,
        uid=update.uid,
    )


def phase_events(
    snapshot: ClusterSnapshot, result: SessionResult, now: datetime
) -> tuple[PodGroupPhaseChanged, ...]:
    """The phase and reason changes of a session, in job order."""
    if not result.status_updates:
        return ()
    tasks: Mapping[JobKey, list[tuple[str, str, str]]] = _task_states(
        snapshot, {update.job for update in result.status_updates}
    )
    return tuple(phase_event(u, tasks.get(u.job, []), now) for u in result.status_updates)


def reservation_event(change: ReservationChange, now: datetime) -> ReservationEvent:
    """The ``reservations`` event of one change; its id derives from job, generation, nodes."""
    nodes = tuple(NodeName(n) for n in change.nodes)
    match change.kind:
        case ReservationChangeKind.ELECTED:
            return TargetJobElected(
                event_id=derive_event_id(ELECTED_KIND, change.job, change.generation),
                occurred_at=now,
                job=change.job,
                reason=change.reason,
                generation=change.generation,
                until=change.until,
            )
        case ReservationChangeKind.LOCKED:
            return NodesLocked(
                event_id=derive_event_id(
                    LOCKED_KIND, change.job, f"{change.generation}:{','.join(change.nodes)}"
                ),
                occurred_at=now,
                job=change.job,
                nodes=nodes,
                mode=change.mode,
                generation=change.generation,
                reason=change.reason,
                until=change.until,
            )
        case ReservationChangeKind.UNLOCKED:
            return NodesUnlocked(
                event_id=derive_event_id(UNLOCKED_KIND, change.job, change.generation),
                occurred_at=now,
                job=change.job,
                nodes=nodes,
                reason=change.reason,
                generation=change.generation,
                backoff_until=change.backoff_until,
            )
        case _:
            assert_never(change.kind)


def reservation_events(result: SessionResult, now: datetime) -> tuple[ReservationEvent, ...]:
    """The reservation changes of a session, in the order they were made."""
    return tuple(reservation_event(c, now) for c in result.reservation_changes)


def will_bind_event(change: WillBindChange, now: datetime) -> WillBindEvent:
    """The ``capacity.reservations`` event of one change.

    Its id derives from the PodGroup uid, the reason, the pods changed, what is held after
    and the expiry (distinct for each reservation), so a cycle run twice emits the same id.
    """
    generation = (
        f"{change.uid}:{change.reason}:{_digest([change.pods, change.held, change.expires_at])}"
    )
    match change.kind:
        case WillBindChangeKind.RESERVED:
            return CapacityReserved(
                event_id=derive_event_id(CAPACITY_RESERVED_KIND, change.job, generation),
                occurred_at=now,
                job=change.job,
                podgroup=change.podgroup,
                uid=change.uid,
                pods=change.pods,
                held=change.held,
                expires_at=change.expires_at,
                reason=change.reason,
            )
        case WillBindChangeKind.RELEASED:
            return CapacityReleased(
                event_id=derive_event_id(CAPACITY_RELEASED_KIND, change.job, generation),
                occurred_at=now,
                job=change.job,
                podgroup=change.podgroup,
                uid=change.uid,
                pods=change.pods,
                held=change.held,
                expires_at=change.expires_at,
                reason=change.reason,
                message=change.message,
            )
        case _:
            assert_never(change.kind)


def will_bind_events(result: SessionResult, now: datetime) -> tuple[WillBindEvent, ...]:
    """The will-bind changes of a session, in the order they were made."""
    return tuple(will_bind_event(c, now) for c in result.will_bind_changes)


def describe_will_bind(event: WillBindEvent) -> str:
    """One line for a timeline: what was reserved or released, where, and why."""
    pods = ", ".join(f"{p.task}-{p.index} on {p.node}" for p in event.pods)
    match event:
        case CapacityReserved(job=job):
            return f"reserved {pods} for {job}"
        case CapacityReleased(job=job, reason=reason):
            return f"released {pods} of {job} ({reason})"
        case _:
            assert_never(event)


def eviction_event(decision: EvictDecision, now: datetime) -> PodEvictionRequested:
    """The ``PodEvictionRequested`` of a decision; its id derives from the pod incarnation."""
    note = decision.note
    preemptor = note.preemptor if note is not None else decision.job
    return PodEvictionRequested(
        event_id=derive_event_id(EVICTION_KIND, decision.key, f"{decision.pod.uid}|{preemptor}"),
        occurred_at=now,
        pod=decision.key,
        pod_uid=decision.pod.uid,
        job=decision.job,
        task=decision.pod.task,
        node=NodeName(decision.node),
        reason=decision.reason,
        taker=note.taker if note is not None else "",
        preemptor=preemptor,
        message=note.message if note is not None else decision.reason,
    )


def nomination_event(change: NominationChange, now: datetime) -> PodsNominated | NominationEnded:
    """The event of a nomination change; ids derive from the job, its PodGroup and the change."""
    if change.kind is NominationChangeKind.NOMINATED:
        assert change.until is not None
        pods = ",".join(f"{p.uid}@{p.node}" for p in change.pods) + f"|{change.until.isoformat()}"
        digest = hashlib.sha256(pods.encode()).hexdigest()[:16]
        return PodsNominated(
            event_id=derive_event_id(NOMINATED_KIND, change.job, f"{change.uid}|{digest}"),
            occurred_at=now,
            job=change.job,
            podgroup=change.podgroup,
            uid=change.uid,
            pods=change.pods,
            victims=change.victims,
            until=change.until,
            reason=change.reason,
            message=change.message,
        )
    return NominationEnded(
        event_id=derive_event_id(
            NOMINATION_ENDED_KIND, change.job, f"{change.uid}|{change.reason}|{now.isoformat()}"
        ),
        occurred_at=now,
        job=change.job,
        podgroup=change.podgroup,
        uid=change.uid,
        reason=change.reason,
        message=change.message,
    )


def eviction_events(result: SessionResult, now: datetime) -> tuple[PodEvictionRequested, ...]:
    """The evictions of a session (preempt, reclaim), in the order they were decided."""
    return tuple(eviction_event(d, now) for d in result.evictions)


def nomination_events(
    result: SessionResult, now: datetime
) -> tuple[PodsNominated | NominationEnded, ...]:
    """The nominations made and ended in a session, in order."""
    return tuple(nomination_event(c, now) for c in result.nomination_changes)
