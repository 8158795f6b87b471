"""Planned starts in a session: the queue heads' plans, and what they keep.

:mod:`vcbus.core.scheduling.framework.plan` computes a plan from arrays; this reads the session
and applies the plans in both scheduling services:

- enqueue (:class:`EnqueuePlans`): the first job of a queue that the admission budget turns
  away gets a plan (which keeps room only when no admitted job of its queue waits ahead of
  it: one head per queue, as EASY), and its reason's message says when (what ``vcbus
  describe`` and the dashboard show, as Slurm's ``squeue --start`` does). Once its planned
  start has come (the capacity idle now holds its gang) it is admitted although the budget
  is spent (jobs admitted but not placed hold it), so later jobs cannot hold it back
  forever. Until then a later job is admitted only if it ends by the planned start, or its
  minimum fits the idle capacity the plan does not keep. The first admitted job of a queue
  not placed yet (admitted before its room was free) is planned too, and a job the budget
  alone turns away is admitted when it fits the idle capacity no admitted job waits for and
  delays no plan (:meth:`EnqueuePlans.backfills`): EASY backfill past a head that holds the
  budget.
- allocate (:func:`plan_head` and the ``predicates`` filter it registers): the first job of
  each queue that cannot start now (or is still Pending) keeps the nodes its planned start
  needs; a pod of another job takes a kept node only if its job ends by that start.
- reservation (docs/design.md#reservation): a target's locked nodes take a job that ends by the
  target's planned start (``predicates``' lock filter asks :func:`ends_before_start`).

Only a job with a time limit (its PodGroup's ``activeDeadlineSeconds``) gets a plan: jobs
without one, and clusters where no job has one, behave as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import CLUSTER_OVERUSED, QUEUE_OVER_CAPABILITY
from vcbus.core.scheduling.framework.extension_points import NodeFilter
from vcbus.core.scheduling.framework.plan import (
    PLANNED,
    Hold,
    Plan,
    Releases,
    Shape,
    allowed_rows,
    earliest_start,
    earliest_start_around,
    ever_fits,
    placed_tasks,
    releases,
    shapes_of,
)
from vcbus.core.scheduling.framework.priority_queue import PriorityQueue
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.model import JobInfo, TaskInfo
from vcbus.core.scheduling.node_matrix import BoolArray, FloatArray, IntArray, NodeMatrix

FILTER_OWNER = "predicates"
"""The plugin whose node filters the plans' filter joins (it is in every configuration)."""


def job_end(job: JobInfo, now: datetime) -> datetime | None:
    """When ``job``, started now, ends at the latest; None without a time limit."""
    seconds = job.podgroup.active_deadline_seconds
    return None if seconds is None else now + timedelta(seconds=seconds)


def _gang(ssn: Session, job: JobInfo) -> list[Shape]:
    """The pods ``job`` still needs to start, as shapes (its PodGroup's when it has none)."""
    matrix = ssn.matrix
    pending = [task for task in job.pending_tasks() if not task.best_effort]
    if pending:
        need = max(1, job.gang_min - job.ready_task_num())
        first = pending[0]
        if all(
            task.resreq is first.resreq and task.pod.node_selector == first.pod.node_selector
            for task in pending
        ):
            # one shape (the usual gang): which ``need`` of them come first does not matter
            (shape,) = shapes_of(matrix, pending[:1])
            return [Shape(shape.request, shape.allowed, min(need, len(pending)))]
        return shapes_of(matrix, ssn.sort_tasks(pending)[:need])
    members = job.podgroup.min_member
    minimum = job.podgroup.min_resources
    if members <= 0 or not minimum:
        return []
    request = matrix.vector({name: amount / members for name, amount in minimum.items()})
    return [Shape(request, ~matrix.unschedulable, members)]


def plan_head(ssn: Session, job: JobInfo, around: Sequence[Plan] | None = None) -> Plan | None:
    """The planned start of ``job`` and the nodes it keeps; None when it gets none.

    ``around``: plans made before it in its queue, which it must not delay (a second
    reservation, :func:`plan_around`); None: it is its queue's only one, and its plan holds
    nothing for others to plan around.

    None: ``job`` has no time limit, or its gang never fits (pods without deadlines hold
    what it needs).
    """
    seconds = job.podgroup.active_deadline_seconds
    if seconds is None:
        return None
    shapes = _gang(ssn, job)
    if not shapes:
        return None
    if around is not None:
        return plan_around(ssn, job, shapes, around, timedelta(seconds=seconds))
    found = earliest_start(ssn.matrix.idle, _releases(ssn), shapes, ssn.now)
    if found is None:
        return None
    start, kept = found
    return Plan(job=job.key, start=start, kept=kept)


def plan_around(
    ssn: Session, job: JobInfo, shapes: list[Shape], around: Sequence[Plan], limit: timedelta
) -> Plan | None:
    """``job``'s plan around the holds of ``around``; it holds its gang until its limit."""
    holds = [plan.hold for plan in around if plan.hold is not None]
    found = earliest_start_around(
        ssn.matrix.idle, _releases(ssn), holds, shapes, ssn.now, limit=limit
    )
    if found is None:
        return None
    start, kept, used = found
    return Plan(job=job.key, start=start, kept=kept, hold=Hold(start, start + limit, used))


Made = list[tuple[JobKey, Plan | None]]
"""A queue's jobs planned in a pass, in turn, with their plans (None: it got none)."""


def plans_another(ssn: Session, made: Made, job: JobInfo) -> bool:
    """Whether ``job`` gets a plan after its queue's ``made``.

    It does if it is the first, or the next one after the queue's oldest job, kept besides
    the head (``Session.oldest_planned``).
    """
    if not made:
        return True
    first = made[0][0]
    return len(made) == 1 and first == ssn.oldest_planned.get(job.queue) and first != job.key


def plan_next(ssn: Session, made: Made, job: JobInfo) -> Plan | None:
    """Plan ``job`` after its queue's ``made`` and add it there.

    In a queue that keeps its oldest job's plan, each plan is made around those before it
    (:func:`plan_around`): the oldest's, then the head's.
    """
    around = [p for _, p in made if p is not None] if job.queue in ssn.oldest_planned else None
    plan = plan_head(ssn, job, around)
    made.append((job.key, plan))
    return plan


def has_plan(ssn: Session, job: JobInfo) -> bool:
    """Whether :func:`plan_head` gives ``job`` a plan, without making it."""
    if job.podgroup.active_deadline_seconds is None:
        return False
    shapes = _gang(ssn, job)
    return bool(shapes) and ever_fits(ssn.matrix.idle, _releases(ssn), shapes, ssn.now)


def _releases(ssn: Session) -> Releases:
    """What the session's placed pods give back by their deadlines.

    Made once per state of the session's placements: the matrix lists every change to
    them (``NodeMatrix.changes``), so the list is made again only after one.
    """
    revision = len(ssn.matrix.changes)
    if ssn.plan_releases is not None and ssn.plan_releases[0] == revision:
        return ssn.plan_releases[1]
    placed = placed_tasks(node.tasks.values() for node in ssn.node_list)
    pods = ssn.snapshot.pods

    def started(task: TaskInfo) -> datetime | None:
        state = pods.get(task.key)
        return state.started if state is not None else None

    made = releases(ssn.matrix, placed, started, ssn.now)
    ssn.plan_releases = (revision, made)
    return made


def ends_before_start(ssn: Session, job: JobKey, plan: Plan | None) -> bool:
    """Whether ``job`` started now ends by ``plan``'s start (False without a plan)."""
    info = ssn.jobs.get(job)
    if plan is None or info is None:
        return False
    end = job_end(info, ssn.now)
    return end is not None and end <= plan.start


def keep_for(ssn: Session, plan: Plan) -> None:
    """From now on in the session, pods of jobs that end after ``plan`` avoid its nodes."""
    if not ssn.plans:
        ends: dict[JobKey, datetime | None] = {}

        def end_of(job: JobKey) -> datetime | None:
            if job not in ends:
                info = ssn.jobs.get(job)
                ends[job] = job_end(info, ssn.now) if info is not None else None
            return ends[job]

        def kept(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
            allowed = allowed_rows(ssn.plans, task.job, end_of(task.job), len(matrix))
            return allowed[rows]

        def passes(task: TaskInfo) -> tuple[bool, ...]:
            """Per plan, whether the task's job may use what it keeps (shared answers)."""
            end = end_of(task.job)
            return tuple(
                plan.job == task.job or (end is not None and end <= plan.start)
                for plan in ssn.plans
            )

        ssn.add_node_filter_fn(
            FILTER_OWNER, NodeFilter(f"{PLANNED} a job", kept, cacheable=True, task_key=passes)
        )
    ssn.plans.append(plan)
    ssn.forget_placement()


class EnqueuePlans:
    """Enqueue's side of the plans: one head per queue; what later jobs may take."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._planned: dict[str, Made] = {}
        self._headed: set[str] = set()
        """Queues whose head is an admitted job (:meth:`_plan_admitted`)."""
        self._plans: list[tuple[Plan, FloatArray]] = []
        """Each plan with the idle capacity it does not keep, less later admissions."""
        self._free: FloatArray | None = None
        """The idle capacity no admitted job waits for (an admitted job not placed whose
        minimum fits it takes its part first, in job order), less this pass's admissions;
        made once a plan exists."""
        self._plan_admitted()

    def _plan_admitted(self) -> None:
        """Plan each queue's first admitted job that is not placed yet, with a time limit.

        Such a job is what EASY calls the head: it waits for room the running pods give
        back. Its plan keeps that room; the idle capacity it does not keep is free for
        jobs the budget turns away only because admitted jobs hold it (:meth:`backfills`).
        """
        ssn = self._ssn
        heads: dict[str, JobInfo] = {}
        waiting: list[JobInfo] = []
        for key in ssn.unsettled_jobs():  # a settled job is Running
            job = ssn.jobs[key]
            if job.phase is not PodGroupPhase.INQUEUE or job.is_ready() or job.is_pipelined():
                continue
            waiting.append(job)
            if job.podgroup.active_deadline_seconds is None:
                continue
            held = heads.get(job.queue)
            if held is None or ssn.job_order_fn(job, held):
                heads[job.queue] = job
        planned: set[JobKey] = set()
        for job in heads.values():
            plan = plan_head(ssn, job)
            if plan is None or plan.start <= ssn.now:
                continue
            planned.add(job.key)
            self._headed.add(job.queue)
            self._plans.append((plan, ssn.matrix.idle[~plan.kept].sum(axis=0)))
        if not self._plans:
            return
        free = ssn.matrix.idle.sum(axis=0)
        ordered: PriorityQueue[JobInfo] = PriorityQueue(compare=ssn.job_compare)
        for job in waiting:
            if job.key not in planned:
                ordered.push(job)
        while not ordered.empty():
            job = ordered.pop()
            need = np.maximum(self._minimum(job) - ssn.matrix.vector(job.allocated.as_dict()), 0)
            if not np.any(need > free + 1e-9):
                free -= need
        self._free = free

    def _minimum(self, job: JobInfo) -> FloatArray:
        return self._ssn.matrix.vector(dict(job.podgroup.min_resources))

    def blocks(self, job: JobInfo) -> Plan | None:
        """The plan that admitting ``job`` now would delay, if any."""
        end = job_end(job, self._ssn.now)
        minimum = self._minimum(job)
        for plan, spare in self._plans:
            if end is not None and end <= plan.start:
                continue
            if np.any(minimum > spare + 1e-9):
                return plan
        return None

    def admitted(self, job: JobInfo) -> None:
        """Count ``job``'s minimum against the spare capacity of the plans it outlasts."""
        end = job_end(job, self._ssn.now)
        minimum = self._minimum(job)
        if self._free is not None:
            np.subtract(self._free, minimum, out=self._free)
        for plan, spare in self._plans:
            if end is None or end > plan.start:
                np.subtract(spare, minimum, out=spare)

    def _budget_only(self, job: JobInfo) -> set[str]:
        """The reasons that only say jobs admitted but not placed hold the budget.

        ``QueueOverCapability`` is one of them only for a queue without a capability of
        its own (its limit is the cluster's): a queue's own capability is a hard cap
        (docs/design.md#queue-shares).
        """
        queue = self._ssn.queues.get(job.queue)
        if queue is not None and queue.capability is None:
            return {CLUSTER_OVERUSED, QUEUE_OVER_CAPABILITY}
        return {CLUSTER_OVERUSED}

    def backfills(self, job: JobInfo, reasons: set[str]) -> bool:
        """Whether to admit ``job`` past the budget: EASY backfill at admission.

        Only once a plan exists (a head waits for room), for a job with a time limit that
        only the budget turned away (:meth:`_budget_only`), whose minimum fits the idle
        capacity no admitted job waits for, and that delays no plan (it ends by each
        plan's start, or fits the capacity the plan does not keep: :meth:`blocks`).
        Without it, a head admitted before its room was free holds the budget, and jobs
        that would end long before that room comes wait for it too.
        """
        if self._free is None or job_end(job, self._ssn.now) is None:
            return False
        if not reasons or not reasons <= self._budget_only(job):
            return False
        if any(plan.job == job.key for plan, _ in self._plans):
            return False
        minimum = self._minimum(job)
        asked = minimum > 0
        return not np.any(minimum[asked] > self._free[asked] + 1e-9)

    def turned_away(self, job: JobInfo, reasons: set[str]) -> bool:
        """Plan the first job of its queue the budget turned away; whether to admit it now.

        In a queue that keeps its oldest job's plan, the next one turned away after it is
        planned too, around it (:func:`plan_next`).

        It is admitted when its planned start has come (its gang fits the idle capacity)
        and only the admission budget stood in its way (:meth:`_budget_only`). Its plan
        keeps room from later jobs only when it is its queue's head: behind an admitted job
        that waits (:meth:`_plan_admitted`) it is not, and EASY keeps room for the head
        alone (keeping room for both kept backfills off that EASY lets run).
        """
        made = self._planned.setdefault(job.queue, [])
        if not plans_another(self._ssn, made, job):
            return False
        plan = plan_next(self._ssn, made, job)
        if plan is None:
            return False
        if plan.start <= self._ssn.now:
            return reasons <= self._budget_only(job)
        said = self._ssn.enqueue_reasons.get(job.key, {}).get(CLUSTER_OVERUSED)
        if said is not None:
            planned = f"{said}; planned start {plan.start.isoformat()}"
            self._ssn.record_enqueue_reason(job, CLUSTER_OVERUSED, planned)
        if job.queue not in self._headed:
            idle = self._ssn.matrix.idle
            self._plans.append((plan, idle[~plan.kept].sum(axis=0)))
        return False
