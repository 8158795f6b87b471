"""Typed callbacks plugins register, and one registry per kind of callback.

Volcano's session holds some forty maps of ``interface{}`` callbacks keyed by plugin name
(volcano@v1.5.1 ``pkg/scheduler/framework/session.go``); vcbus keeps one typed
``ExtensionPoint`` per kind, each knowing the ``enable…`` flag that gates it.

Deliberate deviations:
- Three kinds are vcbus's: ``QueueShareFn`` (a queue's share now, for enqueue's record),
  ``ReclaimRoomFn`` (what a job's queue may take back, for the starvation check of preempt
  and reclaim) and the ``ReservationLimits`` a plugin sets (how long a reservation may hold
  nodes). They are always on (no ``enable…`` flag gates them).
- ``TargetJobFn`` returns the elected job with why it qualifies (``Election``), where
  Volcano's returns the job alone.
- Two vectorised kinds are added for scale: ``NodeFilter`` (a predicate over many nodes at
  once) and ``NodeScoreFn`` (a node order function over many nodes). A plugin registers them
  next to, or instead of, the one-node ``predicate_fn``/``node_order_fn``; the session
  derives each form from the other so both always agree.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from vcbus.core.scheduling.framework.conf import Kind
from vcbus.core.scheduling.framework.votes import Status, ValidateResult, Vote
from vcbus.core.scheduling.model import JobInfo, NodeInfo, QueueInfo, TaskInfo
from vcbus.core.scheduling.node_matrix import BoolArray, FloatArray, IntArray, NodeMatrix
from vcbus.core.scheduling.resource import Resource

JobOrderFn = Callable[[JobInfo, JobInfo], int]
"""Negative when the left job goes first, positive when the right one does, 0 for a tie."""
QueueOrderFn = Callable[[QueueInfo, QueueInfo], int]


@dataclass(frozen=True, slots=True)
class TaskOrder:
    """A plugin's task order (``TaskOrderFn``): the ascending order of a key.

    Volcano's plugins give a comparison; the task order vcbus has (``priority``'s) is a
    key's, and a key lets a session sort a job's tasks without a comparison call per
    pair. Called with two tasks, it compares their keys (-1, 0 or 1), as Volcano's
    ``TaskOrderFn`` does.
    """

    key: Callable[[TaskInfo], tuple[int, ...]]

    def __call__(self, left: TaskInfo, right: TaskInfo) -> int:
        """-1 when ``left``'s key is lower, 1 when higher, 0 when equal."""
        first, second = self.key(left), self.key(right)
        if first < second:
            return -1
        return 1 if second < first else 0


JobReadyFn = Callable[[JobInfo], bool]
JobValidFn = Callable[[JobInfo], ValidateResult | None]
JobVoteFn = Callable[[JobInfo], Vote]
JobEnqueuedFn = Callable[[JobInfo], None]
PredicateFn = Callable[[TaskInfo, NodeInfo], Status | None]
NodeOrderFn = Callable[[TaskInfo, NodeInfo], float]
NodeScoreFn = Callable[[TaskInfo, NodeMatrix, IntArray], FloatArray]
"""Scores of ``task`` on the matrix rows given (one value per row)."""
RowScoreFn = Callable[[TaskInfo, NodeMatrix, int], float]
"""The same score on one row, in plain Python (cheaper than numpy for a row or two)."""
RowFilterFn = Callable[[TaskInfo, NodeMatrix, int], bool]
OverusedFn = Callable[[QueueInfo], bool]
AllocatableFn = Callable[[QueueInfo, TaskInfo], bool]
PreemptiveFn = Callable[[QueueInfo, TaskInfo], bool]
"""Whether ``queue`` may reclaim for ``task`` (``ValidateWithCandidateFn``, one candidate)."""
QueueShareFn = Callable[[QueueInfo], float]
"""A queue's share now (vcbus: enqueue records it beside each pick)."""
ReclaimRoomFn = Callable[[JobInfo], Resource]
"""What ``job``'s queue may take back from queues above their shares (vcbus)."""
TargetJobFn = Callable[[Sequence[JobInfo]], "Election | None"]
ReservedNodesFn = Callable[[], None]
EvictableFn = Callable[[TaskInfo, Sequence[TaskInfo]], tuple[list[TaskInfo], Vote]]
TaskFn = Callable[[TaskInfo], None]


@dataclass(frozen=True, slots=True)
class Election:
    """A plugin's elected target job, and why it qualifies (``TargetJobFn``'s answer)."""

    job: JobInfo
    why: str = ""


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """A vectorised predicate: which of the given rows accept the task.

    Attributes:
        reason: the fit-error reason of the rows it rejects.
        fn: ``fn(task, matrix, rows) -> passes`` (one bool per row).
        cacheable: whether the answer may be shared between tasks: it reads of the task only
            its requests, node selector and tolerations, and what ``task_key`` returns (the
            task's placement signature). Off by default: while one enabled filter is not
            cacheable, the placement cache keeps its answers per task (as Kubernetes keeps
            a pod's filter answers for pods of the same signature only when every plugin
            signs it, ``SignPod``).
        task_key: for a cacheable filter whose answer depends on more of the task than its
            requests, node selector and tolerations, a function returning that part (for
            instance whether the task's job is the reservation's target); cached answers
            are shared per value.
        dynamic: whether the answer changes as tasks are placed in the session (the pod
            count does; labels, taints and locks do not), so it is recomputed for the rows
            that changed.
        scalar: set when the filter wraps a one-node ``predicate_fn``; it then gives the
            reason of each rejection, and answers are cached per task.
    """

    reason: str
    fn: Callable[[TaskInfo, NodeMatrix, IntArray], BoolArray]
    cacheable: bool = False
    task_key: Callable[[TaskInfo], Hashable] | None = None
    dynamic: bool = False
    scalar: PredicateFn | None = None
    row_fn: RowFilterFn | None = None
    """Optional plain-Python form of ``fn`` for one row (must agree with ``fn``)."""


@dataclass(frozen=True, slots=True)
class NodeScorer:
    """A vectorised node score, with an optional one-row form that must agree with it."""

    fn: NodeScoreFn
    row_fn: RowScoreFn | None = None


@dataclass(frozen=True, slots=True)
class EventHandler:
    """Callbacks run when a task is allocated/pipelined or undone (Volcano ``EventHandler``)."""

    allocate_func: TaskFn | None = None
    deallocate_func: TaskFn | None = None


F = TypeVar("F")


class ExtensionPoint(Generic[F]):
    """The callbacks of one kind, by plugin name, in registration order."""

    def __init__(self, kind: Kind | None) -> None:
        self.kind = kind
        """The flag that gates this point, or ``None`` when it is always on (``JobValid``)."""
        self._fns: dict[str, list[F]] = {}

    def register(self, plugin: str, fn: F) -> None:
        """Add ``fn`` for ``plugin`` (a plugin may register several of some kinds)."""
        self._fns.setdefault(plugin, []).append(fn)

    def of(self, plugin: str) -> list[F]:
        """Return the callbacks ``plugin`` registered here."""
        return self._fns.get(plugin, [])

    def clear(self) -> None:
        """Forget every callback (the session closed)."""
        self._fns.clear()

    def __bool__(self) -> bool:
        return bool(self._fns)
