"""A job's recipe: how to make its ``JobInfo`` and ``TaskInfo`` objects again (vcbus).

Not in Volcano, whose ``SchedulerCache`` keeps ``JobInfo`` objects alive and clones them
(``Snapshot``) every session. A ``SessionCache`` (``framework.session_cache``) keeps one
``JobRecipe`` per job from one session to the next.

A recipe holds the arguments of the job's ``JobInfo`` (``JobHead``) and of its ``TaskInfo``
objects (``TaskArgs``), in the order the session makes them, and the job's bookkeeping as
``JobInfo.add_task_infos`` left it (task maps as positions, counters as ``RecipeCounters``,
request sums). ``JobHead`` and ``TaskArgs`` are named tuples whose fields are the leading
fields of ``JobInfo`` and ``TaskInfo``, by name and in order: a job and its tasks are made
by positional construction (no re-summing), and the type checker reads each argument
against its field. A recipe holds immutable values, and its counters as dicts that the jobs
made from it only read. It stays valid while the job's ``PodGroupState`` and its pods'
``PodState`` objects are the same objects (a ``ClusterView`` makes new ones on every
change, see ``snapshot``); a session whose job changed derives it again.

A job made from its recipe makes its ``TaskInfo`` objects only when something first reads
them; changing a task makes them first, and the job's counters become its own then.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from vcbus.contracts.keys import JobKey, PodKey
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import Pod
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.core.scheduling.framework.job_updater import settled
from vcbus.core.scheduling.model import JobInfo, TaskInfo, TaskStatus
from vcbus.core.scheduling.node_matrix import FloatArray, NodeMatrix
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.snapshot import JobPods, PodGroupState

__all__ = ["JobHead", "JobRecipe", "RecipeCounters", "Shape", "TaskArgs"]


class TaskArgs(NamedTuple):
    """``TaskInfo``'s leading fields, by name and in its field order.

    A session builds a task as ``TaskInfo(*args)``; made from a recipe, the request vector
    follows.
    """

    uid: str
    key: PodKey
    name: str
    namespace: str
    job: JobKey
    role: str
    index: int  # type: ignore[assignment]  # ``TaskInfo.index``; hides ``tuple.index``
    priority: int
    resreq: Resource
    status: TaskStatus
    node_name: str | None
    pod: Pod
    creation: datetime | None
    attempt: int
    best_effort: bool


class JobHead(NamedTuple):
    """``JobInfo``'s fields before ``task_min_available``, by name and in its field order."""

    uid: str
    key: JobKey
    name: str
    namespace: str
    queue: str
    priority: int
    min_available: int
    podgroup: PodGroup
    phase: PodGroupPhase


class RecipeCounters(NamedTuple):
    """A job's counters as ``JobInfo.add_task_infos`` left them, named as ``JobInfo``'s."""

    task_min_available: dict[str, int]
    status_count: dict[TaskStatus, int]
    role_status: dict[str, dict[TaskStatus, int]]
    role_pending_best_effort: dict[str, int]
    role_ready: dict[str, int]


Shape = tuple[Resource, bool, frozenset[str]]
"""A pod request as the session uses it: the shared ``Resource``, best effort, its names."""

_Slots = tuple[tuple[str, int], ...] | None
"""uid → position of the task in the recipe's ``tasks``, in the map's order; ``None`` for
every task in order under its own uid (the usual case)."""


@dataclass(frozen=True, slots=True)
class JobRecipe:
    """How to make one job's ``JobInfo`` and ``TaskInfo`` objects again, and when it is valid.

    Attributes:
        state: the ``PodGroupState`` it was made from (valid while the same object).
        pods: the job's pods it was made from (valid while the same state objects).
        dims: the resource names of the job's stages and pod requests.
    """

    state: PodGroupState
    pods: JobPods
    dims: frozenset[str]
    head: JobHead
    dependent: bool
    creation: datetime | None
    first_seen: datetime | None
    conditions: tuple[Condition, ...]
    tasks: tuple[TaskArgs, ...]
    uids: tuple[str, ...]
    shapes: tuple[Resource, ...]
    """The distinct task requests, first seen first."""
    shape_of: tuple[int, ...] | None
    """Each task's request in ``shapes``; ``None`` when there is one request (or none)."""
    placed: tuple[int, ...]
    """Tasks the session accounts on their nodes (a node and not finished), by position."""
    placed_nodes: tuple[str, ...]
    placed_releasing: tuple[bool, ...]
    placed_pipelined: tuple[bool, ...]
    placed_shapes: tuple[int, ...]
    """Each placed task's request in ``shapes``."""
    placed_statuses: tuple[TaskStatus, ...]
    node_groups: tuple[tuple[str, tuple[int, ...]], ...]
    """Each node of the placed tasks, first placed first, with its tasks' positions."""
    by_uid: _Slots
    by_status: tuple[tuple[TaskStatus, _Slots], ...]
    allocated: Resource
    total_request: Resource
    wait_create: int
    pending_best_effort: int
    ready: int
    valid: int
    shared: RecipeCounters
    """The counters as dicts, shared read only by the jobs made until they make their
    tasks (``JobInfo._materialize`` copies them)."""
    checked: list[tuple[str, int]]
    """The roles the task-level checks apply to (``JobInfo._checked_roles``), shared read
    only: a job works them out again when its roles change."""
    settled: bool
    """Whether the job is settled (``job_updater.settled``)."""

    @classmethod
    def record(
        cls,
        job: JobInfo,
        tasks: list[TaskInfo],
        args: list[TaskArgs],
        *,
        state: PodGroupState,
        pods: JobPods,
        dims: frozenset[str],
    ) -> JobRecipe:
        """Write down a job just built (before the session changes anything of it).

        Args:
            job: the job, its tasks added (``add_task_infos``) and ``wait_create`` set.
            tasks: its tasks, in the order they were made.
            args: the arguments each task was made with (``TaskInfo(*args[i])``).
            state: the ``PodGroupState`` the job was made from.
            pods: the pods its tasks were made from.
            dims: the resource names of the job's stages and pod requests.
        """
        uids = tuple(task.uid for task in tasks)
        position: dict[int, int] = {}

        def slots(bucket: Mapping[str, TaskInfo]) -> _Slots:
            if (
                len(bucket) == len(tasks)
                and tuple(bucket) == uids
                and all(map(operator.is_, bucket.values(), tasks))
            ):
                return None
            if not position:
                position.update((id(task), i) for i, task in enumerate(tasks))
            return tuple((uid, position[id(t)]) for uid, t in bucket.items())

        shape_index: dict[int, int] = {}
        shapes: list[Resource] = []
        shape_of: list[int] = []
        for task in tasks:
            index = shape_index.get(id(task.resreq))
            if index is None:
                index = shape_index[id(task.resreq)] = len(shapes)
                shapes.append(task.resreq)
            shape_of.append(index)
        placed = [
            i
            for i, task in enumerate(tasks)
            if task.node_name and task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
        ]
        groups: dict[str, list[int]] = {}
        for i in placed:
            groups.setdefault(tasks[i].node_name or "", []).append(i)
        return cls(
            state=state,
            pods=pods,
            dims=dims,
            head=JobHead(
                job.uid,
                job.key,
                job.name,
                job.namespace,
                job.queue,
                job.priority,
                job.min_available,
                job.podgroup,
                job.phase,
            ),
            dependent=job.dependent,
            creation=job.creation,
            first_seen=job.first_seen,
            conditions=job.conditions,
            tasks=tuple(args),
            uids=uids,
            shapes=tuple(shapes),
            shape_of=tuple(shape_of) if len(shapes) > 1 else None,
            placed=tuple(placed),
            placed_nodes=tuple(tasks[i].node_name or "" for i in placed),
            placed_releasing=tuple(tasks[i].status is TaskStatus.RELEASING for i in placed),
            placed_pipelined=tuple(tasks[i].status is TaskStatus.PIPELINED for i in placed),
            placed_shapes=tuple(shape_of[i] for i in placed),
            placed_statuses=tuple(tasks[i].status for i in placed),
            node_groups=tuple((name, tuple(members)) for name, members in groups.items()),
            by_uid=slots(job.tasks),
            by_status=tuple(
                (status, slots(bucket)) for status, bucket in job.tasks_by_status.items()
            ),
            allocated=job.allocated,
            total_request=job.total_request,
            wait_create=job.wait_create,
            pending_best_effort=job._pending_best_effort,
            ready=job._ready,
            valid=job._valid,
            shared=RecipeCounters(
                dict(job.task_min_available),
                dict(job._status_count),
                {role: dict(counts) for role, counts in job._role_status.items()},
                dict(job._role_pending_best_effort),
                dict(job._role_ready),
            ),
            checked=job._checked_roles(),
            settled=settled(job, state),
        )

    def matches(self, state: PodGroupState, pods: JobPods) -> bool:
        """Whether the recipe was made from these very objects."""
        if state is not self.state:
            return False
        mine = self.pods
        if pods is mine:
            return True
        return len(pods) == len(mine) and all(
            key == old_key and pod is old_pod
            for (key, pod), (old_key, old_pod) in zip(pods, mine, strict=True)
        )

    def vectors(self, matrix: NodeMatrix, made: dict[int, FloatArray]) -> list[FloatArray]:
        """The request vector of each of ``shapes`` on ``matrix``.

        Args:
            matrix: the session's matrix (its dimensions).
            made: vectors made so far, by ``id`` of the request (filled here).
        """
        out = []
        for resreq in self.shapes:
            vector = made.get(id(resreq))
            if vector is None:
                vector = made[id(resreq)] = matrix.vector(resreq)
            out.append(vector)
        return out

    def make(self, vectors: Sequence[FloatArray], touched: list[JobKey]) -> JobInfo:
        """Return a new ``JobInfo`` equal to the recorded one, its tasks made on first use.

        Args:
            vectors: the session's request vector of each of ``shapes``, given to the tasks.
            touched: the session's jobs whose tasks were made (the job's key is added then).
        """
        task_min, status_count, role_status, role_pending_best_effort, role_ready = self.shared
        return JobInfo(
            *self.head,
            task_min,
            self.dependent,
            self.creation,
            self.first_seen,
            self.conditions,
            {},
            {},
            self.allocated,
            self.total_request,
            {},
            "",
            self.wait_create,
            None,
            status_count,
            role_status,
            role_pending_best_effort,
            self.pending_best_effort,
            self.ready,
            self.valid,
            role_ready,
            self.checked,
            _RecipeTasks(self, vectors, touched),
        )

    def made_it(self, job: JobInfo) -> bool:
        """Whether ``job`` was made from this recipe and is still as made (see ``made``)."""
        lazy = job._lazy
        return (
            isinstance(lazy, _RecipeTasks)
            and lazy._recipe is self
            and job.phase is self.head.phase
            and job.blocked is None
            and not job.nodes_fit_errors
            and not job.job_fit_errors
        )

    def make_tasks(
        self, vectors: Sequence[FloatArray]
    ) -> tuple[list[TaskInfo], dict[str, TaskInfo], dict[TaskStatus, dict[str, TaskInfo]]]:
        """New ``TaskInfo`` objects equal to the recorded ones.

        Returns:
            The tasks in made order, by uid, and by status then uid.
        """
        shape_of = self.shape_of
        if shape_of is not None:
            tasks = [
                TaskInfo(*args, vectors[i]) for args, i in zip(self.tasks, shape_of, strict=True)
            ]
        elif vectors:
            vector = vectors[0]
            tasks = [TaskInfo(*args, vector) for args in self.tasks]
        else:
            tasks = []
        uids = self.uids

        def bucket(slots: _Slots) -> dict[str, TaskInfo]:
            if slots is None:
                return dict(zip(uids, tasks, strict=True))
            return {uid: tasks[i] for uid, i in slots}

        by_status = {status: bucket(slots) for status, slots in self.by_status}
        return tasks, bucket(self.by_uid), by_status


class _RecipeTasks:
    """A recipe's tasks for one session, made when the job's first reader needs them."""

    __slots__ = ("_recipe", "_touched", "_vectors")

    def __init__(
        self, recipe: JobRecipe, vectors: Sequence[FloatArray], touched: list[JobKey]
    ) -> None:
        self._recipe = recipe
        self._vectors = vectors
        self._touched = touched

    @property
    def count(self) -> int:
        return len(self._recipe.uids)

    def make(
        self,
    ) -> tuple[list[TaskInfo], dict[str, TaskInfo], dict[TaskStatus, dict[str, TaskInfo]]]:
        self._touched.append(self._recipe.head.key)
        return self._recipe.make_tasks(self._vectors)

    def placed_nodes(self, statuses: frozenset[TaskStatus]) -> list[str]:
        recipe = self._recipe
        return [
            name
            for name, status in zip(recipe.placed_nodes, recipe.placed_statuses, strict=True)
            if status in statuses
        ]
