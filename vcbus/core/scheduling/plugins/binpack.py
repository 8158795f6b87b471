"""Binpack: prefer the nodes a task fills most, per weighted resource.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/binpack/binpack.go`` (``calculateWeight``,
``BinPackingScore``, ``ResourceBinPackingScore``): for each resource the task requests that
has a weight, ``(used + request) * weight / allocatable`` (0 when it does not fit or the node
has none), summed, divided by the weights' sum, times ``MaxNodeScore`` (100) and
``binpack.weight``.

Deliberate deviations:
- Vectorised over node rows.
"""

from __future__ import annotations

import numpy as np

from vcbus.core.scheduling.framework.arguments import get_int, get_str
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.model import TaskInfo
from vcbus.core.scheduling.node_matrix import FloatArray, IntArray, NodeMatrix
from vcbus.core.scheduling.resource import CPU, MEMORY

NAME = "binpack"
MAX_NODE_SCORE = 100


def weights(arguments: Arguments) -> tuple[int, dict[str, int]]:
    """Return (``binpack.weight``, resource → weight) as Volcano's ``calculateWeight``."""
    weight = get_int(arguments, "binpack.weight", 1)
    cpu = get_int(arguments, "binpack.cpu", 1)
    memory = get_int(arguments, "binpack.memory", 1)
    resources: dict[str, int] = {}
    for raw in get_str(arguments, "binpack.resources", "").split(","):
        name = raw.strip()
        if not name:
            continue
        value = get_int(arguments, f"binpack.resources.{name}", 1)
        resources[name] = value if value >= 0 else 1
    resources[CPU] = cpu if cpu >= 0 else 1
    resources[MEMORY] = memory if memory >= 0 else 1
    return weight, resources


class BinpackPlugin:
    """The ``binpack`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.weight, self.resources = weights(arguments)

    def on_session_open(self, ssn: Session) -> None:
        """Register the score (none when ``binpack.weight`` is 0)."""
        if self.weight == 0:
            return

        plans: dict[int, tuple[IntArray, FloatArray, FloatArray, float]] = {}

        def plan(
            task: TaskInfo, matrix: NodeMatrix
        ) -> tuple[IntArray, FloatArray, FloatArray, float]:
            """Columns, requests and weights of the task's weighted resources, and Σ weights."""
            found = plans.get(id(task.resreq))
            if found is None:
                columns, requests, weights_ = [], [], []
                weight_sum = 0
                for name in task.resreq.requested_names():
                    resource_weight = self.resources.get(name)
                    if resource_weight is None:
                        continue
                    weight_sum += resource_weight
                    column = matrix.dimension_index.get(name)
                    if column is None or resource_weight == 0:
                        continue
                    columns.append(column)
                    requests.append(task.resreq.amount(name))
                    weights_.append(float(resource_weight))
                found = (
                    np.array(columns, dtype=np.intp),
                    np.array(requests, dtype=np.float64),
                    np.array(weights_, dtype=np.float64),
                    float(weight_sum),
                )
                plans[id(task.resreq)] = found
            return found

        def score(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> FloatArray:
            columns, requests, weights_, weight_sum = plan(task, matrix)
            if len(columns) == 0:
                return np.zeros(len(rows), dtype=np.float64)
            allocatable = matrix.allocatable[rows][:, columns]
            used = matrix.used[rows][:, columns] + requests
            fits = (allocatable > 0) & (used <= allocatable)
            safe = np.where(allocatable > 0, allocatable, 1.0)
            total: FloatArray = np.where(fits, used * weights_ / safe, 0.0).sum(axis=1)
            if weight_sum > 0:
                total /= weight_sum
            return total * (MAX_NODE_SCORE * self.weight)

        def score_row(task: TaskInfo, matrix: NodeMatrix, row: int) -> float:
            columns, requests, weights_, weight_sum = plan(task, matrix)
            total = 0.0
            allocatable = matrix.allocatable[row].tolist()
            used = matrix.used[row].tolist()
            for column, request, resource_weight in zip(
                columns.tolist(), requests.tolist(), weights_.tolist(), strict=True
            ):
                alloc = allocatable[column]
                final = used[column] + request
                if alloc > 0 and final <= alloc:
                    total += final * resource_weight / alloc
            if weight_sum > 0:
                total /= weight_sum
            return total * (MAX_NODE_SCORE * self.weight)

        ssn.add_node_score_fn(NAME, score, score_row)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def new(arguments: Arguments) -> BinpackPlugin:
    """Build the plugin."""
    return BinpackPlugin(arguments)
