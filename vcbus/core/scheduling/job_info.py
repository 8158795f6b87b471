"""The scheduler's job: a PodGroup and its tasks, with Volcano's counters.

Port of volcano@v1.12.0 ``pkg/scheduler/api/job_info.go`` (``JobInfo``:
``ReadyTaskNum``, ``WaitingTaskNum``, ``PendingBestEffortTaskNum``, ``ValidTaskNum``,
``IsReady``, ``IsPipelined``, ``IsStarving``, ``CheckTaskValid/Ready/Pipelined/Starving``,
``NeedContinueAllocating``, ``FitError``, ``TaskSchedulingReason``). Mutable inside a session,
as Volcano's are; part of the working model (``model``).

Deliberate deviations:
- docs/design.md#task-level-gang: task-level minimums are enforced whenever ``minTaskMember`` has
  entries (Volcano skips them when ``minAvailable < Σ task minimums``).
- docs/design.md#dependent-jobs: for a job marked dependent, roles with a minimum but no pods yet
  ("wait-create") are skipped by the task-level checks and their minimums are taken off the
  job-level minimum (``gang_min``), so the first stage is gang-scheduled on its own.
- ``NeedContinueAllocating`` keeps Volcano's two rules but applies both together (a failed
  role below its minimum stops; so does a job count that can no longer reach ``gang_min``),
  since A4 makes the task and job minimums hold at the same time.
- Counters are kept incrementally (per status and per role) instead of recounted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.core.reasons import SCHEDULABLE, UNSCHEDULABLE
from vcbus.core.scheduling.fit_errors import FitErrors
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.task_info import (
    ALLOCATED_STATUSES,
    READY_STATUSES,
    SCHEDULED_STATUSES,
    TaskInfo,
    TaskStatus,
    naive_utc,
)

__all__ = ["JobInfo", "LazyTasks"]

_VALID = (*READY_STATUSES, TaskStatus.PIPELINED, TaskStatus.PENDING)
_READY_SET = frozenset(READY_STATUSES)
_VALID_SET = frozenset(_VALID)
_OCCUPIED = (*READY_STATUSES,)
_PIPELINED = (*READY_STATUSES, TaskStatus.PIPELINED)


class LazyTasks(Protocol):
    """What a job made from a recipe keeps to make its tasks when first needed."""

    @property
    def count(self) -> int:
        """How many tasks it makes."""
        ...

    def make(
        self,
    ) -> tuple[list[TaskInfo], dict[str, TaskInfo], dict[TaskStatus, dict[str, TaskInfo]]]:
        """The tasks in made order, by uid, and by status then uid."""
        ...

    def placed_nodes(self, statuses: frozenset[TaskStatus]) -> list[str]:
        """The nodes of the tasks in ``statuses`` that have one, in ``placed_nodes`` order."""
        ...


@dataclass(slots=True, eq=False)
class JobInfo:
    """A PodGroup and its tasks (volcano ``JobInfo``)."""

    uid: str
    key: JobKey
    name: str
    namespace: str
    queue: str
    priority: int
    min_available: int
    podgroup: PodGroup
    phase: PodGroupPhase
    task_min_available: dict[str, int]
    dependent: bool = False
    creation: datetime | None = None
    first_seen: datetime | None = None
    """When the scheduler first saw the job (``ScheduleStartTimestamp``): waiting starts."""
    conditions: tuple[Condition, ...] = ()
    """The allocator conditions known from the snapshot."""
    _tasks: dict[str, TaskInfo] = field(default_factory=dict)
    _by_status: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    allocated: Resource = field(default_factory=Resource)
    total_request: Resource = field(default_factory=Resource)
    nodes_fit_errors: dict[str, FitErrors] = field(default_factory=dict)
    """Task uid → why it fits no node (Volcano ``NodesFitErrors``)."""
    job_fit_errors: str = ""
    wait_create: int = 0
    """docs/design.md#dependent-jobs: Σ minimums of roles without pods yet, for a dependent job."""
    blocked: tuple[str, str] | None = None
    """(reason code, message) when the job's queue stopped it this session."""
    _status_count: dict[TaskStatus, int] = field(default_factory=dict)
    _role_status: dict[str, dict[TaskStatus, int]] = field(default_factory=dict)
    _role_pending_best_effort: dict[str, int] = field(default_factory=dict)
    _pending_best_effort: int = 0
    _ready: int = 0
    _valid: int = 0
    _role_ready: dict[str, int] = field(default_factory=dict)
    _checked: list[tuple[str, int]] | None = None
    _lazy: LazyTasks | None = None
    """How to make the tasks, until a first reader needs them (``LazyTasks``). Until then
    the counters and ``task_min_available`` are the recipe's, read only: every change of
    them changes a task, which makes the tasks first (``_materialize`` copies them)."""
    _made: list[TaskInfo] | None = None
    """The tasks in the order they were made, for the nodes they are placed on."""

    @property
    def tasks(self) -> dict[str, TaskInfo]:
        """The tasks by uid (made on first use for a job made from a recipe)."""
        if self._lazy is not None:
            self._materialize()
        return self._tasks

    @property
    def tasks_by_status(self) -> dict[TaskStatus, dict[str, TaskInfo]]:
        """The tasks by status, then uid (made on first use, as ``tasks``)."""
        if self._lazy is not None:
            self._materialize()
        return self._by_status

    @property
    def task_count(self) -> int:
        """How many tasks the job has, without making them."""
        lazy = self._lazy
        return len(self._tasks) if lazy is None else lazy.count

    @property
    def materialized(self) -> bool:
        """Whether the job's ``TaskInfo`` objects exist (a reader or a change made them)."""
        return self._lazy is None

    def made_tasks(self) -> list[TaskInfo]:
        """The tasks in the order they were made (made now if they were not)."""
        if self._lazy is not None:
            self._materialize()
        return self._made if self._made is not None else list(self._tasks.values())

    def keep_made(self, tasks: list[TaskInfo]) -> None:
        """Remember ``tasks``, this job's, in the order they were made (``made_tasks``)."""
        self._made = tasks

    def placed_nodes(self, statuses: frozenset[TaskStatus]) -> list[str]:
        """The nodes of the tasks in ``statuses`` that have one, without making the tasks."""
        lazy = self._lazy
        if lazy is not None:
            return lazy.placed_nodes(statuses)
        by_status = self._by_status
        return [
            task.node_name
            for status in statuses
            for task in by_status.get(status, {}).values()
            if task.node_name
        ]

    def _materialize(self) -> None:
        """Make the tasks; the counters, shared with the recipe until now, become own."""
        lazy = self._lazy
        assert lazy is not None
        self._lazy = None
        self._made, self._tasks, self._by_status = lazy.make()
        self.task_min_available = dict(self.task_min_available)
        self._status_count = dict(self._status_count)
        self._role_status = {role: dict(counts) for role, counts in self._role_status.items()}
        self._role_pending_best_effort = dict(self._role_pending_best_effort)
        self._role_ready = dict(self._role_ready)

    @property
    def creation_key(self) -> datetime:
        """Creation time for ordering; a missing time sorts first."""
        return naive_utc(self.creation)

    def waiting_since(self) -> datetime | None:
        """When the job started waiting: first seen, else created (``ScheduleStartTimestamp``)."""
        return self.first_seen if self.first_seen is not None else self.creation

    # Task bookkeeping ------------------------------------------------------------------
    def add_task_info(self, task: TaskInfo) -> None:
        """Add a task (``AddTaskInfo``)."""
        self._checked = None
        self.tasks[task.uid] = task
        self._index(task, +1)
        self.total_request = self.total_request + task.resreq
        if task.status in ALLOCATED_STATUSES:
            self.allocated = self.allocated + task.resreq

    def add_task_infos(self, tasks: Sequence[TaskInfo]) -> None:
        """Add several tasks, as :meth:`add_task_info` does for each, summing requests once.

        Amounts are whole base units held as floats, so the sums equal the one-by-one ones
        (a request shared by ``n`` tasks is added once, times ``n``); the counters are
        summed per (status, role, best-effort) and applied once, in first-seen order.
        """
        if not tasks:
            return
        self._checked = None
        by_uid = self.tasks
        by_status = self.tasks_by_status
        shapes: dict[int, tuple[Resource, list[int]]] = {}
        counts: dict[tuple[TaskStatus, str, bool], int] = {}
        for task in tasks:
            uid = task.uid
            status = task.status
            by_uid[uid] = task
            bucket = by_status.get(status)
            if bucket is None:
                bucket = by_status[status] = {}
            bucket[uid] = task
            group = (status, task.role, task.best_effort)
            counts[group] = counts.get(group, 0) + 1
            shape = shapes.get(id(task.resreq))
            if shape is None:
                shape = shapes[id(task.resreq)] = (task.resreq, [0, 0])
            shape[1][0] += 1
            if status in ALLOCATED_STATUSES:
                shape[1][1] += 1
        for (status, role, best_effort), n in counts.items():
            self._count(status, role, best_effort, n)
        total = dict(self.total_request._amounts)
        allocated = dict(self.allocated._amounts)
        allocated_changed = False
        for resreq, (n_total, n_allocated) in shapes.values():
            for name, amount in resreq._amounts.items():
                total[name] = total.get(name, 0.0) + amount * n_total
                if n_allocated:
                    allocated[name] = allocated.get(name, 0.0) + amount * n_allocated
            allocated_changed = allocated_changed or n_allocated > 0
        self.total_request = Resource._raw(total)
        if allocated_changed:
            self.allocated = Resource._raw(allocated)

    def delete_task_info(self, task: TaskInfo) -> None:
        """Remove a task (``DeleteTaskInfo``)."""
        existing = self.tasks.pop(task.uid, None)
        if existing is None:
            return
        self._checked = None
        self._index(existing, -1)
        self.total_request = self.total_request - existing.resreq
        if existing.status in ALLOCATED_STATUSES:
            self.allocated = self.allocated - existing.resreq

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task to another status (``UpdateTaskStatus``)."""
        if task.uid not in self.tasks:
            task.status = status
            self.add_task_info(task)
            return
        previous = task.status
        self._index(task, -1)
        task.status = status
        self._index(task, +1)
        was, now = previous in ALLOCATED_STATUSES, status in ALLOCATED_STATUSES
        if was and not now:
            self.allocated = self.allocated - task.resreq
        elif now and not was:
            self.allocated = self.allocated + task.resreq

    def _index(self, task: TaskInfo, delta: int) -> None:
        status = task.status
        bucket = self.tasks_by_status.setdefault(status, {})
        if delta > 0:
            bucket[task.uid] = task
        else:
            bucket.pop(task.uid, None)
        self._count(status, task.role, task.best_effort, delta)

    def _count(self, status: TaskStatus, role: str, best_effort: bool, delta: int) -> None:
        """Move the counters of ``delta`` tasks of ``status`` and ``role``."""
        self._status_count[status] = self._status_count.get(status, 0) + delta
        if status in _READY_SET:
            self._ready += delta
            self._role_ready[role] = self._role_ready.get(role, 0) + delta
        if status in _VALID_SET:
            self._valid += delta
        roles = self._role_status.setdefault(role, {})
        roles[status] = roles.get(status, 0) + delta
        if status is TaskStatus.PENDING and best_effort:
            self._pending_best_effort += delta
            self._role_pending_best_effort[role] = (
                self._role_pending_best_effort.get(role, 0) + delta
            )

    def count(self, *statuses: TaskStatus) -> int:
        """Return how many tasks are in any of ``statuses``."""
        counts = self._status_count
        total = 0
        for status in statuses:
            total += counts.get(status, 0)
        return total

    def role_count(self, role: str, statuses: tuple[TaskStatus, ...]) -> int:
        """Return how many tasks of ``role`` are in any of ``statuses``."""
        counts = self._role_status.get(role)
        if counts is None:
            return 0
        return sum(counts.get(s, 0) for s in statuses)

    def roles(self) -> tuple[str, ...]:
        """Return the roles that have tasks, sorted."""
        return tuple(sorted(r for r, c in self._role_status.items() if sum(c.values()) > 0))

    def pending_tasks(self) -> list[TaskInfo]:
        """Return the Pending tasks, by uid (callers sort them by task order)."""
        if not self._status_count.get(TaskStatus.PENDING):
            return []
        bucket = self.tasks_by_status.get(TaskStatus.PENDING, {})
        return [bucket[uid] for uid in sorted(bucket)]

    # Counters (job_info.go) ------------------------------------------------------------
    @property
    def task_min_available_total(self) -> int:
        """Σ of the task minimums (``TaskMinAvailableTotal``)."""
        return sum(self.task_min_available.values())

    @property
    def gang_min(self) -> int:
        """The job-level minimum the gang checks use: minMember less wait-create."""
        return max(0, self.min_available - self.wait_create)

    def ready_task_num(self) -> int:
        """Bound + Binding + Running + Allocated + Succeeded (``ReadyTaskNum``)."""
        return self._ready

    def waiting_task_num(self) -> int:
        """Pipelined tasks (``WaitingTaskNum``)."""
        return self._status_count.get(TaskStatus.PIPELINED, 0)

    def pending_best_effort_task_num(self) -> int:
        """Pending tasks without a request (``PendingBestEffortTaskNum``)."""
        return self._pending_best_effort

    def valid_task_num(self) -> int:
        """AllocatedStatus + Succeeded + Pipelined + Pending (``ValidTaskNum``)."""
        return self._valid

    def scheduled_task_num(self) -> int:
        """Tasks in ``ScheduledStatus`` (``ScheduledTaskNum``)."""
        return self.count(*SCHEDULED_STATUSES)

    def releasing_scheduled_task_num(self) -> int:
        """Releasing tasks that have a node (``ReleasingScheduledTaskNum``)."""
        if not self._status_count.get(TaskStatus.RELEASING):
            return 0
        bucket = self.tasks_by_status.get(TaskStatus.RELEASING, {})
        return sum(1 for t in bucket.values() if t.node_name)

    def is_ready(self) -> bool:
        """``ReadyTaskNum + PendingBestEffort >= minAvailable`` (``IsReady``; A5 ``gang_min``)."""
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.gang_min

    def is_pipelined(self) -> bool:
        """``Waiting + Ready + PendingBestEffort >= minAvailable`` (``IsPipelined``)."""
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
            >= self.gang_min
        )

    def is_starving(self) -> bool:
        """``Waiting + Ready < minAvailable`` (``IsStarving``)."""
        return self.waiting_task_num() + self.ready_task_num() < self.gang_min

    def is_pending(self) -> bool:
        """Whether the PodGroup is Pending (``IsPending``)."""
        return self.phase is PodGroupPhase.PENDING

    def has_pending_tasks(self) -> bool:
        """Whether any task is Pending."""
        return self.count(TaskStatus.PENDING) > 0

    def _checked_roles(self) -> list[tuple[str, int]]:
        """Roles the task-level checks apply to, skipping wait-create roles."""
        if self._checked is not None:
            return self._checked
        out = []
        for role in sorted(self.task_min_available):
            minimum = self.task_min_available[role]
            if minimum <= 0:
                continue
            if self.dependent and role not in self._role_status_nonempty():
                continue
            out.append((role, minimum))
        self._checked = out
        return out

    def _role_status_nonempty(self) -> set[str]:
        return {r for r, c in self._role_status.items() if sum(c.values()) > 0}

    def _role_occupied(self, role: str, statuses: tuple[TaskStatus, ...]) -> int:
        return self.role_count(role, statuses) + self._role_pending_best_effort.get(role, 0)

    def check_task_valid(self) -> bool:
        """Every role with a minimum has that many valid tasks (``CheckTaskValid``, A4/A5)."""
        return all(self.role_count(r, _VALID) >= m for r, m in self._checked_roles())

    def check_task_ready(self) -> bool:
        """Every role has its minimum occupied or best-effort pending (``CheckTaskReady``)."""
        ready, best_effort = self._role_ready, self._role_pending_best_effort
        return all(ready.get(r, 0) + best_effort.get(r, 0) >= m for r, m in self._checked_roles())

    def check_task_pipelined(self) -> bool:
        """As ``check_task_ready``, Pipelined counted too (``CheckTaskPipelined``)."""
        return all(self._role_occupied(r, _PIPELINED) >= m for r, m in self._checked_roles())

    def check_task_starving(self) -> bool:
        """Some role is below its minimum counting Pipelined (``CheckTaskStarving``)."""
        return any(self.role_count(r, _PIPELINED) < m for r, m in self._checked_roles())

    def fit_failed_roles(self) -> set[str]:
        """Roles of the tasks with fit errors (``FitFailedRoles``)."""
        return {self.tasks[uid].role for uid in self.nodes_fit_errors if uid in self.tasks}

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        """Whether another task of the same (non-empty) role failed predicates."""
        if not task.role or not self.nodes_fit_errors:
            return False
        return task.role in self.fit_failed_roles()

    def need_continue_allocating(self) -> bool:
        """Whether allocation should go on after a predicate failure.

        Port of ``JobInfo.NeedContinueAllocating`` with both of its rules applied (see the
        module docstring): stop when every task is needed, when a failed role with a minimum
        cannot reach it, or when the tasks left cannot reach the job-level minimum.
        """
        if self.gang_min >= self.task_count:
            return False
        failed = self.fit_failed_roles()
        for role in sorted(failed):
            minimum = self.task_min_available.get(role, 0)
            if minimum > 0 and self._role_occupied(role, _OCCUPIED) < minimum:
                return False
        pending = self.tasks_by_status.get(TaskStatus.PENDING, {})
        left = sum(1 for t in pending.values() if t.role not in failed)
        return self.ready_task_num() + left >= self.gang_min

    def fit_error(self) -> str:
        """The job's unschedulable summary (``FitError``), Volcano's wording.

        ``pod group is not ready, 2 Pending, 3 minAvailable; Pending: 2 Unschedulable.
        Origin reason is p1: 0/3 nodes are unavailable: 3 Insufficient cpu.``
        """
        reasons: dict[str, int] = {}
        for status, bucket in self.tasks_by_status.items():
            if bucket:
                reasons[status.label] = reasons.get(status.label, 0) + len(bucket)
        reasons["minAvailable"] = self.min_available
        text = "pod group is not ready, " + ", ".join(
            sorted(f"{count} {reason}" for reason, count in reasons.items())
        )
        pending = self.tasks_by_status.get(TaskStatus.PENDING, {})
        histogram: dict[str, int] = {}
        for uid in pending:
            reason, _ = self.task_scheduling_reason(uid)
            histogram[reason] = histogram.get(reason, 0) + 1
        if histogram:
            text += "; Pending: " + ", ".join(sorted(f"{n} {r}" for r, n in histogram.items()))
        if self.job_fit_errors:
            return f"{text}. Origin reason is: {self.job_fit_errors}"
        for task in sorted(self.tasks.values(), key=lambda t: t.key):
            errors = self.nodes_fit_errors.get(task.uid)
            if errors is not None:
                return f"{text}. Origin reason is {task.name}: {errors.message()}"
        return text

    def task_scheduling_reason(self, uid: str) -> tuple[str, str]:
        """Reason and message of one task, after its last transaction (``TaskSchedulingReason``)."""
        task = self.tasks.get(uid)
        if task is None:
            return "", ""
        status, node = task.last_transaction or (task.status, task.node_name)
        where = f"Pod {task.namespace}/{task.name} can possibly be assigned to {node}"
        if status is TaskStatus.ALLOCATED:
            return SCHEDULABLE, f"{where}, once minAvailable is satisfied"
        if status is TaskStatus.PIPELINED:
            return (
                UNSCHEDULABLE,
                f"{where}, once resource is released and minAvailable is satisfied",
            )
        if status is TaskStatus.PENDING:
            errors = self.nodes_fit_errors.get(uid)
            if errors is not None:
                return UNSCHEDULABLE, errors.message()
            return UNSCHEDULABLE, self.job_fit_errors
        return status.label, self.job_fit_errors
