"""A chaos run's record: the decoded topics (:class:`History`) and what a check finds.

Shared by the checks (``tests.chaos.checks``, ``tests.chaos.liveness``) and the run that
reads the topics (``tests.chaos.run``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from vcbus.contracts import Event, Topic


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken promise: which check, and what exactly."""

    check: str
    detail: str


def past_freezes(
    start: datetime, span: timedelta, frozen: Sequence[tuple[datetime, datetime]]
) -> datetime:
    """``start`` plus ``span`` of time the broker was not frozen (``frozen``: start, end)."""
    cursor, remaining = start, span
    for began, ended in sorted(frozen):
        if ended <= cursor:
            continue
        if began >= cursor + remaining:
            break
        remaining -= max(began - cursor, timedelta(0))
        cursor = ended
    return cursor + remaining


@dataclass
class History:
    """The decoded events of the run's topics, each topic in partition then offset order
    (so the events of one key are in the order they were published)."""

    admitted: list[Event] = field(default_factory=list)
    rejected: list[Event] = field(default_factory=list)
    status: list[Event] = field(default_factory=list)
    pods: list[Event] = field(default_factory=list)
    pods_status: list[Event] = field(default_factory=list)
    bindings: list[Event] = field(default_factory=list)
    reservations: list[Event] = field(default_factory=list)
    capacity: list[Event] = field(default_factory=list)
    """``capacity.reservations`` (will-bind reservations, ``LocksHonoured``, ``LocksLifted``)."""
    nodes: list[Event] = field(default_factory=list)
    podgroups: list[Event] = field(default_factory=list)
    podgroups_status: list[Event] = field(default_factory=list)
    dead_letters: dict[str, int] = field(default_factory=dict)
    """Records per dead-letter topic."""
    undecodable: dict[str, int] = field(default_factory=dict)
    """Records per topic the contracts could not decode."""


HISTORY_TOPICS: Mapping[Topic, str] = {
    Topic.JOBS_ADMITTED: "admitted",
    Topic.JOBS_REJECTED: "rejected",
    Topic.JOBS_STATUS: "status",
    Topic.PODS: "pods",
    Topic.PODS_STATUS: "pods_status",
    Topic.BINDINGS: "bindings",
    Topic.RESERVATIONS: "reservations",
    Topic.CAPACITY_RESERVATIONS: "capacity",
    Topic.NODES: "nodes",
    Topic.PODGROUPS: "podgroups",
    Topic.PODGROUPS_STATUS: "podgroups_status",
}
"""The topics the checks read, and the field of :class:`History` each goes to."""
