"""Why a PodGroup waits: the pending reasons' ranking, under the names its users import.

The codes are defined once, in :mod:`vcbus.contracts.reasons` (every code: pending, pod,
agent); the names here are those codes, for the producers (the scheduler's actions and
plugins, the job controller) and readers (the read model, the CLI, metrics) that import
them from here. docs/cli.md's table of reasons is checked against :data:`REASON_RANK`
(``tests/unit/core/test_reasons.py``).

A pending PodGroup carries one reason code, the highest ranked among its candidates:
``QueueNotFound`` > ``QueueClosed`` > ``Infeasible`` > ``QueueOverCapability`` >
``ClusterOverused`` > ``GangUnschedulable`` (and other allocator reasons) >
``WillBindTimeout`` > ``WaitingForDependency`` > ``WaitingForReservation`` >
``WaitingForEviction`` > ``ReservationExpired``. The scheduler ranks with it when it
publishes a PodGroup's reason (``podgroups.status``); the read model (:mod:`vcbus.core.views`)
ranks with it when it says why a job waits. Pure: it imports nothing but the codes.
"""

from __future__ import annotations

from vcbus.contracts import reasons as codes

UNSCHEDULABLE = codes.UNSCHEDULABLE
SCHEDULABLE = codes.SCHEDULABLE
SCHEDULED = codes.SCHEDULED

QUEUE_NOT_FOUND = codes.QUEUE_NOT_FOUND
QUEUE_CLOSED = codes.QUEUE_CLOSED
INFEASIBLE = codes.INFEASIBLE
QUEUE_OVER_CAPABILITY = codes.QUEUE_OVER_CAPABILITY
NEVER_ADMITTED = "the job can never be admitted as it is"
"""Ends the message of a ``QueueOverCapability`` whose minimum alone is over the capability:
the readers (``Inadmissible``, ``vcbus submit --wait``) tell it from a job that waits by it."""
CLUSTER_OVERUSED = codes.CLUSTER_OVERUSED
GANG_UNSCHEDULABLE = codes.GANG_UNSCHEDULABLE
QUEUE_OVERUSED = codes.QUEUE_OVERUSED
NOT_ENOUGH_PODS_OF_TASK = codes.NOT_ENOUGH_PODS_OF_TASK
NOT_ENOUGH_TASKS = codes.NOT_ENOUGH_TASKS
WILL_BIND_TIMEOUT = codes.WILL_BIND_TIMEOUT
WAITING_FOR_DEPENDENCY = codes.WAITING_FOR_DEPENDENCY
WAITING_FOR_RESERVATION = codes.WAITING_FOR_RESERVATION
WAITING_FOR_EVICTION = codes.WAITING_FOR_EVICTION
RESERVATION_EXPIRED = codes.RESERVATION_EXPIRED

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
"""docs/design.md#pending-reasons, highest first. Reasons not listed (other allocator codes)
rank with ``GangUnschedulable``."""

PODGROUP_PENDING = codes.PODGROUP_PENDING
PODS_PENDING = codes.PODS_PENDING

PREEMPTED = codes.PREEMPTED
RECLAIMED = codes.RECLAIMED
EVICTION_CONDITIONS = frozenset({PREEMPTED, RECLAIMED})
"""The condition types (and reasons) a job-controller gives a job whose pod was evicted for
a preemptor of its queue (``Preempted``) or of another queue (``Reclaimed``). They tell
what happened to the job, never why it waits now."""


def reason_rank(reason: str) -> int:
    """Return the rank of a reason code (smaller is more important)."""
    if reason in REASON_RANK:
        return REASON_RANK.index(reason)
    return REASON_RANK.index(GANG_UNSCHEDULABLE)
