"""``capacity.reservations``: will-bind reservations of dependent jobs, from the allocator.

It also carries the nominations of preempt and reclaim (``PodsNominated``,
``NominationEnded``): the nodes whose releasing capacity waits for a preemptor's pods.

It also carries ``LocksHonoured``: the moment the allocator has a reservation's node locks
(docs/design.md#reservation) in its view, from which it places no other job's pod on them.

When the allocator commits the first stage of a job with ``dependsOn``
(docs/design.md#dependent-jobs), it reserves capacity on nodes for the minimum pods of the job's
stages that have no pods yet, so that they bind as soon as their dependencies are ready
(docs/architecture.md, "Will-bind"). The topic is keyed by job. Every event carries ``held``,
everything reserved for the job after it, so the newest event of a job is its whole reservation
(what compaction would keep) and folding is a replacement.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.quantity import Resources


class ReservedPod(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A pod that does not exist yet, held as capacity on a node.

    ``task`` and ``index`` name the pod it stands for (``<job>-<task>-<index>``);
    ``requests`` are what that pod will ask for.
    """

    task: str
    index: int
    node: NodeName
    requests: Resources = {}


class CapacityReserved(Event, tag="capacity.reserved.v1", frozen=True, kw_only=True):
    """Capacity was reserved for pods of a dependent job's later stages (``pods``)."""

    job: JobKey
    podgroup: str
    uid: str = ""
    """The PodGroup's uid: a reservation belongs to one incarnation of the PodGroup."""
    pods: tuple[ReservedPod, ...]
    held: tuple[ReservedPod, ...] = ()
    """Everything reserved for the job after this event."""
    expires_at: datetime | None = None
    """When the reservation is released if its stages have not bound (will-bind timeout)."""
    reason: str = ""


class CapacityReleased(Event, tag="capacity.released.v1", frozen=True, kw_only=True):
    """Reserved capacity was given back (``pods``), and why.

    Reasons: ``StageBound`` (the stage's real pods were bound), ``JobEnded`` (the job
    completed or has no pod placed any more), ``JobDeleted`` (its PodGroup is gone or was
    recreated), ``WillBindTimeout`` (the stages did not bind in time: the job is re-queued),
    ``WillBindDisabled`` (switched off in the configuration or by the job's annotation),
    ``NotNeeded`` (the job no longer has such a pod).
    """

    job: JobKey
    podgroup: str
    uid: str = ""
    pods: tuple[ReservedPod, ...]
    held: tuple[ReservedPod, ...] = ()
    """What is still reserved for the job after this event."""
    expires_at: datetime | None = None
    reason: str
    message: str = ""


class LocksHonoured(Event, tag="capacity.locks_honoured.v1", frozen=True, kw_only=True):
    """The allocator has these node locks (``reservations``) in its view.

    podgroup-enqueue locks nodes; the allocator, another process, reads the lock a moment
    later. From this event on (its ``occurred_at``, on the allocator's clock and in the
    order of its cycles) until the lock is released, the allocator binds no pod of another
    job to ``nodes``. Published in the first cycle that sees a new lock set, before that
    cycle's bindings; its id derives from job, generation and nodes, so a takeover
    publishing it again is a duplicate.
    """

    job: JobKey
    generation: int
    nodes: tuple[NodeName, ...]
    """Every node locked for ``job`` in the allocator's view, sorted."""


class LocksLifted(Event, tag="capacity.locks_lifted.v1", frozen=True, kw_only=True):
    """The allocator placed the target's gang: its locked nodes take other jobs' pods again.

    Published before the bindings of the cycle that placed the target (or first saw it
    placed), so the rest of that cycle uses the freed nodes (docs/design.md#reservation, no harm);
    the ``NodesUnlocked`` of podgroup-enqueue follows. Its id derives from job and generation.
    """

    job: JobKey
    generation: int
    nodes: tuple[NodeName, ...]
    """The nodes that were locked for ``job`` in the allocator's view, sorted."""


class NominatedPod(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A preemptor's pod and the node whose releasing capacity waits for it."""

    pod: PodKey
    uid: str
    node: NodeName
    requests: Resources = {}


MAX_NOMINATED = 1000
"""The most pods and victims a nomination lists; a preemptor takes at most
this many pods' worth of capacity in one cycle."""


class PodsNominated(Event, tag="capacity.pods_nominated.v1", frozen=True, kw_only=True):
    """Preempt or reclaim evicted ``victims`` for ``job``: its ``pods`` wait on their nodes.

    Until the pods bind, or ``until`` passes, no other job is placed on the capacity they
    wait for (Volcano pipelines the preemptor onto the releasing node within one session;
    vcbus keeps the nomination across cycles). The newest event of a job replaces its
    nomination.
    """

    job: JobKey
    podgroup: str
    uid: str = ""
    """The PodGroup's uid: a nomination belongs to one incarnation."""
    pods: tuple[NominatedPod, ...]
    victims: tuple[PodKey, ...] = ()
    until: datetime
    """When the nomination ends if the pods have not bound (the victims' longest grace
    period plus a margin)."""
    reason: str = ""
    """``Preempted`` or ``Reclaimed``: how the capacity was taken."""
    message: str = ""


class NominationEnded(Event, tag="capacity.nomination_ended.v1", frozen=True, kw_only=True):
    """A nomination ended, and why.

    Reasons: ``Bound`` (its pods bound, or none of them waits any more),
    ``NominationExpired`` (its bound passed), ``JobDeleted`` (its PodGroup is gone or was
    recreated).
    """

    job: JobKey
    podgroup: str
    uid: str = ""
    reason: str
    message: str = ""


CapacityReservationsEvent = (
    CapacityReserved
    | CapacityReleased
    | LocksHonoured
    | LocksLifted
    | PodsNominated
    | NominationEnded
)
