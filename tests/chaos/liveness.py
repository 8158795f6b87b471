"""Liveness: no job waits longer than the documented bound for a step that is due.

README's Reliability (and docs/reliability.md): *a job's next step happens at most*
:data:`STEP_BOUND` *after it becomes due, whatever was lost* (time the broker was frozen
not counted). The steps judged are those the topics show to be due at a known moment,
each taken by the first record that does it:

- ``status``: a job admitted (``JobAdmitted``) gets its first status from the
  job-controller;
- ``pods``: a PodGroup incarnation (its uid) Inqueue gets its job's pods (``PodCreated``),
  unless it is deleted first;
- ``job-follows-pod``: a live pod's end (its first ``Succeeded`` or ``Failed``, the job not
  final yet) is followed by a status of its job;
- ``pod-starts``: a pod bound but not started (``Pending``, reason ``Bound``) starts or
  ends once its start delay (``vcbus.io/start-seconds``, 0 by default) is over;
- ``pod-ends``: a running pod ends once its ``vcbus.io/run-seconds`` are over, or its
  eviction's grace period if that comes first; a pod deleted meanwhile owes nothing more.

A step still not taken when the run stopped watching is late once the bound is past.
Enqueueing and binding wait for capacity, not for time: they are judged by the final
phase check (every job final), not here.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tests.chaos.history import History, Violation, past_freezes
from vcbus.contracts import (
    Event,
    JobAdmitted,
    JobStatusChanged,
    PodCreated,
    PodDeleted,
    PodEvictionRequested,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodPhaseChanged,
)
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS, ANNOTATION_START_SECONDS, PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.views.phases import FINAL_PHASES

STEP_BOUND = timedelta(seconds=60)
"""The documented bound (README's Reliability): the resync period (10 s), a takeover of the
step's owner (the 6 s session, a group join and a restore), and a loaded machine's lag."""
GRACE_DEFAULT = 30.0
"""A pod's termination grace period when its template sets none (Kubernetes' default)."""
ENDED = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})


@dataclass(frozen=True, slots=True)
class StepTiming:
    """The bound, the broker's freezes (start, end) and when the run stopped watching."""

    bound: timedelta = STEP_BOUND
    frozen: Sequence[tuple[datetime, datetime]] = ()
    end: datetime | None = None
    """Steps still open are judged at this moment (default: the history's last record)."""


STEP_TIMING = StepTiming()
"""The documented bound, no freeze, judged at the history's last record."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step due: whose, which, due when, taken when (``None``: never)."""

    job: str
    what: str
    subject: str
    """What the step is about: the job, a PodGroup uid or a pod uid."""
    due: datetime
    done: datetime | None

    def wait(self, frozen: Sequence[tuple[datetime, datetime]], end: datetime) -> float:
        """Seconds from due to done (or ``end``), the broker's freezes left out."""
        until = self.done or end
        if until <= self.due:
            return 0.0
        spent = until - self.due
        for began, ended in frozen:
            overlap = min(ended, until) - max(began, self.due)
            if overlap > timedelta(0):
                spent -= overlap
        return max(spent.total_seconds(), 0.0)


class _Times:
    """Sorted moments per key, for "the first one at or after t"."""

    def __init__(self, pairs: Iterable[tuple[str, datetime]]) -> None:
        found: dict[str, list[datetime]] = defaultdict(list)
        for key, at in pairs:
            found[key].append(at)
        self._times = {key: sorted(times) for key, times in found.items()}

    def first(self, key: str, at: datetime) -> datetime | None:
        times = self._times.get(key, [])
        index = bisect_left(times, at)
        return times[index] if index < len(times) else None


def _earliest(*moments: datetime | None) -> datetime | None:
    present = [m for m in moments if m is not None]
    return min(present) if present else None


def _seconds(annotations: dict[str, str], name: str) -> float | None:
    try:
        return float(annotations[name])
    except (KeyError, ValueError):
        return None


def steps(history: History) -> list[Step]:
    """Every step the topics show due, with when it was taken."""
    statuses = [e for e in history.status if isinstance(e, JobStatusChanged)]
    status_at = _Times((e.job, e.occurred_at) for e in statuses)
    final_at = _Times((e.job, e.occurred_at) for e in statuses if e.phase in FINAL_PHASES)
    created: dict[str, PodCreated] = {}
    for event in history.pods:
        if isinstance(event, PodCreated):
            created.setdefault(event.pod.uid, event)
    created_at = _Times((e.pod.job, e.occurred_at) for e in created.values())
    deleted: dict[str, datetime] = {}
    for event in history.pods:
        if isinstance(event, PodDeleted) and event.pod_uid:
            deleted.setdefault(event.pod_uid, event.occurred_at)
    podgroup_gone = _Times(
        (e.job, e.occurred_at) for e in history.podgroups if isinstance(e, PodGroupDeleted)
    )
    podgroup_made: dict[str, datetime] = {}
    for event in history.podgroups:
        if isinstance(event, PodGroupCreated) and event.podgroup.uid:
            podgroup_made.setdefault(event.podgroup.uid, event.occurred_at)
    evicted: dict[str, datetime] = {}
    for event in history.bindings:
        if isinstance(event, PodEvictionRequested):
            evicted.setdefault(event.pod_uid, event.occurred_at)
    out: list[Step] = []
    admitted: dict[str, JobAdmitted] = {}
    for event in history.admitted:
        if isinstance(event, JobAdmitted):
            admitted.setdefault(event.job, event)
    for job, event in admitted.items():
        at = event.occurred_at
        out.append(Step(job, "status", job, at, status_at.first(job, at)))
    inqueue: dict[str, PodGroupPhaseChanged] = {}
    for event in history.podgroups_status:
        if isinstance(event, PodGroupPhaseChanged) and event.phase is PodGroupPhase.INQUEUE:
            inqueue.setdefault(event.uid or f"{event.job}@{event.event_id}", event)
    for uid, event in inqueue.items():
        at = event.occurred_at
        gone = podgroup_gone.first(event.job, podgroup_made.get(uid, at))
        if gone is not None and gone < at:
            continue  # a late phase of a PodGroup deleted already: nothing is due
        done = _earliest(created_at.first(event.job, at), gone)
        out.append(Step(event.job, "pods", uid, at, done))
    ended: dict[str, PodPhaseChanged] = {}
    started: dict[str, PodPhaseChanged] = {}
    bound: dict[str, PodPhaseChanged] = {}
    for event in history.pods_status:
        if not isinstance(event, PodPhaseChanged) or not event.pod_uid:
            continue
        if event.phase in ENDED:
            ended.setdefault(event.pod_uid, event)
        elif event.phase is PodPhase.RUNNING:
            started.setdefault(event.pod_uid, event)
        elif event.phase is PodPhase.PENDING and event.reason == "Bound":
            bound.setdefault(event.pod_uid, event)
    for uid, event in ended.items():
        at = event.occurred_at
        gone = deleted.get(uid)
        if uid not in created or (gone is not None and gone <= at):
            continue
        final = final_at.first(event.job, created[uid].occurred_at)
        if final is not None and final < at:
            continue  # a final job's pods end as they may: nothing of the job is due
        out.append(Step(event.job, "job-follows-pod", uid, at, status_at.first(event.job, at)))
    for uid, event in bound.items():
        pod = created.get(uid)
        if pod is None:
            continue
        delay = _seconds(pod.pod.annotations, ANNOTATION_START_SECONDS) or 0.0
        due = event.occurred_at + timedelta(seconds=delay)
        moved = [e for e in (started.get(uid), ended.get(uid)) if e is not None]
        done = _earliest(*(e.occurred_at for e in moved), deleted.get(uid))
        out.append(Step(event.job, "pod-starts", uid, due, done))
    for uid, event in started.items():
        pod = created.get(uid)
        run = _seconds(pod.pod.annotations, ANNOTATION_RUN_SECONDS) if pod else None
        if pod is None or run is None:
            continue
        due = event.occurred_at + timedelta(seconds=run)
        if uid in evicted:
            grace = pod.pod.termination_grace_period_seconds
            grace_s = GRACE_DEFAULT if grace is None else float(grace)
            due = min(due, evicted[uid] + timedelta(seconds=grace_s))
        end = ended.get(uid)
        done = _earliest(end.occurred_at if end else None, deleted.get(uid))
        out.append(Step(event.job, "pod-ends", uid, due, done))
    return sorted(out, key=lambda s: (s.due, s.job, s.what, s.subject))


def _last_moment(history: History) -> datetime | None:
    topics: list[list[Event]] = [
        history.admitted,
        history.status,
        history.pods,
        history.pods_status,
        history.bindings,
        history.podgroups,
        history.podgroups_status,
    ]
    return max((e.occurred_at for events in topics for e in events), default=None)


def check_liveness(history: History, timing: StepTiming = STEP_TIMING) -> list[Violation]:
    """Every step due was taken within the bound (the broker's freezes not counted)."""
    end = timing.end or _last_moment(history)
    if end is None:
        return []
    out = []
    for step in steps(history):
        late_after = past_freezes(step.due, timing.bound, timing.frozen)
        if step.done is None and late_after >= end:
            continue  # the run stopped watching before the bound passed
        if step.done is not None and step.done <= late_after:
            continue
        waited = step.wait(timing.frozen, end)
        taken = "never taken" if step.done is None else "taken"
        out.append(
            Violation(
                "liveness",
                f"{step.job}: step {step.what} of {step.subject} due at "
                f"{step.due.isoformat()} {taken} after {waited:.1f}s "
                f"(bound {timing.bound.total_seconds():g}s)",
            )
        )
    return out


def slowest_steps(
    history: History, timing: StepTiming = STEP_TIMING, count: int = 3
) -> list[dict[str, object]]:
    """The ``count`` longest waits for a step (seconds, the broker's freezes left out)."""
    end = timing.end or _last_moment(history)
    if end is None:
        return []
    waits = ((step.wait(timing.frozen, end), step) for step in steps(history))
    return [
        {
            "seconds": round(wait, 2),
            "job": step.job,
            "step": step.what,
            "taken": step.done is not None,
        }
        for wait, step in heapq.nlargest(count, waits, key=lambda item: item[0])
    ]
