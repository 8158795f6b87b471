"""Node order: prefer nodes by how much is left (least requested) and how balanced they are.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/nodeorder/nodeorder.go`` (weights
``leastrequested.weight`` 1, ``mostrequested.weight`` 0, ``balancedresource.weight`` 1) over
the Kubernetes scorers ``noderesources.LeastAllocated``, ``MostAllocated`` and
``BalancedAllocation`` (cpu and memory, weight 1 each, ``MaxNodeScore`` 100, integer scores).

Deliberate deviations:
- Scores are vectorised over node rows.
- Requested amounts are the tasks' real requests; Kubernetes' "non-zero" defaults for pods
  without requests (100m cpu, 200Mi memory) are not added.
- Node affinity, pod affinity, taint toleration and image locality scores are not modelled.
"""

from __future__ import annotations

import numpy as np

from shared.scheduling.framework.conf import Arguments
from shared.scheduling.framework.plugin import get_int
from shared.scheduling.framework.session import Session
from shared.scheduling.model import TaskInfo
from shared.scheduling.node_matrix import FloatArray, IntArray, NodeMatrix

NAME = "nodeorder"
MAX_NODE_SCORE = 100

_COLUMNS = np.array([0, 1], dtype=np.intp)  # cpu, memory


def _requested(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> tuple[FloatArray, FloatArray]:
    request = task.vector if task.vector is not None else matrix.vector(task.resreq)
    requested = matrix.used[np.ix_(rows, _COLUMNS)] + request[_COLUMNS]
    allocatable = matrix.allocatable[np.ix_(rows, _COLUMNS)]
    return requested, allocatable


def least_requested(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> FloatArray:
    """``LeastAllocated``: mean over cpu/memory of ``(alloc - req) * 100 // alloc``."""
    requested, allocatable = _requested(task, matrix, rows)
    valid = (allocatable > 0) & (requested <= allocatable)
    safe = np.where(allocatable > 0, allocatable, 1.0)
    per = np.where(valid, np.floor((allocatable - requested) * MAX_NODE_SCORE / safe), 0.0)
    score: FloatArray = np.floor(per.sum(axis=1) / 2)
    return score


def most_requested(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> FloatArray:
    """``MostAllocated``: mean over cpu/memory of ``req * 100 // alloc``."""
    requested, allocatable = _requested(task, matrix, rows)
    valid = (allocatable > 0) & (requested <= allocatable)
    safe = np.where(allocatable > 0, allocatable, 1.0)
    per = np.where(valid, np.floor(requested * MAX_NODE_SCORE / safe), 0.0)
    score: FloatArray = np.floor(per.sum(axis=1) / 2)
    return score


def balanced_resource(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> FloatArray:
    """``BalancedAllocation``: ``(1 - std(cpu fraction, memory fraction)) * 100``."""
    requested, allocatable = _requested(task, matrix, rows)
    present = allocatable > 0
    safe = np.where(present, allocatable, 1.0)
    fraction = np.minimum(requested / safe, 1.0)
    both = present.all(axis=1)
    std = np.where(both, np.abs(fraction[:, 0] - fraction[:, 1]) / 2, 0.0)
    score: FloatArray = np.floor((1 - std) * MAX_NODE_SCORE)
    return score


class NodeOrderPlugin:
    """The ``nodeorder`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.least_weight = get_int(arguments, "leastrequested.weight", 1)
        self.most_weight = get_int(arguments, "mostrequested.weight", 0)
        self.balanced_weight = get_int(arguments, "balancedresource.weight", 1)

    def on_session_open(self, ssn: Session) -> None:
        """Register the weighted score."""

        def score(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> FloatArray:
            total = np.zeros(len(rows), dtype=np.float64)
            if self.least_weight:
                total += self.least_weight * least_requested(task, matrix, rows)
            if self.most_weight:
                total += self.most_weight * most_requested(task, matrix, rows)
            if self.balanced_weight:
                total += self.balanced_weight * balanced_resource(task, matrix, rows)
            return total

        ssn.add_node_score_fn(NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def new(arguments: Arguments) -> NodeOrderPlugin:
    """Build the plugin."""
    return NodeOrderPlugin(arguments)
