"""Reservation: choose a starving target job and lock nodes for it (docs/design.md#reservation).

Port of volcano@v1.5.1 ``pkg/scheduler/plugins/reservation/reservation.go`` (``targetJobFn``:
highest priority, then longest waiting since ``ScheduleStartTimestamp``;
``reservedNodesFn``: lock the unlocked node with the most idle resources), completed as
docs/design.md#reservation and the design ``docs/design/resource-reservation-design.md`` describe.

Arguments (plugin arguments, or global ones in the configuration; read and checked by
``plugins.reservation_arguments``):
- ``lock-mode``: ``single`` (default; one more node per lock interval), ``multi`` (``lock-nodes``
  more nodes at a time) or ``cluster`` (every node at once);
- ``lock-nodes``: a node count (``3``) or a share of the nodes (``"25%"``) for ``multi``
  (default ``"20%"``);
- ``lock-interval``: how long to wait before locking more nodes (default ``1s``, Volcano's
  session period);
- ``lock-timeout``: after this long without the target ready, lock the whole cluster
  (default: never); must be shorter than ``lock-max``;
- ``lock-max``: a target not ready this long after its election is released with the reason
  ``ReservationExpired`` (default ``10m``);
- ``lock-backoff``: how long such a job may not be elected again (default ``5m``);
- ``target-min-waiting``: a job waiting at least this long is starving (default: only a job
  overtaken is);
- ``target-min-resources.<resource>``: when set, only a job asking at least that much on
  every resource given is elected.

Deliberate deviations (docs/design.md#reservation revised: reservation solves starvation and never
harms):
- Election (``targetJobFn``): a job annotated ``volcano.sh/target-job: "true"`` first; else
  the starving jobs (above ``target-min-resources`` when set). A job is starving when it was
  overtaken (a job behind it in order that arrived after it, so was placed while it waited,
  holds capacity on a node the job could use) or has waited ``target-min-waiting``; a job
  that fits the idle capacity now (the next cycle places it), or would fit but for room
  another job's will-bind holds, is not; nor is a job with a planned start
  (docs/design.md#planned-start: the plan keeps its room from every job that ends after that start,
  as EASY's reservation does, so locks would only idle nodes that such jobs could use). Among those:
  highest priority, then longest waiting, then older creation, then job key (Volcano: first in map
  order). Without starvation nothing is elected, so a workload in which nobody starves
  runs exactly as with reservation off.
- Nodes (``reservedNodesFn``): only nodes that could hold one of the target's minimum pods;
  most idle first by (cpu, memory, other resources), then the node whose newest pod is
  oldest (it likely drains first), then the smaller name (docs/design.md#determinism). Cordoned
  nodes are not chosen by ``single`` and ``multi``, which lock no more once the locked nodes' idle
  capacity holds the target, and within a step stop at the node that makes it fit (the
  fewest nodes that hold it soonest: which node drains first is not known, so a step adds
  the next likeliest until the target fits). Locks hold in the allocator (the
  ``predicates`` plugin), which v1.5.1 never did.
- Enqueue gate (vcbus): while the target is Pending, no other job with minResources is
  enqueued (reason ``WaitingForReservation``); otherwise the admission budget freed by
  finishing jobs goes to smaller jobs every cycle and the target never becomes Inqueue.
- The target's own enqueue (vcbus): permitted once the idle capacity of the nodes locked
  for it holds what it asks for, whatever the overcommit and queue budgets say (a first-
  tier permit). That capacity can go to no other job, and the budgets count jobs already
  Inqueue whose pods cannot bind on locked nodes: without this, a target Pending behind
  such a job and a cluster fully locked for the target waited for each other forever.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

import numpy as np

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import WAITING_FOR_RESERVATION
from vcbus.core.scheduling.framework.conf import Arguments, SchedulerConf
from vcbus.core.scheduling.framework.extension_points import Election
from vcbus.core.scheduling.framework.planning import has_plan
from vcbus.core.scheduling.framework.reservation_changes import lock_nodes, seconds_text
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.votes import Vote
from vcbus.core.scheduling.model import ALLOCATED_STATUSES, JobInfo, naive_utc
from vcbus.core.scheduling.node_matrix import BoolArray, FloatArray
from vcbus.core.scheduling.plugins.reservation_arguments import (
    TARGET_MIN_WAITING,
    LockMode,
    ReservationArgs,
)
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.snapshot import ClusterSnapshot

NAME = "reservation"

TARGET_JOB_ANNOTATION = "volcano.sh/target-job"


def requested(job: JobInfo) -> Resource:
    """What a job asks for: its minResources, else the requests of its pods."""
    if job.podgroup.min_resources:
        return Resource({k: float(v) for k, v in job.podgroup.min_resources.items()})
    return job.total_request


def waiting_time(job: JobInfo, now: datetime) -> timedelta:
    """How long the job has waited (zero when the scheduler has no time for it)."""
    since = job.waiting_since()
    if since is None:
        return timedelta(0)
    return max(timedelta(0), naive_utc(now) - naive_utc(since))


def fits_locked_nodes(ssn: Session, job: JobInfo) -> bool:
    """Whether the idle capacity of the nodes locked for ``job`` holds what it asks for.

    No other job may take that capacity (docs/design.md#reservation: freed capacity waits for the
    target), so the target can be enqueued on it whatever the rest of the cluster has promised.
    """
    rows = [
        ssn.nodes[name].row for name in sorted(ssn.reservation.locked_nodes) if name in ssn.nodes
    ]
    if not rows:
        return False
    idle = ssn.matrix.idle[rows].sum(axis=0)
    free = Resource(dict(zip(ssn.matrix.dimensions, (float(v) for v in idle), strict=True)))
    return requested(job).less_equal(free)


EPOCH = naive_utc(None)
"""The time of a job or pod without one (sorts first)."""


def arrival(job: JobInfo) -> datetime:
    """When the job arrived: its creation, else when the scheduler first saw it."""
    return naive_utc(job.creation if job.creation is not None else job.first_seen)


@dataclass(frozen=True, slots=True)
class Overtakers:
    """Per node, the latest-arrived job holding capacity there, per priority ceiling.

    ``latest[i][row]`` is the latest arrival (seconds) among the jobs of priority at most
    ``levels[i]`` holding capacity on the row, ``who[i][row]`` that job; a job waiting
    since before that arrival, of priority at least ``levels[i]``, was overtaken there.
    """

    levels: tuple[int, ...]
    latest: tuple[FloatArray, ...]
    who: tuple[tuple[JobInfo | None, ...], ...]

    @classmethod
    def of(cls, ssn: Session) -> Overtakers:
        """Read every job holding capacity on nodes."""
        count = len(ssn.matrix)
        by_priority: dict[int, list[tuple[float, JobInfo, list[int]]]] = {}
        for key in sorted(ssn.jobs):
            job = ssn.jobs[key]
            index = ssn.matrix.index
            rows = sorted(
                {index[name] for name in job.placed_nodes(ALLOCATED_STATUSES) if name in index}
            )
            if rows:
                by_priority.setdefault(job.priority, []).append((_seconds_of(job), job, rows))
        levels = tuple(sorted(by_priority))
        latest: list[FloatArray] = []
        who: list[tuple[JobInfo | None, ...]] = []
        current = np.full(count, -np.inf, dtype=np.float64)
        holders: list[JobInfo | None] = [None] * count
        for level in levels:
            current = current.copy()
            holders = list(holders)
            for seconds, job, rows in by_priority[level]:
                for row in rows:
                    if seconds > current[row]:
                        current[row] = seconds
                        holders[row] = job
            latest.append(current)
            who.append(tuple(holders))
        return cls(levels, tuple(latest), tuple(who))

    def overtaker(self, job: JobInfo, usable: BoolArray) -> JobInfo | None:
        """A job that arrived after ``job``, of no higher priority, on a node it could use."""
        level = bisect.bisect_right(self.levels, job.priority) - 1
        if level < 0:
            return None
        later = usable & (self.latest[level] > _seconds_of(job))
        rows = np.flatnonzero(later)
        return self.who[level][int(rows[0])] if len(rows) else None


def _seconds_of(job: JobInfo) -> float:
    return (arrival(job) - EPOCH).total_seconds()


@dataclass(frozen=True, slots=True)
class IdleRoom:
    """The cluster's idle capacity and what will-bind holds, read once per election.

    What every job the election asks about is measured against.
    """

    room: Resource
    """The idle capacity of every node, summed."""
    held: Resource
    """Every job's will-bind reservation, summed in job order."""

    @classmethod
    def of(cls, ssn: Session) -> IdleRoom:
        """Read the session's idle capacity and will-bind holds now."""
        idle = ssn.matrix.idle.sum(axis=0)
        room = Resource(dict(zip(ssn.matrix.dimensions, (float(v) for v in idle), strict=True)))
        return cls(room, _held(ssn, None))


def _held(ssn: Session, but: JobKey | None) -> Resource:
    held = Resource()
    for key in sorted(ssn.will_bind.held):
        if key != but:
            held = held + ssn.will_bind.reserved(key)
    return held


def waits_only_for_will_bind(ssn: Session, job: JobInfo, idle: IdleRoom) -> bool:
    """Whether ``job`` would fit the idle capacity but for room other jobs' will-bind holds.

    ``idle``: the session's :class:`IdleRoom`, read once per election.
    """
    held = _held(ssn, job.key) if job.key in ssn.will_bind.held else idle.held
    if not held.requested_names():
        return False
    free = idle.room
    wanted = requested(job)
    return not wanted.less_equal(free) and wanted.less_equal(free + held)


def is_annotated_target(job: JobInfo) -> bool:
    """Whether the job carries ``volcano.sh/target-job: "true"``."""
    return job.podgroup.annotations.get(TARGET_JOB_ANNOTATION, "").lower() == "true"


def newest_pods(ssn: Session) -> dict[str, datetime]:
    """Node → when its newest pod holding resources was created.

    Of two equally idle nodes, the one whose newest pod is older likely drains first (the
    scheduler does not know when pods end), so it is locked first.
    """
    out: dict[str, datetime] = {}
    for key in sorted(ssn.jobs):
        for status in ALLOCATED_STATUSES:
            for task in ssn.jobs[key].tasks_by_status.get(status, {}).values():
                if task.node_name:
                    created = task.creation_key
                    if created > out.get(task.node_name, EPOCH):
                        out[task.node_name] = created
    return out


def holds(ssn: Session, job: JobInfo, rows: BoolArray, cluster: IdleRoom | None = None) -> bool:
    """Whether the node ``rows`` hold ``job``'s minimum gang now.

    Their idle capacity, summed, holds what the job asks for, and one of them its largest
    minimum pod. ``cluster``: the idle capacity of every node, summed (when read already).
    """
    if not rows.any():
        return False
    matrix = ssn.matrix
    every = bool(rows.all())
    idle = matrix.idle if every else matrix.idle[rows]
    if every and cluster is not None:
        room = cluster.room
    else:
        total = idle.sum(axis=0)
        room = Resource(dict(zip(matrix.dimensions, (float(v) for v in total), strict=True)))
    if not requested(job).less_equal(room):
        return False
    largest = ssn.feasibility.job(job).largest
    columns = matrix.compared_columns(largest)
    return bool(matrix.fits(matrix.vector(largest), idle, columns).any())


class ReservationPlugin:
    """The ``reservation`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.args = ReservationArgs.parse(arguments)

    def is_big_enough(self, job: JobInfo) -> bool:
        """Whether the job asks at least ``target-min-resources`` (always, when unset)."""
        minimum = self.args.min_resources
        if minimum is None:
            return True
        wanted = requested(job)
        return all(wanted.amount(d) >= minimum.amount(d) for d in minimum if minimum.amount(d) > 0)

    def starving(
        self, ssn: Session, job: JobInfo, placed: Callable[[], Overtakers], idle: IdleRoom
    ) -> str | None:
        """Why the job starves (overtaken, or waiting ``target-min-waiting``), or ``None``.

        Not when it fits the idle capacity now (the next cycle places it), nor when only
        room other jobs' will-bind holds keeps it out, nor when it has a planned start
        (docs/design.md#planned-start): the plan already keeps the room it waits for from every job
        that would end after that start, and a job that overtook it ends before it (EASY's
        reservation); locks would only keep those jobs off idle nodes. ``placed`` gives
        the jobs holding nodes (read on its first call).
        """
        usable = ssn.feasibility.job(job).usable
        if holds(ssn, job, usable, idle) or waits_only_for_will_bind(ssn, job, idle):
            return None
        minimum = self.args.min_waiting
        if minimum is not None and waiting_time(job, ssn.now) >= minimum:
            why = f"waited at least {TARGET_MIN_WAITING} {seconds_text(minimum)}"
        else:
            other = placed().overtaker(job, usable)
            if other is None:
                return None
            why = f"overtaken by {other.key}"
        return None if has_plan(ssn, job) else why

    def target_job(self, ssn: Session, jobs: Sequence[JobInfo]) -> Election | None:
        """Elect the target among ``jobs`` (``targetJobFn``; docs/design.md#reservation)."""
        now = ssn.now
        candidates = [
            Election(j, f"annotated {TARGET_JOB_ANNOTATION}")
            for j in jobs
            if is_annotated_target(j)
        ]
        if not candidates:
            # read only once a job needs it: a walk over every job holding nodes
            placed = functools.cache(partial(Overtakers.of, ssn))
            idle = IdleRoom.of(ssn)
            for job in jobs:
                big = self.is_big_enough(job)
                why = self.starving(ssn, job, placed, idle) if big else None
                if why is not None:
                    candidates.append(Election(job, why))
        if not candidates:
            return None
        return min(
            candidates,
            key=lambda e: (
                -e.job.priority,
                -waiting_time(e.job, now),
                e.job.creation_key,
                str(e.job.key),
            ),
        )

    def on_session_open(self, ssn: Session) -> None:
        """Register the election, the node locking and the enqueue gate."""
        ssn.add_reservation_limits(NAME, self.args.limits)
        ssn.add_target_job_fn(NAME, lambda jobs: self.target_job(ssn, jobs))
        ssn.add_reserved_nodes_fn(NAME, lambda: self.reserve_nodes(ssn))

        def enqueueable(job: JobInfo) -> Vote:
            target = ssn.reservation.target_job
            if target is None:
                return Vote.ABSTAIN
            if job.key == target:
                return Vote.PERMIT if fits_locked_nodes(ssn, job) else Vote.ABSTAIN
            target_job = ssn.jobs.get(target)
            if target_job is None or target_job.phase is not PodGroupPhase.PENDING:
                return Vote.ABSTAIN
            ssn.record_enqueue_reason(
                job,
                WAITING_FOR_RESERVATION,
                f"target job {target} is enqueued before other jobs (reservation)",
            )
            return Vote.REJECT

        ssn.add_job_enqueueable_fn(NAME, enqueueable)

    def reserve_nodes(self, ssn: Session) -> None:
        """Lock more nodes for the target, as the lock mode says (``reservedNodesFn``)."""
        reservation = ssn.reservation
        if reservation.target_job is None:
            return
        unlocked = [n for n in ssn.node_list if n.name not in reservation.locked_nodes]
        if not unlocked:
            return
        args = self.args
        timeout = args.lock_timeout
        if (
            timeout is not None
            and reservation.elected_at is not None
            and naive_utc(ssn.now) - naive_utc(reservation.elected_at) >= timeout
        ):
            lock_nodes(
                ssn,
                (n.name for n in unlocked),
                LockMode.CLUSTER.value,
                f"lock-timeout {seconds_text(timeout)} passed without the target ready",
            )
            return
        if args.lock_mode is LockMode.CLUSTER:
            lock_nodes(ssn, (n.name for n in unlocked), args.lock_mode.value, "lock-mode cluster")
            return
        last = reservation.locked_at if reservation.locked_nodes else None
        if last is not None and naive_utc(ssn.now) < naive_utc(last) + args.lock_interval:
            return
        target = ssn.jobs.get(reservation.target_job)
        if target is None:
            return
        usable = ssn.feasibility.job(target).usable
        locked = usable & np.array(
            [name in reservation.locked_nodes for name in ssn.matrix.names], dtype=np.bool_
        )
        if holds(ssn, target, locked):
            return
        candidates = [n for n in unlocked if not n.node.unschedulable and usable[n.row]]
        idle = ssn.matrix.idle
        newest = newest_pods(ssn)
        candidates.sort(
            key=lambda n: (tuple(-float(v) for v in idle[n.row]), newest.get(n.name, EPOCH), n.name)
        )
        chosen: list[str] = []
        for node in candidates[: args.step_size(len(ssn.node_list))]:
            chosen.append(node.name)
            locked = locked.copy()
            locked[node.row] = True
            if holds(ssn, target, locked):
                break
        lock_nodes(
            ssn,
            chosen,
            args.lock_mode.value,
            f"lock-mode {args.lock_mode.value}: the target's node(s) with the most idle resources",
        )

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report: changes are recorded as they happen."""

    def next_due(self, snapshot: ClusterSnapshot, now: datetime | None = None) -> datetime | None:
        """The next moment a time-based rule of this plugin may change something.

        Args:
            snapshot: the state after the last cycle's own events were applied.
            now: the time of the last cycle; only later moments are returned.

        Returns:
            The earliest of: the next lock step, the lock timeout, ``lock-max``, the end of a
            backoff, and (without a target) the moment a job crosses the waiting threshold;
            ``None`` when none is ahead.
        """
        moments: list[datetime] = [until for _, until in snapshot.reservation.backoff]
        reservation = snapshot.reservation
        expires = self.args.limits.expires_at(reservation)
        if expires is not None:
            moments.append(expires)
        if reservation.target_job is not None:
            all_locked = set(snapshot.nodes) <= reservation.locked_nodes
            if not all_locked:
                if self.args.lock_mode is not LockMode.CLUSTER:
                    since = reservation.locked_at or reservation.elected_at
                    if since is not None:
                        moments.append(since + self.args.lock_interval)
                if self.args.lock_timeout is not None and reservation.elected_at is not None:
                    moments.append(reservation.elected_at + self.args.lock_timeout)
        elif self.args.min_waiting is not None:
            for state in snapshot.podgroups.values():
                if state.phase not in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE):
                    continue
                since = state.first_seen or state.podgroup.creation_timestamp
                if since is not None:
                    moments.append(since + self.args.min_waiting)
        later = [m for m in moments if now is None or naive_utc(m) > naive_utc(now)]
        return min(later, key=naive_utc) if later else None


def reservation_arguments(conf: SchedulerConf) -> Arguments | None:
    """The arguments the ``reservation`` plugin gets under ``conf`` (``None``: not configured)."""
    for tier in conf.tiers:
        for option in tier.plugins:
            if option.name == NAME:
                return {**conf.arguments, **option.arguments}
    return None


def new(arguments: Arguments) -> ReservationPlugin:
    """Build the plugin.

    Raises:
        ValueError: when an argument is malformed (see ``ReservationArgs.parse``).
    """
    return ReservationPlugin(arguments)
