"""Backfill: place best-effort pods (no resource request) of queued, valid jobs.

Port of volcano@v1.12.0 ``pkg/scheduler/actions/backfill/backfill.go`` (``pickUpPendingTasks``:
queues by queue order, jobs by job order, tasks by task order; then, per task, predicates over
all nodes, the best-scored node, and ``ssn.Allocate``, which binds the job's allocated tasks
once the job is ready).

Deliberate deviations:
- Pipelined best-effort tasks are not un-pipelined first: allocate never pipelines a
  best-effort task in vcbus, so there are none.
- Ties between nodes go to the name that sorts first (docs/design.md#determinism).
"""

from __future__ import annotations

from vcbus.core.scheduling.fit_errors import FitErrors
from vcbus.core.scheduling.framework.priority_queue import PriorityQueue
from vcbus.core.scheduling.framework.session import Session, admitted_valid_jobs
from vcbus.core.scheduling.model import JobInfo, QueueInfo, TaskInfo

NAME = "backfill"


class BackfillAction:
    """The ``backfill`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Run backfill over the session."""
        for task in pick_up_pending_tasks(ssn):
            job = ssn.jobs[task.job]
            placement = ssn.place(task)
            if placement.node is None:
                job.nodes_fit_errors[task.uid] = placement.fit_errors or FitErrors()
                continue
            ssn.allocate(task, placement.node)


def pick_up_pending_tasks(ssn: Session) -> list[TaskInfo]:
    """Best-effort Pending tasks of non-pending valid jobs, in queue/job/task order."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    jobs: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, list[TaskInfo]] = {}
    for job, queue in admitted_valid_jobs(ssn, with_tasks=_has_pending_best_effort):
        key = job.key
        best_effort = [t for t in job.pending_tasks() if t.best_effort]
        if not best_effort:
            continue
        tasks[key] = ssn.sort_tasks(best_effort)
        if job.queue not in jobs:
            jobs[job.queue] = PriorityQueue(compare=ssn.job_compare)
            queues.push(queue)
        jobs[job.queue].push(job)
    out: list[TaskInfo] = []
    while not queues.empty():
        queue = queues.pop()
        queue_jobs = jobs[queue.name]
        while not queue_jobs.empty():
            out.extend(tasks[queue_jobs.pop().key])
    return out


def _has_pending_best_effort(job: JobInfo) -> bool:
    return job.pending_best_effort_task_num() > 0


def new() -> BackfillAction:
    """Build the action."""
    return BackfillAction()
