"""Overcommit: enqueue a PodGroup only while the cluster, overcommitted by a factor, has room.

Port of volcano HEAD (``ed72c7c8``) ``pkg/scheduler/plugins/overcommit/overcommit.go``
(``OnSessionOpen``, ``parseFactor``, ``validate``, the ``JobEnqueueable`` and ``JobEnqueued``
functions) with ``plugins/util/util.go`` ``CalculateAllocatedTaskNum`` and
``GetInqueueResource`` (Volcano's enqueue.go):

- ``idle = factor × Σ node allocatable − Σ node used`` per dimension; the factor is
  ``overcommit-factor`` (default 1.2) or ``overcommit-factor.<resource>`` for one resource;
  any factor below 1 is replaced by 1.2;
- ``inqueue`` at session open = Σ minResources of Inqueue PodGroups + Σ
  ``max(0, minResources − allocated)`` of Running PodGroups with at least minMember tasks
  allocated;
- enqueueable iff ``inqueue + minResources ≤ idle`` on every dimension the job requests
  (plain comparison); a PodGroup without minResources is always permitted;
- on enqueue, ``inqueue += minResources``.

Deliberate deviations:
- A rejection records the reason ``ClusterOverused`` (docs/design.md#pending-reasons) instead of a
  Kubernetes event "resource in cluster is overused"; its message names the job's minimum and the
  overcommitted cluster size, not the amounts in use, so it does not change every cycle.
- The ``pods`` dimension is not compared (vcbus resources carry no ``pods``, B3.11), and
  scheduling-gated pods are not modelled, so nothing is taken off an Inqueue minimum.
- Will-bind reservations (vcbus) are on the nodes' ``used``, so they count against ``idle``;
  a job's own reserved capacity is taken off its ``inqueue`` share (Inqueue: ``max(0,
  minResources − reserved)``; Running: ``max(0, minResources − allocated − reserved)``), so
  it is counted once.
"""

from __future__ import annotations

from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import CLUSTER_OVERUSED
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.kept import Amounts, KeptByJob, Sum
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.votes import Vote
from vcbus.core.scheduling.model import ALLOCATED_STATUSES, JobInfo
from vcbus.core.scheduling.resource import Resource, brief

NAME = "overcommit"

OVERCOMMIT_FACTOR = "overcommit-factor"
OVERCOMMIT_FACTOR_PREFIX = "overcommit-factor."
DEFAULT_OVERCOMMIT_FACTOR = 1.2


def parse_factors(arguments: Arguments) -> dict[str, float]:
    """Return the factors: ``overcommit-factor`` and ``<resource>`` keys (``parseFactor``).

    Numbers (int or float) are read; other values are ignored, as Volcano ignores them.
    Factors below 1 become the default (``validate``).
    """
    factors = {OVERCOMMIT_FACTOR: DEFAULT_OVERCOMMIT_FACTOR}
    for key in sorted(arguments):
        value = arguments[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if key == OVERCOMMIT_FACTOR:
            factors[OVERCOMMIT_FACTOR] = float(value)
        elif key.startswith(OVERCOMMIT_FACTOR_PREFIX):
            factors[key.removeprefix(OVERCOMMIT_FACTOR_PREFIX)] = float(value)
    return {k: (v if v >= 1.0 else DEFAULT_OVERCOMMIT_FACTOR) for k, v in factors.items()}


def min_resources(job: JobInfo) -> Resource:
    """The PodGroup's minResources as a ``Resource``."""
    return Resource({k: float(v) for k, v in job.podgroup.min_resources.items()})


class OvercommitPlugin:
    """The ``overcommit`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.factors = parse_factors(arguments)
        self.idle = Resource()
        self.inqueue = Resource()

    def scaled(self, total: Resource) -> Resource:
        """``total`` with each dimension multiplied by its factor (``ScaleResourcesWithRatios``)."""
        default = self.factors[OVERCOMMIT_FACTOR]
        return Resource({n: a * self.factors.get(n, default) for n, a in total.items()})

    def on_session_open(self, ssn: Session) -> None:
        """Compute idle and inqueue resources, register the enqueue votes."""
        used = Resource(
            dict(zip(ssn.matrix.dimensions, ssn.matrix.used.sum(axis=0).tolist(), strict=True))
        )
        self.idle = self.scaled(ssn.total_resource) - used
        self.inqueue = _inqueue(ssn)

        def enqueueable(job: JobInfo) -> Vote:
            if not job.podgroup.min_resources:
                return Vote.PERMIT
            minimum = min_resources(job)
            wanted = self.inqueue + minimum
            requested = minimum.requested_names()
            if wanted.less_equal_on(self.idle, requested):
                return Vote.PERMIT
            ssn.record_enqueue_reason(
                job,
                CLUSTER_OVERUSED,
                f"resource in cluster is overused: minResources {brief(minimum, requested)} "
                "do not fit beside the running and inqueue jobs (cluster "
                f"{brief(self.scaled(ssn.total_resource), requested)} with overcommit)",
            )
            return Vote.REJECT

        def enqueued(job: JobInfo) -> None:
            if job.podgroup.min_resources:
                self.inqueue = self.inqueue + min_resources(job)

        ssn.add_job_enqueueable_fn(NAME, enqueueable)
        ssn.add_job_enqueued_fn(NAME, enqueued)

    def on_session_close(self, ssn: Session) -> None:
        """Drop the session's accounting."""
        self.idle = Resource()
        self.inqueue = Resource()


class _KeptInqueue:
    """Each job's admitted part at open, will-bind aside, and their sum (``kept``)."""

    __slots__ = ("parts", "total")

    def __init__(self) -> None:
        self.parts: KeptByJob[Amounts | None] = KeptByJob()
        self.total = Sum()


def _part(ssn: Session, job: JobInfo, reserved: Resource) -> Amounts | None:
    """What ``job`` adds to the inqueue sum beside ``reserved`` (Volcano's loop body)."""
    if not job.podgroup.min_resources:
        return None
    if job.phase is PodGroupPhase.INQUEUE:
        if ssn.infeasibility(job) is not None:
            # docs/design.md#reservation: a job that can never run holds no admission budget
            return None
        return tuple(min_resources(job).exceeded_part(reserved)._amounts.items())
    if job.phase is PodGroupPhase.RUNNING and job.count(*ALLOCATED_STATUSES) >= job.min_available:
        return tuple(min_resources(job).exceeded_part(job.allocated + reserved)._amounts.items())
    return None


def _inqueue(ssn: Session) -> Resource:
    """Σ of every job's admitted part not placed yet (Volcano's ``inqueue`` at open).

    The parts without will-bind reservations are kept between sessions and summed as
    jobs change (whole units: the sum is exact in any order); a job holding reservations
    this session counts its part beside them instead.
    """
    cache = ssn.cache
    kept = cache.kept(NAME, _KeptInqueue) if cache is not None else _KeptInqueue()
    empty = Resource()
    patch = kept.parts.update(
        cache,
        ssn.jobs,
        cache.nodes_generation if cache is not None else None,
        lambda job: _part(ssn, job, empty),
    )
    if patch.whole:
        kept.total = Sum()
    for part in patch.removed:
        if part is not None:
            kept.total.add(part, -1)
    for part in patch.added:
        if part is not None:
            kept.total.add(part)
    total = kept.total
    held = sorted(key for key in ssn.will_bind.held if key in ssn.jobs)
    if held:
        total = total.copy()
        for key in held:
            own = kept.parts.values[key]
            if own is not None:
                total.add(own, -1)
            mine = _part(ssn, ssn.jobs[key], ssn.will_bind.reserved(key))
            if mine is not None:
                total.add(mine)
    return Resource(total.amounts)


def new(arguments: Arguments) -> OvercommitPlugin:
    """Build the plugin."""
    return OvercommitPlugin(arguments)
