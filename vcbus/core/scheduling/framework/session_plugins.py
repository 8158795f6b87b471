"""The plugins' side of a session: extension points, registrars and dispatchers.

Port of volcano@v1.5.1 ``pkg/scheduler/framework/session_plugins.go`` (registrars ``Add…Fn``
and dispatchers with their aggregation rules; votes from HEAD for ``JobPipelined``/
``JobEnqueueable``). ``SessionPlugins`` is the half of ``Session`` this file holds in Go:
``Session`` inherits it (``framework.session``).

Deliberate deviations:
- One ``ExtensionPoint[F]`` per callback kind instead of one map per kind, gated by the
  plugin option's ``enable…`` flag.
- Dispatchers that run often read callback lists resolved once, after every plugin's
  ``on_session_open`` (``freeze_dispatch``).
- ``Preemptive`` asks one candidate task at a time (reclaim asks per task, as Volcano's
  reclaim does with a one-task list).
- vcbus's own points (``extension_points``): ``queue_share``, ``reclaim_room`` and
  ``reservation_limits``, always on; ``target_job`` answers with why the job qualifies.
- Predicates and node scores may be vectorised over many nodes (``add_node_filter_fn``,
  ``add_node_score_fn``); one-node ones are wrapped so node choice (``placement``) sees one
  list of each, in tier order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

import numpy as np

from vcbus.core.scheduling.framework.conf import Kind, PluginOption, Tier
from vcbus.core.scheduling.framework.extension_points import (
    AllocatableFn,
    Election,
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
    PreemptiveFn,
    QueueOrderFn,
    QueueShareFn,
    ReclaimRoomFn,
    ReservedNodesFn,
    RowScoreFn,
    TargetJobFn,
    TaskOrder,
)
from vcbus.core.scheduling.framework.reservation_changes import ReservationLimits
from vcbus.core.scheduling.framework.votes import Code, Status, ValidateResult, Vote
from vcbus.core.scheduling.model import JobInfo, NodeInfo, QueueInfo, TaskInfo
from vcbus.core.scheduling.node_matrix import BoolArray, FloatArray, IntArray, NodeMatrix
from vcbus.core.scheduling.resource import Resource

__all__ = ["SessionPlugins"]

F = TypeVar("F")


class SessionPlugins:
    """The plugins' callbacks of a session, and the dispatchers that combine them."""

    tiers: tuple[Tier, ...]
    matrix: NodeMatrix
    """The session's node accounting (set by ``Session`` from its working copy)."""
    node_list: list[NodeInfo]
    """The session's nodes in matrix row order (set by ``Session``)."""

    def __init__(self, tiers: Sequence[Tier]) -> None:
        """Make the empty extension points of ``tiers``' plugins."""
        self.tiers = tuple(tiers)
        self._job_order = ExtensionPoint[JobOrderFn](Kind.JOB_ORDER)
        self._queue_order = ExtensionPoint[QueueOrderFn](Kind.QUEUE_ORDER)
        self._task_order = ExtensionPoint[TaskOrder](Kind.TASK_ORDER)
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
        self._preemptive = ExtensionPoint[PreemptiveFn](Kind.PREEMPTIVE)
        self._queue_share = ExtensionPoint[QueueShareFn](None)
        self._reclaim_room = ExtensionPoint[ReclaimRoomFn](None)
        self._reservation_limits = ExtensionPoint[ReservationLimits](None)
        self._event_handlers: list[EventHandler] = []
        self._enqueue_asked: tuple[JobInfo | None, list[JobVoteFn]] = (None, [])

    def release_plugins(self) -> None:
        """Forget every plugin callback: a closed session is freed as soon as it is dropped.

        The callbacks hold their plugin, which holds the session: without this a session,
        with its snapshot and maps, would wait for the cyclic garbage collector.
        """
        for value in vars(self).values():
            if isinstance(value, ExtensionPoint):
                value.clear()
        self._event_handlers.clear()
        self._enqueue_asked = (None, [])
        """The job ``job_enqueueable`` asked about last, and the votes it asked."""
        self.freeze_dispatch()

    # Registrars (session_plugins.go Add…Fn) ----------------------------------------------
    def add_job_order_fn(self, name: str, fn: JobOrderFn) -> None:
        """Register a job order function (``AddJobOrderFn``)."""
        self._job_order.register(name, fn)

    def add_queue_order_fn(self, name: str, fn: QueueOrderFn) -> None:
        """Register a queue order function (``AddQueueOrderFn``)."""
        self._queue_order.register(name, fn)

    def add_task_order_fn(self, name: str, fn: TaskOrder) -> None:
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

    def add_preemptive_fn(self, name: str, fn: PreemptiveFn) -> None:
        """Register whether a queue may reclaim for a task (``AddPreemptiveFn``)."""
        self._preemptive.register(name, fn)

    def add_queue_share_fn(self, name: str, fn: QueueShareFn) -> None:
        """Register a queue's share now (vcbus)."""
        self._queue_share.register(name, fn)

    def add_reclaim_room_fn(self, name: str, fn: ReclaimRoomFn) -> None:
        """Register what a job's queue may take back from other queues (vcbus)."""
        self._reclaim_room.register(name, fn)

    def add_reservation_limits(self, name: str, limits: ReservationLimits) -> None:
        """Register how long a reservation may hold nodes (vcbus)."""
        self._reservation_limits.register(name, limits)

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
        return self.job_compare(left, right) < 0

    def job_compare(self, left: JobInfo, right: JobInfo) -> int:
        """``job_order_fn`` as a comparison: negative when ``left`` goes first, 0 for one job.

        A total order (every job order function is antisymmetric, and age and uid decide
        the rest), so ``sorted(jobs, key=functools.cmp_to_key(ssn.job_compare))`` lists
        jobs in the order a ``PriorityQueue(ssn.job_order_fn)`` of them pops them, and
        ``PriorityQueue(compare=ssn.job_compare)`` orders them the same with one call.
        """
        for fn in self._job_order_fns:
            result = fn(left, right)
            if result != 0:
                return result
        if left.creation_key != right.creation_key:
            return -1 if left.creation_key < right.creation_key else 1
        if left.uid != right.uid:
            return -1 if left.uid < right.uid else 1
        return 0

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
        """Return tasks in task order (stable, so equal tasks keep their order).

        By the plugins' keys, then creation time, then uid: :meth:`task_order_fn`'s order.
        """
        keys = [fn.key for fn in self._task_order_fns]
        return sorted(tasks, key=lambda t: (*(key(t) for key in keys), t.creation_key, t.uid))

    def job_ready(self, job: JobInfo) -> bool:
        """AND of the plugins' ready functions (``JobReady``)."""
        return all(fn(job) for fn in self._job_ready_fns)

    def job_pipelined(self, job: JobInfo) -> bool:
        """Tiered votes: a Reject fails; a Permit in a tier passes; no votes pass."""
        return self._tiered_vote(self._job_pipelined, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        """Tiered votes on enqueueing (``JobEnqueueable``), gated by ``enableJobEnqueued``."""
        asked: list[JobVoteFn] = []
        self._enqueue_asked = (job, asked)
        return self._tiered_vote(self._job_enqueueable, job, asked)

    def _tiered_vote(
        self, point: ExtensionPoint[JobVoteFn], job: JobInfo, asked: list[JobVoteFn] | None = None
    ) -> bool:
        for tier in self.tiers:
            permitted = False
            for fn in self._tier_fns(tier, point):
                if asked is not None:
                    asked.append(fn)
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
        highest-ranked one (docs/design.md#pending-reasons), so enqueue asks the others too. The
        votes only read (and record their reasons), so a vote ``job_enqueueable`` just asked about
        this job is not asked again.
        """
        last, asked = self._enqueue_asked
        skip = asked if last is job else ()
        for fn in self._enabled(self._job_enqueueable):
            if fn not in skip:
                fn(job)

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

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether ``queue`` may reclaim for ``task`` (``Preemptive``).

        volcano HEAD ``session_plugins.go``: every plugin whose ``enablePreemptive`` is not
        false must agree; a plugin with the flag off is skipped, and no function means yes.
        """
        return all(fn(queue, task) for fn in self._enabled(self._preemptive))

    def queue_share(self, queue: QueueInfo) -> float | None:
        """The first plugin's share of ``queue`` now, or ``None`` when none keeps shares."""
        for fn in self._enabled(self._queue_share):
            return fn(queue)
        return None

    def reclaim_room(self, job: JobInfo) -> Resource:
        """Σ of what the plugins say ``job``'s queue may take back (empty when none)."""
        room = Resource()
        for fn in self._enabled(self._reclaim_room):
            room = room + fn(job)
        return room

    @property
    def reservation_limits(self) -> ReservationLimits:
        """The first plugin's reservation limits, else the defaults (none set)."""
        for limits in self._enabled(self._reservation_limits):
            return limits
        return ReservationLimits()

    def target_job(self, jobs: Sequence[JobInfo]) -> Election | None:
        """The first plugin's elected target job and why (``TargetJob``, v1.5.1)."""
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

    # Cached dispatcher lists (built after plugins registered) --------------------------
    def freeze_dispatch(self) -> None:
        """Resolve the enabled callbacks once, after every plugin's ``on_session_open``.

        Called at construction (no plugins yet) and by ``open_session`` once plugins opened.
        """
        self._job_order_fns: list[JobOrderFn] = list(self._enabled(self._job_order))
        self._queue_order_fns: list[QueueOrderFn] = list(self._enabled(self._queue_order))
        self._task_order_fns: list[TaskOrder] = list(self._enabled(self._task_order))
        self._job_ready_fns: list[JobReadyFn] = list(self._enabled(self._job_ready))
        self._job_valid_fns: list[JobValidFn] = list(self._enabled(self._job_valid))
        self._overused_fns: list[OverusedFn] = list(self._enabled(self._overused))
        self._allocatable_fns: list[AllocatableFn] = list(self._enabled(self._allocatable))
