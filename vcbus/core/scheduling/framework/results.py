"""What a session decides, as frozen values: bindings, evictions, PodGroup updates, reasons.

Volcano's session performs these as side effects (``cache.Bind``, ``UpdateJobStatus``,
``RecordJobStatusEvent``: volcano@v1.12.0 ``pkg/scheduler/framework/session.go``,
``job_updater.go``); vcbus returns them so the shell publishes them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from vcbus.contracts.events.capacity_reservations import NominatedPod, ReservedPod
from vcbus.contracts.keys import JobKey, PodKey
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import Pod
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.holds import Reservation


@dataclass(frozen=True, slots=True)
class BindDecision:
    """Bind ``pod`` to ``node`` (``attempt`` = bindings of this pod refused so far)."""

    pod: Pod
    key: PodKey
    job: JobKey
    node: str
    attempt: int = 0


@dataclass(frozen=True, slots=True)
class EvictNote:
    """Who an eviction is for: what ``vcbus describe`` and the victim's condition say."""

    taker: str
    """The preemptor's job key (preempt), or the reclaiming queue's name (reclaim)."""
    preemptor: JobKey
    message: str = ""


@dataclass(frozen=True, slots=True)
class EvictDecision:
    """Evict ``pod`` from ``node`` (preempt, reclaim), ``reason`` ``Preempted``/``Reclaimed``."""

    pod: Pod
    key: PodKey
    job: JobKey
    node: str
    reason: str
    note: EvictNote | None = None


class NominationChangeKind(enum.StrEnum):
    """What happened to a nomination (one ``capacity.reservations`` event each)."""

    NOMINATED = "nominated"
    ENDED = "ended"


@dataclass(frozen=True, slots=True)
class NominationChange:
    """A preemptor's pods nominated on the nodes its victims release, or the end of that.

    Attributes:
        kind: nominated or ended.
        job: the preemptor.
        podgroup: its PodGroup's name.
        uid: its PodGroup's uid.
        pods: the waiting pods and their nodes (``nominated``).
        victims: the pods evicted for it (``nominated``).
        until: when the nomination ends if the pods have not bound.
        reason: ``Preempted``/``Reclaimed`` (nominated); ``Bound``, ``NominationExpired``,
            ``JobDeleted`` (ended).
        message: in words.
    """

    kind: NominationChangeKind
    job: JobKey
    podgroup: str
    uid: str
    reason: str
    pods: tuple[NominatedPod, ...] = ()
    victims: tuple[PodKey, ...] = ()
    until: datetime | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class PodGroupUpdate:
    """A PodGroup's phase and allocator conditions at session close, when either changed."""

    job: JobKey
    podgroup: str
    phase: PodGroupPhase
    previous_phase: PodGroupPhase
    conditions: tuple[Condition, ...]
    conditions_changed: bool

    @property
    def phase_changed(self) -> bool:
        """Whether the phase differs from the snapshot's."""
        return self.phase is not self.previous_phase


@dataclass(frozen=True, slots=True)
class PodGroupStatusUpdate:
    """A PodGroup's phase and reason condition at session close, when either changed.

    What podgroup-enqueue publishes on ``podgroups.status``: the phase of B3.8 and one
    ``Unschedulable`` condition with the highest-ranked reason of docs/design.md#pending-reasons
    (none when nothing holds the PodGroup back).
    """

    job: JobKey
    podgroup: str
    uid: str
    phase: PodGroupPhase
    previous_phase: PodGroupPhase
    conditions: tuple[Condition, ...]
    previous_conditions: tuple[Condition, ...]

    @property
    def phase_changed(self) -> bool:
        """Whether the phase differs from the snapshot's."""
        return self.phase is not self.previous_phase


class ReservationChangeKind(enum.StrEnum):
    """What happened to the reservation (one ``reservations`` event each)."""

    ELECTED = "elected"
    LOCKED = "locked"
    UNLOCKED = "unlocked"


@dataclass(frozen=True, slots=True)
class ReservationChange:
    """One change of the reservation made by ``elect`` or ``reserve`` (docs/design.md#reservation).

    Attributes:
        kind: elected, locked or unlocked.
        job: the target job.
        nodes: the nodes locked now (``locked``) or every node released (``unlocked``).
        generation: the reservation's generation (one per election).
        mode: the lock mode that chose the nodes (``single``, ``multi``, ``cluster``).
        reason: why, in words.
        until: when the locks end at the latest (``lock-max`` after the election).
        backoff_until: an expired target may not be elected again before this moment.
    """

    kind: ReservationChangeKind
    job: JobKey
    generation: int
    nodes: tuple[str, ...] = ()
    mode: str = ""
    reason: str = ""
    until: datetime | None = None
    backoff_until: datetime | None = None


class WillBindChangeKind(enum.StrEnum):
    """What happened to a will-bind reservation (one ``capacity.reservations`` event each)."""

    RESERVED = "reserved"
    RELEASED = "released"


@dataclass(frozen=True, slots=True)
class WillBindChange:
    """Capacity reserved for, or released from, a dependent job's later stages (will-bind).

    Attributes:
        kind: reserved or released.
        job: the job.
        podgroup: its PodGroup's name.
        uid: its PodGroup's uid.
        pods: the pods reserved or released by this change.
        held: everything reserved for the job after the change.
        expires_at: when the reservation times out.
        reason: why (``CapacityReserved``, ``StageBound``, ``WillBindTimeout`` …).
        message: the reason in words.
    """

    kind: WillBindChangeKind
    job: JobKey
    podgroup: str
    uid: str
    pods: tuple[ReservedPod, ...]
    held: tuple[ReservedPod, ...]
    expires_at: datetime | None
    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a job did not (fully) get what it asked for, as data (logged once by the shell)."""

    job: JobKey
    reason: str
    message: str
    task: PodKey | None = None


@dataclass(frozen=True, slots=True)
class EnqueueStep:
    """One job enqueue tried: its queue and the queue's share then, and the verdict."""

    queue: str
    share: float | None
    """The queue's share when it was picked (None without a plugin that tells shares)."""
    job: JobKey
    admitted: bool
    reason: str = ""
    """Why it stays Pending: the highest-ranked reason code (docs/design.md#pending-reasons)."""


@dataclass(frozen=True, slots=True)
class SessionResult:
    """Everything a session decided."""

    decisions: tuple[BindDecision, ...] = ()
    evictions: tuple[EvictDecision, ...] = ()
    podgroup_updates: tuple[PodGroupUpdate, ...] = ()
    explanations: tuple[Explanation, ...] = ()
    reservation_update: Reservation | None = None
    """The new reservation state when an action (elect, reserve) changed it."""
    reservation_changes: tuple[ReservationChange, ...] = ()
    locks_lifted: bool = False
    """The allocator placed the reservation's target: its locks held no other job's pods
    from that moment of the session on (docs/design.md#reservation, no harm)."""
    """The elections, locks and unlocks that led to it, in order."""
    status_updates: tuple[PodGroupStatusUpdate, ...] = ()
    """PodGroups whose phase or reason changed (what ``podgroups.status`` carries)."""
    will_bind_changes: tuple[WillBindChange, ...] = ()
    """Will-bind reservations made and released, in order (``capacity.reservations``)."""
    enqueue_steps: tuple[EnqueueStep, ...] = ()
    """What enqueue tried, in order (``vcbus simulate --cycles`` shows it)."""
    nomination_changes: tuple[NominationChange, ...] = ()
    """Nominations made (preempt, reclaim) and ended, in order (``capacity.reservations``)."""


CycleObserver = Callable[[datetime, SessionResult], None]
"""Told each scheduling cycle's time and what its session decided."""
