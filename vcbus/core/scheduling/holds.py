"""What the cluster holds for particular jobs, and the pure folds that keep it.

Three kinds of hold, each part of the ``ClusterSnapshot``:

- The reservation state (target job, locked nodes, docs/design.md#reservation), fed from the
  ``reservations`` topic, instead of Volcano's process-wide ``util.Reservation``. Its ``generation``
  grows with each election; events of an older generation are dropped, so events of two target
  jobs read out of order (the topic is keyed by job) cannot mix.
- Will-bind reservations (``capacity.reservations``, vcbus): the newest event of a job
  replaces its entry (events carry everything held). An entry outlives its PodGroup until
  the allocator publishes its release; sessions account only entries whose PodGroup (same
  uid) still exists.
- Nominations: a preemptor's pods waiting for the capacity that preempt or reclaim freed;
  the newest ``PodsNominated`` of a job replaces its entry, ``NominationEnded`` of the same
  PodGroup uid removes it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import assert_never

from vcbus.contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReserved,
    NominatedPod,
    NominationEnded,
    PodsNominated,
    ReservedPod,
)
from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from vcbus.contracts.keys import JobKey, PodKey
from vcbus.core.reasons import WILL_BIND_TIMEOUT
from vcbus.core.scheduling.model import naive_utc


@dataclass(frozen=True, slots=True)
class Reservation:
    """The reservation state: the target job and the nodes locked for it.

    Attributes:
        target_job: the elected job, or ``None``.
        locked_nodes: nodes that take no new pod of another job.
        elected_at: when the target was elected (the lock timeout counts from it).
        generation: the number of the latest election (kept after the target is cleared).
        locked_at: when nodes were last locked (the lock interval counts from it).
        backoff: (job, until): jobs whose reservation expired, not electable until then
            (sorted by job; at most ``MAX_BACKOFF_ENTRIES``, ended ones dropped).
    """

    target_job: JobKey | None = None
    locked_nodes: frozenset[str] = frozenset()
    elected_at: datetime | None = None
    generation: int = 0
    locked_at: datetime | None = None
    backoff: tuple[tuple[JobKey, datetime], ...] = ()


MAX_BACKOFF_ENTRIES = 1000
"""The most jobs in backoff a reservation remembers; the oldest ends go first."""


def with_backoff(
    entries: tuple[tuple[JobKey, datetime], ...],
    job: JobKey,
    until: datetime | None,
    now: datetime,
) -> tuple[tuple[JobKey, datetime], ...]:
    """The backoff list with ``job`` added until ``until``, ended entries dropped (bounded)."""
    kept = {k: u for k, u in entries if naive_utc(u) > naive_utc(now)}
    if until is not None:
        kept[job] = until
    newest = sorted(kept.items(), key=lambda item: (naive_utc(item[1]), item[0]))
    return tuple(sorted(newest[-MAX_BACKOFF_ENTRIES:]))


@dataclass(frozen=True, slots=True)
class WillBind:
    """A dependent job's will-bind reservation: capacity held for its later stages.

    Attributes:
        job: the job.
        podgroup: the PodGroup's name.
        uid: the PodGroup's uid (the reservation belongs to that incarnation).
        pods: the pods held, as capacity on nodes.
        reserved_at: when the first of them was reserved.
        expires_at: when the reservation times out, if its stages have not bound.
        timed_out: the reservation timed out; no new one is made for this PodGroup.
    """

    job: JobKey
    podgroup: str
    uid: str
    pods: tuple[ReservedPod, ...] = ()
    reserved_at: datetime | None = None
    expires_at: datetime | None = None
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Nomination:
    """A preemptor's pods waiting on nodes whose capacity preempt or reclaim freed.

    Attributes:
        job: the preemptor.
        podgroup: its PodGroup's name.
        uid: its PodGroup's uid (the nomination belongs to that incarnation).
        pods: each waiting pod and its node.
        victims: the pods evicted for it.
        until: when the nomination ends if the pods have not bound.
        reason: ``Preempted`` or ``Reclaimed``.
        message: what was taken from whom, in words.
    """

    job: JobKey
    podgroup: str
    uid: str
    pods: tuple[NominatedPod, ...]
    until: datetime
    victims: tuple[PodKey, ...] = ()
    reason: str = ""
    message: str = ""


def fold_reservation(
    current: Reservation, event: TargetJobElected | NodesLocked | NodesUnlocked
) -> Reservation:
    """Return the reservation after one ``reservations`` event (idempotent).

    An event of an older generation than the current one is stale and ignored; one of a
    newer generation starts a new reservation. Events without a generation (0, older
    writers) apply as they come.
    """
    generation = event.generation
    if generation and generation < current.generation:
        return current
    newer = generation > current.generation
    match event:
        case TargetJobElected(job=job, occurred_at=at):
            if not generation:
                return replace(current, target_job=job, elected_at=at)
            if not newer:
                return current
            return Reservation(
                target_job=job, elected_at=at, generation=generation, backoff=current.backoff
            )
        case NodesLocked(job=job, nodes=nodes, occurred_at=at):
            if newer:
                return Reservation(
                    target_job=job,
                    locked_nodes=frozenset(nodes),
                    elected_at=at,
                    generation=generation,
                    locked_at=at,
                    backoff=current.backoff,
                )
            if generation and current.target_job is None:
                return current
            locked_at = at if current.locked_at is None else max(current.locked_at, at)
            return replace(
                current,
                target_job=current.target_job or job,
                locked_nodes=current.locked_nodes | frozenset(nodes),
                locked_at=locked_at,
            )
        case NodesUnlocked(job=job, nodes=nodes, occurred_at=at):
            if generation or current.target_job in (None, job):
                return Reservation(
                    generation=max(generation, current.generation),
                    backoff=with_backoff(current.backoff, job, event.backoff_until, at),
                )
            return replace(current, locked_nodes=current.locked_nodes - frozenset(nodes))
        case _:
            assert_never(event)


def fold_will_bind(
    current: WillBind | None, event: CapacityReserved | CapacityReleased
) -> WillBind | None:
    """Return a job's will-bind reservation after one ``capacity.reservations`` event.

    The event's ``held`` replaces what is held (the topic is keyed by job, so a job's events
    arrive in order; applying one twice changes nothing). A release of an older PodGroup
    incarnation than the one held is stale and ignored. A timeout leaves an empty entry
    marked ``timed_out``, so no new reservation is made for that PodGroup; any other release
    of everything removes the entry (``None``).
    """
    same = current is not None and (not event.uid or not current.uid or current.uid == event.uid)
    match event:
        case CapacityReserved(held=held, pods=pods, occurred_at=at):
            reserved_at = current.reserved_at if same and current is not None else at
            return WillBind(
                job=event.job,
                podgroup=event.podgroup,
                uid=event.uid,
                pods=held or pods,
                reserved_at=reserved_at,
                expires_at=event.expires_at,
            )
        case CapacityReleased(held=held, reason=reason):
            if current is not None and not same:
                return current
            if current is None:
                if reason != WILL_BIND_TIMEOUT:
                    return None
                return WillBind(
                    job=event.job, podgroup=event.podgroup, uid=event.uid, timed_out=True
                )
            timed_out = current.timed_out or reason == WILL_BIND_TIMEOUT
            if not held and not timed_out:
                return None
            return replace(current, pods=held, timed_out=timed_out)
        case _:
            assert_never(event)


def fold_nomination(
    current: Nomination | None, event: PodsNominated | NominationEnded
) -> Nomination | None:
    """Return a job's nomination after one ``capacity.reservations`` event (idempotent).

    ``PodsNominated`` replaces the nomination; ``NominationEnded`` ends it, unless it names
    another PodGroup incarnation than the one nominated.
    """
    match event:
        case PodsNominated():
            return Nomination(
                job=event.job,
                podgroup=event.podgroup,
                uid=event.uid,
                pods=event.pods,
                until=event.until,
                victims=event.victims,
                reason=event.reason,
                message=event.message,
            )
        case NominationEnded(uid=uid):
            if current is not None and (not uid or current.uid == uid):
                return None
            return current
        case _:
            assert_never(event)
