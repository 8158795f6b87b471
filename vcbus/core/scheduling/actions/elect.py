"""Elect: choose a starving, feasible target job when there is none (docs/design.md#reservation).

Port of volcano@v1.5.1 ``pkg/scheduler/actions/elect/elect.go`` (``Execute``,
``isJobElectable``): when the reservation has no target, collect the jobs whose PodGroup is
Pending or Inqueue and let the plugins choose (``ssn.target_job``; the ``reservation`` plugin
does, among the starving ones).

Deliberate deviations (docs/design.md#reservation revised):
- A current target that is gone, ready, infeasible or held ``lock-max`` is released first
  (one unlock), so a new target can be elected in the same cycle; v1.5.1 left that to
  ``reserve`` and the next session. An expired one is not electable for ``lock-backoff``.
- A job is electable only if it is not ready, its queue exists and is open, it fits its
  queue's capability, and it is feasible: its minimum gang fits the cluster as built
  (``framework.feasibility``). A job that can never run must not hold nodes (or, through
  the enqueue gate, other jobs) forever.
- A job in backoff gets the reason ``ReservationExpired`` (docs/design.md#pending-reasons);
  ``Infeasible`` is given at session close to every waiting job no node could ever hold
  (``framework.job_updater``), whether reservation is configured or not.
"""

from __future__ import annotations

from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import RESERVATION_EXPIRED
from vcbus.core.scheduling.framework.extension_points import Election
from vcbus.core.scheduling.framework.reservation_changes import (
    backoff_until,
    elect_target,
    is_target_ready,
    release_reason,
    release_target,
)
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.model import JobInfo, naive_utc
from vcbus.core.scheduling.resource import Resource

NAME = "elect"

_ELECTABLE = (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE)


def is_waiting(ssn: Session, job: JobInfo) -> bool:
    """Pending or Inqueue with a minimum, its gang not placed yet."""
    if job.phase not in _ELECTABLE or job.min_available <= 0:
        return False
    return not is_target_ready(ssn, job)


def is_job_electable(ssn: Session, job: JobInfo) -> bool:
    """Waiting, in an open queue that could hold it, feasible, not in backoff.

    Records the reason ``ReservationExpired`` of a job in backoff.
    """
    if not is_waiting(ssn, job):
        return False
    if ssn.infeasibility(job) is not None:
        return False
    until = backoff_until(ssn, job)
    if until is not None:
        ssn.record_enqueue_reason(
            job,
            RESERVATION_EXPIRED,
            f"its reservation expired (lock-max); not elected again before {until.isoformat()}",
        )
        return False
    queue = ssn.queues.get(job.queue)
    if queue is None or not queue.is_open():
        return False
    if job.podgroup.min_resources and queue.capability is not None:
        minimum = Resource({k: float(v) for k, v in job.podgroup.min_resources.items()})
        if not minimum.less_equal_on(queue.capability, minimum.requested_names()):
            return False
    return True


def election_reason(ssn: Session, election: Election) -> str:
    """Say why a job was elected: why it starves, its priority, how long it has waited."""
    job, why = election.job, election.why
    since = job.waiting_since()
    waited = (naive_utc(ssn.now) - naive_utc(since)).total_seconds() if since is not None else 0.0
    return (
        f"starving{f' ({why})' if why else ''}: priority {job.priority}, "
        f"waiting {max(waited, 0.0):g}s"
    )


class ElectAction:
    """The ``elect`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Release a target that must go; elect a new one when there is none."""
        release = release_reason(ssn)
        if release is not None:
            release_target(ssn, *release)
        # a settled job is Running: never waiting, never electable
        jobs = [ssn.jobs[k] for k in ssn.unsettled_jobs() if is_job_electable(ssn, ssn.jobs[k])]
        if ssn.reservation.target_job is not None or not jobs:
            return
        election = ssn.target_job(jobs)
        if election is not None:
            elect_target(ssn, election.job, election_reason(ssn, election))


def new() -> ElectAction:
    """Build the action."""
    return ElectAction()
