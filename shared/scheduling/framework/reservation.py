"""Changes of the reservation inside a session: elect a target, lock nodes, release (SPEC A6).

Volcano v1.5.1 kept the reservation in the process-wide ``util.Reservation``
(volcano@v1.5.1 ``pkg/scheduler/util/scheduler_helper.go``: ``Reservation{TargetJob,
LockedNodes}``) and changed it in place from ``elect``, ``reserve`` and the ``reservation``
plugin. vcbus keeps it in ``Session.reservation`` (read from the snapshot) and records every
change as a ``ReservationChange``, which the shell publishes on ``reservations``.

Deliberate deviations:
- A release clears the target and every lock in one change (one ``NodesUnlocked`` event),
  and keeps the generation, so the next election gets a larger one.
- A target counts as ready when both Volcano's ``JobInfo.Ready()`` (ready tasks ≥ minimum)
  and the session's ``JobReady`` (gang, with task minimums, SPEC A4) hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from shared.scheduling.framework.results import ReservationChange, ReservationChangeKind
from shared.scheduling.model import JobInfo
from shared.scheduling.snapshot import Reservation

if TYPE_CHECKING:
    from shared.scheduling.framework.session import Session

TARGET_GONE = "target job is gone"
TARGET_READY = "target job is ready"


def is_target_ready(ssn: Session, job: JobInfo) -> bool:
    """Whether the target's gang is placed (``JobInfo.Ready()`` and ``JobReady``)."""
    return job.is_ready() and ssn.job_ready(job)


def release_reason(ssn: Session) -> str | None:
    """Return why the current target must be released (gone or ready), or ``None``."""
    target = ssn.reservation.target_job
    if target is None:
        return None
    job = ssn.jobs.get(target)
    if job is None:
        return TARGET_GONE
    if is_target_ready(ssn, job):
        return TARGET_READY
    return None


def elect_target(ssn: Session, job: JobInfo, reason: str) -> None:
    """Make ``job`` the target, with no node locked yet, under a new generation."""
    generation = ssn.reservation.generation + 1
    ssn.reservation = Reservation(target_job=job.key, elected_at=ssn.now, generation=generation)
    ssn.reservation_changes.append(
        ReservationChange(
            kind=ReservationChangeKind.ELECTED, job=job.key, generation=generation, reason=reason
        )
    )


def lock_nodes(ssn: Session, nodes: Iterable[str], mode: str, reason: str) -> None:
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
        )
    )


def release_target(ssn: Session, reason: str) -> None:
    """Clear the target and unlock every node at once."""
    current = ssn.reservation
    if current.target_job is None:
        return
    ssn.reservation = Reservation(generation=current.generation)
    ssn.reservation_changes.append(
        ReservationChange(
            kind=ReservationChangeKind.UNLOCKED,
            job=current.target_job,
            generation=current.generation,
            nodes=tuple(sorted(current.locked_nodes)),
            reason=reason,
        )
    )
