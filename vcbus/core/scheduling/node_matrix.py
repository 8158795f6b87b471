"""The nodes of a session as numpy arrays, so filters and scores run over all nodes at once.

Volcano keeps one ``NodeInfo`` per node with ``Resource`` fields (volcano@v1.12.0
``pkg/scheduler/api/node_info.go``: ``Allocatable``, ``Idle``, ``Used``, ``Releasing``,
``Pipelined``, ``AddTask``/``RemoveTask``). vcbus keeps the same accounting in rows of a matrix
(one row per node, nodes sorted by name, one column per resource dimension) and writes every
row it changes to a change log, so cached per-task results can be refreshed row by row.

Deliberate deviations:
- A node without a ``pods`` allocatable has no pod limit (Volcano would treat it as zero).
- Node order is by name; that is also the tie-break of equal scores (docs/design.md#determinism).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from vcbus.contracts.objects.node import Node, Taint
from vcbus.core.scheduling.resource import MIN_RESOURCE, PODS, Resource, dimension_order

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]


class NodeMatrix:
    """Per-node accounting in arrays: rows are nodes (sorted by name), columns dimensions."""

    def __init__(self, nodes: Sequence[Node], extra_dimensions: Iterable[str] = ()) -> None:
        ordered = sorted(nodes, key=lambda n: n.name)
        self.nodes: tuple[Node, ...] = tuple(ordered)
        self.names: tuple[str, ...] = tuple(n.name for n in ordered)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        dims: set[str] = set(extra_dimensions)
        for node in ordered:
            dims.update(node.allocatable)
        self.dimensions: tuple[str, ...] = dimension_order(dims)
        self.dimension_index: dict[str, int] = {d: i for i, d in enumerate(self.dimensions)}
        count, width = len(ordered), len(self.dimensions)
        self.allocatable: FloatArray = np.zeros((count, width), dtype=np.float64)
        for row, node in enumerate(ordered):
            for name, amount in node.allocatable.items():
                if name in self.dimension_index:
                    self.allocatable[row, self.dimension_index[name]] = float(amount)
        self.max_pods: FloatArray = np.array(
            [float(n.allocatable[PODS]) if PODS in n.allocatable else np.inf for n in ordered],
            dtype=np.float64,
        )
        self.unschedulable: BoolArray = np.array([n.unschedulable for n in ordered], dtype=np.bool_)
        self._label_masks: dict[tuple[str, str], BoolArray] = {}
        """Label masks made so far, shared by this matrix's copies (its nodes')."""
        self._taint_groups: list[dict[tuple[Taint, ...], IntArray]] = []
        """The taint groups once made, shared by this matrix's copies (its nodes')."""
        self._empty()

    def _empty(self) -> None:
        """Start the accounting arrays with no task on any node."""
        count, width = self.allocatable.shape
        self.used: FloatArray = np.zeros((count, width), dtype=np.float64)
        self.idle: FloatArray = self.allocatable.copy()
        self.releasing: FloatArray = np.zeros((count, width), dtype=np.float64)
        self.pipelined: FloatArray = np.zeros((count, width), dtype=np.float64)
        self.pod_count: npt.NDArray[np.int64] = np.zeros(count, dtype=np.int64)
        self.changes: list[int] = []
        """Rows changed so far, in order (a row appears once per change)."""

    def fresh(self) -> NodeMatrix:
        """A matrix of the same nodes and dimensions with no task accounted.

        The nodes' attributes (allocatable, labels, taints) are shared, not made again:
        they are read only, so the next session of a service whose nodes did not change
        starts from them.
        """
        matrix = copy.copy(self)
        matrix._empty()
        return matrix

    def copy(self) -> NodeMatrix:
        """A matrix of the same nodes and dimensions with the same accounting, apart."""
        matrix = copy.copy(self)
        matrix.used = self.used.copy()
        matrix.idle = self.idle.copy()
        matrix.releasing = self.releasing.copy()
        matrix.pipelined = self.pipelined.copy()
        matrix.pod_count = self.pod_count.copy()
        matrix.changes = []
        return matrix

    def __len__(self) -> int:
        return len(self.names)

    # Vectors -----------------------------------------------------------------------------
    def vector(self, resource: Mapping[str, float]) -> FloatArray:
        """Return a resource as a row vector over this matrix's dimensions."""
        out = np.zeros(len(self.dimensions), dtype=np.float64)
        for name, amount in resource.items():
            column = self.dimension_index.get(name)
            if column is not None:
                out[column] = float(amount)
        return out

    def compared_columns(self, resource: Resource) -> IntArray:
        """Return the columns Volcano's ``LessEqual`` compares: cpu, memory, requested scalars."""
        columns = [0, 1]
        for name in resource.requested_names():
            column = self.dimension_index.get(name)
            if column is not None and column > 1:
                columns.append(column)
        return np.array(sorted(set(columns)), dtype=np.intp)

    def resource(self, array: FloatArray, row: int) -> Resource:
        """Return one row of an accounting array as a ``Resource``."""
        return Resource(dict(zip(self.dimensions, (float(v) for v in array[row]), strict=True)))

    # Accounting (volcano node_info.go AddTask / RemoveTask) --------------------------------
    def add(self, row: int, request: FloatArray, *, releasing: bool, pipelined: bool) -> None:
        """Account a task on a node (``NodeInfo.AddTask``)."""
        if pipelined:
            self.pipelined[row] += request
        else:
            if releasing:
                self.releasing[row] += request
            self.idle[row] -= request
            self.used[row] += request
        self.pod_count[row] += 1
        self.changes.append(row)

    def add_many(
        self,
        rows: Sequence[int],
        requests: Sequence[FloatArray],
        releasing: Sequence[bool],
        pipelined: Sequence[bool],
    ) -> None:
        """Account many tasks at once: the same sums as :meth:`add` for each, in one pass.

        Amounts are whole base units (milli-cpu, bytes) held as floats, so the sums do not
        depend on the order they are made in.
        """
        self._account_many(rows, requests, releasing, pipelined, sign=1)

    def remove_many(
        self,
        rows: Sequence[int],
        requests: Sequence[FloatArray],
        releasing: Sequence[bool],
        pipelined: Sequence[bool],
    ) -> None:
        """Take many tasks off at once: :meth:`add_many` undone (whole units: exact)."""
        self._account_many(rows, requests, releasing, pipelined, sign=-1)

    def _account_many(
        self,
        rows: Sequence[int],
        requests: Sequence[FloatArray],
        releasing: Sequence[bool],
        pipelined: Sequence[bool],
        *,
        sign: int,
    ) -> None:
        if not rows:
            return
        index = np.asarray(rows, dtype=np.intp)
        amounts = np.asarray(requests, dtype=np.float64) * sign
        piped = np.asarray(pipelined, dtype=np.bool_)
        placed = ~piped
        freeing = placed & np.asarray(releasing, dtype=np.bool_)
        np.add.at(self.pipelined, index[piped], amounts[piped])
        np.add.at(self.releasing, index[freeing], amounts[freeing])
        np.subtract.at(self.idle, index[placed], amounts[placed])
        np.add.at(self.used, index[placed], amounts[placed])
        np.add.at(self.pod_count, index, sign)
        self.changes.extend(rows)

    def remove(self, row: int, request: FloatArray, *, releasing: bool, pipelined: bool) -> None:
        """Remove a task's accounting from a node (``NodeInfo.RemoveTask``)."""
        if pipelined:
            self.pipelined[row] -= request
        else:
            if releasing:
                self.releasing[row] -= request
            self.idle[row] += request
            self.used[row] -= request
        self.pod_count[row] -= 1
        self.changes.append(row)

    def future_idle(self, rows: IntArray | slice) -> FloatArray:
        """Return ``idle + releasing - pipelined`` for some rows (``NodeInfo.FutureIdle``)."""
        return self.idle[rows] + self.releasing[rows] - self.pipelined[rows]

    @staticmethod
    def fits(request: FloatArray, available: FloatArray, columns: IntArray) -> BoolArray:
        """Return, per row, whether ``request <= available`` on ``columns`` within 0.1."""
        fits: BoolArray = np.all(request[columns] - available[:, columns] < MIN_RESOURCE, axis=1)
        return fits

    # Static attributes -------------------------------------------------------------------
    def label_mask(self, key: str, value: str) -> BoolArray:
        """Return, per node, whether its label ``key`` equals ``value`` (cached)."""
        mask = self._label_masks.get((key, value))
        if mask is None:
            mask = np.array([n.labels.get(key) == value for n in self.nodes], dtype=np.bool_)
            self._label_masks[(key, value)] = mask
        return mask

    def taint_groups(self) -> dict[tuple[Taint, ...], IntArray]:
        """Return the rows of the nodes grouped by their (blocking) taints."""
        if not self._taint_groups:
            groups: dict[tuple[Taint, ...], list[int]] = {}
            for row, node in enumerate(self.nodes):
                blocking = tuple(t for t in node.taints if t.effect in ("NoSchedule", "NoExecute"))
                groups.setdefault(blocking, []).append(row)
            self._taint_groups.append({k: np.array(v, dtype=np.intp) for k, v in groups.items()})
        return self._taint_groups[0]
