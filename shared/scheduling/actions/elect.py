"""Elect: choose a starving target job when there is none (SPEC A6).

Port of volcano@v1.5.1 ``pkg/scheduler/actions/elect/elect.go`` (``Execute``,
``isJobElectable``): when the reservation has no target, collect the jobs whose PodGroup is
Pending or Inqueue and let the plugins choose (``ssn.target_job``; the ``reservation`` plugin
does).

Deliberate deviations:
- A current target that is gone or ready is released first (one unlock), so a new target can
  be elected in the same cycle; v1.5.1 left that to ``reserve`` and the next session.
- A job is electable only if it is not ready, its queue exists and is open, and its
  minResources fit the cluster's total allocatable and its queue's capability: a job that
  can never run must not hold nodes (or, through the enqueue gate, other jobs) forever.
"""

from __future__ import annotations

from contracts.objects.podgroup import PodGroupPhase
from shared.scheduling.framework.reservation import (
    elect_target,
    is_target_ready,
    release_reason,
    release_target,
)
from shared.scheduling.framework.session import Session
from shared.scheduling.model import JobInfo, naive_utc
from shared.scheduling.resource import Resource

NAME = "elect"

_ELECTABLE = (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE)


def is_job_electable(ssn: Session, job: JobInfo) -> bool:
    """Pending or Inqueue, not ready, in an open queue, small enough for cluster and queue."""
    if job.phase not in _ELECTABLE or job.min_available <= 0:
        return False
    queue = ssn.queues.get(job.queue)
    if queue is None or not queue.is_open():
        return False
    if job.podgroup.min_resources:
        minimum = Resource({k: float(v) for k, v in job.podgroup.min_resources.items()})
        names = minimum.requested_names()
        if not minimum.less_equal_on(ssn.total_resource, names):
            return False
        if queue.capability is not None and not minimum.less_equal_on(queue.capability, names):
            return False
    return not is_target_ready(ssn, job)


def election_reason(ssn: Session, job: JobInfo) -> str:
    """Say why ``job`` was elected: its priority and how long it has waited."""
    since = job.waiting_since()
    waited = (naive_utc(ssn.now) - naive_utc(since)).total_seconds() if since is not None else 0.0
    return f"starving: priority {job.priority}, waiting {max(waited, 0.0):g}s"


class ElectAction:
    """The ``elect`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Elect a target job when the reservation has none."""
        reason = release_reason(ssn)
        if reason is not None:
            release_target(ssn, reason)
        if ssn.reservation.target_job is not None:
            return
        jobs = [ssn.jobs[k] for k in sorted(ssn.jobs) if is_job_electable(ssn, ssn.jobs[k])]
        if not jobs:
            return
        target = ssn.target_job(jobs)
        if target is not None:
            elect_target(ssn, target, election_reason(ssn, target))


def new() -> ElectAction:
    """Build the action."""
    return ElectAction()
