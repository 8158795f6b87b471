"""Proportion: queues share the cluster by weight, within capability, above guarantee.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/proportion/proportion.go`` (queue attributes,
the ``deserved`` water-filling loop, ``QueueOrderFn``, ``OverusedFn``, ``AllocatableFn``,
``JobEnqueueableFn``, ``JobEnqueuedFn``, ``ReclaimableFn``, ``PreemptiveFn``, event
handlers) as Volcano's enqueue.go and allocate.go and proportion.go describe.

Deliberate deviations:
- Queues are visited in name order (Volcano iterates a map), so floating-point sums are the
  same on every run (docs/design.md#determinism).
- ``Allocatable`` compares ``allocated + request ≤ deserved`` on the dimensions the task
  requests, plainly (Volcano's allocate.go), and refuses tasks of a queue that is not Open; the job
  records why (``QueueClosed``/``QueueOverCapability``, A8).
- Queue hierarchy (``parent``) is not ported.
- ``JobEnqueueable`` records why it rejects (``QueueNotFound``, ``QueueClosed``,
  ``QueueOverCapability``, docs/design.md#pending-reasons), in words that do not change every cycle.
- Shares follow weights in enqueue too (docs/design.md#queue-shares). A queue asks for its Pending
  jobs' minResources as well (in vcbus a Pending job has no pods yet), so its deserved share is
  not capped at what its admitted jobs ask. A queue's share counts, beside what is
  allocated, the admitted part not placed yet (``inqueue``), and is recomputed after every
  job enqueue admits and every task allocate places; so one enqueue pass hands the
  admission budget out by weight instead of in blocks to the first queue by name. Volcano
  orders by ``allocated / deserved`` and updates no share during enqueue.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import (
    CLUSTER_OVERUSED,
    GANG_UNSCHEDULABLE,
    NEVER_ADMITTED,
    QUEUE_CLOSED,
    QUEUE_NOT_FOUND,
    QUEUE_OVER_CAPABILITY,
)
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.extension_points import (
    AllocatableFn,
    EventHandler,
    EvictableFn,
    JobVoteFn,
    QueueOrderFn,
    TaskFn,
)
from vcbus.core.scheduling.framework.kept import Amounts, KeptByJob, Sum
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.votes import Vote
from vcbus.core.scheduling.model import (
    ALLOCATED_STATUSES,
    JobInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from vcbus.core.scheduling.resource import Missing, Resource, brief, share
from vcbus.core.units import show_amount

NAME = "proportion"


@dataclass(slots=True)
class QueueAttr:
    """A queue's accounting in this session (Volcano ``queueAttr``)."""

    name: str
    weight: int
    deserved: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    guarantee: Resource = field(default_factory=Resource)
    capability: Resource | None = None
    real_capability: Resource = field(default_factory=Resource)
    share: float = 0.0

    def update_share(self) -> None:
        """``share = max over deserved's dimensions of (allocated + inqueue) / deserved``.

        ``inqueue`` is the admitted part not placed yet: work the queue was already given.
        """
        committed = self.allocated + self.inqueue
        self.share = max(
            (share(committed.amount(n), self.deserved.amount(n)) for n in self.deserved),
            default=0.0,
        )


def _brief(resource: Resource) -> str:
    parts = [
        f"{n} {show_amount(n, round(resource.amount(n)))}"
        for n in resource.requested_names()
        if math.isfinite(resource.amount(n))
    ]
    return ", ".join(parts) or "nothing"


def _accumulate(into: dict[str, float], amounts: Resource, times: int = 1) -> None:
    for name, amount in amounts._amounts.items():  # raw amounts: hot loop of open
        into[name] = into.get(name, 0.0) + amount * times


class _JobPart(NamedTuple):
    """One job's part of its queue's sums at session open (Volcano's loop over its tasks)."""

    key: JobKey
    queue: str
    allocated: Amounts
    request: Amounts
    inqueue: Amounts
    elastic: Amounts
    admitted: tuple[Resource, Resource] | None
    """(minResources, its unplaced part) when the unplaced part counts as ``inqueue``."""


def _job_part(
    job: JobInfo, *, total: Resource, queue_open: bool, infeasible: bool = False
) -> _JobPart:
    """What one job adds to its queue's sums, as the session opens.

    Volcano adds each allocated task's request to allocated and request, each pending
    one's to request, and each job's inqueue and elastic parts. A Pending job's minimum
    counts as asked for (docs/design.md#queue-shares) when its queue is open and the cluster
    (``total``) could hold it: demand that can never be admitted must not shrink the other queues'
    deserved shares. An ``infeasible`` Inqueue job (no node could ever hold it) counts in no
    admission budget (docs/design.md#reservation): it would hold it forever.
    """
    allocated_sum: dict[str, float] = {}
    request: dict[str, float] = {}
    inqueue: dict[str, float] = {}
    elastic: dict[str, float] = {}
    allocated = job.allocated
    held = job.count(*ALLOCATED_STATUSES)
    if held:
        _accumulate(allocated_sum, allocated)
        _accumulate(request, allocated)
    pending = job.tasks_by_status.get(TaskStatus.PENDING) if job.has_pending_tasks() else None
    if pending:
        shapes: dict[int, tuple[Resource, list[int]]] = {}
        for task in pending.values():
            entry = shapes.get(id(task.resreq))
            if entry is None:
                entry = shapes[id(task.resreq)] = (task.resreq, [0])
            entry[1][0] += 1
        for resreq, (n,) in shapes.values():
            _accumulate(request, resreq, n)
    minimum = _min_resources(job)
    if (
        job.phase is PodGroupPhase.PENDING
        and queue_open
        and minimum.less_equal_on(total, minimum.requested_names())
    ):
        # A10: a Pending job asks for its minimum even before it has pods.
        _accumulate(request, minimum.exceeded_part(job.total_request))
    _accumulate(elastic, allocated.exceeded_part(minimum))
    admitted = None
    if (job.phase is PodGroupPhase.INQUEUE and not infeasible) or (
        job.phase is PodGroupPhase.RUNNING
        and job.podgroup.min_resources
        and held >= job.min_available
    ):
        unplaced = minimum.exceeded_part(allocated)
        _accumulate(inqueue, unplaced)
        admitted = (minimum, unplaced)
    return _JobPart(
        job.key,
        job.queue,
        tuple(allocated_sum.items()),
        tuple(request.items()),
        tuple(inqueue.items()),
        tuple(elastic.items()),
        admitted,
    )


class _QueueSums:
    """A queue's job sums at session open (``allocated``, ``request``, …), by job part.

    Exact whatever the order (``kept.Sum``): the sums of every job, and Volcano's.
    """

    __slots__ = ("allocated", "elastic", "inqueue", "jobs", "request")

    def __init__(self) -> None:
        self.jobs = 0
        self.allocated = Sum()
        self.request = Sum()
        self.inqueue = Sum()
        self.elastic = Sum()

    def add(self, part: _JobPart, sign: int = 1) -> None:
        """Add a job's part (take it off: ``sign`` -1)."""
        self.jobs += sign
        self.allocated.add(part.allocated, sign)
        self.request.add(part.request, sign)
        self.inqueue.add(part.inqueue, sign)
        self.elastic.add(part.elastic, sign)

    def apply(self, attr: QueueAttr) -> None:
        """Add the sums to the queue's attributes."""
        attr.allocated = attr.allocated + Resource(self.allocated.amounts)
        attr.request = attr.request + Resource(self.request.amounts)
        attr.inqueue = attr.inqueue + Resource(self.inqueue.amounts)
        attr.elastic = attr.elastic + Resource(self.elastic.amounts)


class _KeptSums:
    """The jobs' parts and the queues' sums, kept between sessions (``framework.kept``)."""

    __slots__ = ("admitted", "parts", "queues")

    def __init__(self) -> None:
        self.parts: KeptByJob[_JobPart | None] = KeptByJob()
        self.queues: dict[str, _QueueSums] = {}
        self.admitted: dict[JobKey, tuple[Resource, Resource]] = {}

    def update(self, ssn: Session) -> None:
        """Bring the parts and sums up to the session's jobs."""
        total = ssn.total_resource
        queues = ssn.queues
        cache = ssn.cache
        inputs = (
            tuple(sorted(total._amounts.items())),
            tuple((name, queue.is_open()) for name, queue in queues.items()),
            cache.nodes_generation if cache is not None else None,
        )

        def part_of(job: JobInfo) -> _JobPart | None:
            queue = queues.get(job.queue)
            if queue is None:
                return None
            infeasible = job.phase is PodGroupPhase.INQUEUE and ssn.infeasibility(job) is not None
            return _job_part(job, total=total, queue_open=queue.is_open(), infeasible=infeasible)

        patch = self.parts.update(cache, ssn.jobs, inputs, part_of)
        if patch.whole:
            self.queues, self.admitted = {}, {}
        for part in patch.removed:
            if part is not None:
                self._add(part, -1)
        for part in patch.added:
            if part is not None:
                self._add(part, 1)

    def _add(self, part: _JobPart, sign: int) -> None:
        sums = self.queues.get(part.queue)
        if sums is None:
            sums = self.queues[part.queue] = _QueueSums()
        sums.add(part, sign)
        if not sums.jobs:
            del self.queues[part.queue]
        if part.admitted is not None:
            if sign > 0:
                self.admitted[part.key] = part.admitted
            else:
                del self.admitted[part.key]


def _min_resources(job: JobInfo) -> Resource:
    return Resource({k: float(v) for k, v in job.podgroup.min_resources.items()})


class ProportionPlugin:
    """The ``proportion`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.queue_opts: dict[str, QueueAttr] = {}
        self.admitted: dict[JobKey, tuple[Resource, Resource]] = {}
        """Job key → (minResources, its unplaced part counted in the queue's ``inqueue``)."""

    def on_session_open(self, ssn: Session) -> None:
        """Compute every queue's deserved share and register the queue rules."""
        total = ssn.total_resource
        total_guarantee = Resource()
        for queue in ssn.queues.values():
            total_guarantee = total_guarantee + queue.guarantee
        kept = ssn.cache.kept(NAME, _KeptSums) if ssn.cache is not None else _KeptSums()
        kept.update(ssn)
        for name in sorted(kept.queues):
            attr = self.queue_opts[name] = self._attr(ssn.queues[name], total, total_guarantee)
            kept.queues[name].apply(attr)
        self.admitted = kept.admitted.copy()
        self._water_fill(total)

        ssn.add_queue_order_fn(NAME, self._queue_order(ssn))
        ssn.add_queue_share_fn(NAME, self._share)
        ssn.add_overused_fn(NAME, self._overused)
        ssn.add_allocatable_fn(NAME, self._allocatable(ssn))
        ssn.add_job_enqueueable_fn(NAME, self._enqueueable(ssn))
        ssn.add_job_enqueued_fn(NAME, self._enqueued)
        ssn.add_reclaimable_fn(NAME, self._reclaimable(ssn))
        ssn.add_preemptive_fn(NAME, self._preemptive)
        ssn.add_reclaim_room_fn(NAME, self._reclaim_room(ssn))
        ssn.add_event_handler(
            EventHandler(
                allocate_func=self._on_allocate(ssn), deallocate_func=self._on_deallocate(ssn)
            )
        )

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session's state."""
        self.queue_opts.clear()
        self.admitted.clear()

    # Attributes ------------------------------------------------------------------------
    @staticmethod
    def _attr(queue: QueueInfo, total: Resource, total_guarantee: Resource) -> QueueAttr:
        real = (total - total_guarantee) + queue.guarantee
        if queue.capability is not None:
            real = real.min_dimension(queue.capability, Missing.INFINITY)
        return QueueAttr(
            name=queue.name,
            weight=queue.weight,
            guarantee=queue.guarantee,
            capability=queue.capability,
            real_capability=real,
        )

    def _water_fill(self, total: Resource) -> None:
        """Distribute the cluster by weight until every queue is met (Volcano's proportion.go)."""
        remaining = total
        meet: set[str] = set()
        while True:
            total_weight = sum(a.weight for n, a in self.queue_opts.items() if n not in meet)
            if total_weight == 0:
                break
            old_remaining = remaining
            increased_total, decreased_total = Resource(), Resource()
            for name in sorted(self.queue_opts):
                if name in meet:
                    continue
                attr = self.queue_opts[name]
                old = attr.deserved
                deserved = old + remaining.multi(attr.weight / total_weight)
                deserved = deserved.min_dimension(attr.real_capability, Missing.INFINITY)
                deserved = deserved.min_dimension(attr.request, Missing.ZERO)
                if attr.request.less_equal(deserved, Missing.ZERO) or deserved == old:
                    meet.add(name)
                attr.deserved = deserved.maximum(attr.guarantee)
                attr.update_share()
                increased, decreased = attr.deserved.diff(old)
                increased_total = increased_total + increased
                decreased_total = decreased_total + decreased
            remaining = (remaining - increased_total) + decreased_total
            if remaining.is_empty() or remaining == old_remaining:
                break

    # Callbacks -------------------------------------------------------------------------
    def _queue_order(self, ssn: Session) -> QueueOrderFn:
        def order(left: QueueInfo, right: QueueInfo) -> int:
            if left.priority != right.priority:
                return -1 if left.priority > right.priority else 1
            left_attr, right_attr = self.queue_opts.get(left.name), self.queue_opts.get(right.name)
            if left_attr is None or right_attr is None or left_attr.share == right_attr.share:
                return 0
            return -1 if left_attr.share < right_attr.share else 1

        del ssn
        return order

    def _share(self, queue: QueueInfo) -> float:
        attr = self.queue_opts.get(queue.name)
        return attr.share if attr is not None else 0.0

    def _overused(self, queue: QueueInfo) -> bool:
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return False
        return attr.deserved.less_equal(attr.allocated, Missing.ZERO)

    def _allocatable(self, ssn: Session) -> AllocatableFn:
        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            job = ssn.jobs[task.job]
            if not queue.is_open():
                job.blocked = (QUEUE_CLOSED, f"queue {queue.name} is {queue.state.value}")
                return False
            attr = self.queue_opts.get(queue.name)
            if attr is None:
                return True
            request = task.resreq
            requested = request.requested_names()
            allocated, deserved = attr.allocated, attr.deserved
            if all(
                allocated.amount(d) + request.amount(d) <= deserved.amount(d) for d in requested
            ):
                return True
            future = allocated + request
            if attr.capability is not None and not future.less_equal_on(attr.capability, requested):
                job.blocked = (
                    QUEUE_OVER_CAPABILITY,
                    f"queue {queue.name} would exceed its capability ({_brief(attr.capability)})",
                )
            else:
                job.blocked = (
                    GANG_UNSCHEDULABLE,
                    f"queue {queue.name} is at its deserved share ({_brief(attr.deserved)})",
                )
            return False

        return allocatable

    def _preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """``preemptiveFn``: an open queue may reclaim for ``task`` up to its deserved share.

        volcano@v1.12.0 ``proportion.go``: ``allocated + request ≤ deserved`` on the
        task's requested dimensions; vcbus also refuses a queue that is not Open (Volcano's
        reclaim test "can not reclaim resources when queue is not open").
        """
        if not queue.is_open():
            return False
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return True
        future = attr.allocated + task.resreq
        return future.less_equal_on(attr.deserved, task.resreq.requested_names())

    def _reclaim_room(self, ssn: Session) -> Callable[[JobInfo], Resource]:
        """What ``job``'s queue may reclaim: others' excess over deserved, up to its own gap."""

        def room(job: JobInfo) -> Resource:
            own = self.queue_opts.get(job.queue)
            if own is None:
                return Resource()
            gap = own.deserved - own.allocated - own.inqueue
            excess = Resource()
            for name in sorted(self.queue_opts):
                attr = self.queue_opts[name]
                queue = ssn.queues.get(name)
                if name == job.queue or queue is None or not queue.queue.reclaimable:
                    continue
                above = attr.allocated - attr.deserved
                excess = excess + Resource({n: max(above.amount(n), 0.0) for n in above})
            return Resource(
                {n: max(min(gap.amount(n), excess.amount(n)), 0.0) for n in gap.names()}
            )

        return room

    def _reclaimable(self, ssn: Session) -> EvictableFn:
        """``reclaimableFn`` (volcano@v1.12.0 ``proportion.go``): victims of queues above share.

        A reclaimee is a victim while its queue's allocation (less the victims already
        chosen) is above its deserved share on some dimension.
        """

        def reclaimable(
            reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
        ) -> tuple[list[TaskInfo], Vote]:
            del reclaimer
            victims = []
            allocations: dict[str, Resource] = {}
            for task in reclaimees:
                queue = ssn.jobs[task.job].queue
                attr = self.queue_opts.get(queue)
                if attr is None:
                    continue
                allocated = allocations.setdefault(queue, attr.allocated)
                if not allocated.less_equal(attr.deserved, Missing.ZERO):
                    allocations[queue] = allocated - task.resreq
                    victims.append(task)
            return victims, Vote.PERMIT

        return reclaimable

    def _enqueueable(self, ssn: Session) -> JobVoteFn:
        def enqueueable(job: JobInfo) -> Vote:
            queue = ssn.queues.get(job.queue)
            if queue is None:
                ssn.record_enqueue_reason(job, QUEUE_NOT_FOUND, f"queue {job.queue} does not exist")
                return Vote.REJECT
            if not queue.is_open():
                ssn.record_enqueue_reason(
                    job, QUEUE_CLOSED, f"queue {queue.name} is {queue.state.value}"
                )
                return Vote.REJECT
            attr = self.queue_opts.get(queue.name)
            if attr is None or not job.podgroup.min_resources:
                return Vote.PERMIT
            minimum = _min_resources(job)
            wanted = ((minimum + attr.allocated) + attr.inqueue) - attr.elastic
            names = minimum.requested_names()
            if wanted.less_equal_on(attr.real_capability, names):
                return Vote.PERMIT
            code, message = _over_capability(queue.name, attr, minimum, names)
            ssn.record_enqueue_reason(job, code, message)
            return Vote.REJECT

        return enqueueable

    def _enqueued(self, job: JobInfo) -> None:
        attr = self.queue_opts.get(job.queue)
        if attr is not None and job.podgroup.min_resources:
            minimum = _min_resources(job)
            unplaced = minimum.exceeded_part(job.allocated)
            self.admitted[job.key] = (minimum, unplaced)
            attr.inqueue = attr.inqueue + unplaced
            attr.update_share()  # A10: the next queue in this pass sees the admission

    def _on_allocate(self, ssn: Session) -> TaskFn:
        def handler(task: TaskInfo) -> None:
            self._placed(ssn.jobs[task.job], task.resreq, taken_back=False)

        return handler

    def _on_deallocate(self, ssn: Session) -> TaskFn:
        def handler(task: TaskInfo) -> None:
            self._placed(ssn.jobs[task.job], task.resreq, taken_back=True)

        return handler

    def _placed(self, job: JobInfo, request: Resource, *, taken_back: bool) -> None:
        """Account a task's ``request`` placed (or taken back) to the queue of ``job``.

        An admitted job's unplaced part shrinks (or grows back) with what it holds, so the
        queue's share counts each admitted resource once (docs/design.md#queue-shares).
        """
        attr = self.queue_opts.get(job.queue)
        if attr is None:
            return
        attr.allocated = attr.allocated - request if taken_back else attr.allocated + request
        entry = self.admitted.get(job.key)
        if entry is not None:
            minimum, before = entry
            after = minimum.exceeded_part(job.allocated)
            self.admitted[job.key] = (minimum, after)
            attr.inqueue = (attr.inqueue - before) + after
        attr.update_share()


def new(arguments: Arguments) -> ProportionPlugin:
    """Build the plugin."""
    return ProportionPlugin(arguments)


def _over_capability(
    queue: str, attr: QueueAttr, minimum: Resource, names: tuple[str, ...]
) -> tuple[str, str]:
    """Why a job whose minimum does not fit its queue's real capability waits, and the words.

    ``QueueOverCapability`` only for a queue with a capability of its own: its minimum
    alone over it (it can never be admitted as it is), or beside the queue's running and
    inqueue jobs (it waits for them). A queue without one is capped by what the cluster
    has left after the other queues' guarantees: the job waits for the cluster
    (``ClusterOverused``), never for a capability the queue does not have.
    """
    capability = brief(attr.real_capability, names)
    if attr.capability is None:
        return (
            CLUSTER_OVERUSED,
            f"the cluster has no room for minResources {brief(minimum, names)} beside the "
            f"running and inqueue jobs (queue {queue} has no capability; the cluster's, "
            f"after other queues' guarantees: {capability})",
        )
    if not minimum.less_equal_on(attr.real_capability, names):
        return (
            QUEUE_OVER_CAPABILITY,
            f"minResources {brief(minimum, names)} exceed queue {queue}'s capability "
            f"({capability}): {NEVER_ADMITTED}",
        )
    return (
        QUEUE_OVER_CAPABILITY,
        f"queue {queue} would exceed its capability: minResources "
        f"{brief(minimum, names)} do not fit beside its running and inqueue jobs "
        f"(capability {capability})",
    )
