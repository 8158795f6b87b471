"""Changes of the reservation inside a session: elect a target, lock nodes, release.

Volcano v1.5.1 kept the reservation in the process-wide ``util.Reservation``
(volcano@v1.5.1 ``pkg/scheduler/util/scheduler_helper.go``: ``Reservation{TargetJob,
LockedNodes}``) and changed it in place from ``elect``, ``reserve`` and the ``reservation``
plugin. vcbus keeps it in ``Session.reservation`` (read from the snapshot) and records every
change as a ``ReservationChange``, which the shell publishes on ``reservations``.

Deliberate deviations:
- A release clears the target and every lock in one change (one ``NodesUnlocked`` event),
  and keeps the generation, so the next election gets a larger one.
- A target counts as ready when both Volcano's ``JobInfo.Ready()`` (ready tasks ≥ minimum)
  and the session's ``JobReady`` (gang, with task minimums, docs/design.md#task-level-gang) hold.
- docs/design.md#reservation (revised): a target is also released when it became infeasible (nodes
  changed) and when its lock reached ``lock-max``; the latter (``ReservationExpired``) may not be
  elected again for ``lock-backoff``, kept in ``Reservation.backoff`` until it ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableSequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from vcbus.contracts.keys import JobKey
from vcbus.core.reasons import RESERVATION_EXPIRED
from vcbus.core.scheduling.framework.results import ReservationChange, ReservationChangeKind
from vcbus.core.scheduling.holds import Reservation, with_backoff
from vcbus.core.scheduling.model import JobInfo, naive_utc

TARGET_GONE = "target job is gone"
TARGET_READY = "target job is ready"
TARGET_INFEASIBLE = "target job is infeasible"

DEFAULT_LOCK_MAX = timedelta(minutes=10)
DEFAULT_LOCK_BACKOFF = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class ReservationLimits:
    """How long a reservation may hold nodes (set by the ``reservation`` plugin).

    Attributes:
        lock_max: a target not ready this long after its election is released.
        lock_backoff: how long such a job may not be elected again.
    """

    lock_max: timedelta = DEFAULT_LOCK_MAX
    lock_backoff: timedelta = DEFAULT_LOCK_BACKOFF

    def expires_at(self, reservation: Reservation) -> datetime | None:
        """When the current reservation ends at the latest (``None``: no target)."""
        if reservation.target_job is None or reservation.elected_at is None:
            return None
        return reservation.elected_at + self.lock_max


class ReservingSession(Protocol):
    """What the reservation's changes read and write in a session (``Session`` has it all)."""

    reservation: Reservation
    """The current reservation; every change replaces it."""

    @property
    def now(self) -> datetime:
        """The cycle's time."""
        ...

    @property
    def jobs(self) -> Mapping[JobKey, JobInfo]:
        """The session's jobs."""
        ...

    @property
    def reservation_limits(self) -> ReservationLimits:
        """How long a reservation may hold nodes."""
        ...

    @property
    def reservation_changes(self) -> MutableSequence[ReservationChange]:
        """Elections, locks and unlocks made this session, in order."""
        ...

    def job_ready(self, job: JobInfo) -> bool:
        """Whether ``job``'s gang is ready (``JobReady``)."""
        ...

    def infeasibility(self, job: JobInfo) -> str | None:
        """Why ``job`` could never run on this cluster, or ``None``."""
        ...


def backoff_until(ssn: ReservingSession, job: JobInfo) -> datetime | None:
    """Until when ``job`` may not be elected (its reservation expired), or ``None``."""
    for key, until in ssn.reservation.backoff:
        if key == job.key and naive_utc(until) > naive_utc(ssn.now):
            return until
    return None


def is_target_ready(ssn: ReservingSession, job: JobInfo) -> bool:
    """Whether the target's gang is placed (``JobInfo.Ready()`` and ``JobReady``)."""
    return job.is_ready() and ssn.job_ready(job)


def release_reason(ssn: ReservingSession) -> tuple[str, datetime | None] | None:
    """Why the current target must be released, with the end of its backoff, or ``None``.

    Gone, ready, infeasible (nodes changed), or held ``lock-max`` without becoming ready:
    only the last one sets a backoff.
    """
    target = ssn.reservation.target_job
    if target is None:
        return None
    job = ssn.jobs.get(target)
    if job is None:
        return TARGET_GONE, None
    if is_target_ready(ssn, job):
        return TARGET_READY, None
    why = ssn.infeasibility(job)
    if why is not None:
        return f"{TARGET_INFEASIBLE}: {why}", None
    limits = ssn.reservation_limits
    expires = limits.expires_at(ssn.reservation)
    if expires is not None and naive_utc(ssn.now) >= naive_utc(expires):
        return (
            f"{RESERVATION_EXPIRED}: not ready {seconds_text(limits.lock_max)} after its election "
            f"(lock-max)",
            ssn.now + limits.lock_backoff,
        )
    return None


def seconds_text(duration: timedelta) -> str:
    """A duration as reasons say it (``90s``)."""
    return f"{duration.total_seconds():g}s"


def elect_target(ssn: ReservingSession, job: JobInfo, reason: str) -> None:
    """Make ``job`` the target, with no node locked yet, under a new generation."""
    generation = ssn.reservation.generation + 1
    ssn.reservation = Reservation(
        target_job=job.key,
        elected_at=ssn.now,
        generation=generation,
        backoff=ssn.reservation.backoff,
    )
    ssn.reservation_changes.append(
        ReservationChange(
            kind=ReservationChangeKind.ELECTED,
            job=job.key,
            generation=generation,
            reason=reason,
            until=ssn.reservation_limits.expires_at(ssn.reservation),
        )
    )


def lock_nodes(ssn: ReservingSession, nodes: Iterable[str], mode: str, reason: str) -> None:
    """Lock ``nodes`` for the target (those already locked are left out)."""
    current = ssn.reservation
    if current.target_job is None:
        return
    new = tuple(sorted(set(nodes) - current.locked_nodes))
    if not new:
        return
    ssn.reservation = replace(
        current, locked_nodes=current.locked_nodes | frozenset(new), locked_at=ssn.now
    )
    ssn.reservation_changes.append(
        ReservationChange(
            kind=ReservationChangeKind.LOCKED,
            job=current.target_job,
            generation=current.generation,
            nodes=new,
            mode=mode,
            reason=reason,
            until=ssn.reservation_limits.expires_at(current),
        )
    )


def release_target(ssn: ReservingSession, reason: str, backoff: datetime | None = None) -> None:
    """Clear the target and unlock every node at once; ``backoff``: not electable until then."""
    current = ssn.reservation
    if current.target_job is None:
        return
    ssn.reservation = Reservation(
        generation=current.generation,
        backoff=with_backoff(current.backoff, current.target_job, backoff, ssn.now),
    )
    ssn.reservation_changes.append(
        ReservationChange(
            kind=ReservationChangeKind.UNLOCKED,
            job=current.target_job,
            generation=current.generation,
            nodes=tuple(sorted(current.locked_nodes)),
            reason=reason,
            backoff_until=backoff,
        )
    )
