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

import math

import numpy as np

from vcbus.core.scheduling.framework.arguments import get_int
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.model import TaskInfo
from vcbus.core.scheduling.node_matrix import FloatArray, IntArray, NodeMatrix
from vcbus.core.scheduling.resource import CPU, MEMORY

NAME = "nodeorder"
MAX_NODE_SCORE = 100


def _requested(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> tuple[FloatArray, FloatArray]:
    request = task.vector if task.vector is not None else matrix.vector(task.resreq)
    requested = matrix.used[rows, :2] + request[:2]
    allocatable = matrix.allocatable[rows, :2]
    return requested, allocatable


def _least(requested: FloatArray, allocatable: FloatArray) -> FloatArray:
    """``LeastAllocated``: mean over cpu/memory of ``(alloc - req) * 100 // alloc``."""
    valid = (allocatable > 0) & (requested <= allocatable)
    safe = np.where(allocatable > 0, allocatable, 1.0)
    per = np.where(valid, np.floor((allocatable - requested) * MAX_NODE_SCORE / safe), 0.0)
    score: FloatArray = np.floor(per.sum(axis=1) / 2)
    return score


def _most(requested: FloatArray, allocatable: FloatArray) -> FloatArray:
    """``MostAllocated``: mean over cpu/memory of ``req * 100 // alloc``."""
    valid = (allocatable > 0) & (requested <= allocatable)
    safe = np.where(allocatable > 0, allocatable, 1.0)
    per = np.where(valid, np.floor(requested * MAX_NODE_SCORE / safe), 0.0)
    score: FloatArray = np.floor(per.sum(axis=1) / 2)
    return score


def _balanced(requested: FloatArray, allocatable: FloatArray) -> FloatArray:
    """``BalancedAllocation``: ``(1 - std(cpu fraction, memory fraction)) * 100``."""
    present = allocatable > 0
    safe = np.where(present, allocatable, 1.0)
    fraction = np.minimum(requested / safe, 1.0)
    both = present.all(axis=1)
    std = np.where(both, np.abs(fraction[:, 0] - fraction[:, 1]) / 2, 0.0)
    score: FloatArray = np.floor((1 - std) * MAX_NODE_SCORE)
    return score


def _least_row(requested: tuple[float, float], allocatable: tuple[float, float]) -> float:
    total = 0.0
    for want, alloc in zip(requested, allocatable, strict=True):
        if alloc > 0 and want <= alloc:
            total += math.floor((alloc - want) * MAX_NODE_SCORE / alloc)
    return float(math.floor(total / 2))


def _most_row(requested: tuple[float, float], allocatable: tuple[float, float]) -> float:
    total = 0.0
    for want, alloc in zip(requested, allocatable, strict=True):
        if alloc > 0 and want <= alloc:
            total += math.floor(want * MAX_NODE_SCORE / alloc)
    return float(math.floor(total / 2))


def _balanced_row(requested: tuple[float, float], allocatable: tuple[float, float]) -> float:
    if allocatable[0] > 0 and allocatable[1] > 0:
        cpu = min(requested[0] / allocatable[0], 1.0)
        memory = min(requested[1] / allocatable[1], 1.0)
        std = abs(cpu - memory) / 2
    else:
        std = 0.0
    return float(math.floor((1 - std) * MAX_NODE_SCORE))


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
            requested, allocatable = _requested(task, matrix, rows)
            total = np.zeros(len(rows), dtype=np.float64)
            if self.least_weight:
                total += self.least_weight * _least(requested, allocatable)
            if self.most_weight:
                total += self.most_weight * _most(requested, allocatable)
            if self.balanced_weight:
                total += self.balanced_weight * _balanced(requested, allocatable)
            return total

        def score_row(task: TaskInfo, matrix: NodeMatrix, row: int) -> float:
            request = task.resreq
            used = matrix.used[row].tolist()
            allocatable = matrix.allocatable[row].tolist()
            requested = (used[0] + request.amount(CPU), used[1] + request.amount(MEMORY))
            alloc = (allocatable[0], allocatable[1])
            total = 0.0
            if self.least_weight:
                total += self.least_weight * _least_row(requested, alloc)
            if self.most_weight:
                total += self.most_weight * _most_row(requested, alloc)
            if self.balanced_weight:
                total += self.balanced_weight * _balanced_row(requested, alloc)
            return total

        ssn.add_node_score_fn(NAME, score, score_row)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def new(arguments: Arguments) -> NodeOrderPlugin:
    """Build the plugin."""
    return NodeOrderPlugin(arguments)
