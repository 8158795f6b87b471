"""Enqueue: move Pending PodGroups to Inqueue while the cluster and their queue have room.

Port of volcano HEAD (``ed72c7c8``) ``pkg/scheduler/actions/enqueue/enqueue.go``
(``Execute``) as Volcano's enqueue.go describes: queues in queue order, each queue's Pending jobs in
job order; a job is enqueued when its PodGroup has no minResources or ``JobEnqueueable`` holds,
then ``JobEnqueued`` runs and the PodGroup becomes Inqueue; the queue goes back after every
job, admitted or not, so a rejected big job blocks nobody (no head-of-line blocking) and each
Pending job is tried once per session. A dependent job (docs/design.md#dependent-jobs) is admitted
on the whole job's minResources, as the job-controller computes it.

Deliberate deviations:
- HEAD's first phase (``evictTimedOutInqueueJobs``: Inqueue PodGroups back to Pending after
  ``volcano.sh/inqueue-timeout``) is not ported: in vcbus the job-controller creates pods once
  a PodGroup is Inqueue, and Volcano's enqueue.go does not ask for it.
- A rejected job's reasons are collected from every enqueue vote, so the PodGroup carries the
  highest-ranked one (docs/design.md#pending-reasons); a job whose queue does not exist gets
  ``QueueNotFound`` (Volcano logs it).
- The reservation's target job (docs/design.md#reservation), when Pending, is tried before every
  other job.
- Every job tried is recorded with its queue's share at the pick and the verdict
  (``SessionResult.enqueue_steps``), for ``vcbus simulate --cycles``.
- Take-back enqueue, with the argument ``take-back: true`` (given to
  podgroup-enqueue when the allocator runs ``preempt`` or ``reclaim``): a job the votes
  reject is enqueued anyway when its minResources fit what it could take back — the idle
  capacity, plus the running pods of lower-priority jobs of its queue (preempt), plus what
  reclaimable queues hold above their deserved shares, up to its queue's own deserved
  share (reclaim, told by proportion) — less what earlier take-back enqueues of the pass
  counted. Without it a high-priority job on a full cluster never reaches Inqueue, so
  preempt never sees it. It never admits an infeasible job, nor another job while a
  reservation's target is Pending (docs/design.md#reservation).
- Planned starts (docs/design.md#planned-start, ``framework.planning``): the first job of a queue
  the budget turns away gets a planned start; once it has come the job is admitted past the budget,
  and until then a later job that would delay it stays Pending. A job the budget alone
  turns away while an admitted job waits for room is admitted when it fits the idle
  capacity and delays no plan (EASY backfill at admission).
- ``ScheduleStartTimestamp`` is not stamped here: the time a PodGroup was first seen comes
  with the snapshot (``PodGroupState.first_seen``), so it survives a restart.
"""

from __future__ import annotations

from functools import cmp_to_key

from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import CLUSTER_OVERUSED, QUEUE_NOT_FOUND, reason_rank
from vcbus.core.scheduling.actions.eviction import take_back_room
from vcbus.core.scheduling.framework.arguments import get_bool
from vcbus.core.scheduling.framework.plan import Plan
from vcbus.core.scheduling.framework.planning import EnqueuePlans
from vcbus.core.scheduling.framework.priority_queue import PriorityQueue
from vcbus.core.scheduling.framework.results import EnqueueStep
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.model import JobInfo, QueueInfo
from vcbus.core.scheduling.resource import Resource

NAME = "enqueue"
TAKE_BACK = "take-back"


def _takes_back(ssn: Session, job: JobInfo, taken: dict[str, Resource]) -> bool:
    target = ssn.reservation.target_job
    if target is not None and target != job.key:
        held = ssn.jobs.get(target)
        if held is not None and held.is_pending():
            # docs/design.md#reservation: no other job is enqueued while the target is Pending
            return False
    if ssn.infeasibility(job) is not None:
        return False  # docs/design.md#reservation: an infeasible job holds no admission budget
    minimum = Resource(dict(job.podgroup.min_resources))
    room = take_back_room(ssn, job) - taken.get(job.queue, Resource())
    if not minimum.less_equal_on(room, minimum.requested_names()):
        return False
    taken[job.queue] = taken.get(job.queue, Resource()) + minimum
    return True


def try_enqueue(
    ssn: Session, job: JobInfo, queue: QueueInfo, taken: dict[str, Resource] | None = None
) -> bool:
    """Enqueue ``job`` if it may be, else record why not; return whether it was enqueued.

    ``taken``: with take-back enqueue, what earlier take-back enqueues counted, per queue.
    """
    share = ssn.queue_share(queue)
    if (
        not job.podgroup.min_resources
        or ssn.job_enqueueable(job)
        or (taken is not None and _takes_back(ssn, job, taken))
    ):
        ssn.job_enqueued(job)
        job.phase = PodGroupPhase.INQUEUE
        ssn.enqueue_steps.append(EnqueueStep(queue.name, share, job.key, admitted=True))
        return True
    ssn.collect_enqueue_reasons(job)
    reasons = sorted(ssn.enqueue_reasons.get(job.key, {}), key=reason_rank)
    reason = reasons[0] if reasons else ""
    ssn.enqueue_steps.append(EnqueueStep(queue.name, share, job.key, False, reason))
    return False


class EnqueueAction:
    """The ``enqueue`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Run enqueue over the session."""
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        queued: set[str] = set()
        jobs_map: dict[str, list[JobInfo]] = {}
        target = ssn.jobs.get(ssn.reservation.target_job) if ssn.reservation.target_job else None
        arguments = {**ssn.arguments, **ssn.action_arguments(NAME)}
        taken: dict[str, Resource] | None = {} if get_bool(arguments, TAKE_BACK, False) else None
        for name in ssn.queues_in_job_order():
            queued.add(name)
            queues.push(ssn.queues[name])
        for key in ssn.unsettled_jobs():  # a settled job is Running: not Pending
            job = ssn.jobs[key]
            queue = ssn.queues.get(job.queue)
            if queue is None:
                if job.is_pending():
                    ssn.record_enqueue_reason(
                        job, QUEUE_NOT_FOUND, f"queue {job.queue} does not exist"
                    )
                continue
            if job.is_pending() and job is not target:
                jobs_map.setdefault(queue.name, []).append(job)
        # Nothing enqueue does changes a Pending job's order: each queue's jobs are sorted
        # once, last first, and popped (the order a PriorityQueue of them gives).
        for pending in jobs_map.values():
            pending.sort(key=cmp_to_key(ssn.job_compare), reverse=True)

        if target is not None and target.is_pending() and target.queue in queued:
            try_enqueue(ssn, target, ssn.queues[target.queue], taken)

        plans = EnqueuePlans(ssn)
        while not queues.empty():
            queue = queues.pop()
            jobs = jobs_map.get(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            plan = plans.blocks(job)
            if plan is not None:
                _keep_out(ssn, job, queue, plan)
            elif try_enqueue(ssn, job, queue, taken):
                plans.admitted(job)
            elif plans.turned_away(job, set(ssn.enqueue_reasons.get(job.key, {}))):
                _admit(ssn, job, queue)
            elif plans.backfills(job, set(ssn.enqueue_reasons.get(job.key, {}))):
                _admit(ssn, job, queue)
                plans.admitted(job)
            queues.push(queue)


def _keep_out(ssn: Session, job: JobInfo, queue: QueueInfo, plan: Plan) -> None:
    """Leave ``job`` Pending: it would delay ``plan``'s start (docs/design.md#planned-start)."""
    message = (
        f"it would delay the planned start of {plan.job} at {plan.start.isoformat()}: "
        "it ends after it and the capacity that start leaves is taken"
    )
    ssn.record_enqueue_reason(job, CLUSTER_OVERUSED, message)
    share = ssn.queue_share(queue)
    ssn.enqueue_steps.append(EnqueueStep(queue.name, share, job.key, False, CLUSTER_OVERUSED))


def _admit(ssn: Session, job: JobInfo, queue: QueueInfo) -> None:
    """Enqueue ``job`` past the budget: its planned start has come."""
    ssn.enqueue_reasons.pop(job.key, None)
    ssn.job_enqueued(job)
    job.phase = PodGroupPhase.INQUEUE
    share = ssn.queue_share(queue)
    ssn.enqueue_steps.append(EnqueueStep(queue.name, share, job.key, admitted=True))


def new() -> EnqueueAction:
    """Build the action."""
    return EnqueueAction()
