"""Why a PodGroup waits: the reason codes of SPEC A8 and their ranking.

A pending PodGroup carries one reason code, the highest ranked among its candidates:
``QueueNotFound`` > ``QueueClosed`` > ``Infeasible`` > ``QueueOverCapability`` >
``ClusterOverused`` > ``GangUnschedulable`` (and other allocator reasons) >
``WillBindTimeout`` > ``WaitingForDependency`` > ``WaitingForReservation`` >
``WaitingForEviction`` > ``ReservationExpired``. The scheduler ranks with it when it
publishes a PodGroup's reason (``podgroups.status``); the read model (:mod:`shared.views`)
ranks with it when it says why a job waits. Pure: it imports nothing but the standard
library.
"""

from __future__ import annotations

UNSCHEDULABLE = "Unschedulable"
"""The condition type that carries a reason code."""

QUEUE_NOT_FOUND = "QueueNotFound"
QUEUE_CLOSED = "QueueClosed"
INFEASIBLE = "Infeasible"
"""No node could ever hold a minimum pod of the job (SPEC A6, A8), with the fit errors."""
QUEUE_OVER_CAPABILITY = "QueueOverCapability"
CLUSTER_OVERUSED = "ClusterOverused"
GANG_UNSCHEDULABLE = "GangUnschedulable"
WILL_BIND_TIMEOUT = "WillBindTimeout"
"""A dependent job's will-bind reservation for its later stages timed out (vcbus)."""
WAITING_FOR_DEPENDENCY = "WaitingForDependency"
WAITING_FOR_RESERVATION = "WaitingForReservation"
WAITING_FOR_EVICTION = "WaitingForEviction"
"""A preemptor's pods wait for their victims to end (``framework.nomination``)."""
RESERVATION_EXPIRED = "ReservationExpired"
"""The job's reservation reached ``lock-max``; it is not elected again for ``lock-backoff``."""

REASON_RANK: tuple[str, ...] = (
    QUEUE_NOT_FOUND,
    QUEUE_CLOSED,
    INFEASIBLE,
    QUEUE_OVER_CAPABILITY,
    CLUSTER_OVERUSED,
    GANG_UNSCHEDULABLE,
    WILL_BIND_TIMEOUT,
    WAITING_FOR_DEPENDENCY,
    WAITING_FOR_RESERVATION,
    WAITING_FOR_EVICTION,
    RESERVATION_EXPIRED,
)
"""SPEC A8, highest first. Reasons not listed (other allocator codes) rank with
``GangUnschedulable``."""

PREEMPTED = "Preempted"
RECLAIMED = "Reclaimed"
EVICTION_CONDITIONS = frozenset({PREEMPTED, RECLAIMED})
"""The condition types (and reasons) a job-controller gives a job whose pod was evicted for
a preemptor of its queue (``Preempted``) or of another queue (``Reclaimed``). They tell
what happened to the job, never why it waits now."""


def reason_rank(reason: str) -> int:
    """Return the rank of a reason code (smaller is more important)."""
    if reason in REASON_RANK:
        return REASON_RANK.index(reason)
    return REASON_RANK.index(GANG_UNSCHEDULABLE)
