"""Choosing a node for a task over thousands of nodes: vectorised, cached, refreshed by row.

Port of the node choice in volcano@v1.12.0 ``pkg/scheduler/actions/allocate/allocate.go``
(``predicate``: ``InitResreq.LessEqual(node.FutureIdle())`` then ``ssn.PredicateFn``;
``prioritizeNodes``: nodes whose idle fits first, else nodes whose future idle fits; the
highest score wins) and ``pkg/scheduler/util/predicate_helper.go`` (``PredicateNodes``).

For each *signature* (what filters and scores read from a task: its request, node selector,
tolerations, and its job when a filter depends on it) the cache keeps, per node, whether the
filters pass, whether the request fits the idle and the future-idle resources, and the score.
When the session changes a node (allocate, pipeline, discard), the node's row is recomputed the
next time the signature is used, so a cycle costs about one O(nodes) pass per task.

Deliberate deviations:
- Ties between equal scores go to the node whose name sorts first (SPEC A7), not at random.
- Fit errors count nodes per first failing reason (resource fit first, then the predicate
  plugins in tier order), which is what Volcano's message shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from shared.scheduling.framework.extension_points import NodeFilter, NodeScoreFn
from shared.scheduling.framework.status import FitErrors, insufficient
from shared.scheduling.model import NodeInfo, TaskInfo
from shared.scheduling.node_matrix import BoolArray, FloatArray, IntArray, NodeMatrix

if TYPE_CHECKING:
    from shared.scheduling.framework.session import Session

_FULL_REFRESH_FRACTION = 4


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a task can go: the chosen node (or none, with why), and whether it must wait.

    ``pipelined`` is true when only the node's future idle resources fit (Volcano pipelines
    such a task onto resources being released).
    """

    node: NodeInfo | None
    pipelined: bool = False
    fit_errors: FitErrors | None = None
    feasible: int = 0
    """How many nodes passed the predicates."""


class _Entry:
    __slots__ = ("columns", "fit_future", "fit_idle", "passes", "request", "score", "seen", "task")

    def __init__(self, task: TaskInfo, request: FloatArray, columns: IntArray, size: int) -> None:
        self.task = task
        self.request = request
        self.columns = columns
        self.passes: BoolArray = np.zeros(size, dtype=np.bool_)
        self.fit_idle: BoolArray = np.zeros(size, dtype=np.bool_)
        self.fit_future: BoolArray = np.zeros(size, dtype=np.bool_)
        self.score: FloatArray = np.zeros(size, dtype=np.float64)
        self.seen = 0


class PlacementCache:
    """Per-session cache of filter results and scores, by task signature."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._matrix: NodeMatrix = ssn.matrix
        self._filters: list[NodeFilter] = ssn.node_filters()
        self._scorers: list[NodeScoreFn] = ssn.node_scorers()
        self._per_job = any(f.per_job for f in self._filters)
        self._per_task = any(f.scalar is not None for f in self._filters) or ssn.has_scalar_scores
        self._entries: dict[tuple[object, ...], _Entry] = {}
        self._all_rows: IntArray = np.arange(len(self._matrix), dtype=np.intp)

    def signature(self, task: TaskInfo) -> tuple[object, ...]:
        """Return what filters and scores may read from ``task``."""
        if task.signature is None:
            pod = task.pod
            sig: tuple[object, ...] = (
                tuple(sorted(task.resreq.as_dict().items())),
                tuple(sorted(pod.node_selector.items())),
                pod.tolerations,
            )
            if self._per_job:
                sig = (*sig, task.job)
            if self._per_task:
                sig = (*sig, task.uid)
            task.signature = sig
        return task.signature

    def place(self, task: TaskInfo) -> Placement:
        """Return the best node for ``task`` now, or why there is none."""
        entry = self._entry(task)
        feasible = entry.passes & entry.fit_future
        count = int(np.count_nonzero(feasible))
        if count == 0:
            return Placement(node=None, fit_errors=self._fit_errors(entry), feasible=0)
        idle = feasible & entry.fit_idle
        pipelined = not bool(idle.any())
        candidates = feasible if pipelined else idle
        row = int(np.argmax(np.where(candidates, entry.score, -np.inf)))
        return Placement(node=self._ssn.node_list[row], pipelined=pipelined, feasible=count)

    def feasible_nodes(self, task: TaskInfo) -> list[NodeInfo]:
        """Return the nodes passing resource fit and predicates, by name."""
        entry = self._entry(task)
        rows = np.flatnonzero(entry.passes & entry.fit_future)
        return [self._ssn.node_list[int(r)] for r in rows]

    # Internals ---------------------------------------------------------------------------
    def _entry(self, task: TaskInfo) -> _Entry:
        sig = self.signature(task)
        entry = self._entries.get(sig)
        changes = self._matrix.changes
        if entry is None:
            request = task.vector if task.vector is not None else self._matrix.vector(task.resreq)
            columns = self._matrix.compared_columns(task.resreq)
            entry = _Entry(task, request, columns, len(self._matrix))
            self._compute(entry, self._all_rows)
            entry.seen = len(changes)
            self._entries[sig] = entry
            return entry
        if entry.seen < len(changes):
            pending = changes[entry.seen :]
            if len(pending) * _FULL_REFRESH_FRACTION >= len(self._matrix):
                rows = self._all_rows
            else:
                rows = np.unique(np.array(pending, dtype=np.intp))
            self._compute(entry, rows)
            entry.seen = len(changes)
        return entry

    def _compute(self, entry: _Entry, rows: IntArray) -> None:
        matrix = self._matrix
        task = entry.task
        passes = np.ones(len(rows), dtype=np.bool_)
        for flt in self._filters:
            passes &= flt.fn(task, matrix, rows)
        entry.passes[rows] = passes
        entry.fit_idle[rows] = matrix.fits(entry.request, matrix.idle[rows], entry.columns)
        entry.fit_future[rows] = matrix.fits(entry.request, matrix.future_idle(rows), entry.columns)
        if self._scorers:
            score = np.zeros(len(rows), dtype=np.float64)
            for scorer in self._scorers:
                score += scorer(task, matrix, rows)
            entry.score[rows] = score

    def _fit_errors(self, entry: _Entry) -> FitErrors:
        matrix = self._matrix
        errors = FitErrors(total=len(matrix))
        rows = self._all_rows
        available = matrix.future_idle(rows)
        short = entry.request[entry.columns] - available[:, entry.columns] >= 0.1
        failed = short.any(axis=1)
        first = np.argmax(short, axis=1)
        for position, column in enumerate(entry.columns):
            n = int(np.count_nonzero(failed & (first == position)))
            errors.add(insufficient(matrix.dimensions[int(column)]), n)
        remaining = np.flatnonzero(~failed)
        for flt in self._filters:
            if len(remaining) == 0:
                break
            ok = flt.fn(entry.task, matrix, remaining)
            rejected = remaining[~ok]
            if flt.scalar is not None:
                for row in rejected:
                    status = flt.scalar(entry.task, self._ssn.node_list[int(row)])
                    errors.add(status.reason if status is not None else flt.reason)
            else:
                errors.add(flt.reason, len(rejected))
            remaining = remaining[ok]
        return errors
