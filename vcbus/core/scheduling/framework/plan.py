"""Planned start times and backfill (docs/design.md#planned-start).

A pod's deadline is ``activeDeadlineSeconds`` after it started (a pod placed but not
started yet: after now); a pod without one never ends, for planning. For a job that cannot
start now, :func:`earliest_start` replays the running pods' deadlines in time order on the
nodes' idle capacity until the job's minimum gang fits: that moment is its planned start,
and the nodes whose capacity idle now that start needs are kept for it. Another job may use
a kept node only if it ends, by its own deadline, by the planned start
(:func:`ends_by`): EASY backfill (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995;
Slurm's ``sched/backfill``), with a node-level reservation in place of EASY's processor
count, so jobs of other shapes keep their own nodes.

The pure core is :func:`earliest_start` over arrays; ``framework.planning`` reads a
session and applies the plans.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from itertools import groupby

import numpy as np

from vcbus.contracts.keys import JobKey
from vcbus.core.scheduling.model import TaskInfo, TaskStatus
from vcbus.core.scheduling.node_matrix import BoolArray, FloatArray, IntArray, NodeMatrix

PLANNED = "kept for the planned start of"
"""The fit-error reason of a node kept for another job's planned start (its key and time
follow)."""
_PLACED = frozenset(
    {
        TaskStatus.ALLOCATED,
        TaskStatus.PIPELINED,
        TaskStatus.BINDING,
        TaskStatus.BOUND,
        TaskStatus.RUNNING,
        TaskStatus.RELEASING,
    }
)


@dataclass(frozen=True, slots=True)
class Release:
    """Capacity a placed pod gives back on its node (a row) when its deadline passes."""

    end: datetime
    row: int
    request: FloatArray


@dataclass(frozen=True, slots=True)
class Shape:
    """``count`` pods of one request that may go on the rows where ``allowed`` is true."""

    request: FloatArray
    allowed: BoolArray
    count: int


@dataclass(frozen=True, slots=True)
class Hold:
    """What a planned job holds from its start until it ends by its time limit, per row.

    A later plan of the same queue is made around it (:func:`earliest_start_around`).
    """

    start: datetime
    end: datetime
    used: FloatArray


@dataclass(frozen=True, slots=True)
class Plan:
    """A job's planned start and the rows whose capacity idle now it needs then.

    ``hold``: what it holds once started, for the plans made around it (None: no plan is).
    """

    job: JobKey
    start: datetime
    kept: BoolArray
    hold: Hold | None = None


def _slots(free: FloatArray, request: FloatArray) -> FloatArray:
    """How many pods of ``request`` each row's ``free`` capacity holds."""
    asked = request > 0
    if not asked.any():
        return np.full(len(free), np.inf)
    slots: FloatArray = np.floor(np.min(free[:, asked] / request[asked], axis=1) + 1e-9)
    return slots


def fit(free: FloatArray, released: FloatArray, shapes: Sequence[Shape]) -> FloatArray | None:
    """Place ``shapes`` on ``free`` capacity; the capacity each row gives them, or None.

    Rows with the most capacity released by deadlines come first (then row order), so the
    gang leaves the capacity idle now to others where it can.
    """
    left = free.copy()
    used = np.zeros_like(free)
    order = np.lexsort((np.arange(len(free)), -released.sum(axis=1)))
    for shape in shapes:
        slots = np.where(shape.allowed, _slots(left, shape.request), 0.0)[order]
        if slots.sum() < shape.count:
            return None
        before = np.cumsum(slots) - slots
        take = np.clip(shape.count - before, 0, slots)
        taken = np.zeros(len(free))
        taken[order] = take
        left -= np.outer(taken, shape.request)
        used += np.outer(taken, shape.request)
    return used


@dataclass(frozen=True, slots=True)
class Releases:
    """Releases in time order (then row order), as the arrays that replay them.

    ``cuts`` says, per moment a release comes, how many releases have come by its end;
    ``total``, what each row gets back once every release has come. Made once per state of
    a session's placements.
    """

    ends: tuple[datetime, ...]
    rows: IntArray
    amounts: FloatArray
    cuts: tuple[int, ...]
    total: FloatArray

    @classmethod
    def of(cls, releases: Sequence[Release], idle: FloatArray) -> Releases:
        """``releases`` on the rows and resources of ``idle``."""
        return cls.build(
            [r.end for r in releases],
            [r.row for r in releases],
            [r.request for r in releases],
            idle.shape,
        )

    @classmethod
    def build(
        cls,
        ends: Sequence[datetime],
        rows: Sequence[int],
        requests: Sequence[FloatArray],
        shape: tuple[int, ...],
    ) -> Releases:
        """The releases whose ``i``-th gives back ``requests[i]`` on ``rows[i]`` at ``ends[i]``.

        ``shape``: the session's rows and resources (its matrix's ``idle.shape``).
        """
        order = sorted(range(len(ends)), key=lambda i: (ends[i], rows[i]))
        ordered = tuple(ends[i] for i in order)
        amounts = np.array([requests[i] for i in order], dtype=np.float64)
        amounts = amounts.reshape(len(order), shape[1])
        indices = np.fromiter((rows[i] for i in order), dtype=np.intp, count=len(order))
        total = np.zeros(shape, dtype=np.float64)
        np.add.at(total, indices, amounts)
        return cls(
            ends=ordered,
            rows=indices,
            amounts=amounts,
            cuts=tuple(sorted({bisect_right(ordered, end) for end in ordered})),
            total=total,
        )

    def replayed(self, idle: FloatArray, count: int) -> tuple[FloatArray, FloatArray]:
        """The capacity free and released once the first ``count`` releases have come."""
        released = np.zeros_like(idle)
        np.add.at(released, self.rows[:count], self.amounts[:count])
        free = idle.copy()
        np.add.at(free, self.rows[:count], self.amounts[:count])
        return free, released


def earliest_start(
    idle: FloatArray, releases: Releases, shapes: Sequence[Shape], now: datetime
) -> tuple[datetime, BoolArray] | None:
    """When ``shapes`` fit at the earliest, and the rows whose capacity idle now they need.

    ``releases`` are replayed on ``idle`` in time order until the shapes fit.

    Returns:
        ``now`` and the rows they use when they fit now; None when they never fit (pods
        without deadlines hold what they need, or the cluster is too small).
    """
    used = fit(idle, np.zeros_like(idle), shapes)
    if used is not None:
        return now, np.any(used > 1e-9, axis=1)
    if len(shapes) == 1:
        # the moment it first fits, found at once: only that one is tried
        count = _first_fit(idle, releases, shapes[0])
        if count == 0:
            return None
        free, released = releases.replayed(idle, count)
        used = fit(free, released, shapes)
        if used is None:
            return None
        kept = np.any(used > released + 1e-9, axis=1)
        return max(releases.ends[count - 1], now), kept
    free = idle.copy()
    released = np.zeros_like(idle)
    ends = releases.ends
    for end, group in groupby(range(len(ends)), key=lambda i: ends[i]):
        for i in group:
            free[releases.rows[i]] += releases.amounts[i]
            released[releases.rows[i]] += releases.amounts[i]
        used = fit(free, released, shapes)
        if used is not None:
            kept = np.any(used > released + 1e-9, axis=1)
            return max(end, now), kept
    return None


def earliest_start_around(
    idle: FloatArray,
    releases: Releases,
    holds: Sequence[Hold],
    shapes: Sequence[Shape],
    now: datetime,
    *,
    limit: timedelta,
) -> tuple[datetime, BoolArray, FloatArray] | None:
    """As :func:`earliest_start`, around the ``holds`` of plans made before.

    The first moment (now, or when a release or a hold ends) at which ``shapes`` fit the
    capacity free then and at every hold's start until ``limit`` later (capacity only comes
    back between those), so the job delays none of them: conservative backfill's
    reservation, limited to the plans made before it.

    Returns:
        the start, the rows whose capacity idle now it needs, and what it uses per row;
        None when it never fits.
    """
    moments = sorted({now, *(e for e in releases.ends if e > now), *(h.end for h in holds)})
    for moment in moments:
        free, released = _free_at(idle, releases, holds, moment)
        for hold in holds:
            if moment < hold.start < moment + limit:
                free = np.minimum(free, _free_at(idle, releases, holds, hold.start)[0])
        used = fit(free, released, shapes)
        if used is not None:
            return moment, np.any(used > released + 1e-9, axis=1), used
    return None


def _free_at(
    idle: FloatArray, releases: Releases, holds: Sequence[Hold], moment: datetime
) -> tuple[FloatArray, FloatArray]:
    """The capacity free at ``moment`` (holds taken), and what releases gave back by then."""
    free, released = releases.replayed(idle, bisect_right(releases.ends, moment))
    for hold in holds:
        if hold.start <= moment < hold.end:
            free = free - hold.used
    return free, released


def ever_fits(idle: FloatArray, releases: Releases, shapes: Sequence[Shape], now: datetime) -> bool:
    """Whether :func:`earliest_start` finds a start, without finding when.

    One shape fits at some moment exactly when it fits once every release has come (its
    fit only grows); several shapes are replayed. Amounts are whole base units held as
    floats, so ``idle + total`` is the sum the replay makes release by release.
    """
    if len(shapes) != 1:
        return earliest_start(idle, releases, shapes, now) is not None
    return _holds(idle + releases.total, shapes[0])


def _fits(idle: FloatArray, releases: Releases, shape: Shape, count: int) -> bool:
    """Whether ``shape`` fits once the first ``count`` releases have come."""
    free = idle.copy()
    np.add.at(free, releases.rows[:count], releases.amounts[:count])
    return _holds(free, shape)


def _holds(free: FloatArray, shape: Shape) -> bool:
    """Whether the rows ``shape`` may use hold its pods on ``free`` capacity."""
    slots = np.where(shape.allowed, _slots(free, shape.request), 0.0)
    return bool(slots.sum() >= shape.count)


def _first_fit(idle: FloatArray, releases: Releases, shape: Shape) -> int:
    """How many releases have come when one ``shape`` first fits (0: never).

    One shape fits when the pods its rows hold add up to its count, which only grows as
    capacity is released: the first moment it fits is found by bisecting the release
    moments, not by trying each in turn. The count ends after that moment's last release.
    """
    cuts = releases.cuts
    if not cuts or not _fits(idle, releases, shape, cuts[-1]):
        return 0
    low, high = 0, len(cuts) - 1
    while low < high:
        middle = (low + high) // 2
        if _fits(idle, releases, shape, cuts[middle]):
            high = middle
        else:
            low = middle + 1
    return cuts[low]


def deadline_of(task: TaskInfo) -> timedelta | None:
    """The task's pod time limit (``activeDeadlineSeconds``), None without one."""
    seconds = task.pod.active_deadline_seconds
    return _limit(seconds) if seconds is not None else None


def ends_by(tasks: Sequence[TaskInfo], now: datetime) -> datetime | None:
    """When pods of ``tasks`` started now end by their deadlines; None if one has none."""
    limits = [deadline_of(task) for task in tasks]
    if not limits:
        return now
    if any(limit is None for limit in limits):
        return None
    return now + max(limit for limit in limits if limit is not None)


def releases(
    matrix: NodeMatrix,
    placed: Iterable[TaskInfo],
    started: Callable[[TaskInfo], datetime | None],
    now: datetime,
) -> Releases:
    """What the placed tasks give back, by their deadlines from when they ``started``."""
    ends: list[datetime] = []
    rows: list[int] = []
    requests: list[FloatArray] = []
    index = matrix.index
    for task in placed:
        seconds = task.pod.active_deadline_seconds
        row = index.get(task.node_name) if task.node_name is not None else None
        if seconds is None or row is None:
            continue
        ends.append(max((started(task) or now) + _limit(seconds), now))
        rows.append(row)
        requests.append(task.vector if task.vector is not None else matrix.vector(task.resreq))
    return Releases.build(ends, rows, requests, matrix.idle.shape)


@lru_cache(maxsize=4096)
def _limit(seconds: int) -> timedelta:
    """A time limit of ``seconds`` (made once per length: a session asks for many)."""
    return timedelta(seconds=seconds)


def shapes_of(matrix: NodeMatrix, tasks: Sequence[TaskInfo]) -> list[Shape]:
    """``tasks`` grouped by request and node selector, in order of first appearance."""
    out: dict[tuple[object, ...], tuple[FloatArray, BoolArray, int]] = {}
    for task in tasks:
        key = (
            tuple(sorted(task.resreq.as_dict().items())),
            tuple(sorted(task.pod.node_selector.items())),
        )
        if key in out:
            request, allowed, count = out[key]
            out[key] = (request, allowed, count + 1)
            continue
        allowed = ~matrix.unschedulable
        for label, value in sorted(task.pod.node_selector.items()):
            allowed = allowed & matrix.label_mask(label, value)
        vector = task.vector if task.vector is not None else matrix.vector(task.resreq)
        out[key] = (vector, allowed, 1)
    return [Shape(request, allowed, count) for request, allowed, count in out.values()]


def placed_tasks(nodes: Iterable[Iterable[TaskInfo]]) -> Iterator[TaskInfo]:
    """The tasks of the nodes that hold capacity (placed, not finished)."""
    return (task for tasks in nodes for task in tasks if task.status in _PLACED)


def allowed_rows(plans: Sequence[Plan], job: JobKey, end: datetime | None, size: int) -> BoolArray:
    """Rows a pod of ``job``, ending by ``end`` (None: never), may take under ``plans``."""
    allowed = np.ones(size, dtype=np.bool_)
    for plan in plans:
        if plan.job == job or (end is not None and end <= plan.start):
            continue
        allowed &= ~plan.kept
    return allowed
