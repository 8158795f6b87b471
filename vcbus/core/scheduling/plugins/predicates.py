"""Predicates: which nodes may take a task, besides resource fit.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/predicates/predicates.go`` (pod-count check
``NodePodNumberExceeded``, then the Kubernetes filters ``NodeUnschedulable``,
``NodeAffinity`` (node selector) and ``TaintToleration``), plus docs/design.md#reservation: a node
locked for the reservation's target job takes no pod of another job.

Every check is vectorised over node rows (``NodeFilter``); the session derives the one-node
``predicate_fn`` from them.

Deliberate deviations:
- Node affinity expressions, pod (anti-)affinity, ports and volumes are not modelled; the
  pod's ``nodeSelector`` is.
- docs/design.md#reservation locked nodes: Volcano v1.5.1 never applied the lock (its
  ``util.Reservation`` was read through a variable set once at start-up); here it holds, except for
  the room a job's own will-bind holds on a locked node, and not after the target is placed
  (``Session.lift_locks``).
"""

from __future__ import annotations

import numpy as np

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.node import Taint
from vcbus.contracts.objects.pod import Toleration
from vcbus.core.scheduling.fit_errors import (
    NODE_LOCKED_PREFIX,
    NODE_POD_NUMBER_EXCEEDED,
    NODE_SELECTOR_MISMATCH,
    NODE_UNSCHEDULABLE,
    NODE_UNTOLERATED_TAINT,
)
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.extension_points import NodeFilter
from vcbus.core.scheduling.framework.planning import ends_before_start, plan_head
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.model import TaskInfo
from vcbus.core.scheduling.node_matrix import BoolArray, IntArray, NodeMatrix
from vcbus.core.scheduling.taints import tolerates_all

NAME = "predicates"

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


def pod_count_filter(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
    """Nodes with room for one more pod."""
    del task
    return matrix.pod_count[rows] < matrix.max_pods[rows]


def pod_count_row(task: TaskInfo, matrix: NodeMatrix, row: int) -> bool:
    """``pod_count_filter`` for one row."""
    del task
    return bool(matrix.pod_count[row] < matrix.max_pods[row])


def unschedulable_filter(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
    """Nodes not cordoned, unless the pod tolerates the unschedulable taint."""
    if tolerates_all(task.pod.tolerations, (UNSCHEDULABLE_TAINT,)):
        return np.ones(len(rows), dtype=np.bool_)
    return ~matrix.unschedulable[rows]


def selector_filter(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
    """Nodes whose labels match the pod's node selector."""
    passes = np.ones(len(rows), dtype=np.bool_)
    for key, value in sorted(task.pod.node_selector.items()):
        passes &= matrix.label_mask(key, value)[rows]
    return passes


class _TaintFilter:
    """Nodes whose blocking taints the pod tolerates (cached per toleration set)."""

    def __init__(self) -> None:
        self._masks: dict[tuple[Toleration, ...], BoolArray] = {}

    def __call__(self, task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
        tolerations = task.pod.tolerations
        mask = self._masks.get(tolerations)
        if mask is None:
            mask = np.ones(len(matrix), dtype=np.bool_)
            for taints, group in matrix.taint_groups().items():
                if taints and not tolerates_all(tolerations, taints):
                    mask[group] = False
            self._masks[tolerations] = mask
        return mask[rows]


class PredicatesPlugin:
    """The ``predicates`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        """Register the node filters (pod count first, as Volcano checks it first)."""
        ssn.add_node_filter_fn(
            NAME,
            NodeFilter(
                NODE_POD_NUMBER_EXCEEDED,
                pod_count_filter,
                cacheable=True,
                dynamic=True,
                row_fn=pod_count_row,
            ),
        )
        ssn.add_node_filter_fn(
            NAME, NodeFilter(NODE_UNSCHEDULABLE, unschedulable_filter, cacheable=True)
        )
        ssn.add_node_filter_fn(
            NAME, NodeFilter(NODE_SELECTOR_MISMATCH, selector_filter, cacheable=True)
        )
        ssn.add_node_filter_fn(
            NAME, NodeFilter(NODE_UNTOLERATED_TAINT, _TaintFilter(), cacheable=True)
        )
        reservation = ssn.reservation
        if reservation.locked_nodes:
            target = reservation.target_job
            target_job = ssn.jobs.get(target) if target is not None else None
            plan = plan_head(ssn, target_job) if target_job is not None else None
            locked = np.array(
                [name in reservation.locked_nodes for name in ssn.matrix.names], dtype=np.bool_
            )
            index = ssn.matrix.index

            def own_room(job: JobKey) -> tuple[int, ...]:
                """Rows where ``job``'s will-bind holds room (a lock never refuses it)."""
                held = ssn.will_bind.held.get(job)
                if held is None:
                    return ()
                return tuple(
                    sorted(
                        {index[p.node_name] for p in held.phantoms.values() if p.node_name in index}
                    )
                )

            def lock_filter(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
                del matrix
                if (
                    ssn.locks_lifted
                    or (target is not None and task.job == target)
                    or ends_before_start(ssn, task.job, plan)
                ):
                    return np.ones(len(rows), dtype=np.bool_)
                allowed = ~locked
                room = own_room(task.job)
                if room:
                    allowed = allowed.copy()
                    allowed[list(room)] = True
                return allowed[rows]

            ssn.add_node_filter_fn(
                NAME,
                NodeFilter(
                    f"{NODE_LOCKED_PREFIX} {target}",
                    lock_filter,
                    cacheable=True,
                    task_key=lambda task: (
                        task.job == target,
                        own_room(task.job),
                        ends_before_start(ssn, task.job, plan),
                    ),
                ),
            )

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def new(arguments: Arguments) -> PredicatesPlugin:
    """Build the plugin."""
    return PredicatesPlugin(arguments)
