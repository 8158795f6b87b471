"""Why a PodGroup waits: every reason code and condition type, and their ranking.

The one list of codes: each producer (the scheduler's actions and plugins, the job
controller, admission) and each reader (the read model, the CLI, metrics) imports the code
it names from here, and docs/cli.md's table of reasons is checked against
:data:`REASON_RANK` (``tests/unit/shared/test_reasons.py``).

A pending PodGroup carries one reason code, the highest ranked among its candidates:
``QueueNotFound`` > ``QueueClosed`` > ``Infeasible`` > ``QueueOverCapability`` >
``ClusterOverused`` > ``GangUnschedulable`` (and other allocator reasons) >
``WillBindTimeout`` > ``WaitingForDependency`` > ``WaitingForReservation`` >
``WaitingForEviction`` > ``ReservationExpired``. The scheduler ranks with it when it
publishes a PodGroup's reason (``podgroups.status``); the read model (:mod:`vcbus.shared.views`)
ranks with it when it says why a job waits. Pure: it imports nothing but the standard
library.
"""

from __future__ import annotations

UNSCHEDULABLE = "Unschedulable"
"""The condition type that carries a reason code."""
SCHEDULABLE = "Schedulable"
"""A task's reason once it is allocated and waits only for its job's minimum."""
SCHEDULED = "Scheduled"
"""Gang's condition type once a job's tasks are ready to be scheduled."""

QUEUE_NOT_FOUND = "QueueNotFound"
QUEUE_CLOSED = "QueueClosed"
INFEASIBLE = "Infeasible"
"""No node could ever hold a minimum pod of the job, with the fit errors."""
QUEUE_OVER_CAPABILITY = "QueueOverCapability"
"""The job's minimum does not fit its queue's own capability: beside the queue's running and
inqueue jobs (it waits for them), or alone (:data:`NEVER_ADMITTED` ends the message)."""
NEVER_ADMITTED = "the job can never be admitted as it is"
"""Ends the message of a ``QueueOverCapability`` whose minimum alone is over the capability:
the readers (``Inadmissible``, ``vcbus submit --wait``) tell it from a job that waits by it."""
CLUSTER_OVERUSED = "ClusterOverused"
GANG_UNSCHEDULABLE = "GangUnschedulable"
QUEUE_OVERUSED = "QueueOverused"
"""Allocate skips a job whose queue is overused this session (ranks with gang's)."""
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
"""Gang's ``validJobFn``: a task can no longer meet its minimum (ranks with gang's)."""
NOT_ENOUGH_TASKS = "NotEnoughTasks"
"""Gang's ``validJobFn``: the job can no longer meet its minimum (ranks with gang's)."""
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
"""docs/design.md#pending-reasons, highest first. Reasons not listed (other allocator codes)
rank with ``GangUnschedulable``."""

PODGROUP_PENDING = "PodGroupPending"
"""The job controller's reason while it has not seen its PodGroup enqueued."""
PODS_PENDING = "PodsPending"
"""The job controller's reason while an enqueued job's minimum pods are not all started."""

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
