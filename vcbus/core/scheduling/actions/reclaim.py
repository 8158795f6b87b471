"""Reclaim: a queue below its deserved share takes capacity back from queues above theirs.

Port of volcano@v1.12.0 ``pkg/scheduler/actions/reclaim/reclaim.go`` (``Execute``): queues
in queue order, skipping overused ones; a starving job of the queue, in job order; a task
the queue may still place (``Preemptive``: proportion, ``allocated + request ≤ deserved``);
on each node passing the predicates, the Running tasks of jobs of *other* queues that are
``reclaimable`` (Volcano Queue ``spec.reclaimable``, default true) and that every plugin
of the deciding tier lets go (``Reclaimable``: proportion — only from queues above their
deserved share —, gang, conformance) are evicted, lowest first, until they free the task's
request; the task is then pipelined there.

Deliberate deviations:
- Evictions and the reclaimer's pipelined pods commit together or not at all, per job
  (Volcano evicts at once, task by task, through ``ssn.Evict``): a job's turn runs its
  tasks while it is starving, and its statement commits only when the job is pipelined
  (its whole gang has a place), so no job reclaims for pods that cannot run.
- Evictions are commands on ``bindings`` carried out after the victims' grace period; the
  reclaimer's pods are nominated until they bind (``framework.nomination``).
- Victims are evicted until the task fits the node's future idle resources (what is idle,
  plus what is released already, less what is pipelined), as preempt does; Volcano counts
  only what the victims free, so a node with released room gets more victims than needed.
- Gang, all or nothing (``actions.eviction``); nodes with room released already first,
  then by score, ties to the smaller name.
- ``preemptionPolicy: Never`` is not modelled (vcbus pods carry none).
"""

from __future__ import annotations

from vcbus.core.reasons import RECLAIMED
from vcbus.core.scheduling.actions.eviction import (
    candidate_nodes,
    evict_gang_safe,
    fits_future,
    is_preemptable,
    is_starving,
    order_victims,
    validate_victims,
)
from vcbus.core.scheduling.framework.nomination import nominate
from vcbus.core.scheduling.framework.priority_queue import PriorityQueue
from vcbus.core.scheduling.framework.results import EvictNote
from vcbus.core.scheduling.framework.session import Session, admitted_valid_jobs
from vcbus.core.scheduling.framework.statement import Statement
from vcbus.core.scheduling.model import JobInfo, QueueInfo, TaskInfo, TaskStatus

NAME = "reclaim"


class ReclaimAction:
    """The ``reclaim`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Run reclaim over the session."""
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        seen: set[str] = set()
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, list[TaskInfo]] = {}
        for job, queue in admitted_valid_jobs(ssn):
            key = job.key
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if is_starving(ssn, job):
                preemptors.setdefault(job.queue, PriorityQueue(compare=ssn.job_compare)).push(job)
                tasks[key] = list(reversed(ssn.sort_tasks(job.pending_tasks())))

        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = preemptors.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            pending = tasks[job.key]
            stmt = Statement(ssn)
            assigned = False
            while is_starving(ssn, job) and pending:
                task = pending.pop()
                if not ssn.preemptive(queue, task):
                    break
                if not reclaim(ssn, stmt, job, task):
                    break
                assigned = True
            if not assigned or not ssn.job_pipelined(job):
                stmt.discard()
                queues.push(queue)
                continue
            operations = stmt.operations
            stmt.commit()
            nominate(ssn, job, operations, RECLAIMED, _message(job))
            if pending:
                jobs.push(job)
            queues.push(queue)


def _message(job: JobInfo) -> str:
    return f"Reclaimed by queue {job.queue} for job {job.key} (queue below its deserved share)"


def reclaim(ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo) -> bool:
    """Evict other queues' victims on the first node where they free ``task``'s request.

    Returns:
        Whether ``task`` was pipelined on a node.
    """
    note = EvictNote(taker=job.queue, preemptor=job.key, message=_message(job))

    def allowed(rest: list[TaskInfo]) -> bool:
        return len(ssn.reclaimable(task, rest)) == len(rest)

    for node in candidate_nodes(ssn, task):
        if fits_future(task, node):  # room released already: no victim needed
            stmt.pipeline(task, node)
            return True
        reclaimees = []
        for other in sorted(node.tasks.values(), key=lambda t: t.key):
            if other.status is not TaskStatus.RUNNING or not is_preemptable(other):
                continue
            other_job = ssn.jobs.get(other.job)
            if other_job is None or other_job.queue == job.queue:
                continue
            other_queue = ssn.queues.get(other_job.queue)
            if other_queue is None or not other_queue.queue.reclaimable:
                continue
            reclaimees.append(other)
        if not reclaimees:
            continue
        victims = ssn.reclaimable(task, reclaimees)
        if not validate_victims(task, node, victims):
            continue
        mark = stmt.savepoint()
        for victim in order_victims(ssn, victims):
            if fits_future(task, node):
                break
            if victim.status is not TaskStatus.RUNNING:
                continue  # taken with its gang already
            evict_gang_safe(
                ssn,
                stmt,
                victim,
                reason=RECLAIMED,
                note=EvictNote(
                    taker=note.taker,
                    preemptor=note.preemptor,
                    message=f"{note.message} on node {node.name}",
                ),
                allowed=allowed,
            )
        if fits_future(task, node):
            stmt.pipeline(task, node)
            return True
        stmt.rollback(mark)  # this node could not hold it: its victims stay
    return False


def new() -> ReclaimAction:
    """Build the action."""
    return ReclaimAction()
