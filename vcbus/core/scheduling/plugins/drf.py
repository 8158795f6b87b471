"""Dominant resource fairness: the job with the smaller dominant share goes first.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/drf/drf.go`` (``jobOrderFn``,
``calculateShare``, ``preemptableFn``, the allocate/deallocate event handlers).

Deliberate deviations:
- Hierarchical DRF (and its ``reclaimFn``) and namespace order are not ported.
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.contracts.keys import JobKey
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.extension_points import EventHandler
from vcbus.core.scheduling.framework.kept import KeptByJob
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.votes import Vote
from vcbus.core.scheduling.model import JobInfo, TaskInfo
from vcbus.core.scheduling.resource import Resource, share

NAME = "drf"
SHARE_DELTA = 0.000001
"""Volcano's ``shareDelta``: shares this close are equal."""


def dominant_share(allocated: Resource, total: Resource) -> float:
    """``max`` over the cluster's dimensions of ``allocated / total`` (``calculateShare``)."""
    return max((share(allocated.amount(n), total.amount(n)) for n in total), default=0.0)


class DrfPlugin:
    """The ``drf`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.held: dict[JobKey, tuple[Resource, float]] = {}
        """Job key → what it holds and its dominant share, kept current as tasks move."""

    def on_session_open(self, ssn: Session) -> None:
        """Compute every job's share and keep it current as tasks are placed.

        The shares at open are kept between sessions (``framework.kept``): a job's share
        reads only what it holds and the cluster's total.
        """
        total = ssn.total_resource
        kept: KeptByJob[tuple[Resource, float]] = (
            ssn.cache.kept(NAME, KeptByJob) if ssn.cache is not None else KeptByJob()
        )
        kept.update(
            ssn.cache,
            ssn.jobs,
            tuple(sorted(total._amounts.items())),
            lambda job: (job.allocated, dominant_share(job.allocated, total)),
        )
        held = self.held = kept.values.copy()

        def job_order(left: JobInfo, right: JobInfo) -> int:
            left_share, right_share = held[left.key][1], held[right.key][1]
            if left_share == right_share:
                return 0
            return -1 if left_share < right_share else 1

        def on_allocate(task: TaskInfo) -> None:
            allocated = held[task.job][0] + task.resreq
            held[task.job] = (allocated, dominant_share(allocated, total))

        def on_deallocate(task: TaskInfo) -> None:
            allocated = held[task.job][0] - task.resreq
            held[task.job] = (allocated, dominant_share(allocated, total))

        def preemptable(
            preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
        ) -> tuple[list[TaskInfo], Vote]:
            """Victims whose job keeps a dominant share at least the preemptor's would be."""
            mine = dominant_share(held[preemptor.job][0] + preemptor.resreq, total)
            allocations: dict[str, Resource] = {}
            victims = []
            for task in preemptees:
                left = allocations.get(task.job, held[task.job][0]) - task.resreq
                allocations[task.job] = left
                theirs = dominant_share(left, total)
                if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
                    victims.append(task)
            return victims, Vote.PERMIT

        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_preemptable_fn(NAME, preemptable)
        ssn.add_event_handler(
            EventHandler(allocate_func=on_allocate, deallocate_func=on_deallocate)
        )

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session's state."""
        self.held.clear()


def new(arguments: Arguments) -> DrfPlugin:
    """Build the plugin."""
    return DrfPlugin(arguments)
