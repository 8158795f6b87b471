"""The scheduler's task: one pod as a session sees it, and its status.

Port of volcano@v1.12.0 ``pkg/scheduler/api/job_info.go`` ``TaskInfo``, ``api/types.go``
``TaskStatus`` and ``helpers.go`` ``AllocatedStatus``. Mutable inside a session, as Volcano's
are; part of the working model (``model``).
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from datetime import UTC, datetime

from vcbus.contracts.keys import JobKey, PodKey
from vcbus.contracts.objects.job import ANNOTATION_TASK_PRIORITY
from vcbus.contracts.objects.pod import Pod
from vcbus.core.scheduling.node_matrix import FloatArray
from vcbus.core.scheduling.resource import Resource

__all__ = [
    "ALLOCATED_STATUSES",
    "READY_STATUSES",
    "SCHEDULED_STATUSES",
    "TaskInfo",
    "TaskStatus",
    "naive_utc",
    "task_priority",
]


class TaskStatus(enum.IntEnum):
    """Task status (volcano ``api/types.go`` ``TaskStatus``); session-only ones included.

    An ``IntEnum`` so counters keyed by status hash at C speed; ``label`` is Volcano's name.
    """

    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 3
    BINDING = 4
    BOUND = 5
    RUNNING = 6
    RELEASING = 7
    SUCCEEDED = 8
    FAILED = 9
    UNKNOWN = 10

    @property
    def label(self) -> str:
        """Volcano's name of the status (``Pending``, ``Allocated`` …)."""
        return self.name.capitalize()


ALLOCATED_STATUSES = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
"""Volcano ``AllocatedStatus``: statuses that hold resources on a node."""

SCHEDULED_STATUSES = frozenset(
    {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED}
)
"""Volcano ``ScheduledStatus``."""

READY_STATUSES = (
    TaskStatus.BOUND,
    TaskStatus.BINDING,
    TaskStatus.RUNNING,
    TaskStatus.ALLOCATED,
    TaskStatus.SUCCEEDED,
)
"""Statuses a gang counts as ready (Volcano ``ReadyTaskNum``)."""
_EPOCH = datetime.min


def task_priority(pod: Pod) -> int:
    """Return a task's priority: ``volcano.sh/task-priority`` if an integer, else the pod's."""
    raw = pod.annotations.get(ANNOTATION_TASK_PRIORITY)
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            return pod.priority
    return pod.priority


@dataclass(slots=True, eq=False)
class TaskInfo:
    """One pod as the scheduler sees it (volcano ``TaskInfo``)."""

    uid: str
    key: PodKey
    name: str
    namespace: str
    job: JobKey
    role: str
    index: int
    priority: int
    resreq: Resource
    status: TaskStatus
    node_name: str | None
    pod: Pod
    creation: datetime | None = None
    attempt: int = 0
    best_effort: bool = False
    vector: FloatArray | None = None
    """The request over the session's node-matrix dimensions (set by the session)."""
    signature: tuple[object, ...] | None = None
    """What node filters and scores read from this task (set by the placement cache)."""
    last_transaction: tuple[TaskStatus, str | None] | None = None
    """Status and node of the last discarded placement (Volcano ``LastTransaction``)."""

    @property
    def init_resreq(self) -> Resource:
        """The request used to launch the task (Volcano ``InitResreq``; same as ``resreq``)."""
        return self.resreq

    @property
    def creation_key(self) -> datetime:
        """Creation time for ordering; a missing time sorts first, as Go's zero time does."""
        return naive_utc(self.creation)


@functools.lru_cache(maxsize=1 << 16)
def naive_utc(moment: datetime | None) -> datetime:
    """Return a moment as naive UTC, so aware and naive times compare; None sorts first.

    Remembered per moment: job and task order compare creation times on every step of a
    session's queues (``astimezone`` was ~4 % of an allocate cycle).
    """
    if moment is None:
        return _EPOCH
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)
