"""Choosing a node for a task over thousands of nodes: vectorised, cached, refreshed by row.

Port of the node choice in volcano@v1.12.0 ``pkg/scheduler/actions/allocate/allocate.go``
(``predicate``: ``InitResreq.LessEqual(node.FutureIdle())`` then ``ssn.PredicateFn``;
``prioritizeNodes``: nodes whose idle fits first, else nodes whose future idle fits; the
highest score wins) and ``pkg/scheduler/util/predicate_helper.go`` (``PredicateNodes``).

For each *signature* (what filters and scores read from a task: its request, node selector,
tolerations, and its job when a filter depends on it) the cache keeps, per node, whether the
filters pass, whether the request fits the idle and the future-idle resources, and the score.
When the session changes a node (allocate, pipeline, discard), the node's row is recomputed the
next time the signature is used, so a cycle costs about one O(nodes) pass per task. Tasks share
a signature's answers only while every enabled filter declares them cacheable
(``NodeFilter.cacheable``, off by default) and no plugin scores one node at a time; otherwise
the signature names the task, and answers are kept per task.

Deliberate deviations:
- Ties between equal scores go to the node whose name sorts first (docs/design.md#determinism), not
  at random.
- Fit errors count nodes per first failing reason (resource fit first, then the predicate
  plugins in tier order), which is what Volcano's message shows.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from vcbus.core.scheduling.fit_errors import FitErrors, insufficient
from vcbus.core.scheduling.framework.extension_points import NodeFilter, NodeScorer
from vcbus.core.scheduling.framework.session_plugins import SessionPlugins
from vcbus.core.scheduling.model import NodeInfo, TaskInfo
from vcbus.core.scheduling.node_matrix import BoolArray, FloatArray, IntArray, NodeMatrix

_FULL_REFRESH_FRACTION = 4
_ROW_BY_ROW = 8
_MAX_ENTRIES = 256
"""Signatures kept at once (each holds three arrays over the nodes); least recently used
ones are dropped and recomputed if needed again."""
_MIN_RESOURCE = 0.1


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a task can go: the chosen node (or none, with why), and whether it must wait.

    ``pipelined`` is true when only the node's future idle resources fit (Volcano pipelines
    such a task onto resources being released).
    """

    node: NodeInfo | None
    pipelined: bool = False
    fit_errors: FitErrors | None = None


class _Entry:
    __slots__ = (
        "columns",
        "columns_list",
        "on_future",
        "on_idle",
        "request",
        "request_list",
        "seen",
        "static",
        "task",
    )

    def __init__(self, task: TaskInfo, request: FloatArray, columns: IntArray, size: int) -> None:
        self.task = task
        self.request = request
        self.columns = columns
        self.request_list: list[float] = request.tolist()
        self.columns_list: list[int] = columns.tolist()
        self.static: BoolArray = np.ones(size, dtype=np.bool_)
        """Whether the node passes the filters that do not change within a session."""
        self.on_idle: FloatArray = np.full(size, -np.inf, dtype=np.float64)
        """Score where the node passes and the idle resources fit, else -inf."""
        self.on_future: FloatArray = np.full(size, -np.inf, dtype=np.float64)
        """Score where the node passes and the future idle resources fit, else -inf."""
        self.seen = 0


class PlacementCache:
    """Per-session cache of filter results and scores, by task signature.

    It reads the session's plugin side only (``SessionPlugins``: filters, scorers, node
    accounting and nodes in row order), which ``Session`` inherits.
    """

    def __init__(self, ssn: SessionPlugins) -> None:
        self._ssn = ssn
        self._matrix: NodeMatrix = ssn.matrix
        self._filters: list[NodeFilter] = ssn.node_filters()
        self._static = [f for f in self._filters if not f.dynamic]
        self._dynamic = [f for f in self._filters if f.dynamic]
        self._scorers: list[NodeScorer] = ssn.node_scorers()
        self._rows_by_row = all(f.row_fn is not None for f in self._dynamic) and all(
            s.row_fn is not None for s in self._scorers
        )
        self._task_keys = [f.task_key for f in self._filters if f.task_key is not None]
        self._per_task = any(not f.cacheable for f in self._filters) or ssn.has_scalar_scores
        self._entries: OrderedDict[tuple[object, ...], _Entry] = OrderedDict()
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
            if self._task_keys:
                sig = (*sig, *(key(task) for key in self._task_keys))
            if self._per_task:
                sig = (*sig, task.uid)
            task.signature = sig
        return task.signature

    def place(self, task: TaskInfo, prefer: NodeInfo | None = None) -> Placement:
        """Return the best node for ``task`` now (``prefer`` when it fits), or why none."""
        entry = self._entry(task)
        if prefer is not None and entry.on_idle[prefer.row] > -np.inf:
            return Placement(node=prefer)
        row = int(np.argmax(entry.on_idle))
        if entry.on_idle[row] > -np.inf:
            return Placement(node=self._ssn.node_list[row])
        row = int(np.argmax(entry.on_future))
        if entry.on_future[row] > -np.inf:
            return Placement(node=self._ssn.node_list[row], pipelined=True)
        return Placement(node=None, fit_errors=self._fit_errors(entry))

    def feasible_nodes(self, task: TaskInfo) -> list[NodeInfo]:
        """Return the nodes passing resource fit and predicates, by name."""
        entry = self._entry(task)
        rows = np.flatnonzero(entry.on_future > -np.inf)
        return [self._ssn.node_list[int(r)] for r in rows]

    # Internals ---------------------------------------------------------------------------
    def _entry(self, task: TaskInfo) -> _Entry:
        sig = self.signature(task)
        entry = self._entries.get(sig)
        changes = self._matrix.changes
        if entry is not None:
            self._entries.move_to_end(sig)
        else:
            request = task.vector if task.vector is not None else self._matrix.vector(task.resreq)
            columns = self._matrix.compared_columns(task.resreq)
            entry = _Entry(task, request, columns, len(self._matrix))
            for flt in self._static:
                entry.static &= flt.fn(task, self._matrix, self._all_rows)
            self._compute(entry, self._all_rows)
            entry.seen = len(changes)
            self._entries[sig] = entry
            if len(self._entries) > _MAX_ENTRIES:
                self._entries.popitem(last=False)
            return entry
        if entry.seen < len(changes):
            pending = changes[entry.seen :]
            if len(pending) * _FULL_REFRESH_FRACTION >= len(self._matrix):
                self._compute(entry, self._all_rows)
            elif self._rows_by_row and len(pending) <= _ROW_BY_ROW:
                for row in sorted(set(pending)):
                    self._compute_row(entry, row)
            else:
                self._compute(entry, np.unique(np.array(pending, dtype=np.intp)))
            entry.seen = len(changes)
        return entry

    def _compute(self, entry: _Entry, rows: IntArray) -> None:
        matrix = self._matrix
        task = entry.task
        passes = entry.static[rows]
        for flt in self._dynamic:
            passes &= flt.fn(task, matrix, rows)
        idle = matrix.idle[rows]
        fit_idle = matrix.fits(entry.request, idle, entry.columns)
        fit_future = matrix.fits(
            entry.request, idle + matrix.releasing[rows] - matrix.pipelined[rows], entry.columns
        )
        score = np.zeros(len(rows), dtype=np.float64)
        for scorer in self._scorers:
            score += scorer.fn(task, matrix, rows)
        feasible = passes & fit_future
        entry.on_future[rows] = np.where(feasible, score, -np.inf)
        entry.on_idle[rows] = np.where(feasible & fit_idle, score, -np.inf)

    def _compute_row(self, entry: _Entry, row: int) -> None:
        """``_compute`` for one row in plain Python (same results, less numpy overhead)."""
        matrix = self._matrix
        task = entry.task
        passes = bool(entry.static[row])
        if passes:
            for flt in self._dynamic:
                if flt.row_fn is not None and not flt.row_fn(task, matrix, row):
                    passes = False
                    break
        idle = matrix.idle[row].tolist()
        releasing = matrix.releasing[row].tolist()
        pipelined = matrix.pipelined[row].tolist()
        request = entry.request_list
        fit_idle = fit_future = True
        for column in entry.columns_list:
            want = request[column]
            if want - idle[column] >= _MIN_RESOURCE:
                fit_idle = False
            if want - (idle[column] + releasing[column] - pipelined[column]) >= _MIN_RESOURCE:
                fit_future = False
        score = 0.0
        for scorer in self._scorers:
            if scorer.row_fn is not None:
                score += scorer.row_fn(task, matrix, row)
        feasible = passes and fit_future
        entry.on_future[row] = score if feasible else -np.inf
        entry.on_idle[row] = score if feasible and fit_idle else -np.inf

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
