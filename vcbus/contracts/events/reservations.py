"""``reservations``: target job election and node locks, from podgroup-enqueue.

Every event carries the reservation's ``generation`` (added later; 0 from older writers): it
grows by one with each election, so a reader that sees events of different target jobs out of
order (the topic is keyed by job) drops the ones of an older reservation.
"""

from __future__ import annotations

from datetime import datetime

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey, NodeName


class TargetJobElected(Event, tag="reservation.target_elected.v1", frozen=True, kw_only=True):
    """A starving job was elected target; nodes will be locked for it."""

    job: JobKey
    reason: str = ""
    generation: int = 0
    until: datetime | None = None
    """When its locks end at the latest (``lock-max`` after the election; added later)."""


class NodesLocked(Event, tag="reservation.nodes_locked.v1", frozen=True, kw_only=True):
    """Nodes were locked for the target job: they take no other job's new pods."""

    job: JobKey
    nodes: tuple[NodeName, ...]
    mode: str = "single"
    generation: int = 0
    reason: str = ""
    until: datetime | None = None
    """When the lock ends at the latest (``lock-max`` after the election; added later)."""


class NodesUnlocked(Event, tag="reservation.nodes_unlocked.v1", frozen=True, kw_only=True):
    """Every lock released and the target cleared, at once.

    The target is ready, gone, infeasible, or expired (``lock-max``).
    """

    job: JobKey
    nodes: tuple[NodeName, ...]
    reason: str = ""
    generation: int = 0
    backoff_until: datetime | None = None
    """Set when the reservation expired (``lock-max``): the job may not be elected again
    before this moment (``lock-backoff``; added later)."""


ReservationsEvent = TargetJobElected | NodesLocked | NodesUnlocked
