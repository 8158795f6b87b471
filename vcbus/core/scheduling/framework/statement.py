"""A transaction over the session: allocate/pipeline/evict, then commit or discard.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/statement.go`` (``Statement.Allocate``,
``Pipeline``, ``Evict``, ``Discard``, ``Commit``). This is how gang scheduling is all or
nothing: a job's tentative placements are kept only if the job becomes ready.

Deliberate deviations:
- ``commit`` returns the decisions (bindings, evictions) and performs no I/O; the shell
  publishes them. Volcano's ``Commit`` calls the binder and swallows its errors.
- ``savepoint``/``rollback`` (vcbus): undo the operations after a mark, so preempt and
  reclaim take back the evictions on a node that could not hold the preemptor after all
  (Volcano keeps them in the statement).
- ``take_will_bind`` (vcbus): a real pod takes the capacity reserved for it (a will-bind
  phantom, ``framework.will_bind``); ``discard`` holds it again, ``commit`` releases it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vcbus.core.scheduling.framework.results import BindDecision, EvictDecision, EvictNote
from vcbus.core.scheduling.model import NodeInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from vcbus.core.scheduling.framework.session import Session


class Op(enum.Enum):
    """Kinds of statement operations."""

    ALLOCATE = "allocate"
    PIPELINE = "pipeline"
    EVICT = "evict"
    TAKE = "take"
    """A real pod took its will-bind phantom (``task`` is the phantom, ``taker`` the real pod)."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One recorded operation."""

    op: Op
    task: TaskInfo
    node: str
    reason: str = ""
    """Why a task is evicted (``Op.EVICT``)."""
    previous: TaskStatus = TaskStatus.PENDING
    """The evicted task's status before (``Op.EVICT``)."""
    taker: str = ""
    """The uid of the real pod that took the phantom ``task`` (``Op.TAKE``)."""
    note: EvictNote | None = None
    """For whom a task is evicted (``Op.EVICT``)."""


class Statement:
    """Operations on one session, undone in reverse by ``discard``, made real by ``commit``."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._operations: list[Operation] = []

    @property
    def operations(self) -> tuple[Operation, ...]:
        """The operations recorded so far."""
        return tuple(self._operations)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place ``task`` on ``node``'s idle resources (status Allocated)."""
        self._ssn.allocate_task(task, node)
        self._operations.append(Operation(Op.ALLOCATE, task, node.name))

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place ``task`` on resources ``node`` is releasing (status Pipelined)."""
        self._ssn.pipeline_task(task, node)
        self._operations.append(Operation(Op.PIPELINE, task, node.name))

    def evict(self, task: TaskInfo, reason: str, note: EvictNote | None = None) -> None:
        """Mark a placed ``task`` for eviction (status Releasing), for ``note``'s taker."""
        previous = task.status
        node = task.node_name or ""
        self._ssn.evict_task(task)
        self._operations.append(Operation(Op.EVICT, task, node, reason, previous, note=note))

    def take_will_bind(self, task: TaskInfo) -> NodeInfo | None:
        """Give ``task`` the capacity reserved for it, if any; return the reserved node."""
        phantom = self._ssn.will_bind.take(task)
        if phantom is None:
            return None
        self._operations.append(
            Operation(Op.TAKE, phantom, phantom.node_name or "", taker=task.uid)
        )
        return self._ssn.nodes.get(phantom.node_name or "")

    def savepoint(self) -> int:
        """A mark to :meth:`rollback` to (vcbus: preempt undoes a node's useless evictions)."""
        return len(self._operations)

    def rollback(self, mark: int) -> None:
        """Undo the operations recorded after ``mark``, last first."""
        later = self._operations[mark:]
        del self._operations[mark:]
        self._undo(later)

    def discard(self) -> None:
        """Undo every operation, last first."""
        operations = list(self._operations)
        self._operations.clear()
        self._undo(operations)

    def _undo(self, operations: list[Operation]) -> None:
        for operation in reversed(operations):
            task = operation.task
            if operation.op is Op.TAKE:
                self._ssn.will_bind.restore(task)
                continue
            task.last_transaction = (task.status, task.node_name)
            if operation.op is Op.EVICT:
                self._ssn.unevict_task(operation.task, operation.previous)
            else:
                self._ssn.unallocate_task(operation.task)

    def commit(self) -> tuple[tuple[BindDecision, ...], tuple[EvictDecision, ...]]:
        """Make the operations real: Allocated tasks become Binding; return the decisions.

        Pipelined tasks keep their place in this session and are not bound; will-bind
        phantoms taken by pods now bound are released (``StageBound``), those taken by
        pipelined pods are held again.
        """
        binds: list[BindDecision] = []
        evictions: list[EvictDecision] = []
        taken: list[Operation] = []
        allocated: set[str] = set()
        for operation in self._operations:
            if operation.op is Op.ALLOCATE:
                binds.append(self._ssn.dispatch(operation.task))
                allocated.add(operation.task.uid)
            elif operation.op is Op.EVICT:
                evictions.append(
                    self._ssn.record_eviction(operation.task, operation.reason, operation.note)
                )
            elif operation.op is Op.TAKE:
                taken.append(operation)
        bound = [op.task for op in taken if op.taker in allocated]
        if bound:
            self._ssn.will_bind.consume(bound)
        for operation in taken:
            if operation.taker not in allocated:
                self._ssn.will_bind.restore(operation.task)
        self._operations.clear()
        return tuple(binds), tuple(evictions)
