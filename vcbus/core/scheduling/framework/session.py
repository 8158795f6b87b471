"""A scheduling session: a private working copy of a snapshot, its operations, open and close.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/session.go`` (``openSession``,
``closeSession``, ``Allocate``, ``Pipeline``, ``Evict``, ``dispatch``) and ``framework.go``
(``OpenSession``/``CloseSession``). The registrars and dispatchers of
``session_plugins.go`` are ``framework.session_plugins`` (``Session`` inherits them); the
working copy is built by ``framework.working_copy``.

Deliberate deviations:
- Plugins come from the ``builders`` table given to ``open_session`` (no global registry;
  the catalogue lives above the framework, in ``vcbus.core.scheduling.scheduler``). What a
  plugin is (``Plugin``, ``PluginBuilder``; Volcano's ``interface.go``) is declared here,
  beside the session whose opening and closing call its two hooks.
- Every decision is recorded and returned by ``close_session`` as a ``SessionResult``; the
  session performs no I/O and does not log.
- Node accounting lives in a ``NodeMatrix``; nodes are chosen by a ``PlacementCache``
  (vectorised predicates and scores, ties to the smallest node name, docs/design.md#determinism).
- Jobs, tasks, nodes and queues are iterated in sorted order wherever order matters
  (docs/design.md#determinism).
- Will-bind reservations of the snapshot (vcbus, ``framework.will_bind``) are counted on their
  nodes as the session opens, so every action and plugin sees reserved capacity as used.
- The working copy is built job by job, a job unchanged since the service's last session
  from its recipe in a ``SessionCache`` (``framework.working_copy``,
  ``framework.session_cache``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from vcbus.contracts.keys import JobKey, pod_key
from vcbus.contracts.objects.meta import Condition
from vcbus.core.reasons import UNSCHEDULABLE
from vcbus.core.scheduling.framework.conf import (
    Arguments,
    ArgValue,
    Configuration,
    PluginOption,
    Tier,
)
from vcbus.core.scheduling.framework.feasibility import Feasibility
from vcbus.core.scheduling.framework.job_updater import phases, status_updates, update_all
from vcbus.core.scheduling.framework.nomination_open import open_nominations
from vcbus.core.scheduling.framework.placement import Placement, PlacementCache
from vcbus.core.scheduling.framework.plan import Plan, Releases
from vcbus.core.scheduling.framework.results import (
    BindDecision,
    EnqueueStep,
    EvictDecision,
    EvictNote,
    Explanation,
    NominationChange,
    ReservationChange,
    SessionResult,
)
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.framework.session_plugins import SessionPlugins
from vcbus.core.scheduling.framework.will_bind import WillBindLedger, set_conditions
from vcbus.core.scheduling.framework.working_copy import build_working_copy
from vcbus.core.scheduling.holds import Nomination, Reservation
from vcbus.core.scheduling.model import (
    JobInfo,
    NodeInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.snapshot import ClusterSnapshot


class Plugin(Protocol):
    """A scheduler plugin: registers callbacks at session open, reports at session close."""

    @property
    def name(self) -> str:
        """The plugin's configuration name (``gang``, ``drf`` …)."""
        ...

    def on_session_open(self, ssn: Session) -> None:
        """Register callbacks on the session."""
        ...

    def on_session_close(self, ssn: Session) -> None:
        """Record what the plugin concludes (conditions, explanations)."""
        ...


PluginBuilder = Callable[[Arguments], Plugin]
"""Builds a plugin from its arguments (``open_session`` takes a table of them)."""


class Session(SessionPlugins):
    """One scheduling cycle's working state (the plugins' callbacks: ``SessionPlugins``)."""

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
        self.now = now
        self.configurations: tuple[Configuration, ...] = tuple(configurations)
        self.actions: tuple[str, ...] = tuple(actions)
        self.arguments: Arguments = dict(arguments or {})
        """Global arguments of the configuration (every plugin sees them too)."""
        self.reservation: Reservation = snapshot.reservation
        self._locks_lifted = False
        self.plugins: list[tuple[PluginOption, Plugin]] = []

        super().__init__(tiers)

        # Outputs ---------------------------------------------------------------------------
        self.decisions: list[BindDecision] = []
        self.evictions: list[EvictDecision] = []
        self.explanations: list[Explanation] = []
        self.job_conditions: dict[JobKey, tuple[Condition, ...]] = {}
        """Allocator conditions set by plugins at close (``UpdatePodGroupCondition``)."""
        self.unschedulable: set[JobKey] = set()
        """Jobs given an Unschedulable condition this session (B3.8 rule 1)."""
        self.enqueue_reasons: dict[JobKey, dict[str, str]] = {}
        """Why enqueue left a job Pending: reason code → message."""
        self.reservation_changes: list[ReservationChange] = []
        """Elections, locks and unlocks made this session, in order (docs/design.md#reservation)."""
        self.enqueue_steps: list[EnqueueStep] = []
        """What enqueue tried this session, in order."""
        self.nominated: dict[JobKey, Nomination] = {}
        """Nominations still waiting this session (``framework.nomination``)."""
        self.nomination_changes: list[NominationChange] = []
        """Nominations made and ended this session, in order."""

        self._cache = cache
        copy = build_working_copy(snapshot, cache)
        self.matrix = copy.matrix
        self.node_list = copy.node_list
        self.nodes: dict[str, NodeInfo] = copy.nodes
        self.jobs: dict[JobKey, JobInfo] = copy.jobs
        """The session's jobs by key, in no particular order: a walk that needs an order
        sorts the keys (or walks ``unsettled_jobs``)."""
        self._unsettled = copy.unsettled
        self._touched = copy.touched
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
        self._placement: PlacementCache | None = None
        self.plans: list[Plan] = []
        """Planned starts whose nodes other jobs keep off (``framework.planning``).

        See docs/design.md#planned-start.
        """
        self.plan_releases: tuple[int, Releases] | None = None
        """What placed pods give back by their deadlines, with the count of matrix changes
        it was made at (``framework.planning``)."""
        self.oldest_planned: dict[str, JobKey] = {}
        """Per queue, the oldest waiting job, first in job order, whose planned start is
        kept besides the head's (the ``aging`` plugin's ``aging-oldest-plan``)."""

    def release(self) -> None:
        """Drop what refers back to the session once it closed.

        Its plugins, their callbacks and the node-choice cache: the session and everything
        it made are then freed as soon as the caller drops it, not by the cyclic collector.
        """
        self.release_plugins()
        self.plugins.clear()
        self._placement = None

    def unsettled_jobs(self) -> list[JobKey]:
        """Every job but the settled ones, by job key (``job_updater.settled``).

        What a pass that leaves a settled job as it is and records nothing of it walks.
        A settled job was made from a settled recipe, its queue exists, and the session
        has not touched it: its tasks were not made (every change of a task makes them
        first), and it has no condition, reason or will-bind entry of this session. Without
        a cache every job is unsettled.
        """
        if self._unsettled is None:
            return sorted(self.jobs)
        awake = set(self._unsettled)
        awake.update(self._touched)
        for entries in (
            self.job_conditions,
            self.unschedulable,
            self.enqueue_reasons,
            self.will_bind.held,
            self.will_bind.timed_out,
        ):
            awake.update(entries)
        jobs = self.jobs
        return sorted(key for key in awake if key in jobs)

    def queues_in_job_order(self) -> list[str]:
        """The queues (that exist) with a job, in the order of their first job by job key.

        The order a walk over every job by key first meets them in; with a cache, from its
        recipes' queues (``SessionCache.first_jobs``), without walking the jobs.
        """
        if self._unsettled is None or self._cache is None:
            seen: dict[str, None] = {}
            for key in sorted(self.jobs):
                queue = self.jobs[key].queue
                if queue in self.queues:
                    seen.setdefault(queue)
            return list(seen)
        first = self._cache.first_jobs()
        return sorted((q for q in first if q in self.queues), key=first.__getitem__)

    @property
    def cache(self) -> SessionCache | None:
        """The service's cache, kept between its sessions (``None`` in tests without one)."""
        return self._cache

    @property
    def feasibility(self) -> Feasibility:
        """The cluster as built, judged per job once a session (``framework.feasibility``)."""
        if self._feasibility is None:
            self._feasibility = Feasibility(self.matrix, self.total_resource, self._cache)
        return self._feasibility

    def infeasibility(self, job: JobInfo) -> str | None:
        """Why ``job`` could never run on this cluster, or ``None``.

        An infeasible job is never a reservation target, and an Inqueue one counts in no
        admission budget (docs/design.md#reservation): it would hold it forever.
        """
        return self.feasibility.job(job).why

    @property
    def locks_lifted(self) -> bool:
        """The target is placed: its locked nodes take other jobs' pods again.

        Session state with one writer, ``lift_locks`` (called by allocate); the predicates
        plugin reads it, and ``close_session`` returns it (``SessionResult.locks_lifted``).
        """
        return self._locks_lifted

    def lift_locks(self) -> None:
        """Let the locked nodes take other jobs' pods for the rest of the session.

        Called once the target's gang is placed; the placement cache is rebuilt, since the
        lock filter answers differently from now on.
        """
        if not self._locks_lifted:
            self._locks_lifted = True
            self._placement = None

    def forget_placement(self) -> None:
        """Rebuild the node-choice cache on next use: a node filter was added or changed."""
        self._placement = None
        for job in self.jobs.values():
            if job.materialized:  # tasks made later have none yet
                for task in job.tasks.values():
                    task.signature = None

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

    def hold_task(self, task: TaskInfo, node: NodeInfo) -> None:
        """Pipeline ``task`` on ``node`` holding its whole request, idle part included.

        A nominated pod (``framework.nomination``) waits for capacity its victims release;
        unlike ``pipeline_task`` the request counts as used at once, so no other task is
        placed on the node's idle part it will need, nor pipelined onto the same release.
        """
        job = self.jobs[task.job]
        task.node_name = node.name
        job.update_task_status(task, TaskStatus.PIPELINED)
        self._add_to_node(task, node, pipelined=False)
        self._on_allocate(task)

    def unhold_task(self, task: TaskInfo) -> None:
        """Undo ``hold_task``: the task is Pending again."""
        node = self.nodes.get(task.node_name or "")
        if node is not None:
            self._remove_from_node(task, node, pipelined=False)
        task.node_name = None
        self.jobs[task.job].update_task_status(task, TaskStatus.PENDING)
        self._on_deallocate(task)

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

    def record_eviction(
        self, task: TaskInfo, reason: str, note: EvictNote | None = None
    ) -> EvictDecision:
        """Record an eviction decision for a Releasing task."""
        decision = EvictDecision(
            pod=task.pod,
            key=pod_key(task.namespace, task.name),
            job=task.job,
            node=task.node_name or "",
            reason=reason,
            note=note,
        )
        self.evictions.append(decision)
        return decision

    def _add_to_node(self, task: TaskInfo, node: NodeInfo, *, pipelined: bool) -> None:
        vector = task.vector if task.vector is not None else self.matrix.vector(task.resreq)
        self.matrix.add(
            node.row, vector, releasing=task.status is TaskStatus.RELEASING, pipelined=pipelined
        )
        node.add_task(task)

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
        if any(c.type == UNSCHEDULABLE and c.status == "True" for c in conditions):
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

    def record_enqueue_reason(self, job: JobInfo, reason: str, message: str) -> None:
        """Record why enqueue leaves ``job`` Pending (a code of docs/design.md#pending-reasons)."""
        self.enqueue_reasons.setdefault(job.key, {})[reason] = message

    def action_arguments(self, name: str) -> Arguments:
        """Arguments configured for action ``name``."""
        for configuration in self.configurations:
            if configuration.name == name:
                return configuration.arguments
        return {}


def admitted_valid_jobs(
    ssn: Session, *, with_tasks: Callable[[JobInfo], bool] | None = None
) -> Iterator[tuple[JobInfo, QueueInfo]]:
    """Jobs past enqueue whose gang is valid, with their queue, in key order.

    What backfill, preempt and reclaim walk (each of Volcano's three loops skips a pending
    job, an invalid one and one whose queue is unknown alike).

    Args:
        ssn: the session.
        with_tasks: a cheap filter checked before validity (the walk's own first test,
            backfill's "has pending best-effort tasks"): a job it refuses is skipped
            without judging its gang, which has no effect on the session. It refuses a
            job whose every task is Running: with it, settled jobs are not walked.
    """
    for key in sorted(ssn.jobs) if with_tasks is None else ssn.unsettled_jobs():
        job = ssn.jobs[key]
        if job.is_pending():
            continue
        if with_tasks is not None and not with_tasks(job):
            continue
        result = ssn.job_valid(job)
        if result is not None and not result.passed:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is not None:
            yield job, queue


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
    open_nominations(ssn)
    return ssn


def close_session(ssn: Session) -> SessionResult:
    """Close a session: plugins report, PodGroup phases and conditions are computed.

    Returns:
        The decisions, PodGroup updates, explanations and will-bind changes of the session.
    """
    for _, plugin in ssn.plugins:
        plugin.on_session_close(ssn)
    set_conditions(ssn)
    closing = phases(ssn)
    result = SessionResult(
        decisions=tuple(ssn.decisions),
        evictions=tuple(ssn.evictions),
        podgroup_updates=update_all(ssn, closing),
        explanations=tuple(ssn.explanations),
        reservation_update=(
            ssn.reservation if ssn.reservation != ssn.snapshot.reservation else None
        ),
        reservation_changes=tuple(ssn.reservation_changes),
        locks_lifted=ssn.locks_lifted,
        status_updates=status_updates(ssn, closing),
        will_bind_changes=tuple(ssn.will_bind.changes),
        enqueue_steps=tuple(ssn.enqueue_steps),
        nomination_changes=tuple(ssn.nomination_changes),
    )
    ssn.release()
    return result
