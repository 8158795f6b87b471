"""A job's events, as ``kubectl describe`` ends with them, made from what the topics say.

vcbus has no Event objects: each row is read from the job's records in the order each
topic holds them, a row where something changed — admitted, a command, the PodGroup
created and enqueued, pods created (per task), bound and started (per node, as the
cluster reports them on ``pods.status``, on the job's partition), a job phase, a reason
that changed, nodes locked or unlocked, a retry, finished, deleted. Rows are sorted by
time (newest last), and equal rows in a row are counted as one (``x3 over 10s``), as
Kubernetes' event aggregation does. Only the job's newest life is shown: rows up to the
``Deleted`` of an earlier job of the same name are dropped (with those of its last step).
A record may carry several events (a job's pods created in one step, bound in one cycle):
each makes its row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol, assert_never

from vcbus.contracts import (
    TOPIC_SPECS,
    BindingRefused,
    CapacityReleased,
    CapacityReservationsEvent,
    CapacityReserved,
    Event,
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobDeleted,
    JobRejected,
    JobResumeAccepted,
    JobsAdmittedEvent,
    JobsRejectedEvent,
    JobsStatusEvent,
    JobStatusChanged,
    KeyKind,
    LocksHonoured,
    LocksLifted,
    NodesLocked,
    NodesUnlocked,
    NominationEnded,
    PodCreated,
    PodDeleted,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodGroupsConditionsEvent,
    PodGroupsEvent,
    PodGroupsStatusEvent,
    PodGroupUpdated,
    PodPhaseChanged,
    PodsEvent,
    PodsNominated,
    PodsStatusEvent,
    RejectionsCleared,
    ReservationsEvent,
    TargetJobElected,
    Topic,
    key_of,
)
from vcbus.contracts.objects import Condition, PodPhase
from vcbus.contracts.objects.pod import POD_BOUND
from vcbus.core.reasons import UNSCHEDULABLE
from vcbus.core.views.age import age
from vcbus.core.views.phases import FAILED_PHASES

MAX_EVENTS = 40
"""Rows shown at most (the newest); the older ones are counted."""

SOURCES: dict[Topic, str] = {
    Topic.JOBS_ADMITTED: "admission",
    Topic.JOBS_REJECTED: "admission",
    Topic.JOBS_STATUS: "job-controller",
    Topic.PODGROUPS: "job-controller",
    Topic.PODS: "job-controller",
    Topic.PODGROUPS_STATUS: "podgroup-enqueue",
    Topic.PODGROUPS_CONDITIONS: "allocator",
    Topic.RESERVATIONS: "allocator",
    Topic.CAPACITY_RESERVATIONS: "allocator",
    Topic.PODS_STATUS: "cluster",
}
"""The service that writes each topic: the event's ``From``."""

EventsFoldEvent = (
    JobsAdmittedEvent
    | JobsRejectedEvent
    | JobsStatusEvent
    | PodGroupsEvent
    | PodsEvent
    | PodGroupsStatusEvent
    | PodGroupsConditionsEvent
    | ReservationsEvent
    | CapacityReservationsEvent
    | PodsStatusEvent
)
"""What a job's Events rows are made from: the events of the topics of :data:`SOURCES`."""


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One row: when, Normal or Warning, why, from where, what; ``count`` equal rows."""

    at: datetime
    type: str
    reason: str
    source: str
    message: str
    count: int = 1
    first: datetime | None = None

    def same_as(self, other: JobEvent) -> bool:
        """Whether two rows say the same thing (then they are counted as one)."""
        return (self.type, self.reason, self.source, self.message) == (
            other.type,
            other.reason,
            other.source,
            other.message,
        )


class _Row(Protocol):
    """Makes the row of one record: reason, message, Normal or Warning."""

    def __call__(self, reason: str, message: str, kind: str = "Normal") -> list[JobEvent]: ...


@dataclass(slots=True)
class _Seen:
    """What the rows read so far said, per topic, so only changes make a row."""

    phase: str = ""
    retries: int = 0
    podgroup_phase: str = ""
    reasons: dict[Topic, frozenset[str]] = field(default_factory=dict)


def job_events(key: str, records: Iterable[tuple[Topic, Event]]) -> list[JobEvent]:
    """The events of job ``key``, oldest first, equal neighbours counted as one.

    Args:
        key: the job key.
        records: the decoded records of the job's partition (and the reservation topics),
            in the order each topic holds them; other jobs' records are ignored.

    Returns:
        The rows, oldest first.
    """
    seen = _Seen()
    rows: list[JobEvent] = []
    for topic, event in records:
        if TOPIC_SPECS[topic].key is KeyKind.JOB and key_of(event) == key:
            rows += _rows(topic, event, seen)
    rows.sort(key=lambda row: row.at)
    deleted = [i for i, row in enumerate(rows) if row.reason == "Deleted"]
    if deleted and deleted[-1] != len(rows) - 1:
        # the earlier job's rows end with its deletion, and those of its last step with it
        # (pods killed as it was deleted, at the same time)
        ended = rows[deleted[-1]].at
        rows = [row for row in rows[deleted[-1] + 1 :] if row.at > ended]
    merged: list[JobEvent] = []
    for row in rows:
        if merged and merged[-1].same_as(row):
            last = merged[-1]
            merged[-1] = replace(row, count=last.count + 1, first=last.first or last.at)
        else:
            merged.append(row)
    return merged


def events_lines(events: Sequence[JobEvent], now: datetime) -> list[tuple[str, ...]]:
    """Table rows (type, reason, age, from, message) of the newest :data:`MAX_EVENTS`."""
    out: list[tuple[str, ...]] = []
    for event in events[-MAX_EVENTS:]:
        when = age(event.at, now)
        if event.count > 1 and event.first is not None:
            when = f"{when} (x{event.count} over {age(event.first, now)})"
        out.append((event.type, event.reason, when, event.source, event.message))
    return out


def _rows(topic: Topic, event: Event, seen: _Seen) -> list[JobEvent]:
    source = SOURCES.get(topic, str(topic))
    at = event.occurred_at

    def row(reason: str, message: str, kind: str = "Normal") -> list[JobEvent]:
        return [JobEvent(at, kind, reason, source, message)]

    if not isinstance(event, EventsFoldEvent):
        return []
    match event:
        case JobAdmitted():
            return row("Admitted", f"admitted to queue {event.manifest.spec.queue or 'default'}")
        case JobRejected():
            first = event.violations[0] if event.violations else None
            text = f"{first.reason}: {first.message}" if first else "rejected"
            return row("Rejected", text, "Warning")
        case JobAbortAccepted():
            return row("CommandIssued", "AbortJob (suspend) requested")
        case JobResumeAccepted():
            return row("CommandIssued", "ResumeJob requested")
        case JobDeleteAccepted():
            return row("CommandIssued", "delete requested")
        case JobStatusChanged():
            return _status_rows(event, seen, row)
        case JobDeleted():
            return row("Deleted", "job, pods and PodGroup deleted")
        case PodGroupCreated():
            group = event.podgroup
            return row("PodGroupCreated", f"PodGroup {group.name}, minMember {group.min_member}")
        case PodGroupPhaseChanged():
            out = []
            if str(event.phase) != seen.podgroup_phase:
                seen.podgroup_phase = str(event.phase)
                reason = "Enqueued" if seen.podgroup_phase == "Inqueue" else "PodGroupPhase"
                out += row(reason, f"PodGroup {event.phase}")
            return out + _reason_rows(topic, event.conditions, seen, row)
        case PodGroupConditionsChanged():
            return _reason_rows(topic, event.conditions, seen, row)
        case PodCreated():
            return row("Created", f"created pods of task {event.pod.task}")
        case PodDeleted():
            return row("Killed", f"deleted pods of task {event.task or '-'}")
        case BindingRefused():
            return row("BindingRefused", f"{event.node}: {event.reason}", "Warning")
        case PodPhaseChanged() if event.phase is PodPhase.PENDING and event.node:
            return row("Bound", f"pods of task {event.task} bound to {event.node}")
        case PodPhaseChanged() if event.phase is PodPhase.RUNNING:
            started = row("Started", f"pods of task {event.task} started on {event.node or '-'}")
            if event.reason == POD_BOUND:  # bound and started at once (no start delay)
                return row("Bound", f"pods of task {event.task} bound to {event.node}") + started
            return started
        case PodPhaseChanged() if event.phase is PodPhase.FAILED:
            detail = event.reason or f"exit code {event.exit_code}"
            return row("PodFailed", f"pod of task {event.task} failed: {detail}", "Warning")
        case NodesLocked():
            until = f" until {event.until.isoformat()}" if event.until else ""
            why = f" ({event.reason})" if event.reason else ""
            nodes = ", ".join(event.nodes)
            return row("NodesLocked", f"nodes {nodes} locked for this job{until}{why}")
        case NodesUnlocked():
            why = f" ({event.reason})" if event.reason else ""
            return row("NodesUnlocked", f"nodes {', '.join(event.nodes)} unlocked{why}")
        case TargetJobElected():
            why = f" ({event.reason})" if event.reason else ""
            return row("ReservationTarget", f"elected as the job nodes are reserved for{why}")
        case CapacityReserved() if event.held:
            held = ", ".join(sorted({p.node for p in event.held}))
            return row("WillBind", f"capacity for later stages held on {held}")
        case CapacityReleased():
            return row("WillBindReleased", f"{event.reason}: {event.message}".rstrip(": "))
        case (
            RejectionsCleared()
            | PodGroupUpdated()
            | PodGroupDeleted()
            | PodPhaseChanged()
            | CapacityReserved()
            | LocksHonoured()
            | LocksLifted()
            | PodsNominated()
            | NominationEnded()
        ):
            return []  # nothing a person reads in a job's Events
        case _:
            assert_never(event)


def _status_rows(event: JobStatusChanged, seen: _Seen, row: _Row) -> list[JobEvent]:
    out: list[JobEvent] = []
    if event.retry_count > seen.retries:
        out += row("Restarted", f"retry {event.retry_count}", "Warning")
    seen.retries = event.retry_count
    phase = str(event.phase)
    if phase != seen.phase:
        kind = "Warning" if phase in FAILED_PHASES else "Normal"
        out += row(phase, f"job is {phase}", kind)
        seen.phase = phase
    return out + _reason_rows(Topic.JOBS_STATUS, event.conditions, seen, row)


def _reason_rows(
    topic: Topic, conditions: Sequence[Condition], seen: _Seen, row: _Row
) -> list[JobEvent]:
    """A row per reason that appears.

    A pending reason (an ``Unschedulable`` condition), or the job's own (a reason other
    than its phase, such as ``WaitingForDependency``).
    """
    job = topic is Topic.JOBS_STATUS
    now = {
        c.reason: c
        for c in conditions
        if c.reason
        and c.status == "True"
        and (c.reason != c.type if job else c.type == UNSCHEDULABLE)
    }
    before = seen.reasons.get(topic, frozenset())
    seen.reasons[topic] = frozenset(now)
    kind = "Normal" if job else "Warning"
    return [r for name, c in now.items() if name not in before for r in row(name, c.message, kind)]
