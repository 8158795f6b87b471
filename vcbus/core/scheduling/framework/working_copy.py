"""The session's working copy: jobs, tasks and nodes built from a snapshot, job by job.

Port of the copying half of volcano@v1.12.0 ``pkg/scheduler/framework/session.go``
``openSession`` (jobs, nodes and queues taken from the cache's snapshot) and of
``pkg/scheduler/api/helpers.go`` ``getTaskStatus``.

Deliberate deviations (vcbus's speed layer):
- The working copy is built job by job (by job key, each job's pods by pod key), and a job
  unchanged since the service's last session is made from its recipe in a ``SessionCache``
  (``framework.session_cache``) instead of derived again. Tasks are therefore put on their
  nodes (``NodeInfo.tasks``) job by job, not in pod-key order across jobs.
- A job made from a recipe makes its ``TaskInfo`` objects only when something first reads
  them (``JobInfo.tasks``); its placed tasks are counted in the matrix from the recipe, and
  a node takes them into ``NodeInfo.tasks`` when that is first read, in the same order as
  if they had been made at once (``NodeInfo.place_later``). A steady cycle makes task
  objects for the jobs it changes, not for every pod of the cluster.
- Node accounting lives in a ``NodeMatrix``: the placed tasks of every job are added to it
  at once (``NodeMatrix.add_many``); one request vector is made per request shape.
- The matrix has a column for every resource named by a stage, a pod request or a will-bind
  reservation of the snapshot, so the will-bind ledger can count its pods on their nodes.

This module and ``session_cache`` are two rooms with one direction
(docs/architecture.md#working-copy-and-session-cache): the working copy lives for one session and
drives the build, asking the cache, the service's memory across sessions, which never
imports it back; a job's recipe (``job_recipe``) knows neither. With a cache, a build is
these steps, in order: which jobs changed (``SessionCache.changed_since``, ``seen``); the
recipes, kept or derived again (``recipe``, ``recipes``, ``keep``); the resource names and
unsettled jobs (``dimensions``, ``unsettled``); the nodes and their accounting (``nodes``,
``placements``); the jobs (``made``); the session's unsettled jobs for the next
(``awake``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.job_recipe import JobRecipe, Shape, TaskArgs
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.model import (
    JobInfo,
    NodeBoard,
    NodeInfo,
    TaskInfo,
    TaskStatus,
    task_priority,
)
from vcbus.core.scheduling.node_matrix import FloatArray, NodeMatrix
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.snapshot import ClusterSnapshot, JobPods, PodGroupState, PodState

__all__ = ["WorkingCopy", "build_working_copy", "task_status"]

_TERMINAL = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)

_PHASE_STATUS: dict[PodPhase, TaskStatus] = {
    PodPhase.RUNNING: TaskStatus.RUNNING,
    PodPhase.SUCCEEDED: TaskStatus.SUCCEEDED,
    PodPhase.FAILED: TaskStatus.FAILED,
}


def task_status(state: PodState) -> TaskStatus:
    """Task status from a pod's state (volcano ``api/helpers.go`` ``getTaskStatus``)."""
    if state.binding:
        return TaskStatus.BINDING
    if state.releasing:
        return TaskStatus.RELEASING
    phase = state.phase
    if phase == PodPhase.PENDING:
        return TaskStatus.BOUND if state.node else TaskStatus.PENDING
    return _PHASE_STATUS.get(phase, TaskStatus.UNKNOWN)


def _derive_job(
    key: JobKey,
    state: PodGroupState,
    pods: JobPods,
    shapes: dict[tuple[tuple[str, int], ...], Shape],
) -> tuple[JobInfo, list[TaskInfo], list[TaskArgs], frozenset[str]]:
    """Build a job and its tasks from its ``PodGroupState`` and its pods (by pod key).

    A pod's request dict, as given (its item order), names one shared ``Resource`` per
    request shape in ``shapes``; each task is made from its ``TaskArgs`` (``TaskInfo``'s
    leading fields, in order), which the job's recipe keeps.

    Returns:
        The job (tasks added, ``wait_create`` set), its tasks, the arguments each task was
        made with, and the resource names of its stages and pod requests.
    """
    pg = state.podgroup
    job = JobInfo(
        uid=pg.uid or str(key),
        key=key,
        name=pg.name,
        namespace=pg.namespace,
        queue=pg.queue,
        priority=pg.priority,
        min_available=pg.min_member,
        podgroup=pg,
        phase=state.phase,
        task_min_available=dict(sorted(pg.min_task_member.items())),
        dependent=pg.dependent,
        creation=pg.creation_timestamp,
        first_seen=state.first_seen,
        conditions=state.conditions,
    )
    dims: set[str] = set()
    for stage in pg.stages:
        dims.update(stage.requests)
    args: list[TaskArgs] = []
    seen: set[int] = set()
    for pkey, pod_state in pods:
        pod = pod_state.pod
        given = tuple(pod.requests.items())
        shape = shapes.get(given)
        if shape is None:
            req_key = tuple(sorted(given))
            resreq = Resource({k: float(v) for k, v in req_key})
            shape = shapes[given] = (resreq, resreq.is_empty(), frozenset(n for n, _ in req_key))
        resreq, best_effort, names = shape
        if id(names) not in seen:
            seen.add(id(names))
            dims.update(names)
        args.append(
            TaskArgs(
                pod.uid or str(pkey),
                pkey,
                pod.name,
                pod.namespace,
                key,
                pod.task,
                pod.index,
                task_priority(pod),
                resreq,
                task_status(pod_state),
                pod_state.node,
                pod,
                pod.creation_timestamp,
                pod_state.attempt,
                best_effort,
            )
        )
    tasks = [TaskInfo(*task_args) for task_args in args]
    job.add_task_infos(tasks)
    if job.dependent:
        present = set(job.roles())
        job.wait_create = sum(
            m for r, m in job.task_min_available.items() if m > 0 and r not in present
        )
    return job, tasks, args, frozenset(dims)


@dataclass(slots=True)
class _Placed:
    """Tasks to account on their nodes as the session opens (``NodeMatrix.add_many``)."""

    rows: list[int] = field(default_factory=list)
    requests: list[FloatArray] = field(default_factory=list)
    releasing: list[bool] = field(default_factory=list)
    pipelined: list[bool] = field(default_factory=list)


@dataclass(slots=True)
class WorkingCopy:
    """A session's private jobs, tasks and nodes, with the tasks counted on their nodes."""

    matrix: NodeMatrix
    node_list: list[NodeInfo]
    """Nodes in matrix row order."""
    nodes: dict[str, NodeInfo]
    jobs: dict[JobKey, JobInfo]
    unsettled: list[JobKey] | None = None
    """The jobs not made from a settled recipe (``job_updater.settled``) or whose queue
    is missing, by job key; ``None``: every job (no cache)."""
    touched: list[JobKey] = field(default_factory=list)
    """The jobs made from a recipe whose tasks were made since (filled as they are)."""


def build_working_copy(snapshot: ClusterSnapshot, cache: SessionCache | None) -> WorkingCopy:
    """Make a session's jobs, tasks and nodes from the snapshot.

    Jobs are built one by one, by job key, each with its pods by pod key; a job the
    cache holds a recipe of (same ``PodGroupState`` and ``PodState`` objects) is made
    from the recipe instead of derived again (``session_cache``). With a cache that knows
    which jobs changed since its last session (the view's ``JobChanges``), only those are
    looked at (``_patched``); else every job is (``_walked``).

    Args:
        snapshot: the cluster state of this cycle.
        cache: the service's job recipes; ``None`` derives every job.

    Returns:
        The working copy; the matrix still lists its changes (the session clears them).
    """
    if cache is not None:
        changed = cache.changed_since(snapshot)
        cache.seen(snapshot)
        return _walked(snapshot, cache) if changed is None else _patched(snapshot, cache, changed)
    groups = snapshot.job_pods()
    shapes: dict[tuple[tuple[str, int], ...], Shape] = {}
    made: list[tuple[JobKey, JobInfo, list[TaskInfo]]] = []
    dims: set[str] = _will_bind_dims(snapshot)
    podgroups = snapshot.podgroups
    for key in sorted(podgroups):
        job, job_tasks, _, job_dims = _derive_job(key, podgroups[key], groups.get(key, ()), shapes)
        dims.update(job_dims)
        made.append((key, job, job_tasks))
    jobs: dict[JobKey, JobInfo] = {}
    vectors: dict[int, FloatArray] = {}
    matrix = NodeMatrix(list(snapshot.nodes.values()), extra_dimensions=dims)
    board = NodeBoard(matrix=matrix)
    node_list = [
        NodeInfo(name=node.name, node=node, row=row, board=board)
        for row, node in enumerate(matrix.nodes)
    ]
    nodes = _by_name(node_list)
    placed = _Placed()
    for key, job, job_tasks in made:
        _give_vectors(job, job_tasks, matrix, vectors)
        _place(job, job_tasks, nodes, placed)
        jobs[key] = job
    matrix.add_many(placed.rows, placed.requests, placed.releasing, placed.pipelined)
    return WorkingCopy(matrix=matrix, node_list=node_list, nodes=nodes, jobs=jobs)


def _walked(snapshot: ClusterSnapshot, cache: SessionCache) -> WorkingCopy:
    """``build_working_copy`` with a cache, walking every job.

    A job the cache holds a recipe of (same ``PodGroupState`` and ``PodState`` objects) is
    made from it; the others are derived, and their recipes kept.
    """
    groups = snapshot.job_pods()
    shapes = cache.shapes
    recipes: dict[JobKey, JobRecipe] = {}
    derived: list[JobKey] = []
    fresh: list[tuple[JobInfo, list[TaskInfo]]] = []
    podgroups = snapshot.podgroups
    for key in sorted(podgroups):
        state = podgroups[key]
        pods = groups.get(key, ())
        recipe = cache.recipe(key, state, pods)
        if recipe is None:
            job, job_tasks, args, job_dims = _derive_job(key, state, pods, shapes)
            recipe = JobRecipe.record(job, job_tasks, args, state=state, pods=pods, dims=job_dims)
            derived.append(key)
            fresh.append((job, job_tasks))
        recipes[key] = recipe
    cache.keep(recipes, tuple(derived))
    return _from_cache(snapshot, cache, changed=None, derived=fresh)


def _will_bind_dims(snapshot: ClusterSnapshot) -> set[str]:
    """The resource names of the pods held for will-bind (they count on nodes too)."""
    return {
        name for held in snapshot.will_bind.values() for pod in held.pods for name in pod.requests
    }


def _from_cache(
    snapshot: ClusterSnapshot,
    cache: SessionCache,
    *,
    changed: frozenset[JobKey] | None,
    derived: list[tuple[JobInfo, list[TaskInfo]]],
) -> WorkingCopy:
    """The working copy with a cache, its recipes kept (``SessionCache.keep``).

    Args:
        snapshot: the cluster state of this cycle.
        cache: the service's cache.
        changed: the only jobs that may differ from the last session's (``None``: any).
        derived: the jobs derived afresh, with their tasks in made order.
    """
    dims = cache.dimensions() | _will_bind_dims(snapshot)
    unsettled = cache.unsettled(snapshot.queues, [job.key for job, _ in derived])
    template, made_nodes = cache.nodes(list(snapshot.nodes.values()), frozenset(dims))
    vectors: dict[int, FloatArray] = {}
    matrix, index = cache.placements(template, cache.kept_recipes(), vectors, changed)
    jobs = cache.made(matrix, changed, {job.key: job for job, _ in derived}, vectors)
    for job, job_tasks in derived:
        _give_vectors(job, job_tasks, matrix, vectors)
    jobs = jobs.copy()  # the cache keeps its own; ``copy``, not ``dict()``: no slow path
    made_nodes.board.start(matrix, jobs, index)
    cache.awake(unsettled)
    return WorkingCopy(
        matrix=matrix,
        node_list=made_nodes.node_list,
        nodes=made_nodes.by_name,
        jobs=jobs,
        unsettled=unsettled,
        touched=cache.touched,
    )


def _patched(
    snapshot: ClusterSnapshot, cache: SessionCache, changed: frozenset[JobKey]
) -> WorkingCopy:
    """``build_working_copy`` when only ``changed`` jobs may differ from the last session's.

    The jobs that did not change keep their recipes, and the settled ones the last session
    did not touch are the same ``JobInfo`` objects (``SessionCache.made``): the
    session costs by what changed, not by the jobs.
    """
    groups = snapshot.job_pods()
    podgroups = snapshot.podgroups
    shapes = cache.shapes
    recipes = cache.recipes()
    derived: list[JobKey] = []
    fresh: list[tuple[JobInfo, list[TaskInfo]]] = []
    for key in sorted(changed):
        state = podgroups.get(key)
        if state is None:
            recipes.pop(key, None)
            continue
        pods = groups.get(key, ())
        recipe = recipes.get(key)
        if recipe is not None and recipe.matches(state, pods):
            continue
        job, job_tasks, args, job_dims = _derive_job(key, state, pods, shapes)
        recipes[key] = JobRecipe.record(job, job_tasks, args, state=state, pods=pods, dims=job_dims)
        derived.append(key)
        fresh.append((job, job_tasks))
    cache.keep(recipes, tuple(derived), changed=changed)
    return _from_cache(snapshot, cache, changed=changed, derived=fresh)


def _by_name(node_list: list[NodeInfo]) -> dict[str, NodeInfo]:
    return {n.name: n for n in node_list}


def _give_vectors(
    job: JobInfo, tasks: list[TaskInfo], matrix: NodeMatrix, vectors: dict[int, FloatArray]
) -> None:
    """Give each task of a job just derived its request vector; keep their made order."""
    job.keep_made(tasks)
    for task in tasks:
        resreq = task.resreq
        vector = vectors.get(id(resreq))
        if vector is None:
            vector = vectors[id(resreq)] = matrix.vector(resreq)
        task.vector = vector


def _place(
    job: JobInfo, tasks: list[TaskInfo], nodes: dict[str, NodeInfo], placed: _Placed
) -> None:
    """Collect the placed tasks of a job (vectors given) for the matrix and their nodes."""
    for position, task in enumerate(tasks):
        node_name = task.node_name
        if node_name and task.status not in _TERMINAL:
            node = nodes.get(node_name)
            if node is not None:
                status = task.status
                placed.rows.append(node.row)
                placed.requests.append(cast("FloatArray", task.vector))
                placed.releasing.append(status is TaskStatus.RELEASING)
                placed.pipelined.append(status is TaskStatus.PIPELINED)
                node.place_later(job, (position,))
