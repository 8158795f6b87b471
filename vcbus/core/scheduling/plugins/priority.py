"""Priority: higher-priority jobs first; inside a job, the minimum pods first.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/priority/priority.go`` (``jobOrderFn``,
``taskOrderFn``, ``preemptableFn``) and ``pkg/scheduler/api/helpers/helpers.go`` (``CompareTask``).

Deliberate deviations (docs/design.md#minimum-pods-first, exact sort key, first difference wins):
1. pods whose index is below their task's minAvailable before pods beyond it (a task without
   a minimum counts all its pods as within it);
2. higher task priority first;
3. smaller pod index (``Pod.index``, not parsed from the name);
then the session's fallback: (4) older creation, (5) smaller uid.
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.extension_points import TaskOrder
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.votes import Vote
from vcbus.core.scheduling.model import JobInfo, TaskInfo

NAME = "priority"


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Higher job priority first."""
    if left.priority > right.priority:
        return -1
    if left.priority < right.priority:
        return 1
    return 0


def within_minimum(job: JobInfo, task: TaskInfo) -> bool:
    """Whether a pod is part of its task's minimum (docs/design.md#minimum-pods-first rule 1)."""
    minimum = job.task_min_available.get(task.role)
    if minimum is None:
        return True
    return task.index < minimum


class PriorityPlugin:
    """The ``priority`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        """Register the job and task orders."""
        ssn.add_job_order_fn(NAME, job_order)

        def task_key(task: TaskInfo) -> tuple[int, ...]:
            # a pod within its task's minimum first, then higher priority, then lower index
            within = within_minimum(ssn.jobs[task.job], task)
            return (0 if within else 1, -task.priority, task.index)

        ssn.add_task_order_fn(NAME, TaskOrder(task_key))

        def preemptable(
            preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
        ) -> tuple[list[TaskInfo], Vote]:
            """Only strictly lower priority: a job's, or a task's within the same job."""
            job = ssn.jobs[preemptor.job]
            victims = []
            for task in preemptees:
                if task.job != preemptor.job:
                    if ssn.jobs[task.job].priority < job.priority:
                        victims.append(task)
                elif task.priority < preemptor.priority:
                    victims.append(task)
            return victims, Vote.PERMIT

        ssn.add_preemptable_fn(NAME, preemptable)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def new(arguments: Arguments) -> PriorityPlugin:
    """Build the plugin."""
    return PriorityPlugin(arguments)
