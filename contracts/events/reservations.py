"""``reservations``: target job election and node locks (SPEC A6), from podgroup-enqueue.

Every event carries the reservation's ``generation`` (added later; 0 from older writers): it
grows by one with each election, so a reader that sees events of different target jobs out of
order (the topic is keyed by job) drops the ones of an older reservation.
"""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import JobKey, NodeName


class TargetJobElected(Event, tag="reservation.target_elected.v1", frozen=True, kw_only=True):
    """A starving job was elected target; nodes will be locked for it."""

    job: JobKey
    reason: str = ""
    generation: int = 0


class NodesLocked(Event, tag="reservation.nodes_locked.v1", frozen=True, kw_only=True):
    """Nodes were locked for the target job: they take no other job's new pods."""

    job: JobKey
    nodes: tuple[NodeName, ...]
    mode: str = "single"
    generation: int = 0
    reason: str = ""


class NodesUnlocked(Event, tag="reservation.nodes_unlocked.v1", frozen=True, kw_only=True):
    """The target is ready or gone: every lock released and the target cleared, at once."""

    job: JobKey
    nodes: tuple[NodeName, ...]
    reason: str = ""
    generation: int = 0


ReservationsEvent = TargetJobElected | NodesLocked | NodesUnlocked
