"""Preempt: a starving job takes capacity back from lower-priority jobs of its queue.

Port of volcano@v1.12.0 ``pkg/scheduler/actions/preempt/preempt.go`` (``Execute``,
``preempt``): per queue, starving jobs in job order; for each of a job's pending tasks, the
nodes passing the predicates by score; on each node the running tasks of *other* jobs of the
same queue that every plugin of the deciding tier lets go (``Preemptable``: priority, gang,
conformance, drf) are evicted, lowest first, until the task fits the node's future idle
resources; the task is then pipelined there. The job's statement commits only when the job
is pipelined (its whole gang has a place), else every eviction is undone.

Deliberate deviations:
- Evictions are commands on ``bindings`` (``PodEvictionRequested``), carried out by the
  cluster after the victim's grace period; the preemptor's pipelined pods are *nominated*
  on their nodes until they bind (``framework.nomination``), so no other job takes the
  released capacity, and its PodGroup says ``WaitingForEviction``.
- A job with a nomination is not starving (its nominated pods are pipelined at session
  open), so it is never given a second set of victims for the same pods.
- Preemption between tasks of one job (the second loop of ``Execute``) and
  ``preemptionPolicy: Never`` are not ported: vcbus pods carry no preemption policy, and a
  job's own pods never evict each other.
- Gang, all or nothing: a victim that would leave its job below its minimum takes the rest
  of its job with it (``actions.eviction``).
- The evictions on a node that could not hold the preemptor after all are undone
  (``Statement.rollback``); Volcano keeps them and may evict more pods than it needs.
- Nodes are tried by score, ties to the smaller name (docs/design.md#determinism).
"""

from __future__ import annotations

from collections.abc import Callable

from vcbus.core.reasons import PREEMPTED
from vcbus.core.scheduling.actions.eviction import (
    PREEMPTABLE_STATUSES,
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
from vcbus.core.scheduling.model import JobInfo, QueueInfo, TaskInfo

NAME = "preempt"


class PreemptAction:
    """The ``preempt`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Run preempt over the session."""
        preemptors: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, list[TaskInfo]] = {}
        queues: dict[str, QueueInfo] = {}
        for job, queue in admitted_valid_jobs(ssn):
            key = job.key
            queues[queue.name] = queue
            if is_starving(ssn, job):
                preemptors.setdefault(job.queue, PriorityQueue(compare=ssn.job_compare)).push(job)
                tasks[key] = list(reversed(ssn.sort_tasks(job.pending_tasks())))

        for name in sorted(queues):
            queue = queues[name]
            jobs = preemptors.get(name)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                assigned = False
                pending = tasks[job.key]
                while is_starving(ssn, job) and pending:
                    task = pending.pop()
                    assigned = preempt(ssn, stmt, queue, task, _same_queue(ssn, job, task))
                if not ssn.job_pipelined(job):
                    stmt.discard()
                    continue
                operations = stmt.operations
                stmt.commit()
                nominate(ssn, job, operations, PREEMPTED, _message(ssn, job))
                if assigned and pending:
                    jobs.push(job)


def _same_queue(ssn: Session, job: JobInfo, preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    """Volcano's filter: running tasks of other jobs of the same queue."""

    def keep(task: TaskInfo) -> bool:
        if task.status not in PREEMPTABLE_STATUSES or task.job == job.key:
            return False
        if not is_preemptable(task):
            return False
        if preemptor.best_effort and not task.best_effort:
            return False
        victim_job = ssn.jobs.get(task.job)
        return victim_job is not None and victim_job.queue == job.queue

    return keep


def _message(ssn: Session, job: JobInfo) -> str:
    return f"Preempted by job {job.key} (priority {job.priority}) of queue {job.queue}"


def preempt(
    ssn: Session,
    stmt: Statement,
    queue: QueueInfo,
    preemptor: TaskInfo,
    keep: Callable[[TaskInfo], bool],
) -> bool:
    """Evict lower victims on the best node that then holds ``preemptor``; pipeline it there.

    Port of ``preempt`` (volcano@v1.12.0 ``preempt.go``).

    Returns:
        Whether ``preemptor`` was pipelined on a node.
    """
    job = ssn.jobs[preemptor.job]
    note = EvictNote(taker=job.key, preemptor=job.key, message=_message(ssn, job))

    def allowed(rest: list[TaskInfo]) -> bool:
        return len(ssn.preemptable(preemptor, rest)) == len(rest)

    for node in candidate_nodes(ssn, preemptor):
        if ssn.allocatable(queue, preemptor) and fits_future(preemptor, node):
            stmt.pipeline(preemptor, node)  # room released already: no victim needed
            return True
        preemptees = sorted((t for t in node.tasks.values() if keep(t)), key=lambda t: t.key)
        victims = ssn.preemptable(preemptor, preemptees)
        if not validate_victims(preemptor, node, victims):
            continue
        mark = stmt.savepoint()
        for victim in order_victims(ssn, victims):
            if ssn.allocatable(queue, preemptor) and fits_future(preemptor, node):
                break
            if victim.status not in PREEMPTABLE_STATUSES:
                continue  # taken with its gang already
            evict_gang_safe(
                ssn,
                stmt,
                victim,
                reason=PREEMPTED,
                note=EvictNote(
                    taker=note.taker,
                    preemptor=note.preemptor,
                    message=f"{note.message} on node {node.name}",
                ),
                allowed=allowed,
            )
        if ssn.allocatable(queue, preemptor) and fits_future(preemptor, node):
            stmt.pipeline(preemptor, node)
            return True
        stmt.rollback(mark)  # this node could not hold it: its victims stay
    return False


def new() -> PreemptAction:
    """Build the action."""
    return PreemptAction()
