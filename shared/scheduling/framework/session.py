"""A scheduling session: a private working copy of a snapshot, plugins' callbacks, and votes.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/session.go`` (``openSession``,
``closeSession``, ``Allocate``, ``Pipeline``, ``Evict``, ``dispatch``) and
volcano@v1.5.1 ``pkg/scheduler/framework/session_plugins.go`` (registrars ``Add…Fn`` and
dispatchers with their aggregation rules; votes from HEAD for ``JobPipelined``/
``JobEnqueueable``), ``framework.go`` (``OpenSession``/``CloseSession``).

Deliberate deviations:
- Plugins come from the ``builders`` table given to ``open_session`` (no global registry).
- Every decision is recorded and returned by ``close_session`` as a ``SessionResult``; the
  session performs no I/O and does not log.
- Node accounting lives in a ``NodeMatrix``; nodes are chosen by a ``PlacementCache``
  (vectorised predicates and scores, ties to the smallest node name, SPEC A7).
- Jobs, tasks, nodes and queues are iterated in sorted order wherever order matters (A7).
- Will-bind reservations of the snapshot (vcbus, ``framework.will_bind``) are counted on their
  nodes as the session opens, so every action and plugin sees reserved capacity as used.
- The working copy is built job by job (by job key, each job's pods by pod key), and a job
  unchanged since the service's last session is made from its recipe in a ``SessionCache``
  (``framework.session_cache``) instead of derived again. Tasks are therefore put on their
  nodes (``NodeInfo.tasks``) job by job, not in pod-key order across jobs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar, cast

import numpy as np

from contracts.keys import JobKey, pod_key
from contracts.objects.meta import Condition
from contracts.objects.pod import PodPhase
from shared.scheduling.framework.conf import (
    Arguments,
    ArgValue,
    Configuration,
    Kind,
    PluginOption,
    Tier,
)
from shared.scheduling.framework.extension_points import (
    AllocatableFn,
    EventHandler,
    EvictableFn,
    ExtensionPoint,
    JobEnqueuedFn,
    JobOrderFn,
    JobReadyFn,
    JobValidFn,
    JobVoteFn,
    NodeFilter,
    NodeOrderFn,
    NodeScoreFn,
    NodeScorer,
    OverusedFn,
    PredicateFn,
    QueueOrderFn,
    ReservedNodesFn,
    RowScoreFn,
    TargetJobFn,
    TaskOrderFn,
)
from shared.scheduling.framework.feasibility import Feasibility
from shared.scheduling.framework.job_updater import status_updates, update_all
from shared.scheduling.framework.placement import Placement, PlacementCache
from shared.scheduling.framework.plugin import Plugin, PluginBuilder
from shared.scheduling.framework.reservation import ReservationLimits
from shared.scheduling.framework.results import (
    BindDecision,
    EnqueueStep,
    EvictDecision,
    Explanation,
    ReservationChange,
    SessionResult,
)
from shared.scheduling.framework.session_cache import JobRecipe, SessionCache, Shape, TaskArgs
from shared.scheduling.framework.status import Code, Status, ValidateResult, Vote
from shared.scheduling.framework.will_bind import WillBindLedger, set_conditions
from shared.scheduling.model import (
    JobInfo,
    NodeInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    task_priority,
)
from shared.scheduling.node_matrix import BoolArray, FloatArray, IntArray, NodeMatrix
from shared.scheduling.resource import Resource
from shared.scheduling.snapshot import (
    ClusterSnapshot,
    JobPods,
    PodGroupState,
    PodState,
    Reservation,
)

_TERMINAL = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
F = TypeVar("F")


_PHASE_STATUS: dict[PodPhase, TaskStatus] = {
    PodPhase.RUNNING: TaskStatus.RUNNING,
    PodPhase.SUCCEEDED: TaskStatus.SUCCEEDED,
    PodPhase.FAILED: TaskStatus.FAILED,
}


def task_status(state: PodState) -> TaskStatus:
    """Task status from a pod's state (volcano ``api/helpers.go`` ``getTaskStatus``)."""
    if state.binding:
        return TaskStatus.BINDING
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
    request shape in ``shapes``; ``TaskInfo`` takes positional arguments (field order).

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
            (
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


class Session:
    """One scheduling cycle's working state and the plugins' callbacks."""

    reservation_limits: ReservationLimits = ReservationLimits()
    """How long a reservation may hold nodes (set by the ``reservation`` plugin)."""
    locks_lifted: bool = False
    """The target is placed: its locked nodes take other jobs' pods again (``lift_locks``)."""
    _feasibility: Feasibility | None = None

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        tiers: Sequence[Tier],
        *,
        now: datetime,
        configurations: Sequence[Configuration] = (),
        actions: Sequence[str] = (),
        arguments: Arguments | None = None,
        cache: SessionCache | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.tiers: tuple[Tier, ...] = tuple(tiers)
        self.now = now
        self.configurations: tuple[Configuration, ...] = tuple(configurations)
        self.actions: tuple[str, ...] = tuple(actions)
        self.arguments: Arguments = dict(arguments or {})
        """Global arguments of the configuration (every plugin sees them too)."""
        self.reservation: Reservation = snapshot.reservation
        self.election_reasons: dict[JobKey, str] = {}
        """Why a job may be elected target (set by the ``reservation`` plugin)."""
        self.plugins: list[tuple[PluginOption, Plugin]] = []

        # Extension points (one registry per kind, gated by the option's flag) ------------
        self._job_order = ExtensionPoint[JobOrderFn](Kind.JOB_ORDER)
        self._queue_order = ExtensionPoint[QueueOrderFn](Kind.QUEUE_ORDER)
        self._task_order = ExtensionPoint[TaskOrderFn](Kind.TASK_ORDER)
        self._job_ready = ExtensionPoint[JobReadyFn](Kind.JOB_READY)
        self._job_pipelined = ExtensionPoint[JobVoteFn](Kind.JOB_PIPELINED)
        self._job_valid = ExtensionPoint[JobValidFn](None)
        self._job_enqueueable = ExtensionPoint[JobVoteFn](Kind.JOB_ENQUEUED)
        self._job_enqueued = ExtensionPoint[JobEnqueuedFn](Kind.JOB_ENQUEUED)
        self._job_starving = ExtensionPoint[JobReadyFn](Kind.JOB_STARVING)
        self._predicate = ExtensionPoint[PredicateFn](Kind.PREDICATE)
        self._node_filter = ExtensionPoint[NodeFilter](Kind.PREDICATE)
        self._node_order = ExtensionPoint[NodeOrderFn](Kind.NODE_ORDER)
        self._node_score = ExtensionPoint[NodeScorer](Kind.NODE_ORDER)
        self._overused = ExtensionPoint[OverusedFn](Kind.OVERUSED)
        self._allocatable = ExtensionPoint[AllocatableFn](Kind.ALLOCATABLE)
        self._target_job = ExtensionPoint[TargetJobFn](Kind.TARGET_JOB)
        self._reserved_nodes = ExtensionPoint[ReservedNodesFn](Kind.RESERVED_NODES)
        self._preemptable = ExtensionPoint[EvictableFn](Kind.PREEMPTABLE)
        self._reclaimable = ExtensionPoint[EvictableFn](Kind.RECLAIMABLE)
        self._event_handlers: list[EventHandler] = []

        # Outputs ---------------------------------------------------------------------------
        self.decisions: list[BindDecision] = []
        self.evictions: list[EvictDecision] = []
        self.explanations: list[Explanation] = []
        self.job_conditions: dict[JobKey, tuple[Condition, ...]] = {}
        """Allocator conditions set by plugins at close (``UpdatePodGroupCondition``)."""
        self.unschedulable: set[JobKey] = set()
        """Jobs given an Unschedulable condition this session (B3.8 rule 1)."""
        self.enqueue_reasons: dict[JobKey, dict[str, str]] = {}
        """Why enqueue left a job Pending: reason code → message (SPEC A8)."""
        self.reservation_changes: list[ReservationChange] = []
        """Elections, locks and unlocks made this session, in order (SPEC A6)."""
        self.enqueue_steps: list[EnqueueStep] = []
        """What enqueue tried this session, in order."""
        self.queue_share: Callable[[QueueInfo], float] | None = None
        """A queue's share now, told by the plugin that keeps shares (proportion)."""

        self._build(snapshot, cache)
        self._placement: PlacementCache | None = None
        self.freeze_dispatch()

    # Building the working copy ---------------------------------------------------------
    def _build(self, snapshot: ClusterSnapshot, cache: SessionCache | None) -> None:
        """Make the session's jobs, tasks, nodes and queues from the snapshot.

        Jobs are built one by one, by job key, each with its pods by pod key; a job the
        cache holds a recipe of (same ``PodGroupState`` and ``PodState`` objects) is made
        from the recipe instead of derived again (``session_cache``).
        """
        groups = snapshot.job_pods()
        shapes: dict[tuple[tuple[str, int], ...], Shape] = cache.shapes if cache is not None else {}
        recipes: dict[JobKey, JobRecipe] = {}
        derived: list[JobKey] = []
        made: list[tuple[JobKey, JobRecipe | tuple[JobInfo, list[TaskInfo]]]] = []
        dims: set[str] = set()
        podgroups = snapshot.podgroups
        for key in sorted(podgroups):
            state = podgroups[key]
            pods = groups.get(key, ())
            recipe = cache.recipe(key, state, pods) if cache is not None else None
            if recipe is not None:
                dims.update(recipe.dims)
                made.append((key, recipe))
                recipes[key] = recipe
                continue
            job, job_tasks, args, job_dims = _derive_job(key, state, pods, shapes)
            dims.update(job_dims)
            made.append((key, (job, job_tasks)))
            if cache is not None:
                recipes[key] = JobRecipe.record(
                    job, job_tasks, args, state=state, pods=pods, dims=job_dims
                )
                derived.append(key)
        if cache is not None:
            cache.keep(recipes, tuple(derived))
        for held in snapshot.will_bind.values():
            for reserved in held.pods:
                dims.update(reserved.requests)

        self.matrix = NodeMatrix(list(snapshot.nodes.values()), extra_dimensions=dims)
        self.node_list: list[NodeInfo] = [
            NodeInfo(name=node.name, node=node, row=row, matrix=self.matrix)
            for row, node in enumerate(self.matrix.nodes)
        ]
        self.nodes: dict[str, NodeInfo] = {n.name: n for n in self.node_list}
        self.jobs: dict[JobKey, JobInfo] = {}
        jobs = self.jobs
        placed = _Placed()
        vectors: dict[int, FloatArray] = {}
        for key, entry in made:
            if isinstance(entry, JobRecipe):
                job_vectors = []
                for resreq in entry.shapes:
                    vector = vectors.get(id(resreq))
                    if vector is None:
                        vector = vectors[id(resreq)] = self.matrix.vector(resreq)
                    job_vectors.append(vector)
                job, job_tasks = entry.make(job_vectors)
                self._place_recipe(entry, job_tasks, placed)
            else:
                job, job_tasks = entry
                self._place(job_tasks, vectors, placed)
            jobs[key] = job
        self.matrix.add_many(placed.rows, placed.requests, placed.releasing, placed.pipelined)
        self.will_bind = WillBindLedger(self, snapshot.will_bind)
        self.matrix.changes.clear()
        self.total_resource = Resource(
            dict(
                zip(
                    self.matrix.dimensions,
                    self.matrix.allocatable.sum(axis=0).tolist(),
                    strict=True,
                )
            )
        )
        self.queues: dict[str, QueueInfo] = {
            name: QueueInfo.from_queue(snapshot.queues[name]) for name in sorted(snapshot.queues)
        }

    def _place(
        self, tasks: Sequence[TaskInfo], vectors: dict[int, FloatArray], placed: _Placed
    ) -> None:
        """Give each task its request vector; collect the placed ones for their nodes."""
        nodes = self.nodes
        for task in tasks:
            resreq = task.resreq
            vector = vectors.get(id(resreq))
            if vector is None:
                vector = vectors[id(resreq)] = self.matrix.vector(resreq)
            task.vector = vector
            node_name = task.node_name
            if node_name and task.status not in _TERMINAL:
                node = nodes.get(node_name)
                if node is not None:
                    status = task.status
                    placed.rows.append(node.row)
                    placed.requests.append(vector)
                    placed.releasing.append(status is TaskStatus.RELEASING)
                    placed.pipelined.append(status is TaskStatus.PIPELINED)
                    node.tasks[task.uid] = task

    def _place_recipe(self, recipe: JobRecipe, tasks: list[TaskInfo], placed: _Placed) -> None:
        """As ``_place`` for tasks made from a recipe (vectors given, placed ones known)."""
        nodes = self.nodes
        for i, name, releasing, pipelined in zip(
            recipe.placed,
            recipe.placed_nodes,
            recipe.placed_releasing,
            recipe.placed_pipelined,
            strict=True,
        ):
            node = nodes.get(name)
            if node is not None:
                task = tasks[i]
                placed.rows.append(node.row)
                placed.requests.append(cast("FloatArray", task.vector))  # made with it
                placed.releasing.append(releasing)
                placed.pipelined.append(pipelined)
                node.tasks[task.uid] = task

    # Registrars (session_plugins.go Add…Fn) ----------------------------------------------
    def add_job_order_fn(self, name: str, fn: JobOrderFn) -> None:
        """Register a job order function (``AddJobOrderFn``)."""
        self._job_order.register(name, fn)

    def add_queue_order_fn(self, name: str, fn: QueueOrderFn) -> None:
        """Register a queue order function (``AddQueueOrderFn``)."""
        self._queue_order.register(name, fn)

    def add_task_order_fn(self, name: str, fn: TaskOrderFn) -> None:
        """Register a task order function (``AddTaskOrderFn``)."""
        self._task_order.register(name, fn)

    def add_job_ready_fn(self, name: str, fn: JobReadyFn) -> None:
        """Register a job ready function (``AddJobReadyFn``)."""
        self._job_ready.register(name, fn)

    def add_job_pipelined_fn(self, name: str, fn: JobVoteFn) -> None:
        """Register a job pipelined vote (``AddJobPipelinedFn``)."""
        self._job_pipelined.register(name, fn)

    def add_job_valid_fn(self, name: str, fn: JobValidFn) -> None:
        """Register a job validity check (``AddJobValidFn``)."""
        self._job_valid.register(name, fn)

    def add_job_enqueueable_fn(self, name: str, fn: JobVoteFn) -> None:
        """Register a job enqueueable vote (``AddJobEnqueueableFn``)."""
        self._job_enqueueable.register(name, fn)

    def add_job_enqueued_fn(self, name: str, fn: JobEnqueuedFn) -> None:
        """Register a callback run when a job is enqueued (``AddJobEnqueuedFn``)."""
        self._job_enqueued.register(name, fn)

    def add_job_starving_fns(self, name: str, fn: JobReadyFn) -> None:
        """Register a job starving function (``AddJobStarvingFns``)."""
        self._job_starving.register(name, fn)

    def add_predicate_fn(self, name: str, fn: PredicateFn) -> None:
        """Register a one-node predicate (``AddPredicateFn``)."""
        self._predicate.register(name, fn)

    def add_node_filter_fn(self, name: str, flt: NodeFilter) -> None:
        """Register a vectorised predicate over many nodes (vcbus)."""
        self._node_filter.register(name, flt)

    def add_node_order_fn(self, name: str, fn: NodeOrderFn) -> None:
        """Register a one-node score (``AddNodeOrderFn``)."""
        self._node_order.register(name, fn)

    def add_node_score_fn(
        self, name: str, fn: NodeScoreFn, row_fn: RowScoreFn | None = None
    ) -> None:
        """Register a vectorised score over many nodes (vcbus; ``AddBatchNodeOrderFn``).

        ``row_fn``, when given, computes the same score for one row in plain Python; the
        placement cache uses it when only a few rows changed.
        """
        self._node_score.register(name, NodeScorer(fn=fn, row_fn=row_fn))

    def add_overused_fn(self, name: str, fn: OverusedFn) -> None:
        """Register a queue overuse check (``AddOverusedFn``)."""
        self._overused.register(name, fn)

    def add_allocatable_fn(self, name: str, fn: AllocatableFn) -> None:
        """Register a queue allocatable check (``AddAllocatableFn``)."""
        self._allocatable.register(name, fn)

    def add_target_job_fn(self, name: str, fn: TargetJobFn) -> None:
        """Register a target-job election function (``AddTargetJobFn``, v1.5.1)."""
        self._target_job.register(name, fn)

    def add_reserved_nodes_fn(self, name: str, fn: ReservedNodesFn) -> None:
        """Register a node-reservation function (``AddReservedNodesFn``, v1.5.1)."""
        self._reserved_nodes.register(name, fn)

    def add_preemptable_fn(self, name: str, fn: EvictableFn) -> None:
        """Register a preemption victim filter (``AddPreemptableFn``)."""
        self._preemptable.register(name, fn)

    def add_reclaimable_fn(self, name: str, fn: EvictableFn) -> None:
        """Register a reclaim victim filter (``AddReclaimableFn``)."""
        self._reclaimable.register(name, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        """Register allocate/deallocate callbacks (``AddEventHandler``)."""
        self._event_handlers.append(handler)

    # Dispatch helpers ------------------------------------------------------------------
    @staticmethod
    def _tier_fns(tier: Tier, point: ExtensionPoint[F]) -> Iterator[F]:
        for option in tier.plugins:
            if point.kind is not None and not option.enabled(point.kind):
                continue
            yield from point.of(option.name)

    def _enabled(self, point: ExtensionPoint[F]) -> Iterator[F]:
        for tier in self.tiers:
            yield from self._tier_fns(tier, point)

    # Dispatchers (session_plugins.go) ------------------------------------------------------
    def job_order_fn(self, left: JobInfo, right: JobInfo) -> bool:
        """Whether ``left`` goes before ``right``: first non-zero plugin, then age and uid."""
        for fn in self._job_order_fns:
            result = fn(left, right)
            if result != 0:
                return result < 0
        if left.creation_key != right.creation_key:
            return left.creation_key < right.creation_key
        return left.uid < right.uid

    def queue_order_fn(self, left: QueueInfo, right: QueueInfo) -> bool:
        """Whether ``left`` goes before ``right``: first non-zero plugin, then name."""
        for fn in self._queue_order_fns:
            result = fn(left, right)
            if result != 0:
                return result < 0
        return left.name < right.name

    def task_compare_fns(self, left: TaskInfo, right: TaskInfo) -> int:
        """The first non-zero task comparison of the plugins (``TaskCompareFns``)."""
        for fn in self._task_order_fns:
            result = fn(left, right)
            if result != 0:
                return result
        return 0

    def task_order_fn(self, left: TaskInfo, right: TaskInfo) -> bool:
        """Whether ``left`` goes before ``right``: plugins, then creation time, then uid."""
        result = self.task_compare_fns(left, right)
        if result != 0:
            return result < 0
        if left.creation_key != right.creation_key:
            return left.creation_key < right.creation_key
        return left.uid < right.uid

    def sort_tasks(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Return tasks in task order (stable, so equal tasks keep their order)."""

        def compare(left: TaskInfo, right: TaskInfo) -> int:
            if self.task_order_fn(left, right):
                return -1
            if self.task_order_fn(right, left):
                return 1
            return 0

        return sorted(tasks, key=functools.cmp_to_key(compare))

    def job_ready(self, job: JobInfo) -> bool:
        """AND of the plugins' ready functions (``JobReady``)."""
        return all(fn(job) for fn in self._job_ready_fns)

    def job_pipelined(self, job: JobInfo) -> bool:
        """Tiered votes: a Reject fails; a Permit in a tier passes; no votes pass."""
        return self._tiered_vote(self._job_pipelined, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        """Tiered votes on enqueueing (``JobEnqueueable``), gated by ``enableJobEnqueued``."""
        return self._tiered_vote(self._job_enqueueable, job)

    def _tiered_vote(self, point: ExtensionPoint[JobVoteFn], job: JobInfo) -> bool:
        for tier in self.tiers:
            permitted = False
            for fn in self._tier_fns(tier, point):
                vote = fn(job)
                if vote == Vote.REJECT:
                    return False
                if vote == Vote.PERMIT:
                    permitted = True
            if permitted:
                return True
        return True

    def collect_enqueue_reasons(self, job: JobInfo) -> None:
        """Ask every enabled enqueue vote about ``job`` so each rejecting plugin says why.

        ``job_enqueueable`` stops at the first Reject; a rejected job's reason must be the
        highest-ranked one (SPEC A8), so enqueue asks them all once more. The votes only read.
        """
        for fn in self._enabled(self._job_enqueueable):
            fn(job)

    def record_enqueue_reason(self, job: JobInfo, reason: str, message: str) -> None:
        """Record why enqueue leaves ``job`` Pending (a reason code of SPEC A8)."""
        self.enqueue_reasons.setdefault(job.key, {})[reason] = message

    def job_enqueued(self, job: JobInfo) -> None:
        """Tell the plugins a job was enqueued (``JobEnqueued``)."""
        for fn in self._enabled(self._job_enqueued):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Per tier: the first tier with functions decides, all must agree (``JobStarving``)."""
        for tier in self.tiers:
            found = False
            for fn in self._tier_fns(tier, self._job_starving):
                found = True
                if not fn(job):
                    return False
            if found:
                return True
        return False

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """The first failing validity check, or ``None`` (``JobValid``)."""
        for fn in self._job_valid_fns:
            result = fn(job)
            if result is not None and not result.passed:
                return result
        return None

    def predicate_fn(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """The first predicate rejecting ``node`` for ``task``, or ``None`` (``PredicateFn``)."""
        rows = np.array([node.row], dtype=np.intp)
        for option in self._options_for(Kind.PREDICATE):
            for flt in self._node_filter.of(option.name):
                if flt.scalar is None and not bool(flt.fn(task, self.matrix, rows)[0]):
                    return Status(code=Code.UNSCHEDULABLE, reason=flt.reason, plugin=option.name)
            for fn in self._predicate.of(option.name):
                status = fn(task, node)
                if status is not None:
                    return status
        return None

    def node_order_fn(self, task: TaskInfo, node: NodeInfo) -> float:
        """Σ of the plugins' scores of ``node`` for ``task`` (``NodeOrderFn``)."""
        rows = np.array([node.row], dtype=np.intp)
        total = 0.0
        for option in self._options_for(Kind.NODE_ORDER):
            for scorer in self._node_score.of(option.name):
                total += float(scorer.fn(task, self.matrix, rows)[0])
            for fn in self._node_order.of(option.name):
                total += fn(task, node)
        return total

    def overused(self, queue: QueueInfo) -> bool:
        """Whether any plugin says ``queue`` is overused (``Overused``)."""
        return any(fn(queue) for fn in self._overused_fns)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether every plugin lets ``queue`` take ``task`` (``Allocatable``)."""
        return all(fn(queue, task) for fn in self._allocatable_fns)

    def target_job(self, jobs: Sequence[JobInfo]) -> JobInfo | None:
        """The first plugin's elected target job (``TargetJob``, v1.5.1)."""
        for fn in self._enabled(self._target_job):
            return fn(jobs)
        return None

    def reserved_nodes(self) -> None:
        """Let the plugins reserve nodes (``ReservedNodes``, v1.5.1)."""
        for fn in self._enabled(self._reserved_nodes):
            fn()

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Victims all plugins of the deciding tier agree on (``Preemptable``)."""
        return self._victims(self._preemptable, preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Victims all plugins of the deciding tier agree on (``Reclaimable``)."""
        return self._victims(self._reclaimable, reclaimer, reclaimees)

    def _victims(
        self, point: ExtensionPoint[EvictableFn], task: TaskInfo, candidates: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        for tier in self.tiers:
            victims: list[TaskInfo] | None = None
            for fn in self._tier_fns(tier, point):
                chosen, vote = fn(task, candidates)
                if vote == Vote.ABSTAIN:
                    continue
                ids = {t.uid for t in chosen}
                victims = list(chosen) if victims is None else [v for v in victims if v.uid in ids]
            if victims is not None:
                return victims
        return []

    # Vectorised node choice ------------------------------------------------------------
    def node_filters(self) -> list[NodeFilter]:
        """The enabled vectorised predicates, scalar-only predicates wrapped, tier order."""
        out: list[NodeFilter] = []
        for option in self._options_for(Kind.PREDICATE):
            out.extend(self._node_filter.of(option.name))
            for fn in self._predicate.of(option.name):
                out.append(self._wrap_predicate(fn))
        return out

    def node_scorers(self) -> list[NodeScorer]:
        """The enabled vectorised scores, scalar-only scores wrapped, tier order."""
        out: list[NodeScorer] = []
        for option in self._options_for(Kind.NODE_ORDER):
            out.extend(self._node_score.of(option.name))
            for fn in self._node_order.of(option.name):
                out.append(NodeScorer(fn=self._wrap_score(fn)))
        return out

    @property
    def has_scalar_scores(self) -> bool:
        """Whether some enabled plugin scores nodes one at a time."""
        return any(self._node_order.of(o.name) for o in self._options_for(Kind.NODE_ORDER))

    def _wrap_predicate(self, fn: PredicateFn) -> NodeFilter:
        def vectorised(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
            del matrix
            return np.array(
                [fn(task, self.node_list[int(r)]) is None for r in rows], dtype=np.bool_
            )

        return NodeFilter(reason="predicate failed", fn=vectorised, dynamic=True, scalar=fn)

    def _wrap_score(self, fn: NodeOrderFn) -> NodeScoreFn:
        def vectorised(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> FloatArray:
            del matrix
            return np.array([fn(task, self.node_list[int(r)]) for r in rows], dtype=np.float64)

        return vectorised

    def _options_for(self, kind: Kind) -> Iterator[PluginOption]:
        for tier in self.tiers:
            for option in tier.plugins:
                if option.enabled(kind):
                    yield option

    @property
    def feasibility(self) -> Feasibility:
        """The cluster as built, judged per job once a session (``framework.feasibility``)."""
        if self._feasibility is None:
            self._feasibility = Feasibility(self.matrix, self.total_resource)
        return self._feasibility

    def infeasibility(self, job: JobInfo) -> str | None:
        """Why ``job`` could never run on this cluster, or ``None``.

        An infeasible job is never a reservation target, and an Inqueue one counts in no
        admission budget (SPEC A6): it would hold it forever.
        """
        return self.feasibility.job(job).why

    def lift_locks(self) -> None:
        """Let the locked nodes take other jobs' pods for the rest of the session (SPEC A6).

        Called once the target's gang is placed; the placement cache is rebuilt, since the
        lock filter answers differently from now on.
        """
        if not self.locks_lifted:
            self.locks_lifted = True
            self._placement = None

    @property
    def placement(self) -> PlacementCache:
        """The session's node-choice cache (built on first use, after plugins registered)."""
        if self._placement is None:
            self._placement = PlacementCache(self)
        return self._placement

    def place(self, task: TaskInfo, prefer: NodeInfo | None = None) -> Placement:
        """Choose a node for ``task`` (resource fit, predicates, scores; see ``placement``).

        Args:
            task: the task to place.
            prefer: a node to take when the task fits its idle resources and passes the
                predicates there (the node reserved for it), whatever the scores say.
        """
        return self.placement.place(task, prefer)

    # Operations (session.go Allocate / Pipeline / Evict / dispatch) --------------------
    def allocate_task(self, task: TaskInfo, node: NodeInfo) -> None:
        """Put ``task`` on ``node`` as Allocated and tell the event handlers."""
        job = self.jobs[task.job]
        task.node_name = node.name
        job.update_task_status(task, TaskStatus.ALLOCATED)
        self._add_to_node(task, node, pipelined=False)
        self._on_allocate(task)

    def pipeline_task(self, task: TaskInfo, node: NodeInfo) -> None:
        """Put ``task`` on ``node``'s releasing resources as Pipelined."""
        job = self.jobs[task.job]
        task.node_name = node.name
        job.update_task_status(task, TaskStatus.PIPELINED)
        self._add_to_node(task, node, pipelined=True)
        self._on_allocate(task)

    def unallocate_task(self, task: TaskInfo) -> None:
        """Undo ``allocate_task`` or ``pipeline_task``: the task is Pending again."""
        node = self.nodes.get(task.node_name or "")
        pipelined = task.status is TaskStatus.PIPELINED
        if node is not None:
            self._remove_from_node(task, node, pipelined=pipelined)
        task.node_name = None
        self.jobs[task.job].update_task_status(task, TaskStatus.PENDING)
        self._on_deallocate(task)

    def evict_task(self, task: TaskInfo) -> None:
        """Mark a placed task Releasing (its resources become future idle)."""
        node = self.nodes.get(task.node_name or "")
        if node is not None:
            self._remove_from_node(task, node, pipelined=False)
        self.jobs[task.job].update_task_status(task, TaskStatus.RELEASING)
        if node is not None:
            self._add_to_node(task, node, pipelined=False)
        self._on_deallocate(task)

    def unevict_task(self, task: TaskInfo, previous: TaskStatus) -> None:
        """Undo ``evict_task``."""
        node = self.nodes.get(task.node_name or "")
        if node is not None:
            self._remove_from_node(task, node, pipelined=False)
        self.jobs[task.job].update_task_status(task, previous)
        if node is not None:
            self._add_to_node(task, node, pipelined=False)
        self._on_allocate(task)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Allocate outside a statement; bind the job's tasks once it is ready.

        Port of ``Session.Allocate`` (used by backfill): the job's Allocated tasks are
        dispatched as soon as ``JobReady`` holds.
        """
        self.allocate_task(task, node)
        job = self.jobs[task.job]
        if self.job_ready(job):
            allocated = job.tasks_by_status.get(TaskStatus.ALLOCATED, {})
            for uid in sorted(allocated):
                self.dispatch(allocated[uid])

    def dispatch(self, task: TaskInfo) -> BindDecision:
        """Make an Allocated task Binding and record the binding decision."""
        self.jobs[task.job].update_task_status(task, TaskStatus.BINDING)
        decision = BindDecision(
            pod=task.pod,
            key=pod_key(task.namespace, task.name),
            job=task.job,
            node=task.node_name or "",
            attempt=task.attempt,
        )
        self.decisions.append(decision)
        return decision

    def record_eviction(self, task: TaskInfo, reason: str) -> EvictDecision:
        """Record an eviction decision for a Releasing task."""
        decision = EvictDecision(
            pod=task.pod,
            key=pod_key(task.namespace, task.name),
            job=task.job,
            node=task.node_name or "",
            reason=reason,
        )
        self.evictions.append(decision)
        return decision

    def _add_to_node(self, task: TaskInfo, node: NodeInfo, *, pipelined: bool) -> None:
        vector = task.vector if task.vector is not None else self.matrix.vector(task.resreq)
        self.matrix.add(
            node.row, vector, releasing=task.status is TaskStatus.RELEASING, pipelined=pipelined
        )
        node.tasks[task.uid] = task

    def _remove_from_node(self, task: TaskInfo, node: NodeInfo, *, pipelined: bool) -> None:
        vector = task.vector if task.vector is not None else self.matrix.vector(task.resreq)
        self.matrix.remove(
            node.row, vector, releasing=task.status is TaskStatus.RELEASING, pipelined=pipelined
        )
        node.tasks.pop(task.uid, None)

    def _on_allocate(self, task: TaskInfo) -> None:
        for handler in self._event_handlers:
            if handler.allocate_func is not None:
                handler.allocate_func(task)

    def _on_deallocate(self, task: TaskInfo) -> None:
        for handler in self._event_handlers:
            if handler.deallocate_func is not None:
                handler.deallocate_func(task)

    # Conditions and explanations -------------------------------------------------------
    def update_pod_group_condition(self, job: JobInfo, conditions: tuple[Condition, ...]) -> None:
        """Set the allocator conditions of a job (``UpdatePodGroupCondition``)."""
        self.job_conditions[job.key] = conditions
        if any(c.type == "Unschedulable" and c.status == "True" for c in conditions):
            self.unschedulable.add(job.key)

    def explain(
        self, job: JobInfo, reason: str, message: str, task: TaskInfo | None = None
    ) -> None:
        """Record why a job did not get what it asked for."""
        self.explanations.append(
            Explanation(
                job=job.key, reason=reason, message=message, task=task.key if task else None
            )
        )

    def action_arguments(self, name: str) -> Arguments:
        """Arguments configured for action ``name``."""
        for configuration in self.configurations:
            if configuration.name == name:
                return configuration.arguments
        return {}

    # Cached dispatcher lists (built after plugins registered) --------------------------
    def freeze_dispatch(self) -> None:
        """Resolve the enabled callbacks once, after every plugin's ``on_session_open``.

        Called at construction (no plugins yet) and by ``open_session`` once plugins opened.
        """
        self._job_order_fns: list[JobOrderFn] = list(self._enabled(self._job_order))
        self._queue_order_fns: list[QueueOrderFn] = list(self._enabled(self._queue_order))
        self._task_order_fns: list[TaskOrderFn] = list(self._enabled(self._task_order))
        self._job_ready_fns: list[JobReadyFn] = list(self._enabled(self._job_ready))
        self._job_valid_fns: list[JobValidFn] = list(self._enabled(self._job_valid))
        self._overused_fns: list[OverusedFn] = list(self._enabled(self._overused))
        self._allocatable_fns: list[AllocatableFn] = list(self._enabled(self._allocatable))


def open_session(
    snapshot: ClusterSnapshot,
    tiers: Sequence[Tier],
    *,
    builders: Mapping[str, PluginBuilder],
    now: datetime,
    configurations: Sequence[Configuration] = (),
    arguments: Arguments | None = None,
    actions: Sequence[str] = (),
    cache: SessionCache | None = None,
) -> Session:
    """Open a session on a snapshot: build the working copy, then open every plugin.

    Args:
        snapshot: the cluster state of this cycle.
        tiers: the plugin tiers of the configuration.
        builders: plugin name → builder (the catalogue of ``scheduler``, above the framework).
        now: the cycle's time (from ``ctx``).
        configurations: per-action arguments.
        arguments: global arguments every plugin sees under its own.
        actions: the actions this session will run (some plugins look at them).
        cache: the service's job recipes (``session_cache``); ``None`` derives every job.

    Returns:
        The open session.

    Raises:
        KeyError: when a tier names a plugin ``builders`` lacks (``parse_conf`` prevents it).
    """
    ssn = Session(
        snapshot,
        tiers,
        now=now,
        configurations=configurations,
        actions=actions,
        arguments=arguments,
        cache=cache,
    )
    shared: dict[str, ArgValue] = dict(arguments or {})
    for tier in ssn.tiers:
        for option in tier.plugins:
            builder = builders[option.name]
            plugin = builder({**shared, **option.arguments})
            ssn.plugins.append((option, plugin))
    for _, plugin in ssn.plugins:
        plugin.on_session_open(ssn)
    ssn.freeze_dispatch()
    return ssn


def close_session(ssn: Session) -> SessionResult:
    """Close a session: plugins report, PodGroup phases and conditions are computed.

    Returns:
        The decisions, PodGroup updates, explanations and will-bind changes of the session.
    """
    for _, plugin in ssn.plugins:
        plugin.on_session_close(ssn)
    set_conditions(ssn)
    return SessionResult(
        decisions=tuple(ssn.decisions),
        evictions=tuple(ssn.evictions),
        podgroup_updates=update_all(ssn),
        explanations=tuple(ssn.explanations),
        reservation_update=(
            ssn.reservation if ssn.reservation != ssn.snapshot.reservation else None
        ),
        reservation_changes=tuple(ssn.reservation_changes),
        locks_lifted=ssn.locks_lifted,
        status_updates=status_updates(ssn),
        will_bind_changes=tuple(ssn.will_bind.changes),
        enqueue_steps=tuple(ssn.enqueue_steps),
    )
