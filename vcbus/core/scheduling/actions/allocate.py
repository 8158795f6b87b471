"""Allocate: place pending tasks of queued jobs, gang by gang, all or nothing.

Port of volcano@v1.12.0 ``pkg/scheduler/actions/allocate/allocate.go`` (``pickUpQueuesAndJobs``,
``allocateResources``, ``allocateResourcesForTasks``, ``prioritizeNodes``,
``allocateResourcesForTask``) with HEAD's commit rule (Volcano's allocate.go): a job's statement is
committed only when the job is ready, kept (resources held, nothing bound) when it is only
pipelined, and discarded otherwise; a ready job with tasks left goes back to its queue, so its
extra replicas are handed out one per turn.

Deliberate deviations:
- Pending PodGroups are skipped: vcbus always runs an enqueue stage (podgroup-enqueue), so
  allocate does not promote them to Inqueue unless the action argument
  ``promote-pending: true`` is given (Volcano promotes them when no ``enqueue`` action is
  configured in the same scheduler).
- docs/design.md#dependent-jobs: a ready dependent job is not pushed back for its best-effort
  (beyond-minimum) pods in the same cycle, so other jobs' minimum pods are not starved.
- Node choice is vectorised and ties go to the node name that sorts first
  (docs/design.md#determinism).
- Sub-jobs, network topology, scheduling gates and nominated nodes are not modelled.
- Will-bind (vcbus, ``framework.will_bind``): first, reservations that are no longer due are
  released and the later stages of dependent jobs are reserved where they fit; a pending
  pod takes the capacity reserved for it and goes to the reserved node when it fits there;
  when a dependent job's statement commits, its stages without pods yet are reserved at once.
  Arguments ``will-bind`` and ``will-bind-timeout``.
- Nominations (``framework.nomination``): first of all, the pods a preempt or
  reclaim nominated on nodes take those nodes' idle capacity, so the capacity their
  victims released goes to no other job; their job binds once its gang is ready.
- Planned starts (docs/design.md#planned-start, ``framework.planning``): the first job of each queue
  that cannot start now, or is still Pending, gets a planned start from the running pods'
  deadlines; the nodes that start needs take no pod of a job that ends after it. With the
  ``aging`` plugin's ``aging-oldest-plan``, the queue's oldest waiting job is planned too,
  and the head around it (``framework.planning.plans_another``).
- Reservation (docs/design.md#reservation, no harm): the target of a reservation with locked nodes
  has the first turn; once its gang is placed (in this session or before), the locks are lifted
  for the rest of the session (``Session.lift_locks``), so the other jobs of the same cycle
  use the freed nodes instead of waiting for the unlock of the next cycle.
"""

from __future__ import annotations

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import QUEUE_NOT_FOUND, QUEUE_OVERUSED
from vcbus.core.scheduling.fit_errors import FitErrors
from vcbus.core.scheduling.framework.arguments import get_bool
from vcbus.core.scheduling.framework.nomination import place_nominated
from vcbus.core.scheduling.framework.planning import Made, keep_for, plan_next, plans_another
from vcbus.core.scheduling.framework.priority_queue import PriorityQueue
from vcbus.core.scheduling.framework.reservation_changes import is_target_ready
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.statement import Statement
from vcbus.core.scheduling.framework.will_bind import WillBindArgs
from vcbus.core.scheduling.framework.will_bind_allocate import (
    refresh,
    reserve_stages,
    will_bind_args,
)
from vcbus.core.scheduling.model import JobInfo, QueueInfo, TaskInfo

NAME = "allocate"
PROMOTE_PENDING = "promote-pending"


class AllocateAction:
    """The ``allocate`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Run allocate over the session."""
        promote = get_bool(ssn.action_arguments(NAME), PROMOTE_PENDING, default=False)
        will_bind = _before_jobs(ssn)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        pending: dict[str, list[TaskInfo]] = {}
        heads: dict[str, list[JobInfo]] = {}
        for key in ssn.unsettled_jobs():  # a settled job is valid, its queue there, none pending
            job = ssn.jobs[key]
            if job.is_pending():
                if not promote:
                    _pending_head(ssn, heads, job)
                    continue
                job.phase = PodGroupPhase.INQUEUE
            result = ssn.job_valid(job)
            if result is not None and not result.passed:
                ssn.explain(job, result.reason, result.message)
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                ssn.explain(job, QUEUE_NOT_FOUND, f"queue {job.queue} does not exist")
                continue
            tasks = [t for t in job.pending_tasks() if not t.best_effort]
            if not tasks:
                continue
            # Task order is fixed for the session: sort once, pop from the front.
            pending[key] = list(reversed(ssn.sort_tasks(tasks)))
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = PriorityQueue(compare=ssn.job_compare)
                queues.push(queue)
            jobs_by_queue[job.queue].push(job)

        first = _target_first(ssn, pending, will_bind)
        _turns(
            ssn,
            queues=queues,
            jobs_by_queue=jobs_by_queue,
            pending=pending,
            heads=heads,
            first=first,
            will_bind=will_bind,
        )


def _turns(
    ssn: Session,
    *,
    queues: PriorityQueue[QueueInfo],
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]],
    pending: dict[str, list[TaskInfo]],
    heads: dict[str, list[JobInfo]],
    first: JobKey | None,
    will_bind: WillBindArgs,
) -> None:
    """The queues' turns, in queue order: each turn one job, gang by gang."""
    planned: dict[str, Made] = {}
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            for job in _drain(jobs_by_queue.get(queue.name)):
                job.blocked = (QUEUE_OVERUSED, f"queue {queue.name} is overused")
            continue
        jobs = jobs_by_queue.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        if job.key == first:
            queues.push(queue)
            continue
        for head in heads.get(queue.name, ()):
            made = planned.get(queue.name, [])
            if plans_another(ssn, made, head) and ssn.job_order_fn(head, job):
                _plan(ssn, planned, head)
        tasks = pending[job.key]
        stmt = allocate_resources_for_tasks(ssn, job, queue, tasks)
        if stmt is not None and ssn.job_ready(job):
            stmt.commit()
            if job.dependent:
                reserve_stages(ssn, job, will_bind)
            if tasks and not job.dependent:
                jobs.push(job)
        elif plans_another(ssn, planned.get(queue.name, []), job):
            _plan(ssn, planned, job)
        queues.push(queue)


def _pending_head(ssn: Session, heads: dict[str, list[JobInfo]], job: JobInfo) -> None:
    """Keep ``job`` if it is among its queue's first Pending jobs with a time limit.

    The first one, in job order; the first two where the queue keeps its oldest job's plan
    besides the head's (``Session.oldest_planned``).
    """
    if job.podgroup.active_deadline_seconds is None:
        return
    held = heads.setdefault(job.queue, [])
    at = next((i for i, other in enumerate(held) if ssn.job_order_fn(job, other)), len(held))
    held.insert(at, job)
    del held[2 if job.queue in ssn.oldest_planned else 1 :]


def _plan(ssn: Session, planned: dict[str, Made], job: JobInfo) -> None:
    """Plan the start of ``job``, its queue's head; the session keeps its nodes for it."""
    plan = plan_next(ssn, planned.setdefault(job.queue, []), job)
    if plan is not None:
        keep_for(ssn, plan)


def _before_jobs(ssn: Session) -> WillBindArgs:
    """Will-bind's refresh, then the nominated pods' turn; return will-bind's arguments."""
    will_bind = will_bind_args(ssn)
    refresh(ssn, will_bind)
    place_nominated(ssn)
    return will_bind


def _target_first(
    ssn: Session, pending: dict[str, list[TaskInfo]], will_bind: WillBindArgs
) -> JobKey | None:
    """Give the reservation's target the first turn; lift its locks once it is placed.

    A target already placed (its gang ready: the unlock is on its way) lifts the locks at
    once; one this view does not know (gone, or not read yet) keeps them until the unlock.
    Returns the target when its turn failed, so the main loop skips it (nothing placed
    since could help it).
    """
    reservation = ssn.reservation
    if reservation.target_job is None or not reservation.locked_nodes:
        return None
    job = ssn.jobs.get(reservation.target_job)
    if job is None:
        return None
    if is_target_ready(ssn, job):
        ssn.lift_locks()
        return None
    queue = ssn.queues.get(job.queue)
    tasks = pending.get(job.key)
    if queue is None or not tasks or ssn.overused(queue):
        return None
    stmt = allocate_resources_for_tasks(ssn, job, queue, tasks)
    if stmt is None or not ssn.job_ready(job):
        return job.key
    stmt.commit()
    if job.dependent:
        reserve_stages(ssn, job, will_bind)
    ssn.lift_locks()
    return job.key if job.dependent else None


def _drain(jobs: PriorityQueue[JobInfo] | None) -> list[JobInfo]:
    out = []
    while jobs is not None and not jobs.empty():
        out.append(jobs.pop())
    return out


def allocate_resources_for_tasks(
    ssn: Session, job: JobInfo, queue: QueueInfo, tasks: list[TaskInfo]
) -> Statement | None:
    """One job's turn: place tasks (popped from the end of ``tasks``) until it is ready.

    Port of ``allocateResourcesForTasks``.

    Returns:
        The statement when the job is ready or pipelined, else ``None`` (discarded).
    """
    stmt = Statement(ssn)
    while tasks:
        task = tasks.pop()
        if not ssn.allocatable(queue, task):
            continue
        if job.task_has_fit_errors(task):
            errors = FitErrors()
            errors.set_error(
                f"Task {task.name} with role spec {task.role} has already predicated failed, skip"
            )
            job.nodes_fit_errors[task.uid] = errors
            continue
        placement = ssn.place(task, stmt.take_will_bind(task))
        if placement.node is None:
            job.nodes_fit_errors[task.uid] = placement.fit_errors or FitErrors()
            if job.need_continue_allocating():
                continue
            break
        if placement.pipelined:
            stmt.pipeline(task, placement.node)
        else:
            stmt.allocate(task, placement.node)
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


def new() -> AllocateAction:
    """Build the action."""
    return AllocateAction()
